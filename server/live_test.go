package server_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	anthropicsdk "github.com/anthropics/anthropic-sdk-go"
	"github.com/goccy/go-yaml"

	"github.com/parley-dev/parley"
	"github.com/parley-dev/parley/db"
	"github.com/parley-dev/parley/internal/poll"
	"github.com/parley-dev/parley/internal/testserver"
	"github.com/parley-dev/parley/interop/anthropic"
	"github.com/parley-dev/parley/interop/openai"
)

const liveFields = `__typename ... on MessageBase { id position role messageStatus statusReason clientMessageId
	provenance { provider model responseId finishReason timeToFirstTokenMs durationMs
		usage { inputTokens outputTokens cachedInputTokens cacheCreationInputTokens reasoningTokens } } }
	... on TextMessage { text thinking parts { kind text signature } }
	... on ToolRequestMessage { text thinking parts { kind text signature } toolCalls { id: callId name arguments argumentsRaw argumentsValid } }`

type liveMessage struct {
	Typename        string  `json:"__typename"`
	ID              string  `json:"id"`
	Position        int     `json:"position"`
	Role            string  `json:"role"`
	MessageStatus   string  `json:"messageStatus"`
	StatusReason    *string `json:"statusReason"`
	ClientMessageID *string `json:"clientMessageId"`
	Provenance      *struct {
		Provider, Model, ResponseID, FinishReason string
		TimeToFirstTokenMs, DurationMs            int
		Usage                                     parley.Usage
	} `json:"provenance"`
	Text     string `json:"text"`
	Thinking string `json:"thinking"`
	Parts    []struct {
		Kind, Text, Signature string
	} `json:"parts"`
	ToolCalls []struct {
		ID, Name       string
		Arguments      json.RawMessage
		ArgumentsRaw   *string
		ArgumentsValid bool
	} `json:"toolCalls"`
}

func startMessage(t *testing.T, srv *testserver.Server, conv string, input map[string]any) liveMessage {
	t.Helper()
	var out struct {
		StartMessage struct{ Node liveMessage } `json:"startMessage"`
	}
	srv.MustDo(t, `mutation($c: ID!, $i: StartMessageInput) { startMessage(conversationId: $c, input: $i) { node { `+liveFields+` } } }`,
		map[string]any{"c": conv, "i": input}, &out)
	return out.StartMessage.Node
}

const appendMutation = `mutation($m: ID!, $s: Int!, $d: [MessageDeltaInput!]!) { appendMessageDeltas(messageId: $m, seq: $s, deltas: $d) { messageId seq leaseUntil } }`

func appendText(t *testing.T, srv *testserver.Server, id string, seq int, text string) int {
	t.Helper()
	var out struct {
		AppendMessageDeltas struct{ Seq int } `json:"appendMessageDeltas"`
	}
	srv.MustDo(t, appendMutation, map[string]any{"m": id, "s": seq, "d": []map[string]any{{"kind": "TEXT", "index": 0, "text": text}}}, &out)
	return out.AppendMessageDeltas.Seq
}

func readMessage(t *testing.T, srv *testserver.Server, id string) liveMessage {
	t.Helper()
	var out struct{ Node liveMessage }
	srv.MustDo(t, `query($id: ID!) { node(id: $id) { `+liveFields+` } }`, map[string]any{"id": id}, &out)
	return out.Node
}

func endMessage(t *testing.T, srv *testserver.Server, mutation string, vars map[string]any) liveMessage {
	t.Helper()
	var out map[string]liveMessage
	srv.MustDo(t, mutation, vars, &out)
	for _, m := range out {
		return m
	}
	t.Fatal("no message returned")
	return liveMessage{}
}

