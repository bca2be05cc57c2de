package db_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"

	"github.com/parley-dev/parley"
	"github.com/parley-dev/parley/db"
	"github.com/parley-dev/parley/internal/pgtest"
)

func openDB(t *testing.T) *db.DB {
	t.Helper()
	d, err := db.Open(t.Context(), pgtest.NewDatabase(t), db.Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	return d
}

// twoConversations stores two conversations and returns their keys.
func twoConversations(t *testing.T, d *db.DB) (a, b string) {
	t.Helper()
	var ids []string
	if err := d.SQL().SelectContext(t.Context(), &ids,
		`INSERT INTO conversations (title, owner) VALUES ('a', 't'), ('b', 't') RETURNING id`); err != nil {
		t.Fatal(err)
	}
	return ids[0], ids[1]
}

// meet is a meeting point of two goroutines: each arrives and waits for the other, at
// most a while (a failing run must not hang the test).
type meet struct{ arrived [2]chan struct{} }

func newMeet() *meet { return &meet{[2]chan struct{}{make(chan struct{}), make(chan struct{})}} }

func (m *meet) at(i int) error {
	close(m.arrived[i])
	select {
	case <-m.arrived[1-i]:
		return nil
	case <-time.After(30 * time.Second):
		return errors.New("the other transaction never arrived")
	}
}

// runPair runs two transactions at once, each through transact, and returns their
// errors and how often transact ran each.
func runPair(t *testing.T, d *db.DB, fn func(i int, first bool, tx *sqlx.Tx) error) (errs [2]error, attempts [2]int32) {
	t.Helper()
	var runs [2]atomic.Int32
	done := make(chan struct{}, 2)
	for i := range 2 {
		go func() {
			defer func() { done <- struct{}{} }()
			errs[i] = d.Transact(t.Context(), func(tx *sqlx.Tx) error {
				return fn(i, runs[i].Add(1) == 1, tx)
			})
		}()
	}
	<-done
	<-done
	return errs, [2]int32{runs[0].Load(), runs[1].Load()}
}

// checkRetried checks that both transactions of runPair committed, and that one was run
// again. The first runs conflict for certain; a retry can meet the other transaction
// again before it commits, so a second abort is possible too.
func checkRetried(t *testing.T, errs [2]error, attempts [2]int32) {
	t.Helper()
	for i, err := range errs {
		if err != nil {
			t.Errorf("transaction %d: got %v, want it committed after a retry", i, err)
		}
	}
	if got := attempts[0] + attempts[1]; got < 3 {
		t.Errorf("runs: got %v, want at least 3 (one of the two aborted by the conflict and run again)", attempts)
	}
}

// titles returns the titles of the conversations a and b, in order.
func titles(t *testing.T, d *db.DB, a, b string) []string {
	t.Helper()
	var out []string
	if err := d.SQL().SelectContext(t.Context(), &out, `SELECT title FROM conversations WHERE id IN ($1, $2) ORDER BY title`, a, b); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestTransactRetriesDeadlock provokes a real deadlock: two transactions lock the same
// two rows in opposite orders. Postgres aborts one (40P01); transact runs it again, and
// both commit.
func TestTransactRetriesDeadlock(t *testing.T) {
	t.Parallel()
	d := openDB(t)
	a, b := twoConversations(t, d)
	m := newMeet()
	errs, attempts := runPair(t, d, func(i int, first bool, tx *sqlx.Tx) error {
		order := [2]string{a, b}
		if i == 1 {
			order = [2]string{b, a}
		}
		lock := func(id string) error {
			_, err := tx.ExecContext(t.Context(), `UPDATE conversations SET title = title || '.' WHERE id = $1`, id)
			return err
		}
		if err := lock(order[0]); err != nil {
			return err
		}
		if first {
			// Both hold their first row before either asks for its second.
			if err := m.at(i); err != nil {
				return err
			}
		}
		return lock(order[1])
	})
	checkRetried(t, errs, attempts)
	got := titles(t, d, a, b)
	if want := []string{"a..", "b.."}; len(got) != 2 || got[0] != want[0] || got[1] != want[1] {
		t.Errorf("titles: got %q, want %q (each transaction's update once)", got, want)
	}
}

// TestTransactRetriesSerializationFailure provokes a real serialization failure: two
// SERIALIZABLE transactions each read the row the other writes (write skew). Postgres
// aborts one (40001); transact runs it again, and both commit.
func TestTransactRetriesSerializationFailure(t *testing.T) {
	t.Parallel()
	d := openDB(t)
	a, b := twoConversations(t, d)
	m := newMeet()
	errs, attempts := runPair(t, d, func(i int, first bool, tx *sqlx.Tx) error {
		read, write := b, a
		if i == 1 {
			read, write = a, b
		}
		if _, err := tx.ExecContext(t.Context(), `SET TRANSACTION ISOLATION LEVEL SERIALIZABLE`); err != nil {
			return err
		}
		var title string
		if err := tx.GetContext(t.Context(), &title, `SELECT title FROM conversations WHERE id = $1`, read); err != nil {
			return err
		}
		if first {
			// Both have read before either writes.
			if err := m.at(i); err != nil {
				return err
			}
		}
		_, err := tx.ExecContext(t.Context(), `UPDATE conversations SET title = $2 WHERE id = $1`, write, "after "+title)
		return err
	})
	checkRetried(t, errs, attempts)
	got := titles(t, d, a, b)
	// Serializable: as if one ran after the other, so one of them read the other's write.
	if len(got) != 2 || !(got[0] == "after a" && got[1] == "after after a" || got[0] == "after after b" && got[1] == "after b") {
		t.Errorf("titles: got %q, want the outcome of one order, as SERIALIZABLE promises", got)
	}
}

// TestTransactRetryBounds checks that a transaction that keeps failing on conflicts is
// run maxAttempts times and then fails as unavailable, without the driver's text, and
// that other errors are not retried: a transaction of transact's, and a statement run
// in autocommit (a plain save's, db/messages.go).
func TestTransactRetryBounds(t *testing.T) {
	t.Parallel()
	d := openDB(t)
	// Each runs fn, which sends a statement and returns its error, as its write.
	runners := []struct {
		name string
		run  func(ctx context.Context, fn func(ctx context.Context, q sqlx.ExecerContext) error) error
	}{
		{"transact", func(ctx context.Context, fn func(context.Context, sqlx.ExecerContext) error) error {
			return d.Transact(ctx, func(tx *sqlx.Tx) error { return fn(ctx, tx) })
		}},
		{"autocommit", func(ctx context.Context, fn func(context.Context, sqlx.ExecerContext) error) error {
			return d.Autocommit(ctx, func(ctx context.Context) error { return fn(ctx, d.SQL()) })
		}},
	}
	tests := []struct {
		name     string
		err      error
		runs     int32
		wantCode string
	}{
		{"serialization failure", &pq.Error{Code: "40001", Message: "could not serialize access"}, db.MaxAttempts, parley.EUNAVAILABLE},
		{"deadlock", &pq.Error{Code: "40P01", Message: "deadlock detected"}, db.MaxAttempts, parley.EUNAVAILABLE},
		{"unique violation", &pq.Error{Code: "23505", Message: "duplicate key"}, 1, parley.EINTERNAL},
		{"domain error", parley.Errorf(parley.ECONFLICT, "no"), 1, parley.ECONFLICT},
	}
	for _, r := range runners {
		for _, tt := range tests {
			t.Run(r.name+"/"+tt.name, func(t *testing.T) {
				t.Parallel()
				var runs atomic.Int32
				err := r.run(t.Context(), func(ctx context.Context, q sqlx.ExecerContext) error {
					runs.Add(1)
					if _, err := q.ExecContext(ctx, `SELECT 1`); err != nil {
						return err
					}
					return tt.err
				})
				if got := runs.Load(); got != tt.runs {
					t.Errorf("runs: got %d, want %d", got, tt.runs)
				}
				if got := parley.ErrorCode(err); got != tt.wantCode {
					t.Errorf("code: got %s, want %s (%v)", got, tt.wantCode, err)
				}
				if msg := parley.ErrorMessage(err); tt.wantCode == parley.EUNAVAILABLE && msg != "A concurrent change got in the way; try again." {
					t.Errorf("message: got %q, want the generic one", msg)
				}
			})
		}
		t.Run(r.name+"/cancelled while waiting", func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithCancel(t.Context())
			var runs atomic.Int32
			err := r.run(ctx, func(context.Context, sqlx.ExecerContext) error {
				runs.Add(1)
				cancel()
				return &pq.Error{Code: "40001"}
			})
			if got := runs.Load(); got != 1 {
				t.Errorf("runs: got %d, want 1 (no retry once the context ended)", got)
			}
			if err == nil {
				t.Error("got nil, want an error")
			}
		})
	}
}
