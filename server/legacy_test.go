package server_test

import (
	"strings"
	"testing"

	"github.com/parley-dev/parley/internal/selection"
	"github.com/parley-dev/parley/internal/testserver"
)

// TestV1RowsReadAsVariants writes records of the first Parley's flat shape (schema
// version 1: roles user/assistant/tool, tool_calls, tool_results, tool_call_id) with SQL,
// as a database upgraded from it holds them, and reads them through the API as typed
// variants.
func TestV1RowsReadAsVariants(t *testing.T) {
	t.Parallel()
	srv := testserver.New(t)
	conv := srv.CreateConversation(t, "legacy")
	key := strings.TrimPrefix(conv, "conv_")
	_, err := srv.Store.SQL().Exec(`
		INSERT INTO messages (conversation_id, position, schema_version, kind, role, content, tool_calls, tool_results, payload) VALUES
		($1, 1, 1, NULL, 'user', 'What is in &lt;b&gt;main.go&lt;/b&gt;?', NULL, NULL, '{}'),
		($1, 2, 1, NULL, 'assistant', 'Let me read it.',
			'[{"id":"call_1","type":"function","function":{"name":"read_file","arguments":"{\"path\":\"main.go\"}"}}]', NULL, '{}'),
		($1, 3, 1, NULL, 'tool', 'package main', NULL, '[{"tool_call_id":"call_1","output":{"lines":1}}]', '{}'),
		($1, 4, 1, NULL, 'tool', 'permission denied', NULL, '[{"is_error":true}]', '{"tool_call_id":"call_2"}'),
		($1, 5, 1, NULL, 'assistant', 'It declares package main.', '[]', NULL, '{}')`, key)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := srv.Store.SQL().Exec(`UPDATE conversations SET last_position = 5, message_count = 5 WHERE id = $1`, key); err != nil {
		t.Fatal(err)
	}
	p := readPage(t, srv, map[string]any{"c": conv, "first": 10})
	want := []node{
		{"__typename": "TextMessage", "role": "USER", "label": "User", "text": "What is in <b>main.go</b>?", "content": "What is in &lt;b&gt;main.go&lt;/b&gt;?"},
		{"__typename": "ToolRequestMessage", "role": "INVOCATION", "label": "Tool Call", "text": "Let me read it.",
			"toolCalls": []any{node{"callId": "call_1", "name": "read_file", "arguments": node{"path": "main.go"}, "approvalStatus": "PENDING", "decision": nil, "imported": false,
				"argumentsRaw": nil, "argumentsValid": true, "itemId": nil, "partIndex": nil, "thoughtSignature": nil}}},
		{"__typename": "ToolResultMessage", "role": "RESULT", "toolCallId": "call_1", "status": "SUCCESS", "output": node{"lines": 1}, "text": "package main"},
		{"__typename": "ToolResultMessage", "role": "RESULT", "toolCallId": "call_2", "status": "ERROR",
			"error": node{"message": "permission denied", "stackTrace": nil, "recoverable": false}},
		{"__typename": "TextMessage", "role": "ASSISTANT", "text": "It declares package main."},
	}
	if len(p.Conversation.Messages.Edges) != len(want) {
		t.Fatalf("got %d messages, want %d", len(p.Conversation.Messages.Edges), len(want))
	}
	for i, w := range want {
		w["position"] = float64(i + 1)
		expectToolCallIDs(w, p.Conversation.Messages.Edges[i].Node)
		assertFields(t, w["__typename"].(string), p.Conversation.Messages.Edges[i].Node, w)
	}

	// Deciding a version 1 tool call rewrites the record as version 2.
	reqID := p.Conversation.Messages.Edges[1].Node["id"].(string)
	srv.MustDo(t, `mutation($m: ID!) { setToolCallApproval(messageId: $m, toolCallId: "call_1", status: APPROVED) { id } }`,
		map[string]any{"m": reqID}, nil)
	var version int
	if err := srv.Store.SQL().Get(&version, `SELECT schema_version FROM messages WHERE id = $1`, strings.TrimPrefix(reqID, "msg_")); err != nil {
		t.Fatal(err)
	}
	if version != 2 {
		t.Errorf("schema_version after a decision: got %d, want 2", version)
	}
	var again struct{ Node node }
	srv.MustDo(t, `query($id: ID!) { node(id: $id) {`+selection.MessageFields+`} }`, map[string]any{"id": reqID}, &again)
	assertFields(t, "upgraded request", again.Node, node{"text": "Let me read it.", "role": "INVOCATION"})
	calls := again.Node["toolCalls"].([]any)
	if calls[0].(map[string]any)["approvalStatus"] != "APPROVED" {
		t.Errorf("upgraded request's call: got %v, want APPROVED", calls[0])
	}
}

// TestUnknownKindKeptIntact: a stored message of a kind this version does not know comes
// back as an UnknownMessage with its type tag and JSON, and does not break the page.
func TestUnknownKindKeptIntact(t *testing.T) {
	t.Parallel()
	srv := testserver.New(t)
	conv := srv.CreateConversation(t, "future")
	srv.AddMessage(t, conv, testserver.Text("USER", "before"))
	_, err := srv.Store.SQL().Exec(`
		INSERT INTO messages (conversation_id, position, kind, role, payload)
		VALUES ($1, 2, 'hologram', 'assistant', '{"frames": [1, 2, 3], "codec": "h9"}')`, strings.TrimPrefix(conv, "conv_"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := srv.Store.SQL().Exec(`UPDATE conversations SET last_position = 2, message_count = 2 WHERE id = $1`,
		strings.TrimPrefix(conv, "conv_")); err != nil {
		t.Fatal(err)
	}
	srv.AddMessage(t, conv, testserver.Text("ASSISTANT", "after"))
	p := readPage(t, srv, map[string]any{"c": conv, "first": 10})
	if len(p.Conversation.Messages.Edges) != 3 {
		t.Fatalf("got %d messages, want 3", len(p.Conversation.Messages.Edges))
	}
	assertFields(t, "unknown", p.Conversation.Messages.Edges[1].Node, node{
		"__typename": "UnknownMessage", "type": "hologram", "role": "ASSISTANT", "label": "Unknown",
		"position": 2, "raw": node{"codec": "h9", "frames": []any{1, 2, 3}},
	})
	assertFields(t, "after", p.Conversation.Messages.Edges[2].Node, node{"position": 3, "text": "after"})
}
