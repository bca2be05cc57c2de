package interop_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/parley-dev/parley/internal/testserver"
)

// normalize decodes raw for comparison: object keys whose value is null, or false for
// is_error, say nothing and go; function-call arguments, which are JSON in a string,
// are decoded (Postgres keeps JSON as jsonb, which does not keep key order or spaces).
func normalize(t *testing.T, raw []byte) any {
	t.Helper()
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatalf("decode %s: %v", raw, err)
	}
	return clean(v)
}

func clean(v any) any {
	switch v := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(v))
		for k, e := range v {
			if e == nil || (k == "is_error" && e == false) {
				continue
			}
			if s, ok := e.(string); ok && k == "arguments" {
				var args any
				if json.Unmarshal([]byte(s), &args) == nil {
					out[k] = args
					continue
				}
			}
			out[k] = clean(e)
		}
		return out
	case []any:
		out := make([]any, len(v))
		for i, e := range v {
			out[i] = clean(e)
		}
		return out
	}
	return v
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestProviderRoundTrip imports each provider's sample history, exports it in the same
// format with the system prompt the import reported, and gets the input back.
func TestProviderRoundTrip(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ format, path string }{
		{"OPENAI_CHAT", "openai/testdata/chat.json"},
		{"ANTHROPIC_MESSAGES", "anthropic/testdata/messages.json"},
	} {
		t.Run(tc.format, func(t *testing.T) {
			t.Parallel()
			srv := testserver.New(t)
			in := readFile(t, tc.path)
			rep := importData(t, srv, tc.format, in, "", "")
			if rep.SystemPrompt == nil {
				t.Fatal("the import reported no system prompt")
			}
			out, trep := transcript(t, srv, rep.Conversation.ID, tc.format, transcriptOpts{system: *rep.SystemPrompt})
			if want, got := normalize(t, []byte(in)), normalize(t, out); mustJSON(t, want) != mustJSON(t, got) {
				t.Errorf("round trip differs:\n%s", diff(mustJSON(t, want), mustJSON(t, got)))
			}
			if len(trep.Dropped) != 0 || len(trep.Repairs) != 0 {
				t.Errorf("report: got dropped %v, repairs %v; want none", trep.Dropped, trep.Repairs)
			}
			// The system prompt was used, not stored.
			if n := messageCount(t, srv, rep.Conversation.ID); n != rep.Added {
				t.Errorf("messageCount %d after export, want the %d imported", n, rep.Added)
			}
		})
	}
}

// stripVolatile removes what differs between two copies of a conversation in two
// databases: ids, update times, the conversation's own times. The tree's links, which
// are ids, become the indexes of the messages they name.
func stripVolatile(t *testing.T, raw []byte, alsoSourceIDs bool) any {
	t.Helper()
	v := normalize(t, raw).(map[string]any)
	conv := v["conversation"].(map[string]any)
	delete(conv, "id")
	delete(conv, "createdAt")
	delete(conv, "updatedAt")
	index := map[any]int{}
	for i, m := range v["messages"].([]any) {
		m := m.(map[string]any)
		index[m["id"]] = i
		if p, ok := m["parentId"]; ok {
			m["parentId"] = index[p]
		}
	}
	if leaf, ok := conv["activeLeafId"]; ok {
		conv["activeLeafId"] = index[leaf]
	}
	for _, m := range v["messages"].([]any) {
		m := m.(map[string]any)
		delete(m, "id")
		delete(m, "updatedAt")
		if alsoSourceIDs {
			delete(m, "sourceId")
		}
	}
	return v
}

