package interop_test

import (
	"encoding/json"
	"strings"
	"testing"

	openaisdk "github.com/openai/openai-go/v3"

	"github.com/parley-dev/parley/internal/testserver"
)

// geminiChat is a tool loop as Gemini's OpenAI-compatible API returns it: each call's
// thought signature under extra_content.google.
const geminiChat = `[{"role":"user","content":"Weather in Paris?"},
	{"role":"assistant","content":null,"tool_calls":[{"id":"call_g1","type":"function",
		"function":{"name":"weather","arguments":"{\"city\":\"Paris\"}"},
		"extra_content":{"google":{"thought_signature":"CiQBcsjafE4+sig=="}}}]},
	{"role":"tool","tool_call_id":"call_g1","content":"18C"}]`

// exportedSignatures returns each call's extra_content.google.thought_signature in an
// OPENAI_CHAT export, after checking the SDK reads the export.
func exportedSignatures(t *testing.T, chat json.RawMessage) map[string]string {
	t.Helper()
	var sdkMsgs []openaisdk.ChatCompletionMessageParamUnion
	if err := json.Unmarshal(chat, &sdkMsgs); err != nil {
		t.Fatalf("the SDK cannot read the chat export: %v", err)
	}
	var msgs []struct {
		ToolCalls []struct {
			ID           string
			ExtraContent *struct {
				Google struct {
					ThoughtSignature string `json:"thought_signature"`
				}
			} `json:"extra_content"`
		} `json:"tool_calls"`
	}
	if err := json.Unmarshal(chat, &msgs); err != nil {
		t.Fatal(err)
	}
	sigs := make(map[string]string)
	for _, m := range msgs {
		for _, c := range m.ToolCalls {
			if c.ExtraContent != nil {
				sigs[c.ID] = c.ExtraContent.Google.ThoughtSignature
			}
		}
	}
	return sigs
}

// TestGeminiThoughtSignatureKept imports Gemini's OpenAI-compatible tool calls with
// their thought signatures, shows them through the API, and sends them back where they
// were in OPENAI_CHAT (the SDK reads the export), and through PARLEY_JSON.
func TestGeminiThoughtSignatureKept(t *testing.T) {
	t.Parallel()
	srv := testserver.New(t)
	conv := importData(t, srv, "OPENAI_CHAT", geminiChat, "", "").Conversation.ID
	var out struct {
		Conversation struct {
			Messages struct {
				Edges []struct {
					Node struct {
						ToolCalls []struct{ ThoughtSignature *string }
					}
				}
			}
		}
	}
	srv.MustDo(t, `query($id: ID!) { conversation(id: $id) { messages(first: 10) { edges { node {
		... on ToolRequestMessage { toolCalls { thoughtSignature } } } } } } }`, map[string]any{"id": conv}, &out)
	if c := out.Conversation.Messages.Edges[1].Node.ToolCalls; len(c) != 1 || c[0].ThoughtSignature == nil || *c[0].ThoughtSignature != "CiQBcsjafE4+sig==" {
		t.Fatalf("stored calls %+v, want the thought signature", c)
	}
	chat, _ := transcript(t, srv, conv, "OPENAI_CHAT", transcriptOpts{})
	if got := exportedSignatures(t, chat)["call_g1"]; got != "CiQBcsjafE4+sig==" {
		t.Errorf("OPENAI_CHAT thought signature %q, want %q", got, "CiQBcsjafE4+sig==")
	}
	lossless, _ := transcript(t, srv, conv, "PARLEY_JSON", transcriptOpts{})
	other := testserver.New(t)
	again := importData(t, other, "PARLEY_JSON", string(lossless), "", "").Conversation.ID
	chat, _ = transcript(t, other, again, "OPENAI_CHAT", transcriptOpts{})
	if got := exportedSignatures(t, chat)["call_g1"]; got != "CiQBcsjafE4+sig==" {
		t.Errorf("after PARLEY_JSON: thought signature %q, want %q", got, "CiQBcsjafE4+sig==")
	}
}

