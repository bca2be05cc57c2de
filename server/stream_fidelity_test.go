package server_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	anthropicsdk "github.com/anthropics/anthropic-sdk-go"

	"github.com/parley-dev/parley/internal/testserver"
)

// replyFields is what a stored reply is compared by: its parts and calls, every field
// an import fills.
const replyFields = `__typename
	... on TextMessage { parts { kind text signature itemId raw citations } }
	... on ToolRequestMessage { parts { kind text signature itemId raw citations }
		toolCalls { callId name argumentsRaw argumentsValid itemId partIndex } }`

// lastReply returns the conversation's last message by replyFields, as JSON.
func lastReply(t *testing.T, srv *testserver.Server, conv string) string {
	t.Helper()
	var out struct {
		Conversation struct {
			Messages struct {
				Edges []struct{ Node json.RawMessage }
			}
		}
	}
	srv.MustDo(t, `query($c: ID!) { conversation(id: $c) { messages(last: 1) { edges { node { `+replyFields+` } } } } }`,
		map[string]any{"c": conv}, &out)
	if len(out.Conversation.Messages.Edges) != 1 {
		t.Fatalf("conversation %s has no message", conv)
	}
	return string(out.Conversation.Messages.Edges[0].Node)
}

// transcript adds a user's "Go on." to the conversation and returns its transcript in
// format, its unanswered calls closed with an error result (repair).
func transcript(t *testing.T, srv *testserver.Server, conv, format string) string {
	t.Helper()
	srv.MustDo(t, `mutation($c: ID!) { addMessage(conversationId: $c, input: {text: {role: USER, content: "Go on."}}) { cursor } }`,
		map[string]any{"c": conv}, nil)
	var out struct {
		Conversation struct{ Transcript json.RawMessage }
	}
	srv.MustDo(t, `query($c: ID!, $f: TranscriptFormat!) { conversation(id: $c) { transcript(format: $f, repair: true) } }`,
		map[string]any{"c": conv, "f": format}, &out)
	return string(out.Conversation.Transcript)
}

// pipe starts a message in conv and appends events to it as format through
// appendProviderEvents, batch events at a time, each batch sent twice (the retry writes
// nothing); the first half through one server, the rest through other (which rebuilds
// the stream from the stored events). It returns the message's id.
func pipe(t *testing.T, one, other *testserver.Server, conv, format string, events []string, batch int) string {
	t.Helper()
	m := startMessage(t, one, conv, nil)
	seq := 0
	for start := 0; start < len(events); start += batch {
		srv := one
		if start >= len(events)/2 {
			srv = other
		}
		var evs []json.RawMessage
		for _, ev := range events[start:min(start+batch, len(events))] {
			evs = append(evs, json.RawMessage(ev))
		}
		seq++
		for range 2 {
			srv.MustDo(t, `mutation($m: ID!, $f: ProviderStreamFormat!, $s: Int!, $e: [JSON!]!) {
				appendProviderEvents(messageId: $m, format: $f, seq: $s, events: $e) { seq } }`,
				map[string]any{"m": m.ID, "f": format, "s": seq, "e": evs}, nil)
		}
	}
	return m.ID
}

func importHistory(t *testing.T, srv *testserver.Server, format, data string) string {
	t.Helper()
	var out struct {
		ImportConversation struct{ Conversation struct{ ID string } }
	}
	srv.MustDo(t, `mutation($f: ImportFormat!, $d: String!) { importConversation(format: $f, data: $d) { conversation { id } } }`,
		map[string]any{"f": format, "d": data}, &out)
	return out.ImportConversation.Conversation.ID
}

