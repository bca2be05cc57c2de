package interop_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/parley-dev/parley/internal/testserver"
)

// jsonl joins records into a session file, one JSON object per line.
func jsonl(t *testing.T, records ...any) string {
	t.Helper()
	var b strings.Builder
	for _, r := range records {
		if s, ok := r.(string); ok {
			b.WriteString(s + "\n")
			continue
		}
		raw, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		b.Write(raw)
		b.WriteByte('\n')
	}
	return b.String()
}

type obj = map[string]any

func ccUser(uuid string, content any) obj {
	return obj{"type": "user", "uuid": uuid, "timestamp": "2026-02-10T10:00:00Z", "message": obj{"role": "user", "content": content}}
}

func ccAssistant(uuid, id string, blocks ...any) obj {
	return obj{"type": "assistant", "uuid": uuid, "timestamp": "2026-02-10T10:00:01Z",
		"message": obj{"id": id, "role": "assistant", "model": "claude-opus-4-6", "content": blocks}}
}

// TestMalformedInput feeds each importer broken input of every kind: each is refused
// with BAD_USER_INPUT naming the line or index and what is wrong, and nothing is
// written, neither a new conversation nor a message in an existing one.
func TestMalformedInput(t *testing.T) {
	t.Parallel()
	srv := testserver.New(t)
	existing := srv.CreateConversation(t, "has one message")
	srv.AddMessage(t, existing, testserver.Text("USER", "hello"))

	good := ccUser("u1", "hi")
	call := ccAssistant("a1", "msg_1", obj{"type": "tool_use", "id": "toolu_1", "name": "Bash", "input": obj{"command": "ls"}})
	notPNG := "aGVsbG8gd29ybGQ=" // "hello world"
	cases := []struct {
		name, format, data, want string
	}{
		// Claude Code
		{"truncated line", "CLAUDE_CODE_JSONL", jsonl(t, good, `{"type":"user","uuid":"u2","message":{"role":"us`),
			"line 2: not valid JSON (it ends early: the line is truncated)"},
		{"not an object", "CLAUDE_CODE_JSONL", jsonl(t, good, `[1, 2]`), "line 2: a record must be a JSON object, got an array"},
		{"no type", "CLAUDE_CODE_JSONL", jsonl(t, obj{"uuid": "x"}), `line 1: no "type" field`},
		{"type of the wrong type", "CLAUDE_CODE_JSONL", jsonl(t, obj{"type": 7}), "line 1: type: want a string, got number"},
		{"flag of the wrong type", "CLAUDE_CODE_JSONL", jsonl(t, obj{"type": "user", "isSidechain": "no", "message": obj{"content": "x"}}),
			"line 1: isSidechain: want a boolean, got string"},
		{"content of the wrong type", "CLAUDE_CODE_JSONL", jsonl(t, ccUser("u1", 42)),
			"line 1: message.content: want a string or an array of blocks, got a number"},
		{"block of the wrong type", "CLAUDE_CODE_JSONL", jsonl(t, ccUser("u1", []any{"text"})),
			"line 1: message.content[0]: want a block object, got a string"},
		{"field of a block of the wrong type", "CLAUDE_CODE_JSONL", jsonl(t, ccUser("u1", []any{obj{"type": "text", "text": 3}})),
			"line 1: message.content[0].text: want a string, got number"},
		{"unknown role", "CLAUDE_CODE_JSONL", jsonl(t, obj{"type": "user", "message": obj{"role": "robot", "content": "x"}}),
			`line 1: message.role: "robot" in a user record; want "user"`},
		{"bad timestamp", "CLAUDE_CODE_JSONL", jsonl(t, obj{"type": "user", "timestamp": "yesterday", "message": obj{"content": "x"}}),
			`line 1: timestamp: "yesterday" is not an ISO 8601 time`},
		{"tool_result naming no call", "CLAUDE_CODE_JSONL",
			jsonl(t, good, ccUser("u2", []any{obj{"type": "tool_result", "tool_use_id": "toolu_9", "content": "x"}})),
			`line 2: message.content[0]: tool_result for tool_use "toolu_9", which no earlier line calls`},
		// An input that is not an object is kept, flagged invalid: see TestArgumentsByteForByte.
		{"tool_use id used twice", "CLAUDE_CODE_JSONL",
			jsonl(t, call, ccAssistant("a2", "msg_2", obj{"type": "tool_use", "id": "toolu_1", "name": "Bash", "input": obj{}})),
			`line 2: message.content[0].id: tool_use id "toolu_1" is already used on line 1`},
		{"a late line fails the whole import", "CLAUDE_CODE_JSONL", jsonl(t, good, call, good, `{"type":`), "line 4: not valid JSON"},
		{"a message the store refuses", "CLAUDE_CODE_JSONL",
			jsonl(t, good, ccUser("u2", []any{obj{"type": "image", "source": obj{"type": "base64", "media_type": "image/png", "data": notPNG}}})),
			"line 2: image.base64: the data is text/plain; charset=utf-8, not the image/png that mediaType says"},
		{"an invalid tool name", "CLAUDE_CODE_JSONL",
			jsonl(t, good, ccAssistant("a1", "msg_1", obj{"type": "tool_use", "id": "toolu_1", "name": "no spaces allowed", "input": obj{}})),
			`line 2: toolRequest.toolCalls[0].name: "no spaces allowed" is not a valid tool name`},

		// OpenAI Chat
		{"not JSON", "OPENAI_CHAT", `[{"role": "user", "content": "hi"}`, "input: not valid JSON (it ends early: the input is truncated)"},
		{"not an array", "OPENAI_CHAT", `{"messages": 3}`, "messages: want an array, got a number"},
		{"unknown role", "OPENAI_CHAT", `[{"role": "robot", "content": "hi"}]`, `messages[0].role: "robot" is not system, developer, user, assistant or tool`},
		{"content of the wrong type", "OPENAI_CHAT", `[{"role": "user", "content": 5}]`,
			"messages[0].content: want a string or an array of content parts, got a number"},
		{"tool_calls of the wrong type", "OPENAI_CHAT", `[{"role": "assistant", "tool_calls": {"id": "x"}}]`,
			"messages[0].tool_calls: want an array, got object"},
		{"tool message naming no call", "OPENAI_CHAT", `[{"role": "user", "content": "hi"}, {"role": "tool", "tool_call_id": "call_9", "content": "x"}]`,
			`messages[1].tool_call_id: "call_9" names no tool call of an earlier assistant message`},
		{"tool message without a call id", "OPENAI_CHAT", `[{"role": "tool", "content": "x"}]`,
			"messages[0].tool_call_id: a tool message must name the call it answers"},
		// Arguments that are not JSON are kept as produced, flagged invalid (see
		// TestArgumentsByteForByte); only what Postgres cannot store is refused.
		{"arguments with a NUL byte", "OPENAI_CHAT",
			`[{"role": "assistant", "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{\"a\": \"\u0000\"}"}}]}]`,
			"toolRequest.toolCalls[0].argumentsRaw: contains a NUL byte"},
		{"call answered twice", "OPENAI_CHAT",
			`[{"role": "assistant", "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}]},
			  {"role": "tool", "tool_call_id": "c1", "content": "a"}, {"role": "tool", "tool_call_id": "c1", "content": "b"}]`,
			`messages[2].tool_call_id: call "c1" was already answered in messages[1]`},

		// Anthropic Messages
		{"unknown role", "ANTHROPIC_MESSAGES", `{"messages": [{"role": "tool", "content": "x"}]}`, `messages[0].role: "tool" is not user or assistant`},
		{"content of the wrong type", "ANTHROPIC_MESSAGES", `{"messages": [{"role": "user", "content": {"type": "text"}}]}`,
			"messages[0].content: want a string or an array of content blocks, got an object"},
		{"tool_result naming no call", "ANTHROPIC_MESSAGES",
			`{"messages": [{"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_9", "content": "x"}]}]}`,
			`messages[0].content[0].tool_use_id: "toolu_9" names no tool_use of an earlier assistant message`},
		{"bad base64", "ANTHROPIC_MESSAGES",
			`{"messages": [{"role": "user", "content": [{"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "!!"}}]}]}`,
			"messages[0].content[0].source.data: not valid base64"},
		{"system of the wrong type", "ANTHROPIC_MESSAGES", `{"system": 1, "messages": []}`,
			"system: want a string or an array of content blocks, got a number"},

		// Parley JSON
		{"not a Parley export", "PARLEY_JSON", `{"format": "something.else", "version": 1, "messages": []}`, `format: "something.else" is not "parley.conversation"`},
		{"a newer version", "PARLEY_JSON", `{"format": "parley.conversation", "version": 9, "messages": []}`, "version: 9 is newer than this Parley reads (1)"},
		{"no type tag", "PARLEY_JSON", `{"format": "parley.conversation", "version": 1, "messages": [{"role": "USER"}]}`,
			"messages[0].type: every message needs a type tag"},
		{"field of the wrong type", "PARLEY_JSON",
			`{"format": "parley.conversation", "version": 1, "messages": [{"type": "text", "role": "USER", "parts": [{"kind": "TEXT", "text": 1}]}]}`,
			"messages[0].parts.text: want a string, got number"},
		{"unknown role", "PARLEY_JSON", `{"format": "parley.conversation", "version": 1, "messages": [{"type": "text", "role": "ROBOT", "parts": []}]}`,
			`messages[0].role: "ROBOT" is not a role`},
		{"result naming no call", "PARLEY_JSON",
			`{"format": "parley.conversation", "version": 1, "messages": [
			  {"type": "text", "role": "USER", "parts": [{"kind": "TEXT", "text": "hi"}]},
			  {"type": "tool_result", "role": "RESULT", "toolCallId": "call_9", "status": "SUCCESS", "parts": []}]}`,
			`messages[1]: toolResult.toolCallId: no tool call "call_9" in this conversation`},
	}
	before := conversationCount(t, srv)
	for _, tc := range cases {
		for _, into := range []string{"", existing} {
			r := srv.Do(t, importMutation, importVars(tc.format, tc.data, into, ""))
			if code := r.ErrorCode(t); code != "BAD_USER_INPUT" {
				t.Errorf("%s/%s: got code %s, want BAD_USER_INPUT (%s)", tc.format, tc.name, code, r.Errors[0].Message)
				continue
			}
			if msg := r.Errors[0].Message; !strings.Contains(msg, tc.want) {
				t.Errorf("%s/%s: got error %q, want it to contain %q", tc.format, tc.name, msg, tc.want)
			}
		}
	}
	if n := conversationCount(t, srv); n != before {
		t.Errorf("%d conversations after the failed imports, want %d: a failed import created one", n, before)
	}
	if n := messageCount(t, srv, existing); n != 1 {
		t.Errorf("the existing conversation has %d messages after the failed imports, want 1", n)
	}
}

