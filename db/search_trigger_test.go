package db_test

import (
	"database/sql"
	"testing"
)

// The search trigger (migrations 000016, 000019, 000021, 000022, 000023) on a row written in
// SQL: an insert that brings both its vector and its owner (a fork's copy) is stored as
// given; one without an owner gets its conversation's, and one without a vector gets it
// computed (every store's insert brings the owner, migration 000022, and no vector; a
// fork by a replica of an older version sends a vector and no owner); an update of the
// searched columns computes the vector again.
func TestSearchTriggerFillsWhatAnInsertLacks(t *testing.T) {
	t.Parallel()
	q := openDB(t).SQL()
	ctx := t.Context()
	var conv string
	if err := q.GetContext(ctx, &conv, `INSERT INTO conversations (owner, last_position, message_count) VALUES ('ann', 3, 3) RETURNING id`); err != nil {
		t.Fatal(err)
	}
	type row struct {
		Owner  sql.NullString `db:"owner"`
		Vector string         `db:"vector"`
	}
	read := func(t *testing.T, id string) row {
		t.Helper()
		var r row
		if err := q.GetContext(ctx, &r, `SELECT owner, search_vector::text AS vector FROM messages WHERE id = $1`, id); err != nil {
			t.Fatal(err)
		}
		return r
	}
	computed := func(t *testing.T, content string) string {
		t.Helper()
		var v string
		if err := q.GetContext(ctx, &v, `SELECT message_search_vector((SELECT config FROM search_config), 'text', $1, NULL, NULL, NULL)::text`, content); err != nil {
			t.Fatal(err)
		}
		return v
	}
	const given = `'given':1` // not the content's vector: kept only when the trigger leaves the row alone
	for _, tc := range []struct {
		name          string
		vector, owner any
		want          row
	}{
		{"a fork's copy: vector and owner given", given, "bob", row{sql.NullString{String: "bob", Valid: true}, given}},
		{"a fork by the previous version: vector without owner", given, nil, row{sql.NullString{String: "ann", Valid: true}, given}},
		{"a message: neither", nil, nil, row{sql.NullString{String: "ann", Valid: true}, computed(t, "walrus ahoy")}},
		{"a message from the store: owner without vector", nil, "bob", row{sql.NullString{String: "bob", Valid: true}, computed(t, "walrus ahoy")}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var id string
			if err := q.GetContext(ctx, &id, `INSERT INTO messages (conversation_id, position, depth, kind, role, content, search_vector, owner)
				VALUES ($1, (SELECT coalesce(max(position), 0) + 1 FROM messages WHERE conversation_id = $1),
					(SELECT coalesce(max(position), 0) + 1 FROM messages WHERE conversation_id = $1),
					'text', 'user', 'walrus ahoy', $2::tsvector, $3) RETURNING id`, conv, tc.vector, tc.owner); err != nil {
				t.Fatal(err)
			}
			if got := read(t, id); got != tc.want {
				t.Errorf("after the insert: got %+v, want %+v", got, tc.want)
			}
			if _, err := q.ExecContext(ctx, `UPDATE messages SET content = 'narwhal ahoy' WHERE id = $1`, id); err != nil {
				t.Fatal(err)
			}
			if got, want := read(t, id).Vector, computed(t, "narwhal ahoy"); got != want {
				t.Errorf("after an update: got vector %s, want %s", got, want)
			}
		})
	}
}