// TestStreamedAnthropicKeepsPartOrder: an Anthropic reply of thinking, text, tool_use,
// text, tool_use piped in through appendProviderEvents is stored as an
// ANTHROPIC_MESSAGES import of the reply the SDK assembles from the same events: each
// call at its partIndex, and the export gives the blocks back in their order, byte for
// byte as the import's. Cut short after the second text and aborted, it keeps the first
// call before that text, as the import of the reply so far has it.
func TestStreamedAnthropicKeepsPartOrder(t *testing.T) {
	t.Parallel()
	one := testserver.New(t)
	other := testserver.NewWith(t, testserver.Options{DSN: one.DSN})
	for _, tc := range []struct {
		file, end, status, calls string
	}{
		{"interleaved.sse", `mutation($m: ID!) { completeMessage(messageId: $m) { __typename } }`, "COMPLETED",
			`"callId":"toolu_01Read1","name":"read_file","argumentsRaw":"{\"path\":\"config.yaml\"}","argumentsValid":true,"itemId":null,"partIndex":2},` +
				`{"callId":"toolu_01Read2","name":"read_file","argumentsRaw":"{\"path\":\"main.go\",\"lines\":[1,40]}","argumentsValid":true,"itemId":null,"partIndex":3}`},
		{"interleaved-stopped.sse", `mutation($m: ID!) { abortMessage(messageId: $m, reason: "stop") { __typename } }`, "ABORTED",
			`"callId":"toolu_01Read1","name":"read_file","argumentsRaw":"{\"path\":\"config.yaml\"}","argumentsValid":true,"itemId":null,"partIndex":2}`},
	} {
		t.Run(tc.file, func(t *testing.T) {
			t.Parallel()
			data, err := os.ReadFile(filepath.Join("..", "interop", "anthropic", "testdata", "stream", tc.file))
			if err != nil {
				t.Fatal(err)
			}
			events := sseData(string(data))
			var acc anthropicsdk.Message
			for _, ev := range events {
				var e anthropicsdk.MessageStreamEventUnion
				if err := json.Unmarshal([]byte(ev), &e); err != nil {
					t.Fatal(err)
				}
				if err := acc.Accumulate(e); err != nil {
					t.Fatal(err)
				}
			}
			streamed := one.CreateConversation(t, "streamed")
			one.MustDo(t, `mutation($c: ID!) { addMessage(conversationId: $c, input: {text: {role: USER, content: "Go."}}) { cursor } }`,
				map[string]any{"c": streamed}, nil)
			id := pipe(t, one, other, streamed, "ANTHROPIC_MESSAGES", events, 4)
			ended := endMessage(t, other, strings.Replace(tc.end, "__typename", liveFields, 1), map[string]any{"m": id})
			if ended.MessageStatus != tc.status {
				t.Errorf("ended %s, want %s", ended.MessageStatus, tc.status)
			}

			// The same reply as the SDK holds it (sent back with ToParam), imported.
			reply, err := json.Marshal(acc.ToParam())
			if err != nil {
				t.Fatal(err)
			}
			imported := importHistory(t, one, "ANTHROPIC_MESSAGES", `{"messages":[{"role":"user","content":"Go."},`+string(reply)+`]}`)
			got, want := lastReply(t, one, streamed), lastReply(t, one, imported)
			if got != want {
				t.Errorf("streamed\n%s\nimported\n%s", got, want)
			}
			if !strings.Contains(got, tc.calls) {
				t.Errorf("streamed calls\n%s\nwant\n%s", got, tc.calls)
			}
			gotT, wantT := transcript(t, one, streamed, "ANTHROPIC_MESSAGES"), transcript(t, one, imported, "ANTHROPIC_MESSAGES")
			if gotT != wantT {
				t.Errorf("exports differ:\nstreamed %s\nimported %s", gotT, wantT)
			}
			var body struct{ Messages []anthropicsdk.MessageParam }
			if err := json.Unmarshal([]byte(gotT), &body); err != nil {
				t.Fatalf("the SDK cannot read the export: %v", err)
			}
			var blocks []string
			var answer anthropicsdk.MessageParam
			for _, m := range body.Messages {
				if m.Role == anthropicsdk.MessageParamRoleAssistant {
					answer = m
				}
			}
			for _, b := range answer.Content {
				switch {
				case b.OfThinking != nil:
					blocks = append(blocks, "thinking")
				case b.OfText != nil:
					blocks = append(blocks, "text")
				case b.OfToolUse != nil:
					blocks = append(blocks, "tool_use "+b.OfToolUse.ID)
				default:
					blocks = append(blocks, "other")
				}
			}
			want1 := "thinking text tool_use toolu_01Read1 text tool_use toolu_01Read2"
			if tc.status == "ABORTED" {
				want1 = "thinking text tool_use toolu_01Read1 text"
			}
			if g := strings.Join(blocks, " "); g != want1 {
				t.Errorf("exported blocks %q, want %q", g, want1)
			}
		})
	}
}

