package server_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/parley-dev/parley/internal/testserver"
)

// generatedSession is a Claude Code session whose import makes n messages (n a multiple
// of 4): turns of a prompt, a reply with text and a tool call, the call's result and
// an answer, as `make bench`'s export rows generate them (bench/importbench.go).
func generatedSession(n int) []byte {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	start := time.Date(2026, 2, 10, 10, 0, 0, 0, time.UTC)
	var parent any
	seq := 0
	record := func(typ string, extra map[string]any) {
		seq++
		uuid := fmt.Sprintf("b0000000-0000-4000-8000-%012d", seq)
		r := map[string]any{"parentUuid": parent, "isSidechain": false, "sessionId": "s", "type": typ, "uuid": uuid,
			"timestamp": start.Add(time.Duration(seq) * 100 * time.Millisecond).Format("2006-01-02T15:04:05.000Z")}
		for k, v := range extra {
			r[k] = v
		}
		parent = uuid
		enc.Encode(r)
	}
	assistant := func(id string, content []any) map[string]any {
		return map[string]any{"message": map[string]any{"model": "claude-opus-4-6", "id": "msg_" + id, "type": "message",
			"role": "assistant", "content": content}}
	}
	for turn := 0; seq < n; turn++ {
		call := fmt.Sprintf("toolu_%06d", turn)
		record("user", map[string]any{"message": map[string]any{"role": "user",
			"content": fmt.Sprintf("Step %d: look at **internal/store/file_%d.go** and tell me why <Save> fails.", turn, turn%50)}})
		record("assistant", assistant(fmt.Sprintf("%06da", turn), []any{
			map[string]any{"type": "text", "text": "Let me read the file first."},
			map[string]any{"type": "tool_use", "id": call, "name": "Read",
				"input": map[string]any{"file_path": fmt.Sprintf("/home/dev/app/internal/store/file_%d.go", turn%50)}}}))
		record("user", map[string]any{"message": map[string]any{"role": "user", "content": []any{
			map[string]any{"tool_use_id": call, "type": "tool_result",
				"content": strings.Repeat("     1→package store\n     2→func (s *Store) Save() error { return nil }\n", 4)}}}})
		record("assistant", assistant(fmt.Sprintf("%06db", turn), []any{
			map[string]any{"type": "text", "text": fmt.Sprintf("`Save` returns before the write is flushed (turn %d):\n\n- flush first\n- then close", turn)}}))
	}
	return buf.Bytes()
}

// importSession imports a generated session of n messages through POST /api/import and
// returns the conversation's id.
func importSession(tb testing.TB, srv *testserver.Server, n int) string {
	tb.Helper()
	resp, err := http.Post(srv.URL+"/api/import?format=CLAUDE_CODE_JSONL&title=export", "application/x-ndjson", bytes.NewReader(generatedSession(n)))
	if err != nil {
		tb.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	var rep struct {
		Conversation struct{ ID string }
		Added        int
	}
	if resp.StatusCode != http.StatusOK || json.Unmarshal(body, &rep) != nil || rep.Added != n {
		tb.Fatalf("import of %d messages: status %d: %.500s", n, resp.StatusCode, body)
	}
	return rep.Conversation.ID
}

// BenchmarkTranscript is the whole transcript of an imported session over HTTP, as
// `make bench`'s export rows read it (issue 15's target: under 50 ms for 5,000
// messages).
//
//	go test -run '^$' -bench Transcript -cpuprofile cpu.out ./server/
func BenchmarkTranscript(b *testing.B) {
	srv := testserver.New(b)
	for _, n := range []int{500, 5000} {
		conv := importSession(b, srv, n)
		for _, f := range []string{"OPENAI_CHAT", "ANTHROPIC_MESSAGES"} {
			body, _ := json.Marshal(map[string]any{"query": `query ($c: ID!, $f: TranscriptFormat!) { conversation(id: $c) { transcript(format: $f) } }`,
				"variables": map[string]any{"c": conv, "f": f}})
			b.Run(fmt.Sprintf("%s/%d", f, n), func(b *testing.B) {
				cpu0 := processCPU()
				for b.Loop() {
					resp, err := http.Post(srv.URL+"/graphql", "application/json", bytes.NewReader(body))
					if err != nil {
						b.Fatal(err)
					}
					out, err := io.ReadAll(resp.Body)
					resp.Body.Close()
					if err != nil || resp.StatusCode != http.StatusOK || len(out) < n*10 || bytes.Contains(out[:min(len(out), 20)], []byte(`"errors"`)) {
						b.Fatalf("status %d, %v: %.300s", resp.StatusCode, err, out)
					}
				}
				b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N*n), "µs/msg")
				// The server's CPU (it runs in this process), which other load on the
				// machine changes less than the time taken.
				b.ReportMetric(float64((processCPU()-cpu0).Microseconds())/1000/float64(b.N), "cpu-ms/op")
			})
		}
	}
}

// processCPU is the CPU time this process has used.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
