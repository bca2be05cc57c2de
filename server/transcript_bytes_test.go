package server_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/parley-dev/parley"
	"github.com/parley-dev/parley/internal/testserver"
)

// A transcript reads at most --max-transcript-bytes of stored messages: a history
// holding more is refused with TRANSCRIPT_TOO_LARGE naming the limit, in every format
// and through transcriptReport too (maxTokens does not lessen what is read, nor does an
// after whose increment is itself over the limit), while a history under the limit
// exports whole.
func TestTranscriptBytesBounded(t *testing.T) {
	t.Parallel()
	const limit = 1 << 20
	srv := testserver.NewWired(t, fmt.Sprintf("limits:\n  max_transcript_bytes: %d\n", limit))
	fill := func(title string, n, size int) string {
		conv := srv.CreateConversation(t, title)
		for i := range n {
			srv.AddMessage(t, conv, testserver.Text("USER", fmt.Sprintf("%d:%s", i, strings.Repeat("x", size))))
		}
		return conv
	}
	under := fill("under", 3, 100<<10) // 300 KiB of text (stored with its parts, under 1 MiB)
	over := fill("over", 12, 100<<10)  // 1.2 MiB of text

	const (
		transcript = `query($c: ID!, $f: TranscriptFormat!, $m: Int, $a: String) { conversation(id: $c) { transcript(format: $f, maxTokens: $m, after: $a) } }`
		report     = `query($c: ID!, $f: TranscriptFormat!, $m: Int, $a: String) { conversation(id: $c) { transcriptReport(format: $f, maxTokens: $m, after: $a) { estimatedTokens } } }`
	)
	for _, tt := range []struct {
		name  string
		query string
		vars  map[string]any
	}{
		{"markdown", transcript, map[string]any{"f": "MARKDOWN"}},
		{"parley json", transcript, map[string]any{"f": "PARLEY_JSON"}},
		{"openai chat", transcript, map[string]any{"f": "OPENAI_CHAT"}},
		{"anthropic with maxTokens", transcript, map[string]any{"f": "ANTHROPIC_MESSAGES", "m": 60000}},
		{"openai responses after", transcript, map[string]any{"f": "OPENAI_RESPONSES", "a": "bTox"}},
		{"report", report, map[string]any{"f": "OPENAI_CHAT"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			vars := map[string]any{"c": over}
			for k, v := range tt.vars {
				vars[k] = v
			}
			r := srv.Do(t, tt.query, vars)
			if code := r.ErrorCode(t); code != "TRANSCRIPT_TOO_LARGE" {
				t.Fatalf("over the limit: got %s (%s), want TRANSCRIPT_TOO_LARGE", code, r.Errors[0].Message)
			}
			if msg := r.Errors[0].Message; !strings.Contains(msg, fmt.Sprint(limit)) || !strings.Contains(msg, "--max-transcript-bytes") {
				t.Errorf("message %q does not name the limit (%d, --max-transcript-bytes)", msg, limit)
			}
			if string(r.Data) != "null" && strings.Contains(string(r.Data), "xxxx") {
				t.Errorf("a refused transcript returned data: %.200s", r.Data)
			}

			vars["c"] = under
			var out struct {
				Conversation map[string]any
			}
			srv.MustDo(t, tt.query, vars, &out)
			if len(out.Conversation) == 0 {
				t.Fatalf("under the limit: got no transcript")
			}
		})
	}
}

// An incremental export reads what follows its cursor: a history over
// --max-transcript-bytes, which exports whole only as TRANSCRIPT_TOO_LARGE, exports with
// an after whose increment fits, in every LLM format, the report saying what it holds.
func TestIncrementUnderTranscriptLimit(t *testing.T) {
	t.Parallel()
	const limit = 1 << 20
	srv := testserver.NewWired(t, fmt.Sprintf("limits:\n  max_transcript_bytes: %d\n", limit))
	conv := srv.CreateConversation(t, "long")
	const n = 12 // 1.2 MiB of text
	for i := range n {
		srv.AddMessage(t, conv, testserver.Text("USER", fmt.Sprintf("%d:%s", i, strings.Repeat("x", 100<<10))))
	}
	srv.AddMessage(t, conv, testserver.Text("ASSISTANT", "Done."))
	const query = `query($c: ID!, $f: TranscriptFormat!, $a: String) { conversation(id: $c) {
		transcript(format: $f, after: $a)
		transcriptReport(format: $f, after: $a) { estimatedTokens endCursor }
	} }`
	for _, format := range []string{"OPENAI_CHAT", "OPENAI_RESPONSES", "ANTHROPIC_MESSAGES"} {
		t.Run(format, func(t *testing.T) {
			t.Parallel()
			r := srv.Do(t, query, map[string]any{"c": conv, "f": format})
			if len(r.Errors) == 0 {
				t.Fatalf("the whole history: exported, want TRANSCRIPT_TOO_LARGE")
			}
			for _, e := range r.Errors {
				if e.Code() != "TRANSCRIPT_TOO_LARGE" {
					t.Fatalf("the whole history: got %s (%s), want TRANSCRIPT_TOO_LARGE", e.Code(), e.Message)
				}
			}
			var out struct {
				Conversation struct {
					Transcript       json.RawMessage
					TranscriptReport struct {
						EstimatedTokens int
						EndCursor       string
					}
				}
			}
			srv.MustDo(t, query, map[string]any{"c": conv, "f": format, "a": parley.MessageCursor(n)}, &out)
			body, rep := string(out.Conversation.Transcript), out.Conversation.TranscriptReport
			if !strings.Contains(body, "Done.") || strings.Contains(body, "xxxx") {
				t.Errorf("after message %d: got %.200s, want only the reply", n, body)
			}
			if want := parley.MessageCursor(n + 1); rep.EndCursor != want {
				t.Errorf("endCursor: got %q, want %q", rep.EndCursor, want)
			}
			// The reply: 4 tokens of framing and 2 of text.
			if rep.EstimatedTokens != 6 {
				t.Errorf("estimatedTokens: got %d, want 6, the reply's", rep.EstimatedTokens)
			}
		})
	}
}
