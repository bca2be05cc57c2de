package db_test

import (
	"database/sql"
	"slices"
	"testing"

	"github.com/parley-dev/parley"
	"github.com/parley-dev/parley/db"
)

// searchOwnerMigration is the number of the migration that gives messages their
// owner (000021_search_by_owner).
const searchOwnerMigration = 21

// oldHistory stores a conversation of 20 messages for each of ann and bob, its messages
// inserted by messages (the conversation's id is $1), and returns the conversations by owner.
func oldHistory(t *testing.T, conn *sql.DB, messages string) map[string]string {
	t.Helper()
	convs := map[string]string{}
	for _, owner := range []string{"ann", "bob"} {
		var conv string
		if err := conn.QueryRow(`INSERT INTO conversations (owner, title, last_position, message_count) VALUES ($1, 'old', 20, 20) RETURNING id`,
			owner).Scan(&conv); err != nil {
			t.Fatal(err)
		}
		convs[owner] = conv
		if _, err := conn.Exec(messages, conv); err != nil {
			t.Fatal(err)
		}
	}
	return convs
}

// Migration 000021 fills messages.owner in place for the messages stored before it,
// each with its conversation's owner, and later messages get theirs from the trigger;
// searches then find each owner's messages only, newest first too. Down removes the
// column and the indexes, and search still works on 000018's schema (checked in SQL).
func TestSearchOwnerMigrationFillsOwners(t *testing.T) {
	t.Parallel()
	dsn, conn, m := newMigrator(t)
	if err := m.Migrate(searchOwnerMigration - 1); err != nil {
		t.Fatalf("migrate down to before the owner column: %v", err)
	}
	// History as the previous version stored it: two owners, the same words.
	convs := oldHistory(t, conn, `INSERT INTO messages (conversation_id, position, depth, kind, role, content, created_at)
		SELECT $1, p, p, 'text', 'user', 'deploy error ' || p, now() - make_interval(mins => 20 - p) FROM generate_series(1, 20) p`)
	if err := m.Up(); err != nil {
		t.Fatalf("migrate up: %v", err)
	}
	var missing int
	if err := conn.QueryRow(`SELECT count(*) FROM messages m JOIN conversations c ON c.id = m.conversation_id
		WHERE m.owner IS DISTINCT FROM c.owner`).Scan(&missing); err != nil {
		t.Fatal(err)
	}
	if missing != 0 {
		t.Errorf("after migrating up: %d messages without their conversation's owner, want 0", missing)
	}
	d, err := db.Open(t.Context(), dsn, db.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	ctx := parley.WithOwner(t.Context(), "ann")
	added, err := d.AddMessage(ctx, parley.ConversationID(convs["ann"]), &parley.TextMessage{MessageMeta: parley.MessageMeta{Role: parley.RoleUser},
		Body: parley.TextBody("deploy error after")})
	if err != nil {
		t.Fatal(err)
	}
	var owner sql.NullString
	addedKey, _ := parley.ParseMessageID(added.Meta().ID)
	if err := conn.QueryRow(`SELECT owner FROM messages WHERE id = $1`, addedKey).Scan(&owner); err != nil {
		t.Fatal(err)
	}
	if owner.String != "ann" {
		t.Errorf("a message added after migrating: got owner %q, want ann", owner.String)
	}
	for _, order := range []parley.SearchOrder{parley.SearchByRelevance, parley.SearchByNewest} {
		page, err := d.Search(ctx, parley.SearchRequest{Query: "deploy error", Order: order, First: 50})
		if err != nil {
			t.Fatal(err)
		}
		if len(page.Hits) != 21 {
			t.Errorf("%s: got %d hits, want ann's 21", order, len(page.Hits))
		}
		for _, h := range page.Hits {
			if key, _ := parley.ParseConversationID(h.Conversation.ID); key != convs["ann"] {
				t.Errorf("%s: got a hit in conversation %s, want ann's only", order, h.Conversation.ID)
			}
		}
		if order == parley.SearchByNewest && len(page.Hits) > 0 && page.Hits[0].Message.Meta().ID != added.Meta().ID {
			t.Errorf("newest first: got %s first, want the message added last", page.Hits[0].Message.Meta().ID)
		}
	}
	if err := m.Migrate(searchOwnerMigration - 1); err != nil {
		t.Fatalf("migrate down: %v", err)
	}
	var columns, indexes int
	if err := conn.QueryRow(`SELECT (SELECT count(*) FROM information_schema.columns WHERE table_name = 'messages' AND column_name = 'owner'),
		(SELECT count(*) FROM pg_indexes WHERE indexname IN ('messages_search_newest_idx', 'messages_search_tool_result_idx'))`).Scan(&columns, &indexes); err != nil {
		t.Fatal(err)
	}
	if columns != 0 || indexes != 0 {
		t.Errorf("after migrating down: got %d owner columns and %d of the indexes, want none", columns, indexes)
	}
	// The trigger of 000019 is back (000020 does not change it): a message inserted now gets its vector.
	var found int
	if _, err := conn.Exec(`INSERT INTO messages (conversation_id, position, depth, kind, role, content) VALUES ($1, 30, 30, 'text', 'user', 'zanzibar')`,
		convs["bob"]); err != nil {
		t.Fatal(err)
	}
	if err := conn.QueryRow(`SELECT count(*) FROM messages WHERE search_vector @@ 'zanzibar'::tsquery`).Scan(&found); err != nil {
		t.Fatal(err)
	}
	if found != 1 {
		t.Errorf("after migrating down, a message inserted: got %d found by its word, want 1", found)
	}
}

// searchToolKeysMigration is the number of the migration that puts a tool result's
// owner, status and tool in the search index (000022_search_tool_keys).
const searchToolKeysMigration = 22

// Migration 000022 rebuilds the search index with the tool results' keys for the
// messages stored before it: a search filtered by status and tool finds them, each
// owner's only. Down puts back 000021's index and b-tree and drops the keys' function.
func TestSearchToolKeysMigration(t *testing.T) {
	t.Parallel()
	dsn, conn, m := newMigrator(t)
	if err := m.Migrate(searchToolKeysMigration - 1); err != nil {
		t.Fatalf("migrate down to before the tool keys: %v", err)
	}
	// Results 1 to 20 of each owner: bash for odd positions, grep for even; an error for positions in threes.
	convs := oldHistory(t, conn, `INSERT INTO messages (conversation_id, position, depth, kind, role, content, tool_results)
		SELECT $1, p, p, 'tool_result', 'result', 'gecko ' || p, jsonb_build_array(jsonb_build_object('toolCallId', 'c' || p,
			'toolName', CASE WHEN p % 2 = 1 THEN 'bash' ELSE 'grep' END, 'status', CASE WHEN p % 3 = 0 THEN 'ERROR' ELSE 'SUCCESS' END))
		FROM generate_series(1, 20) p`)
	if err := m.Up(); err != nil {
		t.Fatalf("migrate up: %v", err)
	}
	d, err := db.Open(t.Context(), dsn, db.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	ctx := parley.WithOwner(t.Context(), "ann")
	page, err := d.Search(ctx, parley.SearchRequest{Query: "gecko", First: 50,
		Filter: parley.SearchFilter{ToolNames: []string{"bash"}, ToolResultStatus: parley.ToolError}})
	if err != nil {
		t.Fatal(err)
	}
	var positions []int
	for _, h := range page.Hits {
		if key, _ := parley.ParseConversationID(h.Conversation.ID); key != convs["ann"] {
			t.Errorf("got a hit in conversation %s, want ann's only", h.Conversation.ID)
		}
		positions = append(positions, h.Message.Meta().Position)
	}
	slices.Sort(positions)
	if want := []int{3, 9, 15}; !slices.Equal(positions, want) {
		t.Errorf("bash errors after migrating up: got positions %v, want %v", positions, want)
	}
	var keyed, btree int
	if err := conn.QueryRow(`SELECT (SELECT count(*) FROM pg_indexes WHERE indexname = 'messages_search_idx' AND indexdef LIKE '%search_tool_keys%'),
		(SELECT count(*) FROM pg_indexes WHERE indexname = 'messages_search_tool_result_idx')`).Scan(&keyed, &btree); err != nil {
		t.Fatal(err)
	}
	if keyed != 1 || btree != 0 {
		t.Errorf("after migrating up: got %d search indexes with the keys and %d of 000021's b-tree, want 1 and 0", keyed, btree)
	}
	// An insert that leaves the owner out (an import's COPY) still gets it from the trigger.
	var owner sql.NullString
	if err := conn.QueryRow(`INSERT INTO messages (conversation_id, position, depth, kind, role, content) VALUES ($1, 30, 30, 'text', 'user', 'gecko')
		RETURNING owner`, convs["bob"]).Scan(&owner); err != nil {
		t.Fatal(err)
	}
	if owner.String != "bob" {
		t.Errorf("a message inserted without its owner: got owner %q, want bob", owner.String)
	}

	if err := m.Migrate(searchToolKeysMigration - 1); err != nil {
		t.Fatalf("migrate down: %v", err)
	}
	var functions int
	if err := conn.QueryRow(`SELECT (SELECT count(*) FROM pg_indexes WHERE indexname = 'messages_search_idx' AND indexdef LIKE '%search_tool_keys%'),
		(SELECT count(*) FROM pg_indexes WHERE indexname = 'messages_search_tool_result_idx'),
		(SELECT count(*) FROM pg_proc WHERE proname = 'search_tool_keys')`).Scan(&keyed, &btree, &functions); err != nil {
		t.Fatal(err)
	}
	if keyed != 0 || btree != 1 || functions != 0 {
		t.Errorf("after migrating down: got %d search indexes with the keys, %d of 000021's b-tree, %d functions; want 0, 1, 0", keyed, btree, functions)
	}
	// 000021's filter, in SQL, on its schema.
	var found int
	if err := conn.QueryRow(`SELECT count(*) FROM messages WHERE owner = 'bob' AND kind = 'tool_result'
		AND tool_results->0->>'status' = 'ERROR' AND tool_results->0->>'toolName' = 'bash' AND search_vector @@ 'gecko'::tsquery`).Scan(&found); err != nil {
		t.Fatal(err)
	}
	if found != 3 {
		t.Errorf("after migrating down, bob's bash errors: got %d, want 3", found)
	}
}

// importSearchVectorsMigration is the number of the migration that computes an
// import's search vectors for a batch (000024_import_search_vectors).
const importSearchVectorsMigration = 24

// Migration 000024 adds message_search_vectors, which gives the trigger's vector for
// a message (the import's test compares them for every kind); down removes the
// function and leaves the trigger computing vectors as before.
func TestImportSearchVectorsMigration(t *testing.T) {
	t.Parallel()
	_, conn, m := newMigrator(t)
	if err := m.Migrate(importSearchVectorsMigration - 1); err != nil {
		t.Fatalf("migrate down to before the function: %v", err)
	}
	exists := func(t *testing.T) bool {
		t.Helper()
		var n int
		if err := conn.QueryRow(`SELECT count(*) FROM pg_proc WHERE proname = 'message_search_vectors'`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n == 1
	}
	if exists(t) {
		t.Fatal("before migrating up: message_search_vectors exists")
	}
	if err := m.Migrate(importSearchVectorsMigration); err != nil {
		t.Fatalf("migrate up: %v", err)
	}
	var same bool
	if err := conn.QueryRow(`SELECT v = message_search_vector(k.config, 'tool_result', 'exit 1', NULL, NULL,
			'[{"toolName": "bash", "status": "ERROR", "output": "cannot open go.mod", "error": {"message": "timeout"}}]')
		FROM search_config k CROSS JOIN LATERAL message_search_vectors(k.config, 'tool_result', 'exit 1', NULL, NULL,
			'[{"toolName": "bash", "status": "ERROR", "output": "cannot open go.mod", "error": {"message": "timeout"}}]') v`).Scan(&same); err != nil {
		t.Fatal(err)
	}
	if !same {
		t.Error("after migrating up: a tool result's vector differs from the trigger's")
	}
	if err := m.Migrate(importSearchVectorsMigration - 1); err != nil {
		t.Fatalf("migrate down: %v", err)
	}
	if exists(t) {
		t.Error("after migrating down: message_search_vectors is still there")
	}
	var found int
	convs := oldHistory(t, conn, `INSERT INTO messages (conversation_id, position, depth, kind, role, content)
		SELECT $1, p, p, 'text', 'user', 'zanzibar ' || p FROM generate_series(1, 20) p`)
	if err := conn.QueryRow(`SELECT count(*) FROM messages WHERE conversation_id = $1 AND search_vector @@ 'zanzibar'::tsquery`,
		convs["ann"]).Scan(&found); err != nil {
		t.Fatal(err)
	}
	if found != 20 {
		t.Errorf("after migrating down, messages inserted: got %d found by their word, want 20", found)
	}
}
