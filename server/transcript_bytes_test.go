package server_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/parley-dev/parley/internal/testserver"
)

// A transcript reads at most --max-transcript-bytes of stored messages: a history
// holding more is refused with TRANSCRIPT_TOO_LARGE naming the limit, in every format
// and through transcriptReport too (maxTokens and after do not lessen what is read, so
// they are refused as well), while a history under the limit exports whole.
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
