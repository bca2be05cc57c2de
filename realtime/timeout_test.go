package realtime_test

import (
	"context"
	"testing"
	"time"

	"github.com/parley-dev/parley/server"
)

// A mutation stuck behind a lock is cancelled when the request timeout passes: the
// client gets REQUEST_CANCELLED promptly, nothing is written, and the connection it
// used is fine afterwards. A subscription is not bound by the timeout.
func TestRequestTimeout(t *testing.T) {
	t.Parallel()
	const timeout = 300 * time.Millisecond
	r := newReplica(t, "", replicaOptions{configure: func(c *server.Config) { c.GraphQL.RequestTimeout = timeout }})
	conv := r.CreateConversation(t, "timeout")
	s := subscribeSSE(t, r.URL, addedQuery(false), map[string]any{"c": conv})
	pollUntil(t, "the subscription to start", func() bool { return r.Hub.Stats().Subscribers == 1 })

	// Another session holds the conversation's row lock, which adding a message takes.
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	tx, err := r.Store.SQL().BeginTxx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, `SELECT 1 FROM conversations FOR UPDATE`); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	a := addMessageAttempt(r.URL, conv, "stuck")
	took := time.Since(start)
	if a.code != "REQUEST_CANCELLED" {
		t.Errorf("blocked write: got %q %q, want REQUEST_CANCELLED", a.code, a.message)
	}
	if took < timeout || took > timeout+5*time.Second {
		t.Errorf("blocked write took %s, want about %s", took, timeout)
	}
	if err := tx.Rollback(); err != nil {
		t.Fatal(err)
	}
	var n int
	if err := r.Store.SQL().Get(&n, `SELECT count(*) FROM messages`); err != nil || n != 0 {
		t.Fatalf("messages stored: got %d (%v), want 0", n, err)
	}

	// Well past the timeout, the subscription still delivers.
	pollUntil(t, "twice the timeout to pass", func() bool { return time.Since(start) > 2*timeout })
	if a := addMessageAttempt(r.URL, conv, "after"); !a.ok() || a.position != 1 {
		t.Fatalf("write after the lock: got %q %q at %d, want position 1", a.code, a.message, a.position)
	}
	checkSequence(t, "subscription", positions(s.waitCount(t, 1)), 1, 1)
}
