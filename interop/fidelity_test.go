package interop_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	anthropicsdk "github.com/anthropics/anthropic-sdk-go"
	openaisdk "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/responses"

	"github.com/parley-dev/parley/internal/testserver"
)

// argumentShapes are tool call arguments as models produce them: OpenAI sends a string,
// and each must come back byte for byte. valid says the string is a JSON object.
var argumentShapes = []struct {
	name, raw string
	valid     bool
}{
	{"key order", `{"b":1,"a":2}`, true},
	{"whitespace", "{ \"a\" : 1 ,\n  \"b\": [1, 2] }", true},
	{"exponent", `{"n":1e2}`, true},
	{"negative zero", `{"n":-0}`, true},
	{"trailing zero", `{"n":1.50}`, true},
	{"big integer", `{"n":12345678901234567890123}`, true},
	{"escapes", `{"s":"a\/b\u00e9\n\"q\""}`, true},
	{"unicode", `{"s":"héllo 日本 🎉"}`, true},
	{"nested", `{"a":{"b":{"c":[{"d":null},true]}}}`, true},
	{"duplicate keys", `{"a":1,"a":2}`, true},
	{"empty object", `{}`, true},
	{"surrounding spaces", ` {"a":1} `, true},
	{"empty string", ``, false},
	{"truncated by the length limit", `{"path":"/tmp/fi`, false},
	{"array", `[1,2]`, false},
	{"null", `null`, false},
}

