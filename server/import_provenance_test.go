package server_test

import (
	"testing"

	"github.com/parley-dev/parley/internal/testserver"
)

// provenanceSelection reads every message's provenance.
const provenanceSelection = `conversation { messages(first: 10) { edges { node { ... on MessageBase { provenance {
	provider model responseId finishReason
	usage { inputTokens outputTokens cachedInputTokens cacheCreationInputTokens reasoningTokens } } } } } } }`

type importedProvenance struct {
	Provider, Model, ResponseID, FinishReason string
	Usage                                     struct{ InputTokens, OutputTokens, CachedInputTokens, CacheCreationInputTokens, ReasoningTokens int }
}

// An imported reply keeps who produced it where the file says: a Claude Code line's
// model, message id, stop reason and (the last line's) usage; an Anthropic message
// object's; a Responses API response's model, id, status and usage. Stored by the bulk
// (COPY) import and read back on the message. A history that says nothing of it (a
// request body's messages) leaves only the provider, or nothing. (Chat Completions
// messages carry none of it: a request body's model is the next call's, not theirs.)
func TestImportedReplyProvenance(t *testing.T) {
	t.Parallel()
	srv := testserver.New(t)
	for _, tc := range []struct {
		name, format, data string
		want               *importedProvenance // of the last message
	}{
		{"claude code", "CLAUDE_CODE_JSONL", `{"type":"user","uuid":"u1","timestamp":"2026-02-10T10:00:00Z","message":{"role":"user","content":"hi"}}
{"type":"assistant","uuid":"a1","timestamp":"2026-02-10T10:00:01Z","message":{"id":"msg_1","role":"assistant","model":"claude-opus-4","stop_reason":"end_turn","content":[{"type":"text","text":"hello"}],"usage":{"input_tokens":12,"output_tokens":9,"cache_read_input_tokens":1000,"cache_creation_input_tokens":30}}}
`, &importedProvenance{Provider: "anthropic", Model: "claude-opus-4", ResponseID: "msg_1", FinishReason: "end_turn",
			Usage: struct{ InputTokens, OutputTokens, CachedInputTokens, CacheCreationInputTokens, ReasoningTokens int }{12, 9, 1000, 30, 0}}},
		{"anthropic message objects", "ANTHROPIC_MESSAGES", `{"messages":[{"role":"user","content":"hi"},
			{"id":"msg_2","type":"message","role":"assistant","model":"claude-sonnet-4-5","stop_reason":"tool_use",
			 "content":[{"type":"text","text":"let me look"},{"type":"tool_use","id":"toolu_1","name":"ls","input":{}}],
			 "usage":{"input_tokens":40,"output_tokens":7,"cache_read_input_tokens":300,"cache_creation_input_tokens":5}}]}`,
			&importedProvenance{Provider: "anthropic", Model: "claude-sonnet-4-5", ResponseID: "msg_2", FinishReason: "tool_use",
				Usage: struct{ InputTokens, OutputTokens, CachedInputTokens, CacheCreationInputTokens, ReasoningTokens int }{40, 7, 300, 5, 0}}},
		{"anthropic request body", "ANTHROPIC_MESSAGES", `{"messages":[{"role":"user","content":"hi"},{"role":"assistant","content":"hello"}]}`, nil},
		{"openai responses response", "OPENAI_RESPONSES", `{"id":"resp_9","object":"response","model":"gpt-5","status":"incomplete",
			"incomplete_details":{"reason":"max_output_tokens"},
			"output":[{"type":"message","id":"msg_a","role":"assistant","content":[{"type":"output_text","text":"partial answer"}]}],
			"usage":{"input_tokens":100,"output_tokens":50,"input_tokens_details":{"cached_tokens":64},"output_tokens_details":{"reasoning_tokens":20}}}`,
			&importedProvenance{Provider: "openai", Model: "gpt-5", ResponseID: "resp_9", FinishReason: "max_output_tokens",
				Usage: struct{ InputTokens, OutputTokens, CachedInputTokens, CacheCreationInputTokens, ReasoningTokens int }{100, 50, 64, 0, 20}}},
		{"openai responses request", "OPENAI_RESPONSES", `{"model":"gpt-5","input":[{"role":"user","content":"hi"},
			{"type":"message","role":"assistant","content":[{"type":"output_text","text":"hello"}]}]}`,
			&importedProvenance{Provider: "openai"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var out struct {
				ImportConversation struct {
					Conversation struct {
						Messages struct {
							Edges []struct {
								Node struct{ Provenance *importedProvenance }
							}
						}
					}
				}
			}
			srv.MustDo(t, `mutation($f: ImportFormat!, $d: String!) { importConversation(format: $f, data: $d) { `+provenanceSelection+` } }`,
				map[string]any{"f": tc.format, "d": tc.data}, &out)
			edges := out.ImportConversation.Conversation.Messages.Edges
			if len(edges) == 0 {
				t.Fatal("no messages imported")
			}
			for _, e := range edges[:len(edges)-1] { // the user's
				if p := e.Node.Provenance; p != nil {
					t.Errorf("the user's message: got provenance %+v, want none", p)
				}
			}
			got := edges[len(edges)-1].Node.Provenance
			switch {
			case tc.want == nil && got != nil:
				t.Errorf("the reply: got provenance %+v, want none", got)
			case tc.want != nil && (got == nil || *got != *tc.want):
				t.Errorf("the reply: got provenance %+v, want %+v", got, tc.want)
			}
		})
	}
}