// TestParleyJSONRoundTrip imports Parley's export of a conversation with every variant
// (and a type this version does not know), exports it, and gets the same document back;
// importing that export again gives the same export once more.
func TestParleyJSONRoundTrip(t *testing.T) {
	t.Parallel()
	srv := testserver.New(t)
	in := readFile(t, "parleyjson/testdata/conversation.json")
	rep := importData(t, srv, "PARLEY_JSON", in, "", "")
	if rep.Added != 11 || rep.Conversation.Title != "Schema, README and tmp/" {
		t.Fatalf("got added %d, title %q; want 11 and the export's title", rep.Added, rep.Conversation.Title)
	}
	first, _ := transcript(t, srv, rep.Conversation.ID, "PARLEY_JSON", transcriptOpts{})
	// Ids are the new database's, and each message without a source id takes its
	// exported id as one; everything else is as it was. The input is one line (no
	// tree): the export is the tree of that line, each message the child of the one
	// before it, the last one the active leaf.
	got := stripVolatile(t, first, true).(map[string]any)
	if got["tree"] != true {
		t.Errorf("export: got tree %v, want true", got["tree"])
	}
	delete(got, "tree")
	msgs := got["messages"].([]any)
	for i, m := range msgs {
		m := m.(map[string]any)
		if p, ok := m["parentId"]; (i == 0 && ok) || (i > 0 && p != i-1) {
			t.Errorf("messages[%d].parentId: got %v, want the message before it", i, p)
		}
		delete(m, "parentId")
	}
	conv := got["conversation"].(map[string]any)
	if leaf := conv["activeLeafId"]; leaf != len(msgs)-1 {
		t.Errorf("activeLeafId: got %v, want the last message %d", leaf, len(msgs)-1)
	}
	delete(conv, "activeLeafId")
	if want := stripVolatile(t, []byte(in), true); mustJSON(t, want) != mustJSON(t, got) {
		t.Errorf("export after import differs from the input:\n%s", diff(mustJSON(t, want), mustJSON(t, got)))
	}

	second := importData(t, srv, "PARLEY_JSON", string(first), "", "")
	again, _ := transcript(t, srv, second.Conversation.ID, "PARLEY_JSON", transcriptOpts{})
	if want, got := stripVolatile(t, first, false), stripVolatile(t, again, false); mustJSON(t, want) != mustJSON(t, got) {
		t.Errorf("export of the re-imported export differs:\n%s", diff(mustJSON(t, want), mustJSON(t, got)))
	}
	// Importing an export into the conversation it came from adds nothing.
	same := importData(t, srv, "PARLEY_JSON", string(first), rep.Conversation.ID, "")
	if same.Added != 0 || same.AlreadyPresent != 11 {
		t.Errorf("re-import into the source: got added %d, alreadyPresent %d; want 0, 11", same.Added, same.AlreadyPresent)
	}
}

// TestSharedFixtures imports the real transcripts of ../shared/fixtures, when they are
// there, and exports each in every LLM format.
func TestSharedFixtures(t *testing.T) {
	t.Parallel()
	dir := filepath.Join("..", "..", "shared", "fixtures")
	if _, err := os.Stat(dir); err != nil {
		t.Skipf("no shared fixtures at %s", dir)
	}
	for _, tc := range []struct {
		format, file string
		added        int
		wrapped      bool // a transcript.json: [{system, messages...}]
	}{
		{"CLAUDE_CODE_JSONL", "claude-code/tool-heavy-v2.1.38.jsonl", 17, false},
		{"CLAUDE_CODE_JSONL", "claude-code/sidechains-v1.0.98.jsonl", 23, false},
		{"OPENAI_CHAT", "openai/tool-error-retry.transcript.json", 6, true},
		{"ANTHROPIC_MESSAGES", "anthropic/tool-with-thinking.transcript.json", 4, true},
	} {
		t.Run(tc.file, func(t *testing.T) {
			t.Parallel()
			srv := testserver.New(t)
			data := readFile(t, filepath.Join(dir, tc.file))
			if tc.wrapped {
				var list []struct {
					System   json.RawMessage `json:"system"`
					Messages json.RawMessage `json:"messages"`
				}
				if err := json.Unmarshal([]byte(data), &list); err != nil || len(list) != 1 {
					t.Fatalf("decode %s: %v", tc.file, err)
				}
				b, _ := json.Marshal(map[string]json.RawMessage{"system": list[0].System, "messages": list[0].Messages})
				data = string(b)
			}
			rep := importData(t, srv, tc.format, data, "", "")
			if rep.Added != tc.added {
				t.Errorf("added %d messages, want %d (%+v)", rep.Added, tc.added, rep.AddedByVariant)
			}
			again := importData(t, srv, tc.format, data, rep.Conversation.ID, "")
			if again.Added != 0 {
				t.Errorf("re-import added %d, want 0", again.Added)
			}
			for _, f := range []string{"OPENAI_CHAT", "OPENAI_RESPONSES", "ANTHROPIC_MESSAGES", "MARKDOWN", "PARLEY_JSON"} {
				o := transcriptOpts{}
				if f != "MARKDOWN" && f != "PARLEY_JSON" {
					o.repair = true
				}
				transcript(t, srv, rep.Conversation.ID, f, o)
			}
			if tc.wrapped {
				// The provider's own format comes back as it was given.
				out, _ := transcript(t, srv, rep.Conversation.ID, tc.format, transcriptOpts{})
				var in struct{ Messages json.RawMessage }
				json.Unmarshal([]byte(data), &in)
				want := normalize(t, in.Messages)
				got := normalize(t, out)
				if m, ok := got.(map[string]any); ok {
					got = m["messages"]
				}
				for _, m := range want.([]any) {
					m := m.(map[string]any)
					delete(m, "annotations")
					// A tool_result's content may be a string or text blocks; Parley
					// writes blocks.
					blocks, _ := m["content"].([]any)
					for _, b := range blocks {
						b := b.(map[string]any)
						if s, ok := b["content"].(string); ok && b["type"] == "tool_result" {
							b["content"] = []any{map[string]any{"type": "text", "text": s}}
						}
					}
				}
				if mustJSON(t, want) != mustJSON(t, got) {
					t.Errorf("round trip differs:\n%s", diff(mustJSON(t, want), mustJSON(t, got)))
				}
			}
		})
	}
}
