package db_test

import (
	"errors"
	"testing"

	"github.com/jmoiron/sqlx"

	"github.com/parley-dev/parley"
)

// TestConversationCountsFollowEveryChange: the per-owner counts that totalCount reads
// match a count of the rows after bulk inserts, bulk deletes, a change of owner and a
// rolled-back transaction.
func TestConversationCountsFollowEveryChange(t *testing.T) {
	t.Parallel()
	d := openDB(t)
	sql, ctx := d.SQL(), t.Context()
	exec := func(q string, args ...any) {
		t.Helper()
		if _, err := sql.ExecContext(ctx, q, args...); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	check := func(step string, want map[string]int) {
		t.Helper()
		for owner, n := range want {
			got, err := d.CountConversations(parley.WithOwner(ctx, owner))
			if err != nil {
				t.Fatal(err)
			}
			var rows int
			if err := sql.GetContext(ctx, &rows, `SELECT count(*) FROM conversations WHERE owner = $1`, owner); err != nil {
				t.Fatal(err)
			}
			if got != n || rows != n {
				t.Errorf("%s: %s has %d conversations counted and %d rows, want %d", step, owner, got, rows, n)
			}
		}
	}
	check("empty", map[string]int{"ann": 0, "bob": 0})
	exec(`INSERT INTO conversations (owner, title) SELECT CASE WHEN i % 3 = 0 THEN 'bob' ELSE 'ann' END, 'c' || i FROM generate_series(1, 300) i`)
	check("bulk insert", map[string]int{"ann": 200, "bob": 100})
	if _, err := d.CreateConversation(parley.WithOwner(ctx, "bob"), "one more"); err != nil {
		t.Fatal(err)
	}
	check("created", map[string]int{"ann": 200, "bob": 101})
	exec(`DELETE FROM conversations WHERE title IN ('c1', 'c2', 'c3', 'c4', 'c5', 'c6')`) // four of ann's, two of bob's
	check("bulk delete", map[string]int{"ann": 196, "bob": 99})
	exec(`UPDATE conversations SET owner = 'cy' WHERE title IN ('c7', 'c9')`) // one each
	exec(`UPDATE conversations SET title = 'renamed' WHERE title = 'c8'`)     // not a move
	check("moved", map[string]int{"ann": 195, "bob": 98, "cy": 2})
	rollback := errors.New("roll back")
	if err := d.Transact(ctx, func(tx *sqlx.Tx) error {
		if _, err := tx.ExecContext(ctx, `INSERT INTO conversations (owner) VALUES ('ann'), ('dee')`); err != nil {
			return err
		}
		return rollback
	}); !errors.Is(err, rollback) {
		t.Fatalf("got %v, want the rollback", err)
	}
	check("rolled back", map[string]int{"ann": 195, "dee": 0})
}
