package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/parley-dev/parley"
	"github.com/parley-dev/parley/auth"
	"github.com/parley-dev/parley/db"
	"github.com/parley-dev/parley/internal/testserver"
)

// TestOwnerIsolation: every query, mutation and subscription that names a
// conversation or message answers for another owner's exactly as for one that does
// not exist, so a token learns nothing of what others have, and changes nothing of it.
func TestOwnerIsolation(t *testing.T) {
	t.Parallel()
	srv := testserver.NewWiredWith(t, "", testserver.Options{Auth: func(store *db.DB) auth.Config {
		return auth.Config{Tokens: store}
	}})
	aliceToken, _ := token(t, srv.Server, "alice", nil)
	bobToken, _ := token(t, srv.Server, "bob", nil)
	alice, bob := srv.As(aliceToken), srv.As(bobToken)

	// Bob's conversation: text, a pending tool call, a file reference, an image, and an
	// approved call waiting for its result.
	conv := bob.CreateConversation(t, "bob's")
	text := bob.AddMessage(t, conv, testserver.Text("USER", "secret")).ID
	call := func(id string) map[string]any {
		return map[string]any{"toolRequest": map[string]any{"toolCalls": []any{map[string]any{"id": id, "name": "shell", "arguments": map[string]any{}}}}}
	}
	pending := bob.AddMessage(t, conv, call("c1")).ID
	file := bob.AddMessage(t, conv, map[string]any{"fileReference": map[string]any{"path": "main.go"}}).ID
	image := bob.AddMessage(t, conv, map[string]any{"image": map[string]any{"url": "https://example.com/a.png"}}).ID
	approved := bob.AddMessage(t, conv, call("c2")).ID
	bob.MustDo(t, `mutation($m: ID!) { setToolCallApproval(messageId: $m, toolCallId: "c2", status: APPROVED) { id } }`,
		map[string]any{"m": approved}, nil)
	alice.CreateConversation(t, "alice's")

	missingConv := parley.ConversationID(uuid.NewString())
	missingMsg := parley.MessageID(uuid.NewString())
	foreign := ids{conv, text, pending, file, image, approved}
	missing := ids{missingConv, missingMsg, missingMsg, missingMsg, missingMsg, missingMsg}

	for _, tt := range []struct {
		name  string
		query string
		vars  func(ids) map[string]any
		want  string // the error code; "" for none (then the data must match)
	}{
		{"conversation", `query($c: ID!) { conversation(id: $c) { id title } }`,
			func(i ids) map[string]any { return map[string]any{"c": i.conv} }, "NOT_FOUND"},
		{"message", `query($m: ID!) { message(id: $m) { __typename } }`,
			func(i ids) map[string]any { return map[string]any{"m": i.text} }, "NOT_FOUND"},
		{"node of a conversation", `query($c: ID!) { node(id: $c) { id } }`,
			func(i ids) map[string]any { return map[string]any{"c": i.conv} }, ""},
		{"node of a message", `query($m: ID!) { node(id: $m) { id } }`,
			func(i ids) map[string]any { return map[string]any{"m": i.text} }, ""},
		{"nodes", `query($c: ID!, $m: ID!) { nodes(ids: [$c, $m]) { id } }`,
			func(i ids) map[string]any { return map[string]any{"c": i.conv, "m": i.text} }, ""},
		{"export", `query($c: ID!) { conversation(id: $c) { transcript(format: MARKDOWN) } }`,
			func(i ids) map[string]any { return map[string]any{"c": i.conv} }, "NOT_FOUND"},
		{"tool calls awaiting result", `query($c: ID!) { toolCallsAwaitingResult(conversationId: $c) { toolCall { id } } }`,
			func(i ids) map[string]any { return map[string]any{"c": i.conv} }, "NOT_FOUND"},
		{"renameConversation", `mutation($c: ID!) { renameConversation(id: $c, title: "mine now") { id } }`,
			func(i ids) map[string]any { return map[string]any{"c": i.conv} }, "NOT_FOUND"},
		{"deleteConversation", `mutation($c: ID!) { deleteConversation(id: $c) }`,
			func(i ids) map[string]any { return map[string]any{"c": i.conv} }, "NOT_FOUND"},
		{"addMessage", `mutation($c: ID!) { addMessage(conversationId: $c, input: {text: {role: USER, content: "hi"}}) { cursor } }`,
			func(i ids) map[string]any { return map[string]any{"c": i.conv} }, "NOT_FOUND"},
		{"addMessage of a tool result", `mutation($c: ID!) { addMessage(conversationId: $c, input: {toolResult: {toolCallId: "c1", status: SUCCESS, output: 1}}) { cursor } }`,
			func(i ids) map[string]any { return map[string]any{"c": i.conv} }, "NOT_FOUND"},
		{"setToolCallApproval", `mutation($m: ID!) { setToolCallApproval(messageId: $m, toolCallId: "c1", status: APPROVED) { id } }`,
			func(i ids) map[string]any { return map[string]any{"m": i.pending} }, "NOT_FOUND"},
		{"importConversation into it", `mutation($c: ID!) { importConversation(format: OPENAI_CHAT, data: "[{\"role\":\"user\",\"content\":\"x\"}]", conversationId: $c) { added } }`,
			func(i ids) map[string]any { return map[string]any{"c": i.conv} }, "NOT_FOUND"},
		{"resolveFileReference", `mutation($m: ID!) { resolveFileReference(messageId: $m) { id } }`,
			func(i ids) map[string]any { return map[string]any{"m": i.file} }, "NOT_FOUND"},
		{"recognizeImage", `mutation($m: ID!) { recognizeImage(messageId: $m, mode: OCR) { id } }`,
			func(i ids) map[string]any { return map[string]any{"m": i.image} }, "NOT_FOUND"},
		{"injectMCPResource", `mutation($c: ID!) { injectMCPResource(conversationId: $c, server: "docs", uri: "docs://x") { cursor } }`,
			func(i ids) map[string]any { return map[string]any{"c": i.conv} }, "BAD_USER_INPUT"}, // no MCP servers here: refused before any look-up
		{"claimToolCall", `mutation($m: ID!) { claimToolCall(messageId: $m, toolCallId: "c2", worker: "w") { toolCall { id } } }`,
			func(i ids) map[string]any { return map[string]any{"m": i.approved} }, "NOT_FOUND"},
	} {
		got := map[string]*testserver.Response{}
		for which, i := range map[string]ids{"foreign": foreign, "missing": missing} {
			got[which] = alice.Do(t, tt.query, tt.vars(i))
		}
		f, m := got["foreign"], got["missing"]
		if tt.want != "" {
			if code := f.ErrorCode(t); code != tt.want {
				t.Errorf("%s: another owner's: got %s %q, want %s", tt.name, code, f.Errors[0].Message, tt.want)
			}
		}
		if a, b := redact(f, foreign.ids()...), redact(m, missing.ids()...); a != b {
			t.Errorf("%s: another owner's and a missing one answer differently:\n%s\n%s", tt.name, a, b)
		}
	}

	// Subscriptions (over SSE) refuse alike.
	for _, tt := range []struct{ name, query string }{
		{"messageAdded", `subscription($c: ID!) { messageAdded(conversationId: $c) { cursor } }`},
		{"messageUpdated", `subscription($c: ID!) { messageUpdated(conversationId: $c) { cursor } }`},
		{"toolCallAwaitingResult", `subscription($c: ID) { toolCallAwaitingResult(conversationId: $c) { toolCall { id } } }`},
	} {
		f := sseOnce(t, srv.URL, aliceToken, tt.query, map[string]any{"c": conv})
		m := sseOnce(t, srv.URL, aliceToken, tt.query, map[string]any{"c": missingConv})
		if !strings.Contains(f, "NOT_FOUND") {
			t.Errorf("%s: another owner's: got %s, want NOT_FOUND", tt.name, f)
		}
		if a, b := strings.ReplaceAll(f, conv, "<ID>"), strings.ReplaceAll(m, missingConv, "<ID>"); a != b {
			t.Errorf("%s: another owner's and a missing one answer differently:\n%s\n%s", tt.name, a, b)
		}
	}

	// Lists hold only the owner's own.
	var list struct {
		Conversations struct {
			TotalCount int
			Edges      []struct{ Node struct{ Title string } }
		}
		ToolCallsAwaitingResult []struct{ ToolCall struct{ ID string } }
	}
	alice.MustDo(t, `{ conversations { totalCount edges { node { title } } } toolCallsAwaitingResult { toolCall { id } } }`, nil, &list)
	if list.Conversations.TotalCount != 1 || len(list.Conversations.Edges) != 1 || list.Conversations.Edges[0].Node.Title != "alice's" {
		t.Errorf("alice's list: got %+v, want only her own conversation", list.Conversations)
	}
	if len(list.ToolCallsAwaitingResult) != 0 {
		t.Errorf("alice's awaiting calls: got %+v, want none", list.ToolCallsAwaitingResult)
	}

	// Bob's conversation is as he left it.
	var after struct {
		Conversation struct {
			Title        string
			MessageCount int
		}
		ToolCallsAwaitingResult []struct {
			ToolCall  struct{ ID string }
			ClaimedBy *string
		}
	}
	bob.MustDo(t, `query($c: ID!) { conversation(id: $c) { title messageCount } toolCallsAwaitingResult(conversationId: $c) { toolCall { id } claimedBy } }`,
		map[string]any{"c": conv}, &after)
	if after.Conversation.Title != "bob's" || after.Conversation.MessageCount != 5 {
		t.Errorf("bob's conversation: got %+v, want it untouched (title bob's, 5 messages)", after.Conversation)
	}
	if len(after.ToolCallsAwaitingResult) != 1 || after.ToolCallsAwaitingResult[0].ClaimedBy != nil {
		t.Errorf("bob's awaiting call: got %+v, want c2 unclaimed", after.ToolCallsAwaitingResult)
	}
}

