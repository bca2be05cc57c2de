package interop_test

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	anthropicsdk "github.com/anthropics/anthropic-sdk-go"
	"github.com/openai/openai-go/v3/responses"

	"github.com/parley-dev/parley/internal/testserver"
)

// Provider compaction output as the APIs return it; the odd spacing and key order are
// kept, so that a change to either shows.
const (
	anthropicCompaction = `{"type":"compaction","content":"The user fixed the login test; the cookie race is gone.","encrypted_content":"ENC-A","signature":"sig-A"}`
	openaiCompaction    = `{"id":"cmp_01","type":"compaction","encrypted_content":"gAAAA-openai-opaque","created_by":"compaction"}`
)

// TestCompaction adds a client's summary, then an Anthropic compaction block and an
// OpenAI compaction item, to a conversation: each LLM export starts at the newest
// compaction its format takes (the providers' own output only to their own API, byte
// for byte), leaving out the messages it covers and saying so; the history itself keeps
// every message, the compactions included; the SDKs read every export.
func TestCompaction(t *testing.T) {
	t.Parallel()
	srv := testserver.New(t)
	conv := srv.CreateConversation(t, "compaction")
	turn := func(q, a string) {
		srv.AddMessage(t, conv, testserver.Text("USER", q))
		srv.AddMessage(t, conv, testserver.Text("ASSISTANT", a))
	}
	compact := func(in map[string]any) testserver.AddedMessage {
		return srv.AddMessage(t, conv, map[string]any{"compaction": in})
	}
	turn("Why does the login test fail?", "It races the session cookie.") // 1, 2
	turn("Fix it.", "Done: it waits for the redirect.")                   // 3, 4
	summary := compact(map[string]any{"content": "The login test raced the session cookie; it now waits for the redirect."})
	turn("Now the signup test?", "It passes.") // 6, 7
	anth := compact(map[string]any{"provider": "anthropic", "providerData": anthropicCompaction})
	oai := compact(map[string]any{"provider": "openai", "providerData": openaiCompaction})
	turn("Anything else?", "No.") // 10, 11
	if summary.Position != 5 || anth.Position != 8 || oai.Position != 9 || summary.Role != "SUPERVISOR" || summary.Typename != "CompactionMessage" {
		t.Fatalf("got %+v, %+v, %+v", summary, anth, oai)
	}

	type blocks []string
	for _, tc := range []struct {
		format  string
		want    blocks // each message or block: role and text, or the provider's JSON
		starts  int
		covered string
	}{
		// Chat Completions takes only the summary: it starts there.
		{"OPENAI_CHAT", blocks{
			"user:The login test raced the session cookie; it now waits for the redirect.",
			"user:Now the signup test?", "assistant:It passes.", "user:Anything else?", "assistant:No.",
		}, 5, "for the 4 messages it covers (positions 1-4"},
		// Responses: the OpenAI item, as given, then what follows it.
		{"OPENAI_RESPONSES", blocks{openaiCompaction, "user:Anything else?", "assistant:No."}, 9, "for the 8 messages it covers (positions 1-8"},
		// Messages API: the Anthropic block, in an assistant turn, then what follows.
		{"ANTHROPIC_MESSAGES", blocks{"assistant:" + anthropicCompaction, "user:Anything else?", "assistant:No."}, 8, "for the 7 messages it covers (positions 1-7"},
	} {
		t.Run(tc.format, func(t *testing.T) {
			out, rep := transcript(t, srv, conv, tc.format, transcriptOpts{})
			decodeWithSDK(t, tc.format, out)
			var got blocks
			switch tc.format {
			case "ANTHROPIC_MESSAGES":
				var body struct {
					Messages []struct {
						Role    string
						Content []json.RawMessage
					}
				}
				if err := json.Unmarshal(out, &body); err != nil {
					t.Fatal(err)
				}
				for _, m := range body.Messages {
					for _, b := range m.Content {
						var text struct{ Type, Text string }
						_ = json.Unmarshal(b, &text)
						if text.Type == "text" {
							got = append(got, m.Role+":"+text.Text)
						} else {
							got = append(got, m.Role+":"+string(b))
						}
					}
				}
				// The beta types, which know compaction blocks, read it back as given.
				var beta struct {
					Messages []anthropicsdk.BetaMessageParam `json:"messages"`
				}
				if err := json.Unmarshal(out, &beta); err != nil {
					t.Fatal(err)
				}
				if c := beta.Messages[0].Content[0].OfCompaction; c == nil || c.EncryptedContent.Value != "ENC-A" || c.Signature.Value != "sig-A" {
					t.Errorf("the SDK's beta types read the first block as %+v", beta.Messages[0].Content[0])
				}
			default:
				var items []json.RawMessage
				if err := json.Unmarshal(out, &items); err != nil {
					t.Fatal(err)
				}
				for _, it := range items {
					var m struct {
						Type, Role string
						Content    any
					}
					_ = json.Unmarshal(it, &m)
					if m.Type == "compaction" {
						got = append(got, string(it))
						continue
					}
					got = append(got, m.Role+":"+m.Content.(string))
				}
				if tc.format == "OPENAI_RESPONSES" {
					var in responses.ResponseInputParam
					if err := json.Unmarshal(out, &in); err != nil {
						t.Fatal(err)
					}
					if c := in[0].OfCompaction; c == nil || c.EncryptedContent != "gAAAA-openai-opaque" || c.ID.Value != "cmp_01" {
						t.Errorf("the SDK read the first item as %+v", in[0])
					}
				}
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("got\n%q\nwant\n%q", got, tc.want)
			}
			if rep.CutPosition == nil || *rep.CutPosition != tc.starts {
				t.Errorf("cutPosition: got %v, want %d", rep.CutPosition, tc.starts)
			}
			if !slices.ContainsFunc(rep.Notes, func(n string) bool { return strings.Contains(n, tc.covered) }) {
				t.Errorf("notes: got %q, want one saying it stands in %s", rep.Notes, tc.covered)
			}
			// The compactions of other providers after the one it starts at are left out, said.
			for _, d := range rep.Dropped {
				if d.Label != "Compaction" || !strings.Contains(d.Reason, "does not take") {
					t.Errorf("dropped: %+v", d)
				}
			}
		})
	}

	// Nothing is deleted: the history has every message, the compactions among them.
	if n := messageCount(t, srv, conv); n != 11 {
		t.Errorf("messageCount: got %d, want 11", n)
	}
	var page struct {
		Conversation struct {
			Messages struct {
				Edges []struct {
					Node struct {
						Typename      string `json:"__typename"`
						Label         string
						Text          string
						Provider      *string
						ProviderData  json.RawMessage
						CoversThrough int
					}
				}
			}
		}
	}
	srv.MustDo(t, `query($id: ID!) { conversation(id: $id) { messages(first: 20) { edges { node { __typename
		... on MessageBase { label }
		... on CompactionMessage { text provider providerData coversThrough } } } } } }`, map[string]any{"id": conv}, &page)
	edges := page.Conversation.Messages.Edges
	if len(edges) != 11 {
		t.Fatalf("got %d messages", len(edges))
	}
	s, a, o := edges[4].Node, edges[7].Node, edges[8].Node
	if s.Typename != "CompactionMessage" || s.Label != "Compaction" || s.Provider != nil || s.CoversThrough != 4 || string(s.ProviderData) != "null" {
		t.Errorf("the summary: got %+v", s)
	}
	if a.Provider == nil || *a.Provider != "anthropic" || a.Text != "The user fixed the login test; the cookie race is gone." || a.CoversThrough != 7 {
		t.Errorf("the Anthropic compaction: got %+v", a)
	}
	var same map[string]any
	if err := json.Unmarshal(o.ProviderData, &same); err != nil || same["encrypted_content"] != "gAAAA-openai-opaque" || o.CoversThrough != 8 {
		t.Errorf("the OpenAI compaction: got %+v", o)
	}

	// Markdown and PARLEY_JSON keep the whole history, compactions in place.
	md, _ := transcript(t, srv, conv, "MARKDOWN", transcriptOpts{})
	var text string
	_ = json.Unmarshal(md, &text)
	if !strings.Contains(text, "[User]\nWhy does the login test fail?") || strings.Count(text, "[Compaction]") != 3 {
		t.Errorf("markdown:\n%s", text)
	}
	doc, _ := transcript(t, srv, conv, "PARLEY_JSON", transcriptOpts{})
	again := importData(t, srv, "PARLEY_JSON", string(doc), "", "").Conversation.ID
	back, _ := transcript(t, srv, again, "OPENAI_RESPONSES", transcriptOpts{})
	if first := flatten(t, "OPENAI_RESPONSES", back)[0]; !strings.Contains(first, "gAAAA-openai-opaque") {
		t.Errorf("re-imported from PARLEY_JSON: the Responses export starts with %s", first)
	}
}