// TestImportTargets checks where an import goes: a missing conversation is NOT_FOUND,
// a conversation and a title at once is refused, and a history without a title is
// named after its first prompt.
func TestImportTargets(t *testing.T) {
	t.Parallel()
	srv := testserver.New(t)
	chat := `[{"role": "user", "content": "How do I   reverse a linked list in place, without recursion, in Go? Please explain each step."}]`
	r := srv.Do(t, importMutation, importVars("OPENAI_CHAT", chat, "conv_00000000-0000-4000-8000-000000000000", ""))
	if code := r.ErrorCode(t); code != "NOT_FOUND" {
		t.Errorf("into a missing conversation: got %s, want NOT_FOUND", code)
	}
	conv := srv.CreateConversation(t, "x")
	r = srv.Do(t, importMutation, importVars("OPENAI_CHAT", chat, conv, "a title"))
	if code := r.ErrorCode(t); code != "BAD_USER_INPUT" {
		t.Errorf("with a conversation and a title: got %s, want BAD_USER_INPUT", code)
	}
	rep := importData(t, srv, "OPENAI_CHAT", chat, "", "")
	if want := "How do I reverse a linked list in place, without recursion, in Go? Please…"; rep.Conversation.Title != want {
		t.Errorf("title: got %q, want %q", rep.Conversation.Title, want)
	}
	if rep.SystemPrompt != nil {
		t.Errorf("systemPrompt: got %q, want null", *rep.SystemPrompt)
	}
	r = srv.Do(t, importMutation, importVars("OPENAI_CHAT", chat, "", strings.Repeat("x", 501)))
	if code := r.ErrorCode(t); code != "BAD_USER_INPUT" {
		t.Errorf("with a title too long: got %s, want BAD_USER_INPUT", code)
	}
}