// TestGeminiThoughtSignatureReplay sends a call's thought signature back only when
// Google issued it (or nobody says who did), and reports the others dropped.
func TestGeminiThoughtSignatureReplay(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		provider string
		kept     bool
	}{
		{"google", "google", true},
		{"gemini", "gemini", true},
		{"unknown", "", true},
		{"openai", "openai", false},
		{"anthropic", "anthropic", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := testserver.New(t)
			conv := createConversation(t, srv)
			srv.MustDo(t, `mutation($c: ID!, $in: MessageInput!) { addMessage(conversationId: $c, input: $in) { cursor } }`,
				map[string]any{"c": conv, "in": map[string]any{"text": map[string]any{"role": "USER", "content": "Go."}}}, nil)
			vars := map[string]any{"c": conv, "in": map[string]any{"toolRequest": map[string]any{"toolCalls": []any{
				map[string]any{"id": "call_1", "name": "t", "argumentsRaw": "{}", "thoughtSignature": "sig-1"}}}}}
			if tc.provider != "" {
				vars["p"] = map[string]any{"provider": tc.provider, "model": "m"}
			}
			srv.MustDo(t, `mutation($c: ID!, $in: MessageInput!, $p: ProvenanceInput) {
				addMessage(conversationId: $c, input: $in, provenance: $p) { cursor } }`, vars, nil)
			srv.MustDo(t, `mutation($c: ID!, $in: MessageInput!) { addMessage(conversationId: $c, input: $in) { cursor } }`,
				map[string]any{"c": conv, "in": map[string]any{"toolResult": map[string]any{"toolCallId": "call_1", "status": "SUCCESS", "content": "ok"}}}, nil)
			chat, arts := replayExport(t, srv, conv, "OPENAI_CHAT", "", "")
			_, sent := exportedSignatures(t, chat)["call_1"]
			if sent != tc.kept {
				t.Errorf("thought signature sent %v, want %v (export %s)", sent, tc.kept, chat)
			}
			dropped := summarize(arts) == "2 thought signature dropped"
			if dropped == tc.kept {
				t.Errorf("artifacts %q, want a dropped thought signature reported: %v", summarize(arts), !tc.kept)
			}
		})
	}
}

// TestThoughtSignatureModel sends a call's thought signature back only to the model
// that issued it, when the transcript names its model: the same model under another of
// its names (Gemini's "models/" prefix) keeps it, another Gemini model does not, and the
// report says which model issued what was dropped.
func TestThoughtSignatureModel(t *testing.T) {
	t.Parallel()
	srv := testserver.New(t)
	conv := createConversation(t, srv)
	srv.MustDo(t, `mutation($c: ID!, $in: MessageInput!) { addMessage(conversationId: $c, input: $in) { cursor } }`,
		map[string]any{"c": conv, "in": map[string]any{"text": map[string]any{"role": "USER", "content": "Go."}}}, nil)
	srv.MustDo(t, `mutation($c: ID!, $in: MessageInput!, $p: ProvenanceInput) {
		addMessage(conversationId: $c, input: $in, provenance: $p) { cursor } }`, map[string]any{"c": conv,
		"in": map[string]any{"toolRequest": map[string]any{"toolCalls": []any{
			map[string]any{"id": "call_1", "name": "t", "argumentsRaw": "{}", "thoughtSignature": "sig-1"}}}},
		"p": map[string]any{"provider": "google", "model": "gemini-2.5-pro"}}, nil)
	srv.MustDo(t, `mutation($c: ID!, $in: MessageInput!) { addMessage(conversationId: $c, input: $in) { cursor } }`,
		map[string]any{"c": conv, "in": map[string]any{"toolResult": map[string]any{"toolCallId": "call_1", "status": "SUCCESS", "content": "ok"}}}, nil)
	for _, tc := range []struct {
		model string
		kept  bool
	}{
		{"", true},
		{"gemini-2.5-pro", true},
		{"models/gemini-2.5-pro", true},
		{"Gemini-2.5-Pro", true},
		{"gemini-3-pro-preview", false},
		{"gemini-2.5-flash", false},
	} {
		chat, arts := replayExport(t, srv, conv, "OPENAI_CHAT", tc.model, "")
		_, sent := exportedSignatures(t, chat)["call_1"]
		if sent != tc.kept {
			t.Errorf("model %q: thought signature sent %v, want %v", tc.model, sent, tc.kept)
		}
		switch {
		case tc.kept && len(arts) != 0:
			t.Errorf("model %q: artifacts %q, want none", tc.model, summarize(arts))
		case !tc.kept && (summarize(arts) != "2 thought signature dropped" ||
			!strings.Contains(arts[0].Reason, "gemini-2.5-pro") || !strings.Contains(arts[0].Reason, tc.model)):
			t.Errorf("model %q: artifacts %+v, want the thought signature dropped, the reason naming both models", tc.model, arts)
		}
	}
}
