package processing_test

import (
	"encoding/json"
	"strings"
	"testing"
)

// A call denied by a tool policy goes to an LLM with a result worded as the policy's
// denial, naming the policy; a person's denial stays the user's.
func TestPolicyDenialWording(t *testing.T) {
	t.Parallel()
	e := start(t, "tools:\n  policies:\n    rm: DENY\n")
	conv := e.CreateConversation(t, "deny")
	e.AddMessage(t, conv, map[string]any{"text": map[string]any{"role": "USER", "content": "clean up"}})
	req := e.AddMessage(t, conv, toolRequest(call("p", "rm"), call("u", "edit"))).ID
	e.MustDo(t, `mutation($m: ID!) { setToolCallApproval(messageId: $m, toolCallId: "u", status: DENIED, reason: "not now", decidedBy: "carol") { id } }`,
		map[string]any{"m": req}, nil)
	e.AddMessage(t, conv, map[string]any{"text": map[string]any{"role": "USER", "content": "ok"}})
	var out struct {
		Conversation struct{ Transcript json.RawMessage }
	}
	e.MustDo(t, `query($c: ID!) { conversation(id: $c) { transcript(format: OPENAI_CHAT) } }`, map[string]any{"c": conv}, &out)
	tr := string(out.Conversation.Transcript)
	for _, want := range []string{
		`A tool policy denied this tool call: tool policy DENY for \"rm\".`,
		`The user denied this tool call. Reason: not now`,
	} {
		if !strings.Contains(tr, want) {
			t.Errorf("transcript lacks %q:\n%s", want, tr)
		}
	}
	if n := strings.Count(tr, "The user denied"); n != 1 {
		t.Errorf("got %d denials worded as the user's, want 1 (the policy's is the policy's):\n%s", n, tr)
	}
}

// While a claim lasts, only its claimant may add the call's result; anyone else's result
// is refused with TOOL_CALL_CLAIMED and nothing is written. Once the claim lapses, it
// holds nobody off.
func TestResultOnlyFromClaimant(t *testing.T) {
	t.Parallel()
	e := start(t, "tools:\n  policies:\n    ls: AUTO_APPROVE\n")
	conv := e.CreateConversation(t, "claims")
	req := e.AddMessage(t, conv, toolRequest(call("a", "ls"), call("b", "ls"))).ID
	e.MustDo(t, claimMutation, map[string]any{"m": req, "id": "a", "w": "w1"}, nil)
	e.MustDo(t, claimMutation, map[string]any{"m": req, "id": "b", "w": "w1"}, nil)

	add := `mutation($c: ID!, $i: MessageInput!) { addMessage(conversationId: $c, input: $i) { cursor } }`
	result := func(id string, worker any) map[string]any {
		r := map[string]any{"toolCallId": id, "status": "SUCCESS", "output": map[string]any{"ok": true}}
		if worker != nil {
			r["worker"] = worker
		}
		return map[string]any{"c": conv, "i": map[string]any{"toolResult": r}}
	}
	tests := []struct {
		name   string
		worker any
		want   string
	}{
		{"another worker", "w2", `toolResult.worker: tool call "a" is claimed by "w1" until `},
		{"no worker named", nil, `toolResult.worker: tool call "a" is claimed by "w1" until `},
		{"an empty name", " ", `tool call "a" is claimed by "w1"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := e.Do(t, add, result("a", tt.worker))
			if got := r.ErrorCode(t); got != "TOOL_CALL_CLAIMED" {
				t.Fatalf("got %s, want TOOL_CALL_CLAIMED", got)
			}
			if msg := r.Errors[0].Message; !strings.Contains(msg, tt.want) {
				t.Errorf("got %q, want it to contain %q", msg, tt.want)
			}
		})
	}
	var count struct{ Conversation struct{ MessageCount int } }
	e.MustDo(t, `query($c: ID!) { conversation(id: $c) { messageCount } }`, map[string]any{"c": conv}, &count)
	if got := count.Conversation.MessageCount; got != 1 {
		t.Fatalf("got %d messages after the refused results, want 1 (nothing written)", got)
	}

	// The claimant's result is taken.
	e.MustDo(t, add, result("a", "w1"), nil)
	// A lapsed claim holds nobody off: another worker, or a person, may answer.
	if _, err := e.Store.SQL().Exec(`UPDATE tool_calls SET claim_expires_at = now() - interval '1 second' WHERE call_id = 'b'`); err != nil {
		t.Fatal(err)
	}
	e.MustDo(t, add, result("b", nil), nil)
	if got := ids(e.awaiting(t, map[string]any{"c": conv})); len(got) != 0 {
		t.Errorf("got %v awaiting, want none", got)
	}
}
