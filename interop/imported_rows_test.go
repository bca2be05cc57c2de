package interop_test

import (
	"crypto/sha256"
	"encoding/hex"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/parley-dev/parley/internal/testserver"
)

// TestImportedRowsGolden holds what imports store, row for row, to what the code stored
// when testdata/golden/import/rows.txt was written: every column of the messages, tool
// calls and conversation rows of imports of every format (a Claude Code session of
// three batches, one with 2 kB results, fixtures with every kind, a tombstone, imports
// into a conversation that has messages), their ids and the import's time replaced by
// names that do not change from run to run (body_bytes, generated from the others,
// counts the digits of those times: it is left out). It is there so that the import's code can
// be made faster without changing a byte it stores: a digest of each import's rows is
// kept (the rows of the large sessions are megabytes), and with -rows-dir DIR
// the rows themselves are written to DIR, to compare those of two versions with diff.
func TestImportedRowsGolden(t *testing.T) {
	t.Parallel()
	srv := testserver.New(t)
	bench, withTombstone, secondBatch := threeBatchesAndATombstone(t)
	var lines []string
	conv := map[string]string{} // an import's name to its conversation
	for _, in := range []struct{ name, format, path, data, into string }{
		{name: "parley", format: "PARLEY_JSON", path: "parleyjson/testdata/conversation.json"},
		{name: "parley-tombstone", format: "PARLEY_JSON", data: withTombstone},
		{name: "parley-second-batch", format: "PARLEY_JSON", data: secondBatch},
		{name: "claude-code", format: "CLAUDE_CODE_JSONL", path: "claudecode/testdata/session.jsonl"},
		{name: "claude-code-rewind", format: "CLAUDE_CODE_JSONL", path: "claudecode/testdata/rewind.jsonl"},
		{name: "claude-code-again", format: "CLAUDE_CODE_JSONL", path: "claudecode/testdata/rewind.jsonl", into: "claude-code"},
		{name: "openai-chat", format: "OPENAI_CHAT", path: "openai/testdata/chat.json"},
		{name: "anthropic", format: "ANTHROPIC_MESSAGES", path: "anthropic/testdata/messages.json"},
		{name: "bench-session", format: "CLAUDE_CODE_JSONL", data: bench},
		{name: "results-2kb", format: "CLAUDE_CODE_JSONL", data: string(genSession(600))},
		{name: "results-2kb-longer", format: "CLAUDE_CODE_JSONL", data: string(genSession(1400)), into: "results-2kb"},
		{name: "chat-calls", format: "OPENAI_CHAT", data: chatWithCalls(20, false)},
		{name: "chat-calls-answered", format: "OPENAI_CHAT", data: chatWithCalls(40, true), into: "chat-calls"},
	} {
		data := in.data
		if in.path != "" {
			data = readFile(t, in.path)
		}
		into := ""
		if in.into != "" {
			into = "conv_" + conv[in.into]
		}
		rep := importData(t, srv, in.format, data, into, "")
		if rep.Added == 0 {
			t.Fatalf("%s: imported nothing", in.name)
		}
		id := strings.TrimPrefix(rep.Conversation.ID, "conv_")
		conv[in.name] = id
		rows := importedRows(t, srv, id)
		sum := sha256.Sum256([]byte(rows))
		lines = append(lines, fmt.Sprintf("%s: %d added, %d bytes of rows, sha256 %s", in.name, rep.Added, len(rows), hex.EncodeToString(sum[:])))
		if *rowsDir != "" {
			if err := os.WriteFile(filepath.Join(*rowsDir, in.name+".txt"), []byte(rows), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	golden(t, "import/rows.txt", []byte(strings.Join(lines, "\n")+"\n"))
}

// rowsDir is where TestImportedRowsGolden writes the rows it digests.
var rowsDir = flag.String("rows-dir", "", "TestImportedRowsGolden: write each import's rows to this directory")

// importedRows is every stored column of the conversation's messages (by position),
// tool calls (by call id) and row, as text, with the messages' and the conversation's
// ids replaced by names (m<position>, conv) and the times the import took from its
// transaction (updated_at, a message's created_at when the source had none, a call's
// decision) by NOW1, NOW2... in the order of the imports.
func importedRows(t *testing.T, srv *testserver.Server, conv string) string {
	t.Helper()
	ctx := t.Context()
	// Each import into the conversation has a time of its own (updated_at of its rows).
	var nows []struct {
		At   time.Time `db:"at"`
		JSON string    `db:"json"`
	}
	if err := srv.Store.SQL().SelectContext(ctx, &nows, `SELECT DISTINCT updated_at AS at, to_jsonb(updated_at)#>>'{}' AS json
		FROM messages WHERE conversation_id = $1 ORDER BY 1`, conv); err != nil {
		t.Fatal(err)
	}
	var ids []struct {
		ID       string `db:"id"`
		Position int    `db:"position"`
	}
	if err := srv.Store.SQL().SelectContext(ctx, &ids, `SELECT id, position FROM messages WHERE conversation_id = $1`, conv); err != nil {
		t.Fatal(err)
	}
	var rows []string
	if err := srv.Store.SQL().SelectContext(ctx, &rows, `SELECT row FROM (
		SELECT 0 AS part, '' AS k, 0 AS n, (to_jsonb(c) - 'id' - 'created_at' - 'updated_at')::text AS row FROM conversations c WHERE id = $1
		UNION ALL SELECT 1, '', position, (to_jsonb(m) - 'change_seq' - 'body_bytes')::text FROM messages m WHERE conversation_id = $1
		UNION ALL SELECT 2, call_id, 0, to_jsonb(tc)::text FROM tool_calls tc WHERE conversation_id = $1) r
		ORDER BY part, k, n`, conv); err != nil {
		t.Fatal(err)
	}
	pairs := []string{conv, "conv"}
	for i, now := range nows {
		name := fmt.Sprintf("NOW%d", i+1)
		pairs = append(pairs, now.JSON, name)
		for _, f := range []string{time.RFC3339Nano, time.RFC3339} {
			pairs = append(pairs, now.At.UTC().Format(f), name, now.At.Format(f), name)
		}
	}
	for _, id := range ids {
		pairs = append(pairs, id.ID, fmt.Sprintf("m%d", id.Position))
	}
	return strings.NewReplacer(pairs...).Replace(strings.Join(rows, "\n") + "\n")
}
