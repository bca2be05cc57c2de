package server_test

import (
	"strings"
	"testing"

	"github.com/parley-dev/parley/internal/testserver"
)

// TestBadScalarInput: a malformed Time or JSON, literal or in a variable, anywhere in an
// input, is the caller's error naming the field, and nothing is written.
func TestBadScalarInput(t *testing.T) {
	t.Parallel()
	srv := testserver.New(t)
	conv := srv.CreateConversation(t, "scalars")
	const mcp = `mutation($c: ID!, $t: Time) { addMessage(conversationId: $c, input: {mcpResource: {serverName: "a", resourceUri: "b", content: "c", retrievedAt: $t}}) { cursor } }`
	for _, tt := range []struct {
		name, query string
		vars        map[string]any
		mention     []string
	}{
		{"time in a variable", mcp, map[string]any{"t": "yesterday"}, []string{"input.mcpResource.retrievedAt", `"yesterday"`, "RFC 3339"}},
		{"time of the wrong type", mcp, map[string]any{"t": 12}, []string{"input.mcpResource.retrievedAt", "12"}},
		{"time literal", `mutation($c: ID!) { addMessage(conversationId: $c, input: {mcpResource: {serverName: "a", resourceUri: "b", content: "c", retrievedAt: "2026-13-45"}}) { cursor } }`,
			nil, []string{"input.mcpResource.retrievedAt", `"2026-13-45"`}},
		{"time in another variant", `mutation($c: ID!, $t: Time) { addMessage(conversationId: $c, input: {toolResult: {toolCallId: "x", status: SUCCESS, executedAt: $t}}) { cursor } }`,
			map[string]any{"t": "soon"}, []string{"input.toolResult.executedAt", `"soon"`}},
		{"json that is not an object", `mutation($c: ID!, $a: JSON!) { addMessage(conversationId: $c, input: {toolRequest: {toolCalls: [{id: "x", name: "y", arguments: $a}]}}) { cursor } }`,
			map[string]any{"a": "not an object"}, []string{"toolCalls[0].arguments"}},
	} {
		vars := map[string]any{"c": conv}
		for k, v := range tt.vars {
			vars[k] = v
		}
		r := srv.Do(t, tt.query, vars)
		if len(r.Errors) != 1 || r.Errors[0].Code() != "BAD_USER_INPUT" {
			t.Errorf("%s: got %+v, want one BAD_USER_INPUT", tt.name, r.Errors)
			continue
		}
		for _, m := range tt.mention {
			if !strings.Contains(r.Errors[0].Message, m) {
				t.Errorf("%s: message %q does not mention %s", tt.name, r.Errors[0].Message, m)
			}
		}
	}
	var out struct{ Conversation struct{ MessageCount int } }
	srv.MustDo(t, `query($c: ID!) { conversation(id: $c) { messageCount } }`, map[string]any{"c": conv}, &out)
	if out.Conversation.MessageCount != 0 {
		t.Errorf("messageCount %d after refused writes, want 0", out.Conversation.MessageCount)
	}
}
