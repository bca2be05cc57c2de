package interop_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/parley-dev/parley/internal/testserver"
)

// words is n words of filler, about 1.5 tokens per word as Parley estimates.
func words(seed, n int) string {
	vocab := []string{"cache", "prefix", "turn", "budget", "model", "token", "parley", "history", "export", "stable"}
	w := make([]string, n)
	for i := range w {
		w[i] = vocab[(seed*7+i*3)%len(vocab)]
	}
	return strings.Join(w, " ")
}

// budgetQuery asks only what every Parley version answers, so that the figures of
// TestStableCut can be measured on an older one the same way.
const budgetQuery = `query($id: ID!, $f: TranscriptFormat!, $m: Int) {
	conversation(id: $id) {
		transcript(format: $f, maxTokens: $m)
		transcriptReport(format: $f, maxTokens: $m) { estimatedTokens }
	}
}`

// TestStableCut appends 30 turns (a prompt and a reply each, of varying lengths) to a
// conversation and exports it with a budget after each, as an agent loop does, counting
// the turns after which the export no longer starts with the previous export: the
// prefix a provider caches changed. The cut moves only when about a quarter of the
// budget was appended since it last moved, so it changes at most that often; each export
// fits the budget, starts with a user turn, and (once cut) fills at least three quarters
// of the budget less one turn.
//
//	go test ./interop/ -run TestStableCut -v   # logs the figures
func TestStableCut(t *testing.T) {
	t.Parallel()
	const turns = 30
	for _, tc := range []struct {
		name   string
		budget int
	}{
		{"turns of about a sixth of the budget", 2000},
		{"turns of about a twelfth of the budget", 4000},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := testserver.New(t)
			conv := srv.CreateConversation(t, tc.name)
			var prev []byte
			changed, cutTurns, appended, biggestTurn := 0, 0, 0, 0
			for i := range turns {
				prompt, reply := words(i, 40+(i*37)%90), words(i+1, 60+(i*53)%140)
				srv.AddMessage(t, conv, testserver.Text("USER", prompt))
				srv.AddMessage(t, conv, testserver.Text("ASSISTANT", reply))
				var out struct {
					Conversation struct {
						Transcript       json.RawMessage
						TranscriptReport struct{ EstimatedTokens int }
					}
				}
				srv.MustDo(t, budgetQuery, map[string]any{"id": conv, "f": "OPENAI_CHAT", "m": tc.budget}, &out)
				body, tokens := out.Conversation.Transcript, out.Conversation.TranscriptReport.EstimatedTokens
				var msgs []struct{ Role string }
				if err := json.Unmarshal(body, &msgs); err != nil {
					t.Fatal(err)
				}
				turnTokens := 8 + (len(prompt)+3)/4 + (len(reply)+3)/4
				biggestTurn = max(biggestTurn, turnTokens)
				if tokens > tc.budget {
					t.Errorf("turn %d: %d tokens, over the budget %d", i+1, tokens, tc.budget)
				}
				if msgs[0].Role != "user" {
					t.Errorf("turn %d: the export starts with a %s message", i+1, msgs[0].Role)
				}
				if len(msgs) < 2*(i+1) {
					cutTurns++
					appended += turnTokens
					if floor := tc.budget*3/4 - biggestTurn; tokens < floor {
						t.Errorf("turn %d: a cut history of %d tokens, under %d: the cut took too much", i+1, tokens, floor)
					}
				}
				if prev != nil && prefixChanged(t, "OPENAI_CHAT", prev, body) != "" {
					changed++
				}
				prev = body
			}
			t.Logf("budget %d: the exported prefix changed after %d of %d appended turns (%d exports were cut)", tc.budget, changed, turns-1, cutTurns)
			if cutTurns < turns/2 {
				t.Fatalf("only %d exports were cut: the test does not test the cut", cutTurns)
			}
			// The cut moves once per quarter budget appended, and once when it first cuts.
			if limit := appended/(tc.budget/4) + 2; changed > limit {
				t.Errorf("the prefix changed after %d turns, more than %d (%d tokens appended while cut)", changed, limit, appended)
			}
		})
	}
}
