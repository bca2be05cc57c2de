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
