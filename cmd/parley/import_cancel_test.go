package main

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/parley-dev/parley/internal/pgtest"
	"github.com/parley-dev/parley/internal/poll"
	"github.com/parley-dev/parley/internal/sessiongen"
)

// TestImportCancelledWhileVectorsComputed: parley import of a session of several
// batches, cancelled while the second connection computes a batch's search vectors
// (db/vectors.go; its query seen running in pg_stat_activity): the import ends with an
// error, leaves nothing, and leaves no statement of its own running.
func TestImportCancelledWhileVectorsComputed(t *testing.T) {
	t.Parallel()
	dsn := pgtest.NewDatabase(t)
	session := filepath.Join(t.TempDir(), "session.jsonl")
	f, err := os.Create(session)
	if err != nil {
		t.Fatal(err)
	}
	if err := sessiongen.Write(f, 40000); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	var out, errOut syncBuffer
	if err := run(t.Context(), []string{"parley", "migrate", "--database-url", dsn}, &out, &errOut); err != nil {
		t.Fatalf("migrate: %v\n%s", err, errOut.String())
	}
	watch, err := sql.Open("postgres", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer watch.Close()
	watch.SetMaxOpenConns(1)
	// The other sessions on the test's database running a statement: the import's.
	running := func(like string) int {
		t.Helper()
		var n int
		if err := watch.QueryRowContext(t.Context(), `SELECT count(*) FROM pg_stat_activity
			WHERE datname = current_database() AND pid <> pg_backend_pid() AND state <> 'idle' AND query LIKE $1`, like).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}

	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"parley", "import", "--database-url", dsn, "--format", "CLAUDE_CODE_JSONL", "--json", session},
			&out, &errOut)
	}()
	poll.For(t, "vectors computed on a second connection", time.Minute, func() bool {
		select {
		case err := <-done:
			t.Fatalf("the import ended (%v) before its vectors were seen computed on a second connection", err)
		default:
		}
		return running("SELECT s.n, v::text%") > 0
	})
	cancel()
	select {
	case err := <-done:
		if err == nil {
			t.Fatal("the cancelled import succeeded")
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the cancelled import did not end within 30 s")
	}
	var conversations, messages int
	if err := watch.QueryRowContext(t.Context(), `SELECT (SELECT count(*) FROM conversations), (SELECT count(*) FROM messages)`).
		Scan(&conversations, &messages); err != nil {
		t.Fatal(err)
	}
	if conversations != 0 || messages != 0 {
		t.Errorf("the cancelled import left %d conversations and %d messages, want none", conversations, messages)
	}
	poll.Until(t, "the cancelled import's statements to end", time.Minute, func() error {
		if n := running("%"); n != 0 {
			return fmt.Errorf("%d still run", n)
		}
		return nil
	})
}
