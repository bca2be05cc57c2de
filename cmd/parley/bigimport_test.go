package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/parley-dev/parley/internal/pgtest"
)

// bigSessionBytes is the size of the session TestImportLargeSessionBoundedMemory
// imports: the 200 MB.
const bigSessionBytes = 200 << 20

// maxServerPeakMiB is the peak resident set the server may reach importing, in MiB
// (streaming the body into COPY batches of at most 16 MiB). Holding the file whole, with
// what is parsed from it, would take several times 200 MiB. The server runs with Go's default GOGC=100 here: serve's own 400 lets
// the heap grow to five times what is live before a collection, up to the 512 MiB soft
// limit, so its peak would measure the collector's headroom (457 MiB in one run), not
// what the import holds.
const maxServerPeakMiB = 256

// TestImportLargeSessionBoundedMemory: parley import --server sends a generated 200 MB
// Claude Code session to a real parley serve (built without the race detector, whose
// shadow memory would hide what is measured), which stores it all; the peak resident
// set of the server (VmHWM from /proc) stays far below the file's size. The client's
// (ru_maxrss) is logged: 101-128 MiB in two runs, more than streaming a file should
// take, not yet explained. PARLEY_BIN names a parley executable to use instead of
// building one. -short skips it (it writes 200 MB to Postgres).
func TestImportLargeSessionBoundedMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: the 200 MB import is left out")
	}
	t.Parallel()
	bin := parleyBinary(t)
	dsn := pgtest.NewDatabase(t)
	session := filepath.Join(t.TempDir(), "big.jsonl")
	turns, size := writeBigSession(t, session, bigSessionBytes)
	alice := createToken(t, dsn, "alice")
	srv := startProcessExe(t, bin, []string{"GOGC=100"}, "--database-url", dsn, "--auth-tokens")
	before := peakRSS(t, srv.cmd.Process.Pid)

	start := time.Now()
	cmd := exec.Command(bin, "import", "--server", srv.url, "--format", "CLAUDE_CODE_JSONL", "--json", session)
	cmd.Env = append(os.Environ(), "PARLEY_TOKEN="+alice)
	var out, errOut syncBuffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		t.Fatalf("parley import --server of %d MiB: %v\n%s\nserver log:\n%s", size>>20, err, errOut.String(), srv.stderr)
	}
	took := time.Since(start)
	server := peakRSS(t, srv.cmd.Process.Pid)
	client := cmd.ProcessState.SysUsage().(*syscall.Rusage).Maxrss >> 10 // KiB on Linux

	var rep struct {
		Added        int
		Conversation struct{ ID string }
	}
	if err := json.Unmarshal([]byte(out.String()), &rep); err != nil || rep.Added != 4*turns {
		t.Fatalf("import report: got %+v (%v), want %d messages added\n%s", rep, err, 4*turns, out.String())
	}
	status, code, d := postAs(t, srv.url, alice, fmt.Sprintf(`{ conversation(id: %q) { messageCount } }`, rep.Conversation.ID))
	if status != 200 || code != "" || d["conversation"].(map[string]any)["messageCount"] != float64(4*turns) {
		t.Errorf("the stored conversation: got %d %s %v, want %d messages", status, code, d, 4*turns)
	}
	t.Logf("imported %d MiB (%d messages) in %s: server peak RSS %d MiB (%d MiB before the import), client %d MiB",
		size>>20, 4*turns, took.Round(time.Second), server, before, client)
	if server > maxServerPeakMiB {
		t.Errorf("the server's peak RSS was %d MiB importing %d MiB, want at most %d MiB", server, size>>20, maxServerPeakMiB)
	}
}

// parleyBinary returns PARLEY_BIN, or a parley built without the race detector.
func parleyBinary(t *testing.T) string {
	t.Helper()
	if bin := os.Getenv("PARLEY_BIN"); bin != "" {
		abs, err := filepath.Abs(bin)
		if err != nil {
			t.Fatal(err)
		}
		return abs
	}
	bin := filepath.Join(t.TempDir(), "parley")
	build := exec.Command("go", "build", "-o", bin, ".")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// peakRSS is process pid's peak resident set (VmHWM), in MiB.
func peakRSS(t *testing.T, pid int) int64 {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Skipf("no /proc to read the peak RSS from: %v", err)
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			if err != nil {
				t.Fatalf("VmHWM: %q", line)
			}
			return kb >> 10
		}
	}
	t.Fatalf("/proc/%d/status has no VmHWM", pid)
	return 0
}

// writeBigSession writes a Claude Code session of at least size bytes to path, as an
// agent's long session looks: turns of a prompt, a reply calling a tool, the tool's
// large output (a file read, ~48 KiB) and an answer. It returns the turns written and
// the file's size. The output is encoded once: writing 200 MB must not take minutes.
func writeBigSession(t *testing.T, path string, size int64) (turns int, written int64) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	w := bufio.NewWriterSize(f, 1<<20)
	var src strings.Builder
	for i := range 600 {
		fmt.Fprintf(&src, "%5d→\tfunc (s *Store) Save%d(ctx context.Context) error { return s.flush(ctx) }\n", i+1, i)
	}
	output, err := json.Marshal(src.String())
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	line := 0
	// rec writes one record: its type, its message (JSON), and the fields every record has.
	rec := func(typ, message string) {
		line++
		n, err := fmt.Fprintf(w, `{"type":%q,"message":%s,"uuid":"u-%d","timestamp":%q,"sessionId":"s","isSidechain":false}`+"\n",
			typ, message, line, t0.Add(time.Duration(line)*time.Second).Format(time.RFC3339Nano))
		if err != nil {
			t.Fatal(err)
		}
		written += int64(n)
	}
	for written < size {
		rec("user", fmt.Sprintf(`{"role":"user","content":"Step %d: read store.go and find why Save fails."}`, turns))
		rec("assistant", fmt.Sprintf(`{"id":"msg_%da","role":"assistant","model":"m","content":[{"type":"text","text":"Reading the file."},`+
			`{"type":"tool_use","id":"toolu_%d","name":"Read","input":{"file_path":"/src/store.go"}}]}`, turns, turns))
		rec("user", fmt.Sprintf(`{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_%d","content":%s}]}`, turns, output))
		rec("assistant", fmt.Sprintf(`{"id":"msg_%db","role":"assistant","model":"m","content":[{"type":"text","text":"Save%d returns before the write is flushed."}]}`, turns, turns))
		turns++
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	return turns, written
}