// TestLiveMessageGrowsAndCompletes: a started message is STREAMING at its position,
// reads return its content so far, duplicates are acknowledged without writing, a gap
// is refused, and completing it keeps the text and the provenance.
func TestLiveMessageGrowsAndCompletes(t *testing.T) {
	t.Parallel()
	srv := testserver.New(t)
	conv := srv.CreateConversation(t, "live")
	srv.AddMessage(t, conv, testserver.Text("USER", "hello"))
	m := startMessage(t, srv, conv, map[string]any{"provider": "openai", "model": "gpt-test"})
	if m.MessageStatus != "STREAMING" || m.Position != 2 || m.Role != "ASSISTANT" {
		t.Fatalf("got %+v, want a STREAMING assistant message at position 2", m)
	}
	var want strings.Builder
	for i := 1; i <= 20; i++ {
		piece := fmt.Sprintf("token %d <b>&amp; ", i)
		if got := appendText(t, srv, m.ID, i, piece); got != i {
			t.Fatalf("append %d acknowledged %d", i, got)
		}
		want.WriteString(piece)
	}
	// A retry of an acknowledged append writes nothing.
	if got := appendText(t, srv, m.ID, 20, "DUPLICATE"); got != 20 {
		t.Errorf("retry of append 20 acknowledged %d, want 20", got)
	}
	if got := appendText(t, srv, m.ID, 3, "DUPLICATE"); got != 20 {
		t.Errorf("retry of append 3 acknowledged %d, want 20", got)
	}
	r := srv.Do(t, appendMutation, map[string]any{"m": m.ID, "s": 22, "d": []map[string]any{{"kind": "TEXT", "index": 0, "text": "x"}}})
	if code := r.ErrorCode(t); code != "BAD_USER_INPUT" || !strings.Contains(r.Errors[0].Message, "send 21 next") {
		t.Errorf("a gap: got %s %q, want BAD_USER_INPUT naming the next number", code, r.Errors[0].Message)
	}
	got := readMessage(t, srv, m.ID)
	if got.MessageStatus != "STREAMING" || got.Text != want.String() {
		t.Fatalf("while streaming: got %s %q, want STREAMING %q", got.MessageStatus, got.Text, want.String())
	}
	done := endMessage(t, srv, `mutation($m: ID!, $i: CompleteMessageInput) { completeMessage(messageId: $m, input: $i) { `+liveFields+` } }`,
		map[string]any{"m": m.ID, "i": map[string]any{"finishReason": "stop", "responseId": "resp-1",
			"usage": map[string]any{"inputTokens": 10, "outputTokens": 20}}})
	if done.MessageStatus != "COMPLETED" || done.Text != want.String() {
		t.Fatalf("completed: got %s %q, want COMPLETED %q", done.MessageStatus, done.Text, want.String())
	}
	p := done.Provenance
	if p == nil || p.Provider != "openai" || p.Model != "gpt-test" || p.FinishReason != "stop" || p.ResponseID != "resp-1" ||
		p.Usage.InputTokens != 10 || p.Usage.OutputTokens != 20 {
		t.Errorf("provenance: got %+v", p)
	}
	if got := readMessage(t, srv, m.ID); !reflect.DeepEqual(got, done) {
		t.Errorf("read after completion: got %+v, want %+v", got, done)
	}
	var usage struct {
		Node struct{ Usage parley.Usage }
	}
	srv.MustDo(t, `query($id: ID!) { node(id: $id) { ... on Conversation { usage { inputTokens outputTokens } } } }`, map[string]any{"id": conv}, &usage)
	if usage.Node.Usage.InputTokens != 10 || usage.Node.Usage.OutputTokens != 20 {
		t.Errorf("conversation usage: got %+v, want 10 in, 20 out", usage.Node.Usage)
	}
	// Completing again returns it; a late append is refused.
	again := endMessage(t, srv, `mutation($m: ID!) { completeMessage(messageId: $m) { `+liveFields+` } }`, map[string]any{"m": m.ID})
	if again.Text != want.String() {
		t.Errorf("completing again: got %q", again.Text)
	}
	r = srv.Do(t, appendMutation, map[string]any{"m": m.ID, "s": 21, "d": []map[string]any{{"kind": "TEXT", "index": 0, "text": "late"}}})
	if code := r.ErrorCode(t); code != "CONFLICT" {
		t.Errorf("append after the end: got %s, want CONFLICT", code)
	}
}

// TestLiveMessageCompletedCutShort: a reply the token limit cut in the middle of a tool
// call's arguments completes (finish_reason "length"), its arguments kept as they
// streamed and flagged invalid, so that the call can be answered with an error result.
func TestLiveMessageCompletedCutShort(t *testing.T) {
	t.Parallel()
	srv := testserver.New(t)
	conv := srv.CreateConversation(t, "cut short")
	m := startMessage(t, srv, conv, nil)
	srv.MustDo(t, appendMutation, map[string]any{"m": m.ID, "s": 1, "d": []map[string]any{
		{"kind": "TOOL_ARGUMENTS", "index": 0, "toolCallId": "call_1", "toolName": "write", "text": `{"path": "a.txt", `},
		{"kind": "TOOL_ARGUMENTS", "index": 0, "text": `"content": "very lo`},
		{"kind": "TOOL_ARGUMENTS", "index": 1, "toolCallId": "call_0", "toolName": "read", "text": `{"n":1e2, "a": -0}`},
	}}, nil)
	got := endMessage(t, srv, `mutation($m: ID!, $i: CompleteMessageInput) { completeMessage(messageId: $m, input: $i) { `+liveFields+` } }`,
		map[string]any{"m": m.ID, "i": map[string]any{"finishReason": "length"}})
	if got.MessageStatus != "COMPLETED" || len(got.ToolCalls) != 2 {
		t.Fatalf("got %+v, want COMPLETED with two calls", got)
	}
	cut, whole := got.ToolCalls[0], got.ToolCalls[1]
	if cut.ArgumentsValid || cut.ArgumentsRaw == nil || *cut.ArgumentsRaw != `{"path": "a.txt", "content": "very lo` {
		t.Errorf("cut call: got %+v, want its arguments as streamed, flagged invalid", cut)
	}
	if !whole.ArgumentsValid || whole.ArgumentsRaw == nil || *whole.ArgumentsRaw != `{"n":1e2, "a": -0}` || string(whole.Arguments) != `{"n":1e2,"a":-0}` {
		t.Errorf("whole call: got %+v (raw %v), want its arguments as streamed", whole, whole.ArgumentsRaw)
	}
	// The call is answered with an error result, and the history exports.
	srv.MustDo(t, `mutation($c: ID!, $in: MessageInput!) { addMessage(conversationId: $c, input: $in) { cursor } }`,
		map[string]any{"c": conv, "in": map[string]any{"toolResult": map[string]any{"toolCallId": "call_1", "status": "ERROR",
			"error": map[string]any{"message": "the arguments were cut short"}}}}, nil)
	var out struct {
		Conversation struct{ Transcript json.RawMessage }
	}
	srv.MustDo(t, `query($c: ID!) { conversation(id: $c) { transcript(format: OPENAI_CHAT, repair: true) } }`, map[string]any{"c": conv}, &out)
	if !strings.Contains(string(out.Conversation.Transcript), `"arguments":"{\"path\": \"a.txt\", \"content\": \"very lo"`) {
		t.Errorf("the export does not send the arguments as produced: %s", out.Conversation.Transcript)
	}
}

