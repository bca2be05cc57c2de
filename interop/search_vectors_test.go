package interop_test

import (
	"encoding/json"
	"fmt"
	"maps"
	"strings"
	"testing"

	"github.com/parley-dev/parley/internal/sessiongen"
	"github.com/parley-dev/parley/internal/testserver"
)

// An import stores its messages with their search vectors computed for each batch
// (message_search_vectors, migration 000024), not by the insert trigger: in the insert
// for its first batch, on a second connection for the others (db/vectors.go). Every
// stored vector is the one the trigger computes (message_search_vector), for every kind
// of message the importers make (text with thinking, tool requests and results, errors,
// files, MCP resources, images, system controls, a message of a future kind, a
// tombstone), in the first batch and in later ones, and a search finds imported
// messages by their words.
func TestImportedVectorsAreTheTriggers(t *testing.T) {
	t.Parallel()
	srv := testserver.New(t)
	session, withTombstone, secondBatch := threeBatchesAndATombstone(t) // a tombstone has no vector
	var convs []string
	for _, in := range []struct{ format, path, data string }{
		{format: "PARLEY_JSON", path: "parleyjson/testdata/conversation.json"},
		{format: "PARLEY_JSON", data: withTombstone},
		{format: "PARLEY_JSON", data: secondBatch},
		{format: "CLAUDE_CODE_JSONL", path: "claudecode/testdata/session.jsonl"},
		{format: "CLAUDE_CODE_JSONL", path: "claudecode/testdata/rewind.jsonl"},
		{format: "OPENAI_CHAT", path: "openai/testdata/chat.json"},
		{format: "ANTHROPIC_MESSAGES", path: "anthropic/testdata/messages.json"},
		{format: "CLAUDE_CODE_JSONL", data: session},
		{format: "OPENAI_CHAT", data: chatWithCalls(20, true)},
	} {
		data := in.data
		if in.path != "" {
			data = readFile(t, in.path)
		}
		rep := importData(t, srv, in.format, data, "", "")
		if rep.Added == 0 {
			t.Fatalf("%s %s: imported nothing", in.format, in.path)
		}
		convs = append(convs, strings.TrimPrefix(rep.Conversation.ID, "conv_"))
	}
	var rows []struct {
		Kind      string `db:"kind"`
		Messages  int    `db:"messages"`
		Thinking  int    `db:"thinking"`
		Deleted   int    `db:"deleted"`
		Vectors   int    `db:"vectors"`
		Differing int    `db:"differing"`
	}
	if err := srv.Store.SQL().SelectContext(t.Context(), &rows, `SELECT kind, count(*) AS messages,
			count(*) FILTER (WHERE payload @? '$.parts[*] ? (@.kind == "THINKING")') AS thinking,
			count(*) FILTER (WHERE length(search_vector) > 0) AS vectors,
			count(*) FILTER (WHERE deleted_at IS NOT NULL) AS deleted,
			count(*) FILTER (WHERE search_vector IS DISTINCT FROM CASE WHEN status = 'streaming' OR deleted_at IS NOT NULL THEN NULL
				ELSE message_search_vector((SELECT config FROM search_config), kind, content, payload, tool_calls, tool_results) END) AS differing
		FROM messages WHERE conversation_id = ANY($1::uuid[]) GROUP BY kind ORDER BY kind`, "{"+strings.Join(convs, ",")+"}"); err != nil {
		t.Fatal(err)
	}
	got := map[string]bool{}
	thinking, deleted := 0, 0
	for _, r := range rows {
		got[r.Kind] = true
		thinking += r.Thinking
		deleted += r.Deleted
		if r.Differing != 0 {
			t.Errorf("%s: %d of %d imported messages have a vector other than the trigger's", r.Kind, r.Differing, r.Messages)
		}
		if r.Vectors == 0 && r.Kind != "system_control" && r.Kind != "future_note" { // neither has words
			t.Errorf("%s: none of %d imported messages has a vector with words", r.Kind, r.Messages)
		}
	}
	for _, kind := range []string{"text", "tool_request", "tool_result", "file_reference", "mcp_resource", "image", "system_control"} {
		if !got[kind] {
			t.Errorf("no imported message of kind %s: the comparison does not cover it (kinds %v)", kind, got)
		}
	}
	if thinking == 0 {
		t.Error("no imported message with thinking: the comparison does not cover it")
	}
	if deleted != 2 {
		t.Errorf("got %d imported tombstones, want 2 (in a first batch and in a later one): the comparison does not cover them", deleted)
	}
	for _, word := range []string{"README", "flaky"} {
		searchFinds(t, srv, word)
	}
}

// afterFirstBatch is the Parley export doc with 5,000 text messages before its own, so
// that its own (every kind, a tombstone) are an import's second batch.
func afterFirstBatch(t *testing.T, doc map[string]any) string {
	t.Helper()
	var msgs []any
	for i := range 5000 {
		msgs = append(msgs, obj{"type": "text", "id": fmt.Sprintf("msg_00000000-0000-4000-9000-%012d", i), "role": "USER",
			"createdAt": "2026-03-01T11:00:00Z", "updatedAt": "2026-03-01T11:00:00Z",
			"parts": []obj{{"kind": "TEXT", "text": fmt.Sprintf("filler %d", i)}}})
	}
	for _, m := range doc["messages"].([]any) {
		m := maps.Clone(m.(map[string]any))
		delete(m, "position")
		msgs = append(msgs, m)
	}
	padded := maps.Clone(doc)
	padded["messages"] = msgs
	b, err := json.Marshal(padded)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// searchFinds checks that a search for query finds at least one message.
func searchFinds(t *testing.T, srv *testserver.Server, query string) {
	t.Helper()
	var out struct {
		Search struct {
			Edges []struct{ Cursor string }
		}
	}
	srv.MustDo(t, `query($q: String!) { search(query: $q, first: 5) { edges { cursor } } }`, map[string]any{"q": query}, &out)
	if len(out.Search.Edges) == 0 {
		t.Errorf("search %q: found nothing, want the imported messages that have it", query)
	}
}

// threeBatchesAndATombstone returns three imports the import tests share: a generated
// Claude Code session of 12,000 messages (three of an import's batches), the Parley
// export of parleyjson's fixture with its third message a tombstone, and the same export
// as an import's second batch (afterFirstBatch).
func threeBatchesAndATombstone(t *testing.T) (session, withTombstone, secondBatch string) {
	t.Helper()
	var b strings.Builder
	if err := sessiongen.Write(&b, 12000); err != nil {
		t.Fatal(err)
	}
	var export map[string]any
	if err := json.Unmarshal([]byte(readFile(t, "parleyjson/testdata/conversation.json")), &export); err != nil {
		t.Fatal(err)
	}
	export["messages"].([]any)[2].(map[string]any)["deletedAt"] = "2026-03-01T12:00:09Z"
	out, err := json.Marshal(export)
	if err != nil {
		t.Fatal(err)
	}
	return b.String(), string(out), afterFirstBatch(t, export)
}
