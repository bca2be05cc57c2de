package db_test

import (
	"slices"
	"strconv"
	"testing"

	"github.com/parley-dev/parley"
	"github.com/parley-dev/parley/db"
)

// treeMigration is the number of the conversation tree's migration
// (000013_conversation_tree); later ones are migrated down before it.
const treeMigration = 13

// The tree's migration turns the linear conversations stored before it into
// single-branch trees in place: the same pages, each message's parent the one before
// it, and new messages continue them. Migrating down again is refused once a
// conversation has branches.
func TestTreeMigrationKeepsLinearConversations(t *testing.T) {
	t.Parallel()
	dsn, conn, m := newMigrator(t)
	if err := m.Migrate(treeMigration - 1); err != nil {
		t.Fatalf("migrate down to before the tree: %v", err)
	}
	// History as the previous version stored it: 30 messages.
	var conv string
	if err := conn.QueryRow(`INSERT INTO conversations (owner, title, last_position, message_count) VALUES ('local', 'old', 30, 30) RETURNING id`).Scan(&conv); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(`INSERT INTO messages (conversation_id, position, kind, role, content, payload)
		SELECT $1, p, 'text', 'user', 'm' || p, jsonb_build_object('parts', jsonb_build_array(jsonb_build_object('kind', 'TEXT', 'content', 'm' || p)))
		FROM generate_series(1, 30) p`, conv); err != nil {
		t.Fatal(err)
	}
	if err := m.Up(); err != nil {
		t.Fatalf("migrate up: %v", err)
	}
	d, err := db.Open(t.Context(), dsn, db.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	ctx := parley.WithOwner(t.Context(), parley.LocalOwner)
	c, err := d.FindConversationByID(ctx, parley.ConversationID(conv))
	if err != nil {
		t.Fatal(err)
	}
	if c.MessageCount != 30 {
		t.Errorf("messageCount: got %d, want 30", c.MessageCount)
	}
	last := 12
	page, err := d.FindMessages(ctx, c, parley.PageRequest{Last: &last, Tree: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Messages) != 12 || page.TotalCount != 30 || !page.HasPreviousPage || page.HasNextPage {
		t.Fatalf("last page: got %d messages of %d (previous %v, next %v), want 12 of 30, previous only",
			len(page.Messages), page.TotalCount, page.HasPreviousPage, page.HasNextPage)
	}
	for i, msg := range page.Messages {
		meta := msg.Meta()
		if meta.Position != 19+i || msg.(*parley.TextMessage).Text() != "m"+strconv.Itoa(19+i) {
			t.Errorf("message %d: got position %d, text %q", i, meta.Position, msg.(*parley.TextMessage).Text())
		}
		if i > 0 && (meta.Tree == nil || meta.Tree.ParentID != page.Messages[i-1].Meta().ID || !slices.Equal(meta.Tree.SiblingIDs, []string{meta.ID})) {
			t.Errorf("message %d: got tree %+v, want the one before as parent and no siblings", i, meta.Tree)
		}
	}
	added, err := d.AddMessage(ctx, c.ID, &parley.TextMessage{MessageMeta: parley.MessageMeta{Role: parley.RoleUser}, Body: parley.TextBody("after")})
	if err != nil {
		t.Fatal(err)
	}
	if added.Meta().Position != 31 {
		t.Errorf("a message after migrating: got position %d, want 31", added.Meta().Position)
	}
	// A branch, then down is refused and changes nothing.
	if _, err := d.AddMessage(ctx, c.ID, &parley.TextMessage{MessageMeta: parley.MessageMeta{Role: parley.RoleUser,
		Place: parley.Placement{SiblingOf: added.Meta().ID}}, Body: parley.TextBody("again")}); err != nil {
		t.Fatal(err)
	}
	// The migrations after the tree's come off first (they are not its to refuse; the
	// store needs their columns, so what is left is checked in SQL).
	if err := m.Migrate(treeMigration); err != nil {
		t.Fatalf("migrate down to the tree: %v", err)
	}
	if err := m.Migrate(treeMigration - 1); err == nil {
		t.Fatal("migrating down with branches: got no error")
	}
	var msgs, onTree, segments int
	if err := conn.QueryRow(`SELECT count(*), count(depth),
			(SELECT count(*) FROM message_segments WHERE conversation_id = $1)
		FROM messages WHERE conversation_id = $1`, conv).Scan(&msgs, &onTree, &segments); err != nil {
		t.Fatalf("after the refused migration: %v", err)
	}
	if msgs != 32 || onTree != 32 || segments != 1 {
		t.Errorf("after the refused migration: got %d messages (%d with a depth) and %d segments, want 32, 32 and 1", msgs, onTree, segments)
	}
}