// ids are the ids an operation of TestOwnerIsolation may name.
type ids struct{ conv, text, pending, file, image, approved string }

func (i ids) ids() []string { return []string{i.conv, i.text, i.pending, i.file, i.image, i.approved} }

// redact is a response without request ids and with ids replaced, to compare answers
// about different ids.
func redact(r *testserver.Response, ids ...string) string {
	for _, e := range r.Errors {
		delete(e.Extensions, "requestId")
	}
	b, _ := json.Marshal(struct {
		Data   json.RawMessage
		Errors []testserver.Error
	}{r.Data, r.Errors})
	s := string(b)
	for _, id := range ids {
		s = strings.ReplaceAll(s, id, "<ID>")
	}
	return s
}

// sseOnce subscribes over SSE and returns the whole stream, which a refused
// subscription ends at once.
func sseOnce(t *testing.T, url, token, query string, vars map[string]any) string {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"query": query, "variables": vars})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url+"/graphql", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("the refused subscription's stream did not end: %v\n%s", err, b)
	}
	s := string(b)
	if i := strings.Index(s, `"requestId"`); i >= 0 {
		// Request ids differ; drop them.
		if j := strings.IndexAny(s[i+len(`"requestId"`):], ",}"); j >= 0 {
			s = s[:i] + s[i+len(`"requestId"`)+j:]
		}
	}
	return s
}