// TestLiveMessageAbortKeepsPartial: a stop keeps exactly what was acknowledged, with its
// reason; appends after it, and another end, are refused.
func TestLiveMessageAbortKeepsPartial(t *testing.T) {
	t.Parallel()
	srv := testserver.New(t)
	conv := srv.CreateConversation(t, "abort")
	m := startMessage(t, srv, conv, nil)
	appendText(t, srv, m.ID, 1, "The answer ")
	srv.MustDo(t, appendMutation, map[string]any{"m": m.ID, "s": 2, "d": []map[string]any{
		{"kind": "THINKING", "index": 1, "text": "hmm"},
		{"kind": "TOOL_ARGUMENTS", "index": 0, "toolCallId": "call_1", "toolName": "search", "text": `{"q": "unfin`},
	}}, nil)
	got := endMessage(t, srv, `mutation($m: ID!, $r: String) { abortMessage(messageId: $m, reason: $r) { `+liveFields+` } }`,
		map[string]any{"m": m.ID, "r": "user pressed stop"})
	if got.MessageStatus != "ABORTED" || got.StatusReason == nil || *got.StatusReason != "user pressed stop" ||
		got.Text != "The answer " || got.Thinking != "hmm" || got.Typename != "ToolRequestMessage" {
		t.Fatalf("aborted: got %+v", got)
	}
	if len(got.ToolCalls) != 1 || got.ToolCalls[0].ArgumentsRaw == nil || *got.ToolCalls[0].ArgumentsRaw != `{"q": "unfin` ||
		got.ToolCalls[0].ArgumentsValid || string(got.ToolCalls[0].Arguments) != "{}" {
		t.Errorf("partial tool call: got %+v, want its arguments kept as the text that arrived, flagged invalid", got.ToolCalls)
	}
	r := srv.Do(t, appendMutation, map[string]any{"m": m.ID, "s": 3, "d": []map[string]any{{"kind": "TEXT", "index": 0, "text": "late"}}})
	if code := r.ErrorCode(t); code != "CONFLICT" {
		t.Errorf("append after abort: got %s, want CONFLICT", code)
	}
	r = srv.Do(t, `mutation($m: ID!) { completeMessage(messageId: $m) { __typename } }`, map[string]any{"m": m.ID})
	if code := r.ErrorCode(t); code != "CONFLICT" {
		t.Errorf("complete after abort: got %s, want CONFLICT", code)
	}
}

// TestLiveMessageBadAppends: each bad append is refused, naming what is wrong, and
// writes nothing.
func TestLiveMessageBadAppends(t *testing.T) {
	t.Parallel()
	srv := testserver.New(t)
	conv := srv.CreateConversation(t, "bad")
	m := startMessage(t, srv, conv, nil)
	appendText(t, srv, m.ID, 1, "ok")
	for _, tc := range []struct {
		name   string
		id     string
		seq    int
		deltas []map[string]any
		code   string
		says   string
	}{
		{"wrong kind for the part", m.ID, 2, []map[string]any{{"kind": "THINKING", "index": 0, "text": "x"}}, "BAD_USER_INPUT", "TEXT part"},
		{"skipped part", m.ID, 2, []map[string]any{{"kind": "TEXT", "index": 5, "text": "x"}}, "BAD_USER_INPUT", "a new part is number 1"},
		{"tool call without name", m.ID, 2, []map[string]any{{"kind": "TOOL_ARGUMENTS", "index": 0, "toolCallId": "c"}}, "BAD_USER_INPUT", "without a name"},
		{"second delta bad", m.ID, 2, []map[string]any{{"kind": "TEXT", "index": 0, "text": "fine"}, {"kind": "SIGNATURE", "index": 0, "text": "s"}}, "BAD_USER_INPUT", "deltas[1]"},
		{"oversized", m.ID, 2, []map[string]any{{"kind": "TEXT", "index": 0, "text": strings.Repeat("x", parley.MaxAppendBytes+1)}}, "BAD_USER_INPUT", "exceeds"},
		{"empty", m.ID, 2, []map[string]any{}, "BAD_USER_INPUT", "empty"},
		{"seq zero", m.ID, 0, []map[string]any{{"kind": "TEXT", "index": 0, "text": "x"}}, "BAD_USER_INPUT", "numbered from 1"},
		{"missing message", "TWVzc2FnZTowMDAwMDAwMC0wMDAwLTAwMDAtMDAwMC0wMDAwMDAwMDAwMDA", 1, []map[string]any{{"kind": "TEXT", "index": 0, "text": "x"}}, "NOT_FOUND", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := srv.Do(t, appendMutation, map[string]any{"m": tc.id, "s": tc.seq, "d": tc.deltas})
			if code := r.ErrorCode(t); code != tc.code || !strings.Contains(r.Errors[0].Message, tc.says) {
				t.Errorf("got %s %q, want %s saying %q", code, r.Errors[0].Message, tc.code, tc.says)
			}
		})
	}
	if got := readMessage(t, srv, m.ID); got.Text != "ok" || len(got.Parts) != 1 {
		t.Errorf("after refused appends: got %q in %d parts, want \"ok\" alone", got.Text, len(got.Parts))
	}
	// Another owner's message is not found: a second server with tokens is covered by
	// the owners tests; here a fresh conversation's message id that does not exist.
	if got := appendText(t, srv, m.ID, 2, " more"); got != 2 {
		t.Errorf("the next good append: acknowledged %d, want 2", got)
	}
}

