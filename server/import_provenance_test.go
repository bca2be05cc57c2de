package server_test

import (
	"testing"

	"github.com/parley-dev/parley/internal/testserver"
)

// A Claude Code reply imported through the API keeps who produced it: the model, the
// message id, the stop reason and the last line's usage, stored by the bulk (COPY)
// import and read back on the message.
func TestImportedReplyProvenance(t *testing.T) {
	t.Parallel()
	srv := testserver.New(t)
	session := `{"type":"user","uuid":"u1","timestamp":"2026-02-10T10:00:00Z","message":{"role":"user","content":"hi"}}
{"type":"assistant","uuid":"a1","timestamp":"2026-02-10T10:00:01Z","message":{"id":"msg_1","role":"assistant","model":"claude-opus-4","stop_reason":"end_turn","content":[{"type":"text","text":"hello"}],"usage":{"input_tokens":12,"output_tokens":9,"cache_read_input_tokens":1000,"cache_creation_input_tokens":30}}}
`
	var out struct {
		ImportConversation struct {
			Conversation struct {
				Messages struct {
					Edges []struct {
						Node struct {
							Provenance *struct {
								Provider, Model, ResponseID, FinishReason string
								Usage                                     struct{ InputTokens, OutputTokens, CachedInputTokens, CacheCreationInputTokens int }
							}
						}
					}
				}
			}
		}
	}
	srv.MustDo(t, `mutation($d: String!) { importConversation(format: CLAUDE_CODE_JSONL, data: $d) { conversation {
		messages(first: 10) { edges { node { ... on MessageBase { provenance { provider model responseId finishReason
			usage { inputTokens outputTokens cachedInputTokens cacheCreationInputTokens } } } } } } } } }`,
		map[string]any{"d": session}, &out)
	edges := out.ImportConversation.Conversation.Messages.Edges
	if len(edges) != 2 {
		t.Fatalf("got %d messages, want 2", len(edges))
	}
	p := edges[1].Node.Provenance
	if p == nil || p.Provider != "anthropic" || p.Model != "claude-opus-4" || p.ResponseID != "msg_1" || p.FinishReason != "end_turn" ||
		p.Usage.InputTokens != 12 || p.Usage.OutputTokens != 9 || p.Usage.CachedInputTokens != 1000 || p.Usage.CacheCreationInputTokens != 30 {
		t.Errorf("the reply's provenance: got %+v", p)
	}
}
