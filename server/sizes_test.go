package server_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/parley-dev/parley/internal/testserver"
)

// TestMessageSizeLimits: a message over a size limit is refused at write time with the
// limit's own code, naming the field and the limit, and nothing is written; the same
// holds for imports, which go through the same validation; a message at each limit is
// stored.
func TestMessageSizeLimits(t *testing.T) {
	t.Parallel()
	srv := testserver.New(t)
	conv := srv.CreateConversation(t, "sizes")
	const mib = 1 << 20
	calls := func(prefix string, n, argBytes int) []any {
		out := make([]any, n)
		for i := range out {
			args := `{}`
			if argBytes > 0 {
				args = fmt.Sprintf(`{"content":%q}`, strings.Repeat("a", argBytes-len(`{"content":""}`)))
			}
			out[i] = map[string]any{"id": fmt.Sprintf("%s_%d", prefix, i), "name": "write", "arguments": json.RawMessage(args)}
		}
		return out
	}
	tests := []struct {
		name    string
		input   map[string]any
		code    string // "" when it is stored
		message string
	}{
		{"text at the limit", testserver.Text("USER", strings.Repeat("x", mib)), "", ""},
		{"text over the limit", testserver.Text("USER", strings.Repeat("x", mib+1)), "MESSAGE_TOO_LARGE", "text: the text is 1048577 bytes, more than the 1048576 allowed"},
		{"parts over the limit together", map[string]any{"text": map[string]any{"role": "ASSISTANT", "parts": []any{
			map[string]any{"kind": "THINKING", "text": strings.Repeat("t", mib/2+1)},
			map[string]any{"kind": "TEXT", "text": strings.Repeat("x", mib/2)}}}}, "MESSAGE_TOO_LARGE", "more than the 1048576 allowed"},
		{"128 tool calls", map[string]any{"toolRequest": map[string]any{"toolCalls": calls("many", 128, 0)}}, "", ""},
		{"129 tool calls", map[string]any{"toolRequest": map[string]any{"toolCalls": calls("toomany", 129, 0)}}, "TOO_MANY_TOOL_CALLS", "129 calls, at most 128 allowed"},
		{"arguments at the limit", map[string]any{"toolRequest": map[string]any{"toolCalls": calls("big", 1, mib)}}, "", ""},
		{"arguments over the limit", map[string]any{"toolRequest": map[string]any{"toolCalls": calls("toobig", 1, mib+1)}}, "TOOL_ARGUMENTS_TOO_LARGE", "toolRequest.toolCalls[0].arguments: 1048577 bytes, at most 1048576 allowed"},
	}
	stored := 0
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := srv.Do(t, `mutation($c: ID!, $i: MessageInput!) { addMessage(conversationId: $c, input: $i) { cursor } }`,
				map[string]any{"c": conv, "i": tt.input})
			if tt.code == "" {
				if len(r.Errors) > 0 {
					t.Fatalf("got %+v, want it stored", r.Errors)
				}
				stored++
				return
			}
			if code := r.ErrorCode(t); code != tt.code || !strings.Contains(r.Errors[0].Message, tt.message) {
				t.Errorf("got %s %q, want %s saying %q", code, r.Errors[0].Message, tt.code, tt.message)
			}
		})
	}
	var out struct{ Conversation struct{ MessageCount int } }
	srv.MustDo(t, `query($c: ID!) { conversation(id: $c) { messageCount } }`, map[string]any{"c": conv}, &out)
	if out.Conversation.MessageCount != stored {
		t.Errorf("the conversation has %d messages, want the %d stored: a refused one was written", out.Conversation.MessageCount, stored)
	}

	// Imports: an OpenAI chat whose second message is over the limit adds nothing.
	history, _ := json.Marshal([]any{
		map[string]any{"role": "user", "content": "hello"},
		map[string]any{"role": "assistant", "content": strings.Repeat("x", mib+1)},
	})
	r := srv.Do(t, `mutation($d: String!) { importConversation(format: OPENAI_CHAT, data: $d, title: "too big") { added } }`,
		map[string]any{"d": string(history)})
	if code := r.ErrorCode(t); code != "MESSAGE_TOO_LARGE" {
		t.Errorf("import: got %s %q, want MESSAGE_TOO_LARGE", code, r.Errors[0].Message)
	}
	var list struct {
		Conversations struct{ TotalCount int }
	}
	srv.MustDo(t, `{ conversations { totalCount } }`, nil, &list)
	if list.Conversations.TotalCount != 1 {
		t.Errorf("got %d conversations after the refused import, want 1", list.Conversations.TotalCount)
	}
}