// argumentsHistory is an OpenAI chat history with one call per shape, each answered
// (the invalid ones with an error, as a tool loop would).
func argumentsHistory(t *testing.T) string {
	t.Helper()
	var calls []map[string]any
	msgs := []map[string]any{{"role": "user", "content": "Go."}}
	for i, s := range argumentShapes {
		calls = append(calls, map[string]any{"id": fmt.Sprintf("call_%d", i), "type": "function",
			"function": map[string]any{"name": "tool", "arguments": s.raw}})
	}
	msgs = append(msgs, map[string]any{"role": "assistant", "content": nil, "tool_calls": calls})
	for i, s := range argumentShapes {
		text := "done"
		if !s.valid {
			text = "error: the arguments are not a JSON object"
		}
		msgs = append(msgs, map[string]any{"role": "tool", "tool_call_id": fmt.Sprintf("call_%d", i), "content": text})
	}
	b, err := json.Marshal(msgs)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

const toolCallsQuery = `query($id: ID!) { conversation(id: $id) { messages(first: 100) { edges { node {
	... on ToolRequestMessage { toolCalls { callId arguments argumentsRaw argumentsValid } }
} } } } }`

type storedCall struct {
	CallID         string
	Arguments      json.RawMessage
	ArgumentsRaw   *string
	ArgumentsValid bool
}

func storedCalls(t *testing.T, srv *testserver.Server, conv string) map[string]storedCall {
	t.Helper()
	var out struct {
		Conversation struct {
			Messages struct {
				Edges []struct {
					Node struct{ ToolCalls []storedCall }
				}
			}
		}
	}
	srv.MustDo(t, toolCallsQuery, map[string]any{"id": conv}, &out)
	calls := make(map[string]storedCall)
	for _, e := range out.Conversation.Messages.Edges {
		for _, c := range e.Node.ToolCalls {
			calls[c.CallID] = c
		}
	}
	return calls
}

// TestArgumentsByteForByte imports every argument shape, reads it back through the API
// and exports it: OpenAI's formats send each string exactly as produced, decoded by the
// official SDK; Anthropic's sends the valid ones with their key order and numbers and
// {} for the others, with a note.
func TestArgumentsByteForByte(t *testing.T) {
	t.Parallel()
	srv := testserver.New(t)
	rep := importData(t, srv, "OPENAI_CHAT", argumentsHistory(t), "", "")
	if want := 2 + len(argumentShapes); rep.Added != want {
		t.Fatalf("added %d messages, want %d", rep.Added, want)
	}
	conv := rep.Conversation.ID
	calls := storedCalls(t, srv, conv)
	for i, s := range argumentShapes {
		c := calls[fmt.Sprintf("call_%d", i)]
		if c.ArgumentsRaw == nil || *c.ArgumentsRaw != s.raw {
			t.Errorf("%s: argumentsRaw %v, want %q", s.name, c.ArgumentsRaw, s.raw)
		}
		if c.ArgumentsValid != s.valid {
			t.Errorf("%s: argumentsValid %v, want %v", s.name, c.ArgumentsValid, s.valid)
		}
		// arguments stays a JSON object: the raw text when it is one, else {}.
		want := strings.TrimSpace(s.raw)
		if !s.valid {
			want = "{}"
		}
		if !sameJSON(t, c.Arguments, []byte(want)) {
			t.Errorf("%s: arguments %s, want %s", s.name, c.Arguments, want)
		}
	}

	chat, _ := transcript(t, srv, conv, "OPENAI_CHAT", transcriptOpts{})
	var chatMsgs []openaisdk.ChatCompletionMessageParamUnion
	if err := json.Unmarshal(chat, &chatMsgs); err != nil {
		t.Fatalf("the SDK cannot read the chat export: %v", err)
	}
	if len(chatMsgs) < 2 || chatMsgs[1].OfAssistant == nil || len(chatMsgs[1].OfAssistant.ToolCalls) != len(argumentShapes) {
		t.Fatalf("chat export: want the assistant's %d calls second, got %s", len(argumentShapes), chat)
	}
	for i, s := range argumentShapes {
		if got := chatMsgs[1].OfAssistant.ToolCalls[i].OfFunction.Function.Arguments; got != s.raw {
			t.Errorf("%s: OPENAI_CHAT arguments %q, want %q", s.name, got, s.raw)
		}
	}
	// And the SDK encodes them back unchanged.
	again, err := json.Marshal(chatMsgs)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range argumentShapes {
		quoted, _ := json.Marshal(s.raw)
		if !bytes.Contains(again, quoted) && !bytes.Contains(chat, quoted) {
			t.Errorf("%s: %s is not in the re-encoded export", s.name, quoted)
		}
	}

	resp, _ := transcript(t, srv, conv, "OPENAI_RESPONSES", transcriptOpts{})
	var items []responses.ResponseInputItemUnionParam
	if err := json.Unmarshal(resp, &items); err != nil {
		t.Fatalf("the SDK cannot read the responses export: %v", err)
	}
	var got []string
	for _, it := range items {
		if it.OfFunctionCall != nil {
			got = append(got, it.OfFunctionCall.Arguments)
		}
	}
	if len(got) != len(argumentShapes) {
		t.Fatalf("responses export: %d function calls, want %d", len(got), len(argumentShapes))
	}
	for i, s := range argumentShapes {
		if got[i] != s.raw {
			t.Errorf("%s: OPENAI_RESPONSES arguments %q, want %q", s.name, got[i], s.raw)
		}
	}

	msgs, rep2 := transcript(t, srv, conv, "ANTHROPIC_MESSAGES", transcriptOpts{})
	var body struct{ Messages []anthropicsdk.MessageParam }
	if err := json.Unmarshal(msgs, &body); err != nil {
		t.Fatalf("the SDK cannot read the messages export: %v", err)
	}
	var inputs []json.RawMessage
	for _, m := range body.Messages {
		for _, b := range m.Content {
			if b.OfToolUse != nil {
				in, err := json.Marshal(b.OfToolUse.Input)
				if err != nil {
					t.Fatal(err)
				}
				inputs = append(inputs, in)
			}
		}
	}
	if len(inputs) != len(argumentShapes) {
		t.Fatalf("messages export: %d tool uses, want %d", len(inputs), len(argumentShapes))
	}
	for i, s := range argumentShapes {
		want := "{}"
		if s.valid {
			var b bytes.Buffer
			if err := json.Compact(&b, []byte(s.raw)); err != nil {
				t.Fatal(err)
			}
			want = b.String()
		}
		// The raw input inside the export keeps key order and number spelling.
		if !bytes.Contains(msgs, []byte(`"input":`+want)) {
			t.Errorf("%s: ANTHROPIC_MESSAGES input is not %s:\n%s", s.name, want, inputs[i])
		}
	}
	if !containsPrefix(rep2.Notes, "tool call arguments that are not a JSON object") {
		t.Errorf("notes %q: want one about the invalid arguments sent as {}", rep2.Notes)
	}
}

func containsPrefix(list []string, prefix string) bool {
	for _, s := range list {
		if strings.HasPrefix(s, prefix) {
			return true
		}
	}
	return false
}

// TestArgumentsRawThroughAddMessage stores a call's arguments as produced through
// addMessage, refuses both forms at once, and records a truncated call flagged invalid.
func TestArgumentsRawThroughAddMessage(t *testing.T) {
	t.Parallel()
	srv := testserver.New(t)
	conv := createConversation(t, srv)
	add := func(call map[string]any) *testserver.Response {
		return srv.Do(t, `mutation($c: ID!, $in: MessageInput!) { addMessage(conversationId: $c, input: $in) { cursor } }`,
			map[string]any{"c": conv, "in": map[string]any{"toolRequest": map[string]any{"toolCalls": []any{call}}}})
	}
	for _, tc := range []struct {
		name string
		call map[string]any
		code string
	}{
		{"both forms", map[string]any{"id": "c1", "name": "t", "arguments": map[string]any{}, "argumentsRaw": "{}"}, "BAD_USER_INPUT"},
		{"neither form", map[string]any{"id": "c2", "name": "t"}, "BAD_USER_INPUT"},
		{"NUL byte", map[string]any{"id": "c3", "name": "t", "argumentsRaw": "{\"a\":\"\x00\"}"}, "BAD_USER_INPUT"},
	} {
		if r := add(tc.call); len(r.Errors) == 0 || r.ErrorCode(t) != tc.code {
			t.Errorf("%s: got errors %+v, want %s", tc.name, r.Errors, tc.code)
		}
	}
	if r := add(map[string]any{"id": "c4", "name": "t", "argumentsRaw": `{"q":"cut sh`}); len(r.Errors) != 0 {
		t.Fatalf("truncated arguments refused: %+v", r.Errors)
	}
	if r := add(map[string]any{"id": "c5", "name": "t", "argumentsRaw": `{"z":1, "a":1e2}`}); len(r.Errors) != 0 {
		t.Fatalf("valid raw arguments refused: %+v", r.Errors)
	}
	calls := storedCalls(t, srv, conv)
	if len(calls) != 2 {
		t.Fatalf("stored %d calls, want 2 (the refused ones left nothing)", len(calls))
	}
	if c := calls["c4"]; c.ArgumentsValid || c.ArgumentsRaw == nil || *c.ArgumentsRaw != `{"q":"cut sh` || string(c.Arguments) != "{}" {
		t.Errorf("truncated call: got %+v (raw %v), want it kept as produced, flagged invalid, arguments {}", c, c.ArgumentsRaw)
	}
	// arguments keeps the key order and number spelling (the response compacts it).
	if c := calls["c5"]; !c.ArgumentsValid || string(c.Arguments) != `{"z":1,"a":1e2}` || *c.ArgumentsRaw != `{"z":1, "a":1e2}` {
		t.Errorf("valid call: got arguments %s raw %q valid %v, want the raw text, valid", c.Arguments, *c.ArgumentsRaw, c.ArgumentsValid)
	}
}

func createConversation(t *testing.T, srv *testserver.Server) string {
	t.Helper()
	var out struct{ CreateConversation struct{ ID string } }
	srv.MustDo(t, `mutation { createConversation(title: "fidelity") { id } }`, nil, &out)
	return out.CreateConversation.ID
}

// thinkingHistory is an Anthropic tool loop with extended thinking: signed thinking
// whose display was omitted (empty text), redacted thinking and visible signed thinking.
const thinkingHistory = `{"messages": [
  {"role": "user", "content": [{"type": "text", "text": "What is in main.go?"}]},
  {"role": "assistant", "content": [
    {"type": "thinking", "thinking": "", "signature": "sig-empty"},
    {"type": "redacted_thinking", "data": "ENCRYPTED-1"},
    {"type": "tool_use", "id": "toolu_1", "name": "read", "input": {"path": "main.go", "n": 1e2}}
  ]},
  {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": [{"type": "text", "text": "package main"}]}]},
  {"role": "assistant", "content": [
    {"type": "thinking", "thinking": "It is a main package.", "signature": "sig-2"},
    {"type": "text", "text": "A main package."}
  ]}
]}`

const partsQuery = `query($id: ID!) { conversation(id: $id) { messages(first: 100) { edges { node {
	... on TextMessage { parts { kind text signature } }
	... on ToolRequestMessage { parts { kind text signature } }
} } } } }`

// TestThinkingKept imports signed thinking with empty text and redacted thinking from
// the Messages API, keeps both as parts, and sends them back to Anthropic unmodified:
// the SDK reads the export, and it is the input.
func TestThinkingKept(t *testing.T) {
	t.Parallel()
	srv := testserver.New(t)
	rep := importData(t, srv, "ANTHROPIC_MESSAGES", thinkingHistory, "", "")
	var out struct {
		Conversation struct {
			Messages struct {
				Edges []struct {
					Node struct {
						Parts []struct {
							Kind, Text string
							Signature  *string
						}
					}
				}
			}
		}
	}
	srv.MustDo(t, partsQuery, map[string]any{"id": rep.Conversation.ID}, &out)
	var got []string
	for _, e := range out.Conversation.Messages.Edges {
		for _, p := range e.Node.Parts {
			sig := ""
			if p.Signature != nil {
				sig = *p.Signature
			}
			got = append(got, fmt.Sprintf("%s %q %s", p.Kind, p.Text, sig))
		}
	}
	want := []string{`TEXT "What is in main.go?" `, `THINKING "" sig-empty`, `REDACTED_THINKING "" ENCRYPTED-1`,
		`THINKING "It is a main package." sig-2`, `TEXT "A main package." `}
	if g, w := strings.Join(got, "\n"), strings.Join(want, "\n"); g != w {
		t.Errorf("parts:\n%s\nwant:\n%s", g, w)
	}

	msgs, trep := transcript(t, srv, rep.Conversation.ID, "ANTHROPIC_MESSAGES", transcriptOpts{})
	var body struct{ Messages []anthropicsdk.MessageParam }
	if err := json.Unmarshal(msgs, &body); err != nil {
		t.Fatalf("the SDK cannot read the export: %v", err)
	}
	first := body.Messages[1].Content
	if len(first) != 3 || first[0].OfThinking == nil || first[0].OfThinking.Signature != "sig-empty" || first[0].OfThinking.Thinking != "" ||
		first[1].OfRedactedThinking == nil || first[1].OfRedactedThinking.Data != "ENCRYPTED-1" || first[2].OfToolUse == nil {
		t.Errorf("the first assistant turn is not [thinking, redacted_thinking, tool_use] as given:\n%s", msgs)
	}
	var in struct{ Messages json.RawMessage }
	if err := json.Unmarshal([]byte(thinkingHistory), &in); err != nil {
		t.Fatal(err)
	}
	var exported struct{ Messages json.RawMessage }
	if err := json.Unmarshal(msgs, &exported); err != nil {
		t.Fatal(err)
	}
	if w, g := mustJSON(t, normalize(t, in.Messages)), mustJSON(t, normalize(t, exported.Messages)); w != g {
		t.Errorf("round trip differs:\n%s", diff(w, g))
	}
	if !bytes.Contains(msgs, []byte(`"input":{"path":"main.go","n":1e2}`)) {
		t.Errorf("the tool input lost its spelling: %s", msgs)
	}
	if len(trep.Notes) != 0 {
		t.Errorf("notes %q, want none", trep.Notes)
	}
}

const replayQuery = `query($id: ID!, $f: TranscriptFormat!, $model: String, $fr: ForeignReasoning) {
	conversation(id: $id) {
		transcript(format: $f, repair: true, model: $model, foreignReasoning: $fr)
		transcriptReport(format: $f, repair: true, model: $model, foreignReasoning: $fr) {
			notes artifacts { messageId position artifact action reason }
		}
	}
}`

type artifact struct {
	MessageID, Artifact, Action, Reason string
	Position                            int
}

// signedTurn adds a tool loop whose thinking Anthropic signed for model, and returns
// the conversation.
func signedTurn(t *testing.T, srv *testserver.Server) string {
	t.Helper()
	conv := createConversation(t, srv)
	add := func(in map[string]any, prov map[string]any) {
		vars := map[string]any{"c": conv, "in": in}
		if prov != nil {
			vars["p"] = prov
		}
		srv.MustDo(t, `mutation($c: ID!, $in: MessageInput!, $p: ProvenanceInput) {
			addMessage(conversationId: $c, input: $in, provenance: $p) { cursor } }`, vars, nil)
	}
	add(map[string]any{"text": map[string]any{"role": "USER", "content": "Read main.go."}}, nil)
	add(map[string]any{"toolRequest": map[string]any{
		"parts": []any{
			map[string]any{"kind": "THINKING", "text": "I should read it.", "signature": "sig-opus"},
			map[string]any{"kind": "REDACTED_THINKING", "text": "", "signature": "ENCRYPTED-opus"},
		},
		"toolCalls": []any{map[string]any{"id": "toolu_1", "name": "read", "argumentsRaw": `{"path":"main.go"}`}},
	}}, map[string]any{"provider": "anthropic", "model": "claude-opus-4-6"})
	add(map[string]any{"toolResult": map[string]any{"toolCallId": "toolu_1", "status": "SUCCESS", "content": "package main"}}, nil)
	// Thinking a Gemini model signed, as the OpenAI-compatible shape carries it.
	add(map[string]any{"text": map[string]any{"role": "ASSISTANT", "parts": []any{
		map[string]any{"kind": "THINKING", "text": "Summing up.", "signature": "gemini-sig"},
		map[string]any{"kind": "TEXT", "text": "It is a main package."},
	}}}, map[string]any{"provider": "google", "model": "gemini-2.5-pro"})
	return conv
}

func replayExport(t *testing.T, srv *testserver.Server, conv, format, model, foreign string) (json.RawMessage, []artifact) {
	t.Helper()
	vars := map[string]any{"id": conv, "f": format}
	if model != "" {
		vars["model"] = model
	}
	if foreign != "" {
		vars["fr"] = foreign
	}
	var out struct {
		Conversation struct {
			Transcript       json.RawMessage
			TranscriptReport struct{ Artifacts []artifact }
		}
	}
	srv.MustDo(t, replayQuery, vars, &out)
	return out.Conversation.Transcript, out.Conversation.TranscriptReport.Artifacts
}

func summarize(as []artifact) string {
	var s []string
	for _, a := range as {
		s = append(s, fmt.Sprintf("%d %s %s", a.Position, a.Artifact, a.Action))
	}
	return strings.Join(s, "; ")
}

// TestReplayAcrossProviders exports an Anthropic-signed thinking turn (and thinking
// another provider signed) to the model that signed it, to another Anthropic model,
// converted to text, and to OpenAI: signatures go only where they are valid, and the
// report says what was dropped and why. Every export is read by the provider's SDK.
func TestReplayAcrossProviders(t *testing.T) {
	t.Parallel()
	srv := testserver.New(t)
	conv := signedTurn(t, srv)

	anthropicBlocks := func(raw json.RawMessage) (thinking, redacted []string, texts []string) {
		t.Helper()
		var body struct{ Messages []anthropicsdk.MessageParam }
		if err := json.Unmarshal(raw, &body); err != nil {
			t.Fatalf("the SDK cannot read the export: %v", err)
		}
		for _, m := range body.Messages {
			for _, b := range m.Content {
				switch {
				case b.OfThinking != nil:
					thinking = append(thinking, b.OfThinking.Signature)
				case b.OfRedactedThinking != nil:
					redacted = append(redacted, b.OfRedactedThinking.Data)
				case b.OfText != nil:
					texts = append(texts, b.OfText.Text)
				}
			}
		}
		return
	}

	t.Run("the signing model", func(t *testing.T) {
		for _, model := range []string{"claude-opus-4-6", ""} {
			raw, arts := replayExport(t, srv, conv, "ANTHROPIC_MESSAGES", model, "")
			thinking, redacted, _ := anthropicBlocks(raw)
			if strings.Join(thinking, ",") != "sig-opus" || strings.Join(redacted, ",") != "ENCRYPTED-opus" {
				t.Errorf("model %q: thinking %v, redacted %v; want Opus's signed and redacted thinking sent back", model, thinking, redacted)
			}
			if got := summarize(arts); got != "4 signed thinking dropped" {
				t.Errorf("model %q: artifacts %q, want only Gemini's signed thinking dropped", model, got)
			}
		}
	})

	t.Run("the signing model by another name", func(t *testing.T) {
		// A snapshot's date, Bedrock's and Vertex's spellings name the same model.
		for _, model := range []string{"claude-opus-4-6-20260205", "us.anthropic.claude-opus-4-6-v1:0", "claude-opus-4-6@20260205", "CLAUDE-OPUS-4-6"} {
			raw, arts := replayExport(t, srv, conv, "ANTHROPIC_MESSAGES", model, "")
			thinking, redacted, _ := anthropicBlocks(raw)
			if strings.Join(thinking, ",") != "sig-opus" || strings.Join(redacted, ",") != "ENCRYPTED-opus" {
				t.Errorf("model %q: thinking %v, redacted %v; want Opus's signed and redacted thinking sent back", model, thinking, redacted)
			}
			if got := summarize(arts); got != "4 signed thinking dropped" {
				t.Errorf("model %q: artifacts %q, want only Gemini's signed thinking dropped", model, got)
			}
		}
	})

	t.Run("another Anthropic model", func(t *testing.T) {
		raw, arts := replayExport(t, srv, conv, "ANTHROPIC_MESSAGES", "claude-sonnet-4-5", "")
		thinking, redacted, _ := anthropicBlocks(raw)
		if len(thinking)+len(redacted) != 0 {
			t.Errorf("thinking %v, redacted %v sent to another model; want none", thinking, redacted)
		}
		if got, want := summarize(arts), "2 signed thinking dropped; 2 redacted thinking dropped; 4 signed thinking dropped"; got != want {
			t.Errorf("artifacts %q, want %q", got, want)
		}
		if !strings.Contains(arts[0].Reason, "claude-opus-4-6") || !strings.Contains(arts[0].Reason, "not claude-sonnet-4-5") {
			t.Errorf("reason %q does not name the issuing and the target model", arts[0].Reason)
		}
		if arts[0].MessageID == "" {
			t.Error("the artifact names no message")
		}
	})

	t.Run("as text", func(t *testing.T) {
		raw, arts := replayExport(t, srv, conv, "ANTHROPIC_MESSAGES", "claude-sonnet-4-5", "AS_TEXT")
		thinking, redacted, texts := anthropicBlocks(raw)
		if len(thinking)+len(redacted) != 0 {
			t.Errorf("thinking %v, redacted %v sent; want none", thinking, redacted)
		}
		joined := strings.Join(texts, "\n")
		if !strings.Contains(joined, "<thinking>\nI should read it.\n</thinking>") || !strings.Contains(joined, "<thinking>\nSumming up.\n</thinking>") {
			t.Errorf("texts %q: want the readable thinking as text", texts)
		}
		if got, want := summarize(arts), "2 signed thinking sent as text; 2 redacted thinking dropped; 4 signed thinking sent as text"; got != want {
			t.Errorf("artifacts %q, want %q", got, want)
		}
	})

	t.Run("OpenAI", func(t *testing.T) {
		raw, arts := replayExport(t, srv, conv, "OPENAI_CHAT", "gpt-5", "")
		var msgs []openaisdk.ChatCompletionMessageParamUnion
		if err := json.Unmarshal(raw, &msgs); err != nil {
			t.Fatalf("the SDK cannot read the export: %v", err)
		}
		if bytes.Contains(raw, []byte("sig-opus")) || bytes.Contains(raw, []byte("ENCRYPTED")) || bytes.Contains(raw, []byte("I should read it")) {
			t.Errorf("Anthropic's thinking reached OpenAI: %s", raw)
		}
		if got, want := summarize(arts), "2 signed thinking dropped; 2 redacted thinking dropped; 4 signed thinking dropped"; got != want {
			t.Errorf("artifacts %q, want %q", got, want)
		}
		if !strings.Contains(arts[0].Reason, "openai cannot verify it") {
			t.Errorf("reason %q does not say why", arts[0].Reason)
		}
		raw, _ = replayExport(t, srv, conv, "OPENAI_RESPONSES", "", "")
		var items []responses.ResponseInputItemUnionParam
		if err := json.Unmarshal(raw, &items); err != nil {
			t.Fatalf("the SDK cannot read the export: %v", err)
		}
	})

	t.Run("bad options", func(t *testing.T) {
		for _, tc := range []struct{ format, model, foreign string }{
			{"MARKDOWN", "", "DROP"},
			{"PARLEY_JSON", "claude-opus-4-6", ""},
			{"ANTHROPIC_MESSAGES", strings.Repeat("m", 300), ""},
		} {
			vars := map[string]any{"id": conv, "f": tc.format}
			if tc.model != "" {
				vars["model"] = tc.model
			}
			if tc.foreign != "" {
				vars["fr"] = tc.foreign
			}
			r := srv.Do(t, replayQuery, vars)
			if len(r.Errors) == 0 || r.Errors[0].Code() != "BAD_USER_INPUT" {
				t.Errorf("%+v: got errors %+v, want BAD_USER_INPUT", tc, r.Errors)
			}
		}
	})
}

// interleavedHistory has an assistant turn that speaks between its tool calls.
const interleavedHistory = `{"messages": [
  {"role": "user", "content": [{"type": "text", "text": "Compare a.go and b.go."}]},
  {"role": "assistant", "content": [
    {"type": "thinking", "thinking": "Two files.", "signature": "sig-1"},
    {"type": "text", "text": "First a.go."},
    {"type": "tool_use", "id": "toolu_a", "name": "read", "input": {"path": "a.go"}},
    {"type": "text", "text": "Then b.go."},
    {"type": "tool_use", "id": "toolu_b", "name": "read", "input": {"path": "b.go"}}
  ]},
  {"role": "user", "content": [
    {"type": "tool_result", "tool_use_id": "toolu_a", "content": [{"type": "text", "text": "package a"}]},
    {"type": "tool_result", "tool_use_id": "toolu_b", "content": [{"type": "text", "text": "package b"}]}
  ]},
  {"role": "assistant", "content": [{"type": "text", "text": "Both are packages."}]}
]}`

// TestPartsKeepTheirOrder imports [thinking, text, tool_use, text, tool_use] and sends it
// back to Anthropic in that order (the SDK reads it, and it is the input), and to the
// Responses API as message, call, message, call.
func TestPartsKeepTheirOrder(t *testing.T) {
	t.Parallel()
	srv := testserver.New(t)
	rep := importData(t, srv, "ANTHROPIC_MESSAGES", interleavedHistory, "", "")
	var out struct {
		Conversation struct {
			Messages struct {
				Edges []struct {
					Node struct {
						ToolCalls []struct {
							CallID    string
							PartIndex *int
						}
					}
				}
			}
		}
	}
	srv.MustDo(t, `query($id: ID!) { conversation(id: $id) { messages(first: 10) { edges { node {
		... on ToolRequestMessage { toolCalls { callId partIndex } } } } } } }`, map[string]any{"id": rep.Conversation.ID}, &out)
	var at []string
	for _, e := range out.Conversation.Messages.Edges {
		for _, c := range e.Node.ToolCalls {
			if c.PartIndex == nil {
				at = append(at, c.CallID+"@end")
			} else {
				at = append(at, fmt.Sprintf("%s@%d", c.CallID, *c.PartIndex))
			}
		}
	}
	if got := strings.Join(at, " "); got != "toolu_a@2 toolu_b@3" {
		t.Errorf("partIndex: got %s, want toolu_a@2 toolu_b@3", got)
	}

	msgs, _ := transcript(t, srv, rep.Conversation.ID, "ANTHROPIC_MESSAGES", transcriptOpts{})
	var body struct{ Messages []anthropicsdk.MessageParam }
	if err := json.Unmarshal(msgs, &body); err != nil {
		t.Fatalf("the SDK cannot read the export: %v", err)
	}
	var in, exported struct{ Messages json.RawMessage }
	json.Unmarshal([]byte(interleavedHistory), &in)
	json.Unmarshal(msgs, &exported)
	if w, g := mustJSON(t, normalize(t, in.Messages)), mustJSON(t, normalize(t, exported.Messages)); w != g {
		t.Errorf("round trip differs:\n%s", diff(w, g))
	}

	resp, _ := transcript(t, srv, rep.Conversation.ID, "OPENAI_RESPONSES", transcriptOpts{})
	var items []responses.ResponseInputItemUnionParam
	if err := json.Unmarshal(resp, &items); err != nil {
		t.Fatalf("the SDK cannot read the export: %v", err)
	}
	var seq []string
	for _, it := range items {
		switch {
		case it.OfMessage != nil:
			seq = append(seq, "message:"+it.OfMessage.Content.OfString.Value)
		case it.OfFunctionCall != nil:
			seq = append(seq, "call:"+it.OfFunctionCall.CallID)
		case it.OfFunctionCallOutput != nil:
			seq = append(seq, "output:"+it.OfFunctionCallOutput.CallID)
		}
	}
	want := "message:Compare a.go and b.go. | message:First a.go. | call:toolu_a | message:Then b.go. | call:toolu_b | output:toolu_a | output:toolu_b | message:Both are packages."
	if got := strings.Join(seq, " | "); got != want {
		t.Errorf("responses items:\n got %s\nwant %s", got, want)
	}
}

// responsesHistory is a Responses API input with reasoning (summaries and encrypted
// content), item ids, and arguments spelled as the model produced them.
const responsesHistory = `[
  {"type": "message", "role": "developer", "content": "Be brief."},
  {"type": "message", "role": "user", "content": "Weather in Paris?"},
  {"type": "reasoning", "id": "rs_1", "summary": [{"type": "summary_text", "text": "Need the weather."}, {"type": "summary_text", "text": "Call the tool."}], "encrypted_content": "gAAAA-enc-1"},
  {"type": "message", "role": "assistant", "content": "Checking."},
  {"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "weather", "arguments": "{\"city\": \"Paris\",\"units\":\"metric\" }"},
  {"type": "function_call_output", "call_id": "call_1", "output": "18C"},
  {"type": "reasoning", "id": "rs_2", "summary": [], "encrypted_content": "gAAAA-enc-2"},
  {"type": "message", "role": "assistant", "content": "18C in Paris."}
]`

// TestResponsesImport imports a Responses history and exports it back: the items come
// back as given (read by openai-go), re-importing adds nothing, and the reasoning items
// go nowhere else: Anthropic and Chat Completions exports drop them and say why.
func TestResponsesImport(t *testing.T) {
	t.Parallel()
	srv := testserver.New(t)
	rep := importData(t, srv, "OPENAI_RESPONSES", responsesHistory, "", "")
	if rep.Added != 4 || rep.SystemPrompt == nil || *rep.SystemPrompt != "Be brief." {
		t.Fatalf("import: added %d, system prompt %v; want 4 and the developer message", rep.Added, rep.SystemPrompt)
	}
	conv := rep.Conversation.ID
	calls := storedCalls(t, srv, conv)
	if c := calls["call_1"]; c.ArgumentsRaw == nil || *c.ArgumentsRaw != `{"city": "Paris","units":"metric" }` {
		t.Errorf("arguments: got %v, want them as produced", c.ArgumentsRaw)
	}

	out, _ := transcript(t, srv, conv, "OPENAI_RESPONSES", transcriptOpts{system: *rep.SystemPrompt})
	var items []responses.ResponseInputItemUnionParam
	if err := json.Unmarshal(out, &items); err != nil {
		t.Fatalf("the SDK cannot read the export: %v", err)
	}
	if w, g := mustJSON(t, normalize(t, []byte(responsesHistory))), mustJSON(t, normalize(t, out)); w != g {
		t.Errorf("round trip differs:\n%s", diff(w, g))
	}
	if !bytes.Contains(out, []byte(`"arguments":"{\"city\": \"Paris\",\"units\":\"metric\" }"`)) {
		t.Errorf("the arguments are not sent as produced: %s", out)
	}
	if again := importData(t, srv, "OPENAI_RESPONSES", responsesHistory, conv, ""); again.Added != 0 {
		t.Errorf("re-import added %d, want 0", again.Added)
	}

	raw, arts := replayExport(t, srv, conv, "ANTHROPIC_MESSAGES", "", "")
	var body struct{ Messages []anthropicsdk.MessageParam }
	if err := json.Unmarshal(raw, &body); err != nil {
		t.Fatalf("the SDK cannot read the export: %v", err)
	}
	if bytes.Contains(raw, []byte("gAAAA")) {
		t.Errorf("encrypted reasoning reached Anthropic: %s", raw)
	}
	if got := summarize(arts); got != "2 reasoning item dropped; 2 reasoning item dropped; 4 reasoning item dropped" {
		t.Errorf("artifacts to Anthropic: %q", got)
	}
	_, arts = replayExport(t, srv, conv, "OPENAI_CHAT", "", "AS_TEXT")
	if got := summarize(arts); got != "2 reasoning item sent as text; 2 reasoning item sent as text; 4 reasoning item dropped" {
		t.Errorf("artifacts to Chat Completions: %q", got)
	} else if !strings.Contains(arts[0].Reason, "Chat Completions takes no reasoning items back") {
		t.Errorf("reason %q", arts[0].Reason)
	}
}

// serverToolHistory has a web search Anthropic ran itself, and text citing it.
const serverToolHistory = `{"messages": [
  {"role": "user", "content": [{"type": "text", "text": "What is Parley?"}]},
  {"role": "assistant", "content": [
    {"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search", "input": {"query": "parley graphql"}},
    {"type": "web_search_tool_result", "tool_use_id": "srvtoolu_1", "content": [
      {"type": "web_search_result", "url": "https://example.com/parley", "title": "Parley", "encrypted_content": "EqgfCioIARgBIiQ", "page_age": "2 days"}
    ]},
    {"type": "text", "text": "Parley stores LLM conversations.", "citations": [
      {"type": "web_search_result_location", "url": "https://example.com/parley", "title": "Parley", "encrypted_index": "Eo8BCioIAhgB", "cited_text": "Parley stores LLM conversations"}
    ]}
  ]}
]}`

// TestServerToolBlocksKept imports Anthropic server tool blocks and a cited text, keeps
// them as parts, and sends them back to Anthropic as they were (read by the SDK); they
// go to no other provider, and the report says so.
func TestServerToolBlocksKept(t *testing.T) {
	t.Parallel()
	srv := testserver.New(t)
	rep := importData(t, srv, "ANTHROPIC_MESSAGES", serverToolHistory, "", "")
	if rep.Added != 2 || len(rep.Warnings) != 0 {
		t.Fatalf("import: added %d, warnings %q; want 2, none", rep.Added, rep.Warnings)
	}
	msgs, trep := transcript(t, srv, rep.Conversation.ID, "ANTHROPIC_MESSAGES", transcriptOpts{})
	var body struct{ Messages []anthropicsdk.MessageParam }
	if err := json.Unmarshal(msgs, &body); err != nil {
		t.Fatalf("the SDK cannot read the export: %v", err)
	}
	if c := body.Messages[1].Content; len(c) != 3 || c[0].OfServerToolUse == nil || c[1].OfWebSearchToolResult == nil ||
		c[2].OfText == nil || len(c[2].OfText.Citations) != 1 {
		t.Errorf("the SDK does not read [server_tool_use, web_search_tool_result, cited text] back: %s", msgs)
	}
	var in, exported struct{ Messages json.RawMessage }
	json.Unmarshal([]byte(serverToolHistory), &in)
	json.Unmarshal(msgs, &exported)
	if w, g := mustJSON(t, normalize(t, in.Messages)), mustJSON(t, normalize(t, exported.Messages)); w != g {
		t.Errorf("round trip differs:\n%s", diff(w, g))
	}
	if len(trep.Notes) != 0 {
		t.Errorf("notes %q, want none", trep.Notes)
	}

	raw, arts := replayExport(t, srv, rep.Conversation.ID, "OPENAI_RESPONSES", "", "")
	if bytes.Contains(raw, []byte("EqgfCioIARgBIiQ")) || !bytes.Contains(raw, []byte("Parley stores LLM conversations.")) {
		t.Errorf("OpenAI export: want the text without the search blocks: %s", raw)
	}
	if got := summarize(arts); got != "2 server tool block dropped; 2 server tool block dropped" {
		t.Errorf("artifacts %q", got)
	}
}
