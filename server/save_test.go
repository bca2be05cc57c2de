package server_test

import (
	"reflect"
	"testing"

	"github.com/parley-dev/parley"
	"github.com/parley-dev/parley/internal/testserver"
)

// TestRefusedSavesWriteNothing: a save refused by a check its insert has run before (a
// compaction covering itself, a tool request reusing a call id) or by its conversation
// (none such, whether in the single statement of a plain save or in a transaction), or
// by its parent (none such in the conversation: the single statement places nothing,
// then the steps in a transaction say why) leaves the conversation as it was: no message, the same count, the same updatedAt.
func TestRefusedSavesWriteNothing(t *testing.T) {
	t.Parallel()
	srv := testserver.New(t)
	conv := srv.CreateConversation(t, "refusals")
	srv.AddMessage(t, conv, testserver.Text("USER", "hi"))
	srv.AddMessage(t, conv, map[string]any{"toolRequest": map[string]any{"toolCalls": []any{
		map[string]any{"id": "c1", "name": "ls", "arguments": map[string]any{}}}}})
	missing := parley.ConversationID("00000000-0000-0000-0000-000000000000")
	other := srv.AddMessage(t, srv.CreateConversation(t, "another"), testserver.Text("USER", "elsewhere")).ID
	before := readPage(t, srv, map[string]any{"c": conv, "first": 100})
	for _, tt := range []struct {
		name  string
		conv  string
		input map[string]any
		key   string // clientMessageId
		under string // parentId
		want  string
	}{
		{"compaction covering itself", conv, map[string]any{"compaction": map[string]any{"content": "x", "coversThrough": 3}}, "", "", "BAD_USER_INPUT"},
		{"tool request reusing a call id", conv, map[string]any{"toolRequest": map[string]any{"toolCalls": []any{
			map[string]any{"id": "c2", "name": "ls", "arguments": map[string]any{}},
			map[string]any{"id": "c1", "name": "ls", "arguments": map[string]any{}}}}}, "", "", "BAD_USER_INPUT"},
		{"text into no conversation", missing, testserver.Text("USER", "lost"), "", "", "NOT_FOUND"},
		{"text with a client id into no conversation", missing, testserver.Text("USER", "lost"), "k1", "", "NOT_FOUND"},
		{"text into a malformed id", "conv_nope", testserver.Text("USER", "lost"), "", "", "NOT_FOUND"},
		// Tried in one statement, which places nothing, then by the steps, which say why.
		{"text under a message of no conversation", conv, testserver.Text("USER", "lost"), "", parley.MessageID("00000000-0000-0000-0000-000000000000"), "NOT_FOUND"},
		{"text under a message of another conversation", conv, testserver.Text("USER", "lost"), "", other, "NOT_FOUND"},
	} {
		vars := map[string]any{"c": tt.conv, "i": tt.input}
		if tt.key != "" {
			vars["k"] = tt.key
		}
		if tt.under != "" {
			vars["p"] = tt.under
		}
		r := srv.Do(t, `mutation($c: ID!, $i: MessageInput!, $k: String, $p: ID) {
			addMessage(conversationId: $c, input: $i, clientMessageId: $k, parentId: $p) { cursor } }`, vars)
		if code := r.ErrorCode(t); code != tt.want {
			t.Errorf("%s: got %s %q, want %s", tt.name, code, r.Errors[0].Message, tt.want)
		}
	}
	if after := readPage(t, srv, map[string]any{"c": conv, "first": 100}); !reflect.DeepEqual(after, before) {
		t.Errorf("the conversation changed:\n got %+v\nwant %+v", after.Conversation, before.Conversation)
	}
}