// TestLiveMessageSizeLimits: an append that would take a streaming message over the
// limits of a finished one (text, tool calls, a call's arguments) is refused with their
// codes, on the fast path and the locking one, and writes nothing: an abort keeps the
// message as it stood at the last acknowledged append.
func TestLiveMessageSizeLimits(t *testing.T) {
	t.Parallel()
	srv := testserver.NewWith(t, testserver.Options{DB: db.Config{Limits: parley.Limits{
		MaxMessageTextBytes: 10, MaxToolCallsPerMessage: 2, MaxToolArgumentsBytes: 12}}})
	conv := srv.CreateConversation(t, "limits")
	m := startMessage(t, srv, conv, nil)
	appendText(t, srv, m.ID, 1, "12345")
	call := func(i int, id, args string) map[string]any {
		d := map[string]any{"kind": "TOOL_ARGUMENTS", "index": i, "text": args}
		if id != "" {
			d["toolCallId"], d["toolName"] = id, "search"
		}
		return d
	}
	text := func(s string) map[string]any { return map[string]any{"kind": "TEXT", "index": 0, "text": s} }
	for _, tc := range []struct {
		name   string
		seq    int
		deltas []map[string]any
		code   string // "" : acknowledged
		says   string
	}{
		// The first refusal is on the fast path (this process appended 1); it drops the
		// cache entry, so the same append again takes the locking path.
		{"text over, fast path", 2, []map[string]any{text("678901")}, "MESSAGE_TOO_LARGE", "would be 11 bytes, more than the 10"},
		{"text over, locking path", 2, []map[string]any{text("678901")}, "MESSAGE_TOO_LARGE", "would be 11 bytes"},
		{"text at the limit", 2, []map[string]any{text("67890")}, "", ""},
		{"one byte more", 3, []map[string]any{text("x")}, "MESSAGE_TOO_LARGE", "would be 11 bytes"},
		{"two calls", 3, []map[string]any{call(0, "c1", `{"q":`), call(1, "c2", `{}`)}, "", ""},
		{"a third call", 4, []map[string]any{call(2, "c3", `{}`)}, "TOO_MANY_TOOL_CALLS", "3 tool calls, at most 2"},
		{"arguments over", 4, []map[string]any{call(0, "", ` "1234567"`)}, "TOOL_ARGUMENTS_TOO_LARGE", "tool call 0's arguments would be 15 bytes"},
		{"arguments at the limit", 4, []map[string]any{call(0, "", ` "1234"`)}, "", ""},
	} {
		r := srv.Do(t, appendMutation, map[string]any{"m": m.ID, "s": tc.seq, "d": tc.deltas})
		if tc.code == "" {
			if len(r.Errors) > 0 {
				t.Fatalf("%s: got %q, want it acknowledged", tc.name, r.Errors[0].Message)
			}
			continue
		}
		if code := r.ErrorCode(t); code != tc.code || !strings.Contains(r.Errors[0].Message, tc.says) {
			t.Errorf("%s: got %s %q, want %s saying %q", tc.name, code, r.Errors[0].Message, tc.code, tc.says)
		}
	}
	got := endMessage(t, srv, `mutation($m: ID!) { abortMessage(messageId: $m) { `+liveFields+` } }`, map[string]any{"m": m.ID})
	if got.Text != "1234567890" || len(got.ToolCalls) != 2 || got.ToolCalls[0].ArgumentsRaw == nil ||
		*got.ToolCalls[0].ArgumentsRaw != `{"q": "1234"` || got.ToolCalls[0].ArgumentsValid {
		t.Errorf("aborted: got text %q, calls %+v; want the text and calls acknowledged, no more", got.Text, got.ToolCalls)
	}
}