// TestCompactionRefused adds compactions that cannot be: each is refused, naming what
// is wrong, and nothing is written.
func TestCompactionRefused(t *testing.T) {
	t.Parallel()
	srv := testserver.New(t)
	conv := srv.CreateConversation(t, "refused")
	srv.AddMessage(t, conv, testserver.Text("USER", "hi"))
	for _, tc := range []struct {
		name string
		in   map[string]any
		want string
	}{
		{"nothing", map[string]any{}, "compaction.content: a compaction needs a summary"},
		{"an unknown provider", map[string]any{"provider": "gemini", "providerData": openaiCompaction}, `compaction.provider: "gemini" is not anthropic or openai`},
		{"data without provider", map[string]any{"content": "x", "providerData": openaiCompaction}, "compaction.providerData: give the provider"},
		{"a provider without its output", map[string]any{"provider": "openai"}, "compaction.providerData: give the openai compaction output"},
		{"not JSON", map[string]any{"provider": "anthropic", "providerData": `{"type":`}, "compaction.providerData: not valid JSON"},
		{"not a compaction", map[string]any{"provider": "openai", "providerData": `{"type":"message"}`}, `"type": "compaction"`},
		{"OpenAI without encrypted_content", map[string]any{"provider": "openai", "providerData": `{"type":"compaction"}`}, "encrypted_content"},
		{"covering itself", map[string]any{"content": "x", "coversThrough": 2}, "compaction.coversThrough: 2 is not before the compaction, which is stored at position 2"},
		{"a negative position", map[string]any{"content": "x", "coversThrough": -1}, "compaction.coversThrough: -1"},
	} {
		r := srv.Do(t, `mutation($c: ID!, $i: MessageInput!) { addMessage(conversationId: $c, input: $i) { cursor } }`,
			map[string]any{"c": conv, "i": map[string]any{"compaction": tc.in}})
		if code := r.ErrorCode(t); code != "BAD_USER_INPUT" || !strings.Contains(r.Errors[0].Message, tc.want) {
			t.Errorf("%s: got %s %q, want %q", tc.name, code, r.Errors[0].Message, tc.want)
		}
	}
	if n := messageCount(t, srv, conv); n != 1 {
		t.Errorf("messageCount: got %d, want 1: a refused compaction was written", n)
	}
}
