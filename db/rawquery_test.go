package db_test

import (
	"testing"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/parley-dev/parley"
	"github.com/parley-dev/parley/db"
	"github.com/parley-dev/parley/internal/pgtest"
	"github.com/parley-dev/parley/internal/poll"
)

// TestPageReadAfterItsConnectionsEnd checks that a conversation's page, read from
// lib/pq's rows on a connection of the pool (queryRaw), is read on a new connection when
// every one the pool holds has ended since it was last used (their backends terminated,
// as a server's restart ends them), as database/sql reads a statement when the
// connections it takes turn out broken: not an error for the client.
func TestPageReadAfterItsConnectionsEnd(t *testing.T) {
	t.Parallel()
	dsn := pgtest.NewDatabase(t)
	d, err := db.Open(t.Context(), dsn, db.Config{MaxOpenConns: 4})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	ctx := parley.WithOwner(t.Context(), "ended")
	conv, err := d.CreateConversation(ctx, "ended")
	if err != nil {
		t.Fatal(err)
	}
	for _, text := range []string{"one", "two", "three"} {
		addText(t, ctx, d, conv.ID, text, parley.Placement{})
	}
	n := 10
	read := func(what string) {
		t.Helper()
		_, p, err := d.FindConversationPage(ctx, conv.ID, parley.PageRequest{First: &n})
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if len(p.Messages) != 3 {
			t.Fatalf("%s: got %d messages, want 3", what, len(p.Messages))
		}
	}
	// Four connections idle in the pool, each having read the page.
	conns := make([]*sqlx.Conn, 4)
	for i := range conns {
		if conns[i], err = d.SQL().Connx(ctx); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range conns {
		c.Close()
	}
	for range 8 {
		read("before")
	}

	other, err := sqlx.Open("postgres", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	others := `SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()`
	var held int
	if err := other.GetContext(ctx, &held, others); err != nil || held != 4 {
		t.Fatalf("the pool's connections: got %d (%v), want 4", held, err)
	}
	if _, err := other.ExecContext(ctx, `SELECT pg_terminate_backend(pid) FROM pg_stat_activity
		WHERE datname = current_database() AND pid <> pg_backend_pid()`); err != nil {
		t.Fatal(err)
	}
	poll.For(t, "the pool's backends to end", 10*time.Second, func() bool {
		return other.GetContext(ctx, &held, others) == nil && held == 0
	})
	read("after")
}
