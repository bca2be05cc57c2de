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

// Peak resident sets the import may reach, in MiB: the server's (streaming the body
// into COPY batches of at most 16 MiB, under GOGC=400) and the client's (streaming the
// file into the request). Either would pass 200 MiB if the file were held whole.
const (
	maxServerPeakMiB = 160
	maxClientPeakMiB = 80
)

// TestImportLargeSessionBoundedMemory: parley import --server sends a generated 200 MB
// Claude Code session to a real parley serve (built without the race detector, whose
// shadow memory would hide what is measured), which stores it all; the peak resident
// set of both processes (the server's VmHWM from /proc, the client's ru_maxrss) stays
// far below the file's size. PARLEY_BIN names a parley executable to use instead of
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
	srv := startProcessExe(t, bin, nil, "--database-url", dsn, "--auth-tokens")
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
	if client > maxClientPeakMiB {
		t.Errorf("the client's peak RSS was %d MiB sending %d MiB, want at most %d MiB", client, size>>20, maxClientPeakMiB)
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
// the file's size.
func writeBigSession(t *testing.T, path string, size int64) (turns int, written int64) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	w := bufio.NewWriterSize(f, 1<<20)
	counter := &countingWriter{w: w}
	enc := json.NewEncoder(counter)
	type obj = map[string]any
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	line := 0
	rec := func(r obj) {
		line++
		r["uuid"], r["timestamp"], r["sessionId"], r["isSidechain"] = fmt.Sprintf("u-%d", line), t0.Add(time.Duration(line)*time.Second).Format(time.RFC3339Nano), "s", false
		if err := enc.Encode(r); err != nil {
			t.Fatal(err)
		}
	}
	var output strings.Builder
	for counter.n < size {
		output.Reset()
		for i := range 600 {
			fmt.Fprintf(&output, "%5d→\tfunc (s *Store) Save%d_%d(ctx context.Context) error { return s.flush(ctx) }\n", i+1, turns, i)
		}
		call := fmt.Sprintf("toolu_%d", turns)
		rec(obj{"type": "user", "message": obj{"role": "user", "content": fmt.Sprintf("Step %d: read store.go and find why Save fails.", turns)}})
		rec(obj{"type": "assistant", "message": obj{"id": fmt.Sprintf("msg_%da", turns), "role": "assistant", "model": "m", "content": []obj{
			{"type": "text", "text": "Reading the file."},
			{"type": "tool_use", "id": call, "name": "Read", "input": obj{"file_path": "/src/store.go"}}}}})
		rec(obj{"type": "user", "message": obj{"role": "user", "content": []obj{{"type": "tool_result", "tool_use_id": call, "content": output.String()}}}})
		rec(obj{"type": "assistant", "message": obj{"id": fmt.Sprintf("msg_%db", turns), "role": "assistant", "model": "m", "content": []obj{
			{"type": "text", "text": fmt.Sprintf("Save%d returns before the write is flushed.", turns)}}}})
		turns++
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	return turns, counter.n
}

type countingWriter struct {
	w interface{ Write([]byte) (int, error) }
	n int64
}

func (c *countingWriter) Write(b []byte) (int, error) {
	n, err := c.w.Write(b)
	c.n += int64(n)
	return n, err
}