// TestStreamedResponsesEqualsImport: an OpenAI Responses reply (two reasoning items with
// encrypted_content, one without a summary; text, a call, text, a call, each call with
// its item id) piped in through appendProviderEvents across two replicas is stored as an
// OPENAI_RESPONSES import of the same response's output, and exports the same Responses
// input byte for byte: reasoning items with their ids and encrypted_content, function
// calls with their item ids, in the order they came. Cut short after the second text and
// aborted, it is the import of the items that had ended.
func TestStreamedResponsesEqualsImport(t *testing.T) {
	t.Parallel()
	data, err := os.ReadFile(filepath.Join("..", "interop", "openai", "testdata", "responses-stream", "interleaved.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	events := strings.Split(strings.TrimSpace(string(data)), "\n")
	one := testserver.New(t)
	other := testserver.NewWith(t, testserver.Options{DSN: one.DSN})
	// Where the stream is cut: after the item that holds the second text.
	cut := 0
	var ended []json.RawMessage
	for i, ev := range events {
		var e struct {
			Type string
			Item json.RawMessage
		}
		if err := json.Unmarshal([]byte(ev), &e); err != nil {
			t.Fatal(err)
		}
		if e.Type == "response.output_item.done" && cut == 0 {
			ended = append(ended, e.Item)
			if strings.Contains(string(e.Item), "msg_0a1b2c3d4e5f6071bb02") {
				cut = i + 1
			}
		}
	}
	var completed struct {
		Response struct{ Output json.RawMessage }
	}
	if err := json.Unmarshal([]byte(events[len(events)-1]), &completed); err != nil {
		t.Fatal(err)
	}
	sofar, _ := json.Marshal(ended)
	for _, tc := range []struct {
		name, end string
		events    []string
		output    json.RawMessage
	}{
		{"completed", `mutation($m: ID!) { completeMessage(messageId: $m) { __typename } }`, events, completed.Response.Output},
		{"aborted", `mutation($m: ID!) { abortMessage(messageId: $m, reason: "stop") { __typename } }`, events[:cut], sofar},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			streamed := one.CreateConversation(t, "streamed")
			one.MustDo(t, `mutation($c: ID!) { addMessage(conversationId: $c, input: {text: {role: USER, content: "Go."}}) { cursor } }`,
				map[string]any{"c": streamed}, nil)
			id := pipe(t, one, other, streamed, "OPENAI_RESPONSES", tc.events, 5)
			one.MustDo(t, tc.end, map[string]any{"m": id}, nil)

			var items []json.RawMessage
			if err := json.Unmarshal(tc.output, &items); err != nil {
				t.Fatal(err)
			}
			input, _ := json.Marshal(append([]json.RawMessage{json.RawMessage(`{"role":"user","content":"Go."}`)}, items...))
			imported := importHistory(t, one, "OPENAI_RESPONSES", string(input))
			got, want := lastReply(t, one, streamed), lastReply(t, one, imported)
			if got != want {
				t.Errorf("streamed\n%s\nimported\n%s", got, want)
			}
			for _, s := range []string{`"itemId":"rs_0a1b2c3d4e5f6071aa01"`, `-reasoningA==`, `-reasoningB==`, `"itemId":"fc_0a1b2c3d4e5f6071cc01","partIndex":3`} {
				if !strings.Contains(got, s) {
					t.Errorf("streamed reply lacks %s: %s", s, got)
				}
			}
			gotT, wantT := transcript(t, one, streamed, "OPENAI_RESPONSES"), transcript(t, one, imported, "OPENAI_RESPONSES")
			if gotT != wantT {
				t.Errorf("exports differ:\nstreamed %s\nimported %s", gotT, wantT)
			}
			for _, s := range []string{`"encrypted_content":"gAAAAABpIzA2`, `"id":"fc_0a1b2c3d4e5f6071cc01"`} {
				if !strings.Contains(gotT, s) {
					t.Errorf("export lacks %s: %s", s, gotT)
				}
			}
		})
	}
}

