package interop_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/parley-dev/parley"
	"github.com/parley-dev/parley/db"
	"github.com/parley-dev/parley/internal/pgtest"
	"github.com/parley-dev/parley/internal/sessiongen"
	"github.com/parley-dev/parley/interop"
	"github.com/parley-dev/parley/interop/claudecode"
)

// genSession writes a Claude Code session of n exchanges, each a prompt, a reply
// streamed over three lines with two calls, progress lines, two results of about 2 KB
// and a closing reply: nine lines and five messages an exchange.
func genSession(n int) []byte {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	ts := func(i int) string { return t0.Add(time.Duration(i) * time.Second).Format(time.RFC3339Nano) }
	output := strings.Repeat("ok  \tgithub.com/acme/app/internal/pkg\t0.012s\n", 45)
	line := 0
	rec := func(r obj) {
		line++
		r["uuid"], r["timestamp"], r["sessionId"], r["isSidechain"] = fmt.Sprintf("u-%d", line), ts(line), "s", false
		enc.Encode(r)
	}
	for i := range n {
		rec(obj{"type": "user", "message": obj{"role": "user", "content": fmt.Sprintf("Step %d: run the tests and fix what fails.", i)}})
		id := fmt.Sprintf("msg_%d", i)
		asst := func(block obj) {
			rec(obj{"type": "assistant", "message": obj{"id": id, "role": "assistant", "model": "m", "content": []obj{block}}})
		}
		asst(obj{"type": "text", "text": "Running the tests in both modules."})
		asst(obj{"type": "tool_use", "id": fmt.Sprintf("toolu_%d_a", i), "name": "Bash", "input": obj{"command": "go test ./..."}})
		rec(obj{"type": "progress", "data": obj{"type": "hook_progress"}})
		asst(obj{"type": "tool_use", "id": fmt.Sprintf("toolu_%d_b", i), "name": "Bash", "input": obj{"command": "go vet ./..."}})
		rec(obj{"type": "progress", "data": obj{"type": "hook_progress"}})
		for _, c := range []string{"a", "b"} {
			rec(obj{"type": "user", "message": obj{"role": "user", "content": []obj{{"type": "tool_result", "tool_use_id": fmt.Sprintf("toolu_%d_%s", i, c), "content": output}}}})
		}
		rec(obj{"type": "assistant", "message": obj{"id": id + "_done", "role": "assistant", "model": "m", "content": []obj{{"type": "text", "text": "All green."}}}})
	}
	return buf.Bytes()
}

// BenchmarkImportClaudeCode measures importing a session of 1,000 exchanges (5,000
// messages, 9,000 lines): reading it, reading and storing it in one transaction, and
// exporting the stored conversation.
//
//	go test -run '^$' -bench ImportClaudeCode -benchtime 3x ./interop/
func BenchmarkImportClaudeCode(b *testing.B) {
	ctx := parley.WithOwner(context.Background(), parley.LocalOwner)
	data := genSession(1000)
	b.Run("parse", func(b *testing.B) {
		b.SetBytes(int64(len(data)))
		for b.Loop() {
			imp, err := claudecode.Parse(bytes.NewReader(data))
			if err != nil || len(imp.Messages) != 5000 {
				b.Fatalf("got %v messages, %v", len(imp.Messages), err)
			}
		}
		b.ReportMetric(float64(5000*b.N)/b.Elapsed().Seconds(), "msgs/s")
	})
	b.Run("store", func(b *testing.B) {
		store, err := db.Open(ctx, pgtest.NewDatabase(b), db.Config{})
		if err != nil {
			b.Fatal(err)
		}
		defer store.Close()
		svc := interop.New(store, store, store)
		b.SetBytes(int64(len(data)))
		for b.Loop() {
			rep, err := svc.ImportConversation(ctx, parley.ImportClaudeCode, bytes.NewReader(data), parley.ImportTarget{})
			if err != nil || rep.Added != 5000 {
				b.Fatalf("got %+v, %v", rep, err)
			}
		}
		b.ReportMetric(float64(5000*b.N)/b.Elapsed().Seconds(), "msgs/s")
	})
	b.Run("export", func(b *testing.B) {
		store, err := db.Open(ctx, pgtest.NewDatabase(b), db.Config{})
		if err != nil {
			b.Fatal(err)
		}
		defer store.Close()
		svc := interop.New(store, store, store)
		rep, err := svc.ImportConversation(ctx, parley.ImportClaudeCode, bytes.NewReader(data), parley.ImportTarget{})
		if err != nil {
			b.Fatal(err)
		}
		for _, f := range []parley.TranscriptFormat{parley.TranscriptOpenAIChat, parley.TranscriptAnthropicMessages, parley.TranscriptMarkdown} {
			b.Run(string(f), func(b *testing.B) {
				cpu0, pg0 := selfCPU(), postgresCPU(b)
				for b.Loop() {
					if _, err := svc.Transcript(ctx, rep.Conversation.ID, f, parley.TranscriptOptions{}); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(5000*b.N)/b.Elapsed().Seconds(), "msgs/s")
				b.ReportMetric(float64((selfCPU()-cpu0).Milliseconds())/float64(b.N), "go-cpu-ms/op")
				b.ReportMetric(float64((postgresCPU(b)-pg0).Milliseconds())/float64(b.N), "pg-cpu-ms/op")
			})
		}
	})
}

// BenchmarkImportLargeSession imports a session of 20,000 exchanges (100,000 messages)
// into a new conversation: the whole path of `parley import` but the process's start
// (streamed parse, dedupe, COPY, commit).
//
//	go test -run '^$' -bench ImportLargeSession -benchtime 1x -cpuprofile cpu.out ./interop/
func BenchmarkImportLargeSession(b *testing.B) {
	benchImport(b, genSession(20000), 100000)
}

