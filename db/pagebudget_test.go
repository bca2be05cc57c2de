package db_test

import (
	"testing"
)

// TestBodyBytesIsWhatIsRead checks that the size Postgres keeps for a message
// (body_bytes, which the page statement sums against the byte budget) is the size
// its columns take as read (content, calls, results, payload, provenance), for text and
// jsonb with multi-byte characters, escapes, nulls and nesting: a page counts body_bytes
// against its budget without reading content (pageColumns), so were they to differ, a
// page could hold more than its budget, or Postgres drop a row the budget holds room for.
func TestBodyBytesIsWhatIsRead(t *testing.T) {
	t.Parallel()
	d := openDB(t)
	ctx := t.Context()
	var conv string
	if err := d.SQL().GetContext(ctx, &conv, `INSERT INTO conversations (owner, last_position, message_count) VALUES ('o', 4, 4) RETURNING id`); err != nil {
		t.Fatal(err)
	}
	if _, err := d.SQL().ExecContext(ctx, `INSERT INTO messages (conversation_id, position, kind, role, content, tool_calls, tool_results, payload, provenance) VALUES
		($1, 1, 'text', 'user', 'plain', NULL, NULL, '{}', NULL),
		($1, 2, 'text', 'assistant', 'héllo → 世界 🎉', NULL, NULL, '{"a": "é\n\"q\"", "n": [1, 2.50, null, true]}', '{"model": "m", "x": {"y": "z"}}'),
		($1, 3, 'tool_request', 'invocation', '', '[{"id": "c1", "args": {"path": "/tmp/ü", "deep": [[1], {"k": "\\u0000x"}]}}]', NULL, '{}', NULL),
		($1, 4, 'tool_result', 'result', 'out', NULL, '[{"id": "c1", "output": "line\tone\nline two"}]', '{"big": 12345678901234567890}', '{}')`, conv); err != nil {
		t.Fatal(err)
	}
	got, err := d.PageRowBytes(ctx, conv, "o", 10)
	if err != nil {
		t.Fatal(err)
	}
	var want []int
	if err := d.SQL().SelectContext(ctx, &want, `SELECT body_bytes FROM messages WHERE conversation_id = $1 ORDER BY position`, conv); err != nil {
		t.Fatal(err)
	}
	if len(got) != 4 || len(want) != 4 {
		t.Fatalf("got %d rows read and %d sizes, want 4 of each", len(got), len(want))
	}
	for i := range got {
		if got[i] != want[i] {
			t.Errorf("message %d: read %d bytes, body_bytes says %d", i+1, got[i], want[i])
		}
	}
}
