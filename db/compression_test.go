package db_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/jmoiron/sqlx"

	"github.com/parley-dev/parley"
	"github.com/parley-dev/parley/db"
	"github.com/parley-dev/parley/internal/pgtest"
)

// TestLargeValuesCompressWithLZ4: a message too large to stay in its row, imported and
// added, is compressed with lz4 (migration 000014), not Postgres's default pglz, in each
// column that holds it.
func TestLargeValuesCompressWithLZ4(t *testing.T) {
	t.Parallel()
	ctx := parley.WithOwner(context.Background(), parley.LocalOwner)
	dsn := pgtest.NewDatabase(t)
	store, err := db.Open(ctx, dsn, db.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	var lines []string
	for i := range 400 {
		lines = append(lines, fmt.Sprintf("%5d→func (s *Store) Save%d() error { return s.flush(%d) }", i, i, i))
	}
	text := strings.Join(lines, "\n") // about 24 kB, compressible
	rep, err := store.ImportMessages(ctx, parley.ImportTarget{Title: "large"}, &parley.Import{Messages: []parley.ImportedMessage{
		{Message: &parley.TextMessage{MessageMeta: parley.MessageMeta{Role: parley.RoleUser, SourceID: "a"}, Body: parley.TextBody(text)}, Origin: "messages[0]"},
	}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := store.AddMessage(ctx, rep.Conversation.ID, &parley.TextMessage{MessageMeta: parley.MessageMeta{Role: parley.RoleAssistant}, Body: parley.TextBody(text)}); err != nil {
		t.Fatal(err)
	}
	sqldb, err := sqlx.Open("postgres", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer sqldb.Close()
	var rows []struct {
		Position int     `db:"position"`
		Content  *string `db:"content"`
		Payload  *string `db:"payload"`
	}
	if err := sqldb.Select(&rows, `SELECT position, pg_column_compression(content) AS content, pg_column_compression(payload) AS payload
		FROM messages ORDER BY position`); err != nil {
		t.Fatal(err)
	}
	if len(rows) != 2 {
		t.Fatalf("got %d messages, want 2", len(rows))
	}
	for _, r := range rows {
		for col, got := range map[string]*string{"content": r.Content, "payload": r.Payload} {
			if got == nil || *got != "lz4" {
				t.Errorf("message %d's %s: compressed with %v, want lz4", r.Position, col, deref(got))
			}
		}
	}
}

func deref(s *string) string {
	if s == nil {
		return "nothing (stored uncompressed)"
	}
	return *s
}