// TestLiveToolCallIDReused: an append that opens a tool call under an id the
// conversation already used is refused; one whose id is taken after its append (by
// addMessage) cannot complete, but the message still ends: aborted by its writer, or
// interrupted by the sweeper when its writer went away (which used to fail on it for
// ever), keeping the call as it arrived.
func TestLiveToolCallIDReused(t *testing.T) {
	t.Parallel()
	srv := testserver.NewWith(t, testserver.Options{SweepInterval: 100 * time.Millisecond})
	conv := srv.CreateConversation(t, "reused ids")
	srv.AddMessage(t, conv, map[string]any{"toolRequest": map[string]any{"toolCalls": []map[string]any{
		{"id": "call_1", "name": "search", "arguments": map[string]any{"q": "x"}}}}})
	open := func(i int, id string) map[string]any {
		return map[string]any{"kind": "TOOL_ARGUMENTS", "index": i, "toolCallId": id, "toolName": "search", "text": `{"q":"y"}`}
	}

	m := startMessage(t, srv, conv, nil)
	for _, tc := range []struct {
		name   string
		deltas []map[string]any
		says   string
	}{
		{"an id of the conversation", []map[string]any{open(0, "call_1")}, `tool call 0 opens with id "call_1", already used in this conversation`},
		{"an id of the message", []map[string]any{open(0, "call_2"), open(1, "call_2")}, `already the id of tool call 0`},
	} {
		r := srv.Do(t, appendMutation, map[string]any{"m": m.ID, "s": 1, "d": tc.deltas})
		if code := r.ErrorCode(t); code != "BAD_USER_INPUT" || !strings.Contains(r.Errors[0].Message, tc.says) {
			t.Errorf("%s: got %s %q, want BAD_USER_INPUT saying %q", tc.name, code, r.Errors[0].Message, tc.says)
		}
	}

	// Two messages open call_9; addMessage then takes it.
	aborted := startMessage(t, srv, conv, nil)
	swept := startMessage(t, srv, conv, map[string]any{"leaseSeconds": 1})
	srv.MustDo(t, appendMutation, map[string]any{"m": aborted.ID, "s": 1, "d": []map[string]any{open(0, "call_9"), open(1, "call_10")}}, nil)
	srv.MustDo(t, appendMutation, map[string]any{"m": swept.ID, "s": 1, "d": []map[string]any{open(0, "call_9"), open(1, "call_11")}}, nil)
	srv.AddMessage(t, conv, map[string]any{"toolRequest": map[string]any{"toolCalls": []map[string]any{
		{"id": "call_9", "name": "search", "arguments": map[string]any{"q": "z"}}}}})
	r := srv.Do(t, `mutation($m: ID!) { completeMessage(messageId: $m) { __typename } }`, map[string]any{"m": aborted.ID})
	if code := r.ErrorCode(t); code != "BAD_USER_INPUT" || !strings.Contains(r.Errors[0].Message, `"call_9" is already used`) {
		t.Errorf("completing with a taken id: got %s %q, want BAD_USER_INPUT naming call_9", code, r.Errors[0].Message)
	}
	got := endMessage(t, srv, `mutation($m: ID!) { abortMessage(messageId: $m) { `+liveFields+` } }`, map[string]any{"m": aborted.ID})
	if got.MessageStatus != "ABORTED" || len(got.ToolCalls) != 2 || got.ToolCalls[0].ID != "call_9" {
		t.Errorf("aborted: got %s with calls %+v, want ABORTED with call_9 and call_10", got.MessageStatus, got.ToolCalls)
	}
	poll.Until(t, "the sweeper to close the message after its 1 s lease", 30*time.Second, func() error {
		got = readMessage(t, srv, swept.ID)
		if got.MessageStatus != "INTERRUPTED" {
			return fmt.Errorf("status %s", got.MessageStatus)
		}
		return nil
	})
	if len(got.ToolCalls) != 2 || got.ToolCalls[0].ID != "call_9" || string(got.ToolCalls[1].Arguments) != `{"q":"y"}` {
		t.Errorf("interrupted: got calls %+v, want call_9 and call_11 as they arrived", got.ToolCalls)
	}
	// Their other calls are indexed: results can answer them.
	for _, id := range []string{"call_10", "call_11"} {
		srv.AddMessage(t, conv, map[string]any{"toolResult": map[string]any{"toolCallId": id, "status": "SUCCESS", "content": "done"}})
	}
}

