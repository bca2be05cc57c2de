package db_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/golang-migrate/migrate/v4"

	"github.com/parley-dev/parley"
	"github.com/parley-dev/parley/db"
)

// forkLinksMigration is the number of the migration that makes forks copy-free
// (000025_fork_links).
const forkLinksMigration = 25

// TestForkLinksMigration: going down from 000025 makes every linked fork real first, its
// shared messages stored under the ids it showed them by, and brings back forked_from's
// foreign key; going up again works on what that left.
func TestForkLinksMigration(t *testing.T) {
	t.Parallel()
	dsn, conn, m := newMigrator(t)
	// Up to the latest, which the store's fork writes (000026 too), then down through 000025.
	if err := m.Up(); err != nil && !errors.Is(err, migrate.ErrNoChange) {
		t.Fatalf("migrate up: %v", err)
	}
	ctx := parley.WithOwner(context.Background(), "ann")
	store, err := db.Open(ctx, dsn, db.Config{})
	if err != nil {
		t.Fatal(err)
	}
	src, err := store.CreateConversation(ctx, "source")
	if err != nil {
		t.Fatal(err)
	}
	var last parley.Message
	for i := 1; i <= 5; i++ {
		m := &parley.TextMessage{MessageMeta: parley.MessageMeta{Role: parley.RoleUser}, Body: parley.TextBody(fmt.Sprintf("turn %d", i))}
		if last, err = store.AddMessage(ctx, src.ID, m); err != nil {
			t.Fatal(err)
		}
	}
	fork, err := store.ForkConversation(ctx, last.Meta().ID, "")
	if err != nil {
		t.Fatal(err)
	}
	five := 5
	before, err := store.FindMessages(ctx, fork, parley.PageRequest{First: &five})
	if err != nil {
		t.Fatal(err)
	}
	store.Close()
	forkKey, _ := parley.ParseConversationID(fork.ID)
	rows := func() int {
		t.Helper()
		var n int
		if err := conn.QueryRow(`SELECT count(*) FROM messages WHERE conversation_id = $1`, forkKey).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	if n := rows(); n != 0 {
		t.Fatalf("a linked fork stores %d rows, want 0", n)
	}

	if err := m.Migrate(forkLinksMigration - 1); err != nil {
		t.Fatalf("migrate down: %v", err)
	}
	if n := rows(); n != 5 {
		t.Fatalf("after migrating down, the fork stores %d rows, want 5", n)
	}
	for i, msg := range before.Messages {
		key, _ := parley.ParseMessageID(msg.Meta().ID)
		var depth int
		if err := conn.QueryRow(`SELECT depth FROM messages WHERE id = $1 AND conversation_id = $2`, key, forkKey).Scan(&depth); err != nil {
			t.Fatalf("after migrating down, the fork's message %d (%s): %v", i+1, msg.Meta().ID, err)
		}
	}
	var fks int
	if err := conn.QueryRow(`SELECT count(*) FROM pg_constraint WHERE conname = 'conversations_forked_from_fkey'`).Scan(&fks); err != nil || fks != 1 {
		t.Errorf("after migrating down: forked_from's foreign key: %d (%v), want 1", fks, err)
	}
	if err := m.Migrate(forkLinksMigration); err != nil {
		t.Fatalf("migrate up again: %v", err)
	}
}