// benchImport imports data, a Claude Code session making n messages, into a new
// conversation each time, and reports messages/s and the CPU of this process and of
// Postgres per import (CPU, which the machine's other load does not change as it does
// the time taken).
func benchImport(b *testing.B, data []byte, n int) {
	ctx := parley.WithOwner(context.Background(), parley.LocalOwner)
	store, err := db.Open(ctx, pgtest.NewDatabase(b), db.Config{})
	if err != nil {
		b.Fatal(err)
	}
	defer store.Close()
	svc := interop.New(store, store, store)
	b.SetBytes(int64(len(data)))
	cpu0, pg0 := selfCPU(), postgresCPU(b)
	for b.Loop() {
		rep, err := svc.ImportConversation(ctx, parley.ImportClaudeCode, bytes.NewReader(data), parley.ImportTarget{})
		if err != nil || rep.Added != n {
			b.Fatalf("got %+v, %v", rep, err)
		}
	}
	b.ReportMetric(float64(n*b.N)/b.Elapsed().Seconds(), "msgs/s")
	b.ReportMetric((selfCPU()-cpu0).Seconds()/float64(b.N), "go-cpu-s/op")
	b.ReportMetric((postgresCPU(b)-pg0).Seconds()/float64(b.N), "pg-cpu-s/op")
}

// BenchmarkImportBenchSession imports the session `make bench` times `parley import`
// of (internal/sessiongen, 100,000 messages) into a new conversation each time: the
// whole path of the command but the process's start and the progress line (streamed
// parse, dedupe, COPY, commit), with the CPU of this process and of Postgres.
//
//	go test -run '^$' -bench ImportBenchSession -benchtime 1x -cpuprofile cpu.out ./interop/
func BenchmarkImportBenchSession(b *testing.B) {
	const n = 100000
	var buf bytes.Buffer
	if err := sessiongen.Write(&buf, n); err != nil {
		b.Fatal(err)
	}
	benchImport(b, buf.Bytes(), n)
}

// BenchmarkParseBenchSession reads the session BenchmarkImportBenchSession imports, without
// storing it: the parse's share of the import.
//
//	go test -run '^$' -bench ParseBenchSession -benchtime 3x ./interop/
func BenchmarkParseBenchSession(b *testing.B) {
	const n = 100000
	var buf bytes.Buffer
	if err := sessiongen.Write(&buf, n); err != nil {
		b.Fatal(err)
	}
	data := buf.Bytes()
	b.SetBytes(int64(len(data)))
	cpu0 := selfCPU()
	for b.Loop() {
		s := claudecode.Stream(bytes.NewReader(data))
		got := 0
		for {
			_, err := s.Next()
			if errors.Is(err, io.EOF) {
				break
			} else if err != nil {
				b.Fatal(err)
			}
			got++
		}
		if got != n {
			b.Fatalf("got %d messages, want %d", got, n)
		}
	}
	b.ReportMetric(float64(n*b.N)/b.Elapsed().Seconds(), "msgs/s")
	b.ReportMetric((selfCPU()-cpu0).Seconds()/float64(b.N), "cpu-s/op")
}

// selfCPU is the CPU time this process has used.
func selfCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// postgresCPU is the CPU time the test cluster's postmaster and its children (live and
// exited) have used.
func postgresCPU(b *testing.B) time.Duration {
	pidFile, err := os.ReadFile(filepath.Join(pgtest.Cluster().DataDir(), "pgdata", "postmaster.pid"))
	if err != nil {
		b.Fatal(err)
	}
	root, _ := strconv.Atoi(strings.SplitN(string(pidFile), "\n", 2)[0])
	dirs, _ := os.ReadDir("/proc")
	var ticks int64
	for _, d := range dirs {
		pid, err := strconv.Atoi(d.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			continue
		}
		f := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+2:]))
		ppid, _ := strconv.Atoi(f[1])
		if pid != root && ppid != root {
			continue
		}
		for _, i := range []int{11, 12} { // utime, stime
			v, _ := strconv.ParseInt(f[i], 10, 64)
			ticks += v
		}
		if pid == root {
			for _, i := range []int{13, 14} { // cutime, cstime: exited backends
				v, _ := strconv.ParseInt(f[i], 10, 64)
				ticks += v
			}
		}
	}
	return time.Duration(ticks) * 10 * time.Millisecond // USER_HZ is 100 on Linux
}

func BenchmarkParseLarge(b *testing.B) {
	data := genSession(20000)
	for b.Loop() {
		s := claudecode.Stream(bytes.NewReader(data))
		for {
			if _, err := s.Next(); err != nil {
				break
			}
		}
	}
}

// BenchmarkBuildTranscript measures making the transcript of 5,000 messages held in
// memory: choosing, pairing and encoding, without the read.
//
//	go test -run '^$' -bench BuildTranscript -count 5 ./interop/
func BenchmarkBuildTranscript(b *testing.B) {
	imp, err := claudecode.Parse(bytes.NewReader(genSession(1000)))
	if err != nil {
		b.Fatal(err)
	}
	msgs := make([]parley.Message, len(imp.Messages))
	for i, im := range imp.Messages {
		msgs[i] = im.Message
		msgs[i].Meta().Position = i + 1
	}
	conv := &parley.Conversation{ID: "conv_bench", Title: "bench"}
	for _, f := range []parley.TranscriptFormat{parley.TranscriptOpenAIChat, parley.TranscriptAnthropicMessages} {
		b.Run(string(f), func(b *testing.B) {
			for b.Loop() {
				if _, err := interop.Build(conv, msgs, f, parley.TranscriptOptions{}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