// TestAddMessageClientIDOnce: retried and concurrent addMessage calls with one client
// message id store one message; another message under the same id is a CONFLICT.
func TestAddMessageClientIDOnce(t *testing.T) {
	t.Parallel()
	srv := testserver.New(t)
	conv := srv.CreateConversation(t, "idempotent")
	const q = `mutation($c: ID!, $i: MessageInput!, $k: String) { addMessage(conversationId: $c, input: $i, clientMessageId: $k) {
		node { ... on MessageBase { id position clientMessageId } } } }`
	type added struct {
		AddMessage struct {
			Node struct {
				ID              string
				Position        int
				ClientMessageID string
			}
		} `json:"addMessage"`
	}
	const n = 8
	ids := make([]string, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var out added
			srv.MustDo(t, q, map[string]any{"c": conv, "i": testserver.Text("USER", "once"), "k": "req-1"}, &out)
			ids[i] = out.AddMessage.Node.ID
		}()
	}
	wg.Wait()
	for _, id := range ids {
		if id != ids[0] {
			t.Fatalf("concurrent retries got ids %v, want one", ids)
		}
	}
	var out added
	srv.MustDo(t, q, map[string]any{"c": conv, "i": testserver.Text("USER", "once"), "k": "req-1"}, &out)
	if out.AddMessage.Node.ID != ids[0] || out.AddMessage.Node.ClientMessageID != "req-1" {
		t.Errorf("a later retry: got %+v, want message %s", out.AddMessage.Node, ids[0])
	}
	r := srv.Do(t, q, map[string]any{"c": conv, "i": testserver.Text("USER", "something else"), "k": "req-1"})
	if code := r.ErrorCode(t); code != "CONFLICT" {
		t.Errorf("another message under the id: got %s, want CONFLICT", code)
	}
	var count struct {
		Node struct{ Messages struct{ TotalCount int } }
	}
	srv.MustDo(t, `query($id: ID!) { node(id: $id) { ... on Conversation { messages { totalCount } } } }`, map[string]any{"id": conv}, &count)
	if count.Node.Messages.TotalCount != 1 {
		t.Errorf("stored %d messages, want 1", count.Node.Messages.TotalCount)
	}
	// A tool result is filled in when stored (its tool's name): its retry is still the
	// same message.
	srv.AddMessage(t, conv, map[string]any{"toolRequest": map[string]any{"toolCalls": []map[string]any{{"id": "c1", "name": "search", "arguments": map[string]any{"q": "x"}}}}})
	result := map[string]any{"toolResult": map[string]any{"toolCallId": "c1", "status": "SUCCESS", "output": map[string]any{"n": 1}}}
	var r1, r2 added
	srv.MustDo(t, q, map[string]any{"c": conv, "i": result, "k": "result-1"}, &r1)
	srv.MustDo(t, q, map[string]any{"c": conv, "i": result, "k": "result-1"}, &r2)
	if r1.AddMessage.Node.ID != r2.AddMessage.Node.ID {
		t.Errorf("a tool result retried: got %s and %s, want one message", r1.AddMessage.Node.ID, r2.AddMessage.Node.ID)
	}
	// Starting a message takes client ids too.
	a := startMessage(t, srv, conv, map[string]any{"clientMessageId": "reply-1"})
	b := startMessage(t, srv, conv, map[string]any{"clientMessageId": "reply-1"})
	if a.ID != b.ID {
		t.Errorf("start retried: got %s and %s, want one message", a.ID, b.ID)
	}
}

type cassette struct {
	Interactions []struct {
		Response struct {
			Body struct {
				String string `yaml:"string"`
			} `yaml:"body"`
		} `yaml:"response"`
	} `yaml:"interactions"`
}

// sseData returns the data of each server-sent event of body.
func sseData(body string) []string {
	var out []string
	for _, line := range strings.Split(body, "\n") {
		if d, ok := strings.CutPrefix(line, "data:"); ok {
			if d = strings.TrimSpace(d); d != "" && d != "[DONE]" {
				out = append(out, d)
			}
		}
	}
	return out
}

// TestProviderEventsAssembleAsTheSDK: the recorded OpenAI and Anthropic streams, piped
// in through appendProviderEvents in batches (one retried), end as the message the
// SDK's accumulator assembles from the same events (through interop's assemblers,
// which the interop tests compare with the SDK event by event), thinking signature and
// tool call arguments included.
func TestProviderEventsAssembleAsTheSDK(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		file, format string
		asm          func() parley.StreamAssembler
		message      func(parley.StreamAssembler) parley.Message
	}{
		{"openai-chat-tool-calls.cassette.yaml", "OPENAI_CHAT", func() parley.StreamAssembler { return openai.NewChatStream() },
			func(a parley.StreamAssembler) parley.Message { return a.(*openai.ChatStream).Message() }},
		{"anthropic-thinking.cassette.yaml", "ANTHROPIC_MESSAGES", func() parley.StreamAssembler { return anthropic.NewMessageStream() },
			func(a parley.StreamAssembler) parley.Message { return a.(*anthropic.MessageStream).Message() }},
	} {
		t.Run(tc.format, func(t *testing.T) {
			t.Parallel()
			data, err := os.ReadFile(filepath.Join("..", "..", "shared", "fixtures", "streams", tc.file))
			if err != nil {
				t.Fatalf("the recorded streams: %v", err)
			}
			var c cassette
			if err := yaml.Unmarshal(data, &c); err != nil {
				t.Fatal(err)
			}
			srv := testserver.New(t)
			conv := srv.CreateConversation(t, tc.format)
			for i, in := range c.Interactions {
				events := sseData(in.Response.Body.String)
				want := tc.asm()
				for _, ev := range events {
					if _, err := want.AddJSON([]byte(ev)); err != nil {
						t.Fatal(err)
					}
				}
				m := startMessage(t, srv, conv, nil)
				seq := 0
				for start := 0; start < len(events); start += 3 {
					batch := []json.RawMessage{}
					for _, ev := range events[start:min(start+3, len(events))] {
						batch = append(batch, json.RawMessage(ev))
					}
					seq++
					for range 2 { // every batch sent twice: the retry writes nothing
						var out struct{ AppendProviderEvents struct{ Seq int } }
						srv.MustDo(t, `mutation($m: ID!, $f: ProviderStreamFormat!, $s: Int!, $e: [JSON!]!) {
							appendProviderEvents(messageId: $m, format: $f, seq: $s, events: $e) { seq } }`,
							map[string]any{"m": m.ID, "f": tc.format, "s": seq, "e": batch}, &out)
						if out.AppendProviderEvents.Seq != seq {
							t.Fatalf("stream %d: append %d acknowledged %d", i, seq, out.AppendProviderEvents.Seq)
						}
					}
				}
				got := endMessage(t, srv, `mutation($m: ID!) { completeMessage(messageId: $m) { `+liveFields+` } }`, map[string]any{"m": m.ID})
				wm := tc.message(want)
				if err := parley.Prepare(wm, parley.DefaultLimits); err != nil {
					t.Fatal(err)
				}
				var wantParts []string
				body := wm.(interface{ Text() string })
				for _, p := range partsOf(wm) {
					wantParts = append(wantParts, string(p.Kind)+"|"+p.Text+"|"+p.Signature)
				}
				var gotParts []string
				for _, p := range got.Parts {
					gotParts = append(gotParts, p.Kind+"|"+p.Text+"|"+p.Signature)
				}
				if !reflect.DeepEqual(gotParts, wantParts) || got.Text != body.Text() {
					t.Errorf("stream %d: got parts %q, want %q", i, gotParts, wantParts)
				}
				wantCalls := callsOf(wm)
				if len(got.ToolCalls) != len(wantCalls) {
					t.Fatalf("stream %d: got %d tool calls, want %d", i, len(got.ToolCalls), len(wantCalls))
				}
				for k, w := range wantCalls {
					g := got.ToolCalls[k]
					if g.ID != w.ID || g.Name != w.Name || !jsonEqual(g.Arguments, w.Arguments) {
						t.Errorf("stream %d call %d: got %s %s %s, want %s %s %s", i, k, g.ID, g.Name, g.Arguments, w.ID, w.Name, w.Arguments)
					}
				}
				wp := want.Provenance()
				if p := got.Provenance; p == nil || p.Model != wp.Model || p.ResponseID != wp.ResponseID ||
					p.FinishReason != wp.FinishReason || p.Usage != wp.Usage {
					t.Errorf("stream %d: provenance %+v, want %+v", i, got.Provenance, wp)
				}
			}
		})
	}
}