// TestDeltasPlaceCalls: appendMessageDeltas takes a call's partIndex and an item id on
// the delta that opens it; reads of the streaming message and the aborted message keep
// them; a place or item id that does not fit is BAD_USER_INPUT naming it, and nothing of
// that append is written.
func TestDeltasPlaceCalls(t *testing.T) {
	t.Parallel()
	srv := testserver.New(t)
	conv := srv.CreateConversation(t, "deltas")
	m := startMessage(t, srv, conv, nil)
	srv.MustDo(t, appendMutation, map[string]any{"m": m.ID, "s": 1, "d": []map[string]any{
		{"kind": "THINKING", "index": 0, "itemId": "rs_1"},
		{"kind": "SIGNATURE", "index": 0, "text": "gAAAA=="},
		{"kind": "TEXT", "index": 1, "text": "Look:"},
		{"kind": "TOOL_ARGUMENTS", "index": 0, "toolCallId": "c1", "toolName": "read", "text": `{"p":1}`, "partIndex": 2, "itemId": "fc_1"},
		{"kind": "TEXT", "index": 2, "text": "then"},
	}}, nil)
	const want = `{"__typename":"ToolRequestMessage","parts":[{"kind":"THINKING","text":"","signature":"gAAAA==","itemId":"rs_1","raw":null,"citations":null},` +
		`{"kind":"TEXT","text":"Look:","signature":null,"itemId":null,"raw":null,"citations":null},{"kind":"TEXT","text":"then","signature":null,"itemId":null,"raw":null,"citations":null}],` +
		`"toolCalls":[{"callId":"c1","name":"read","argumentsRaw":null,"argumentsValid":true,"itemId":"fc_1","partIndex":2}]}`
	if got := lastReply(t, srv, conv); got != want {
		t.Errorf("streaming:\n got %s\nwant %s", got, want)
	}
	for _, tc := range []struct {
		name   string
		deltas []map[string]any
		says   string
	}{
		{"a call before the call ahead of it", []map[string]any{{"kind": "TEXT", "index": 2, "text": " more"},
			{"kind": "TOOL_ARGUMENTS", "index": 1, "toolCallId": "c2", "toolName": "read", "partIndex": 1}},
			"deltas[1]: delta.partIndex: tool call 1 at part 1, but tool call 0 ahead of it came at part 2; calls keep their order"},
		{"a call past the parts", []map[string]any{{"kind": "TOOL_ARGUMENTS", "index": 1, "toolCallId": "c2", "toolName": "read", "partIndex": 4}},
			"deltas[0]: delta.partIndex: 4, but the message has 3 parts so far"},
		{"a place on text", []map[string]any{{"kind": "TEXT", "index": 2, "text": "x", "partIndex": 1}},
			"deltas[0]: delta.partIndex: a TEXT delta has none"},
		{"another item id", []map[string]any{{"kind": "THINKING", "index": 0, "text": "x", "itemId": "rs_2"}},
			`deltas[0]: delta.itemId: part 0 is item "rs_1", not "rs_2"`},
		{"an item id with a control character", []map[string]any{{"kind": "THINKING", "index": 3, "itemId": "rs\u0007"}},
			"deltas[0]: delta.itemId:"},
	} {
		r := srv.Do(t, appendMutation, map[string]any{"m": m.ID, "s": 2, "d": tc.deltas})
		if code := r.ErrorCode(t); code != "BAD_USER_INPUT" || !strings.Contains(r.Errors[0].Message, tc.says) {
			t.Errorf("%s: got %s %q, want BAD_USER_INPUT saying %q", tc.name, code, r.Errors[0].Message, tc.says)
		}
	}
	var out struct{ AbortMessage json.RawMessage }
	srv.MustDo(t, `mutation($m: ID!) { abortMessage(messageId: $m, reason: "stop") { `+replyFields+` } }`, map[string]any{"m": m.ID}, &out)
	// Ended, a call keeps its arguments as streamed (argumentsRaw).
	if got, want := string(out.AbortMessage), strings.Replace(want, `"argumentsRaw":null`, `"argumentsRaw":"{\"p\":1}"`, 1); got != want {
		t.Errorf("aborted:\n got %s\nwant %s", got, want)
	}
}
