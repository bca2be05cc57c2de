package db_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/jmoiron/sqlx"
)

// TestSendBehind: statements a transaction sends behind (an import's batch) end before
// the transaction is used again, whose next statement then sees what they did; their
// error, or their panic, is what that use returns, and its statement is not run; and
// the transaction, used again or not, ends with that error.
func TestSendBehind(t *testing.T) {
	t.Parallel()
	d := openDB(t)
	refused := errors.New("refused behind")
	for _, tt := range []struct {
		name   string
		behind func(q *sqlx.Tx) error
		want   string // the transaction's error; "" for none
		is     error  // the error it must wrap, if any
		idle   bool   // the transaction is not used after sending
	}{
		{"ends before the next use", func(q *sqlx.Tx) error {
			// Slow enough that a next statement not waiting for it would not see its row.
			_, err := q.ExecContext(t.Context(), `SELECT pg_sleep(0.2); CREATE TEMPORARY TABLE behind_done (n int); INSERT INTO behind_done VALUES (1)`)
			return err
		}, "", nil, false},
		{"an error", func(*sqlx.Tx) error { return refused }, refused.Error(), refused, false},
		{"an error, the transaction not used again", func(*sqlx.Tx) error { return refused }, refused.Error(), refused, true},
		{"a panic", func(*sqlx.Tx) error { panic("boom behind") }, "statements sent behind: panic: boom behind", nil, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ran := false
			err := d.SendBehind(t.Context(), tt.behind, func(get func(dest any, query string, args ...any) error) error {
				if tt.idle {
					return nil
				}
				var n int
				err := get(&n, `SELECT count(*) FROM pg_class WHERE relname = 'behind_done' AND relpersistence = 't'`)
				ran = err == nil
				if err == nil && n != 1 {
					t.Errorf("the next statement saw %d tables made behind, want 1", n)
				}
				return err
			})
			if tt.want == "" {
				if err != nil || (!ran && !tt.idle) {
					t.Fatalf("got %v (next statement ran: %v), want the next statement run", err, ran)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("got %v, want an error with %q", err, tt.want)
			}
			if tt.is != nil && !errors.Is(err, tt.is) {
				t.Errorf("got %v, want the error sent behind itself", err)
			}
			if ran {
				t.Error("the next statement ran after what was sent behind failed")
			}
		})
	}
}