func partsOf(m parley.Message) []parley.Part {
	switch m := m.(type) {
	case *parley.TextMessage:
		return m.Parts
	case *parley.ToolRequestMessage:
		return m.Parts
	}
	return nil
}

func callsOf(m parley.Message) []parley.ToolCall {
	if r, ok := m.(*parley.ToolRequestMessage); ok {
		return r.ToolCalls
	}
	return nil
}

func jsonEqual(a, b []byte) bool {
	var x, y any
	return json.Unmarshal(a, &x) == nil && json.Unmarshal(b, &y) == nil && reflect.DeepEqual(x, y)
}

// TestResponsesEventsThroughTheAPI: OpenAI Responses stream events appended through
// appendProviderEvents (OPENAI_RESPONSES), half through one replica and half through
// another (which rebuilds the stream from the stored events), each batch sent twice,
// complete to the message the response.completed event holds, with its provenance.
func TestResponsesEventsThroughTheAPI(t *testing.T) {
	t.Parallel()
	data, err := os.ReadFile(filepath.Join("..", "interop", "openai", "testdata", "responses-stream", "weather.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	events := strings.Split(strings.TrimSpace(string(data)), "\n")
	one := testserver.New(t)
	other := testserver.NewWith(t, testserver.Options{DSN: one.DSN})
	conv := one.CreateConversation(t, "responses")
	m := startMessage(t, one, conv, nil)
	seq := 0
	for start := 0; start < len(events); start += 4 {
		srv := one
		if start >= len(events)/2 {
			srv = other
		}
		batch := []json.RawMessage{}
		for _, ev := range events[start:min(start+4, len(events))] {
			batch = append(batch, json.RawMessage(ev))
		}
		seq++
		for range 2 {
			srv.MustDo(t, `mutation($m: ID!, $s: Int!, $e: [JSON!]!) {
				appendProviderEvents(messageId: $m, format: OPENAI_RESPONSES, seq: $s, events: $e) { seq } }`,
				map[string]any{"m": m.ID, "s": seq, "e": batch}, nil)
		}
	}
	got := endMessage(t, other, `mutation($m: ID!) { completeMessage(messageId: $m) { `+liveFields+` } }`, map[string]any{"m": m.ID})
	if got.Typename != "ToolRequestMessage" || got.Text != "Let me check the current weather in Paris for you." ||
		!strings.HasPrefix(got.Thinking, "**Checking the weather**") || len(got.ToolCalls) != 1 ||
		got.ToolCalls[0].ID != "call_Xk4vQ2mN8pR1sT6uW9yZ3bC5" || got.ToolCalls[0].Name != "get_weather" ||
		!jsonEqual(got.ToolCalls[0].Arguments, parley.JSON(`{"city":"Paris","unit":"c"}`)) {
		t.Errorf("completed: got %+v", got)
	}
	p := got.Provenance
	if p == nil || p.Provider != "openai" || p.Model != "gpt-5-mini-2025-08-07" || p.FinishReason != "completed" ||
		!strings.HasPrefix(p.ResponseID, "resp_68c1f0a2") ||
		p.Usage != (parley.Usage{InputTokens: 182, OutputTokens: 87, CachedInputTokens: 128, ReasoningTokens: 64}) {
		t.Errorf("provenance: got %+v", p)
	}
}

// TestAnthropicServerToolsThroughTheAPI: a stream with redacted thinking, a web search
// (server_tool_use and its web_search_tool_result) and cited text, appended through
// appendProviderEvents and completed, is stored as the same history imported as a
// finished reply is (REDACTED_THINKING, SERVER_TOOL parts with their blocks, citations),
// and goes back to Anthropic with every block.
func TestAnthropicServerToolsThroughTheAPI(t *testing.T) {
	t.Parallel()
	data, err := os.ReadFile(filepath.Join("..", "interop", "anthropic", "testdata", "stream", "redacted-and-server-tools.sse"))
	if err != nil {
		t.Fatal(err)
	}
	var batch []json.RawMessage
	var acc anthropicsdk.Message
	for _, ev := range sseData(string(data)) {
		batch = append(batch, json.RawMessage(ev))
		var e anthropicsdk.MessageStreamEventUnion
		if err := json.Unmarshal([]byte(ev), &e); err != nil {
			t.Fatal(err)
		}
		if err := acc.Accumulate(e); err != nil {
			t.Fatal(err)
		}
	}
	srv := testserver.New(t)
	streamed := srv.CreateConversation(t, "streamed")
	srv.MustDo(t, `mutation($c: ID!) { addMessage(conversationId: $c, input: {text: {role: USER, content: "Weather in Paris?"}}) { cursor } }`,
		map[string]any{"c": streamed}, nil)
	m := startMessage(t, srv, streamed, nil)
	srv.MustDo(t, `mutation($m: ID!, $e: [JSON!]!) { appendProviderEvents(messageId: $m, format: ANTHROPIC_MESSAGES, seq: 1, events: $e) { seq } }`,
		map[string]any{"m": m.ID, "e": batch}, nil)
	endMessage(t, srv, `mutation($m: ID!) { completeMessage(messageId: $m) { `+liveFields+` } }`, map[string]any{"m": m.ID})

	// The same reply, finished, as the SDK assembled it from the events, imported.
	var reply struct{ Content json.RawMessage }
	if err := json.Unmarshal([]byte(acc.RawJSON()), &reply); err != nil {
		t.Fatal(err)
	}
	history := `{"messages":[{"role":"user","content":"Weather in Paris?"},{"role":"assistant","content":` + string(reply.Content) + `}]}`
	var imp struct {
		ImportConversation struct{ Conversation struct{ ID string } }
	}
	srv.MustDo(t, `mutation($d: String!) { importConversation(format: ANTHROPIC_MESSAGES, data: $d) { conversation { id } } }`,
		map[string]any{"d": history}, &imp)
	imported := imp.ImportConversation.Conversation.ID

	parts := func(conv string) string {
		var out struct {
			Conversation struct {
				Messages struct {
					Edges []struct {
						Node struct {
							Parts []struct {
								Kind, Text string
								Signature  *string
								Raw        json.RawMessage
								Citations  json.RawMessage
							}
						}
					}
				}
			}
		}
		srv.MustDo(t, `query($c: ID!) { conversation(id: $c) { messages(first: 5) { edges { node {
			... on TextMessage { parts { kind text signature raw citations } } } } } } }`, map[string]any{"c": conv}, &out)
		b, _ := json.Marshal(out.Conversation.Messages.Edges[1].Node.Parts)
		return string(b)
	}
	got, want := parts(streamed), parts(imported)
	if got != want {
		t.Errorf("streamed parts\n%s\nimported\n%s", got, want)
	}
	for _, s := range []string{`"REDACTED_THINKING"`, `"server_tool_use"`, `"web_search_tool_result"`, `"web_search_result_location"`} {
		if !strings.Contains(got, s) {
			t.Errorf("streamed parts lack %s: %s", s, got)
		}
	}

	var out struct {
		Conversation struct{ Transcript json.RawMessage }
	}
	srv.MustDo(t, `query($c: ID!) { conversation(id: $c) { transcript(format: ANTHROPIC_MESSAGES) } }`, map[string]any{"c": streamed}, &out)
	var body struct{ Messages []anthropicsdk.MessageParam }
	if err := json.Unmarshal(out.Conversation.Transcript, &body); err != nil {
		t.Fatalf("the SDK cannot read the export: %v", err)
	}
	var blocks []string
	for _, b := range body.Messages[len(body.Messages)-1].Content {
		switch {
		case b.OfRedactedThinking != nil:
			blocks = append(blocks, "redacted_thinking")
		case b.OfServerToolUse != nil:
			blocks = append(blocks, "server_tool_use "+string(b.OfServerToolUse.Name))
		case b.OfWebSearchToolResult != nil:
			blocks = append(blocks, "web_search_tool_result")
		case b.OfText != nil:
			blocks = append(blocks, fmt.Sprintf("text %d citations", len(b.OfText.Citations)))
		default:
			blocks = append(blocks, "other")
		}
	}
	if w := "redacted_thinking|server_tool_use web_search|web_search_tool_result|text 1 citations"; strings.Join(blocks, "|") != w {
		t.Errorf("exported blocks %q, want %q", strings.Join(blocks, "|"), w)
	}
}
