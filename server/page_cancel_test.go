package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/jmoiron/sqlx"
	_ "github.com/lib/pq"

	"github.com/parley-dev/parley/db"
	"github.com/parley-dev/parley/internal/poll"
	"github.com/parley-dev/parley/internal/testserver"
	"github.com/parley-dev/parley/server"
)

// TestHistoryReadCancelled checks that a history read stuck in Postgres ends when its
// request does, a timeout or a client gone: the client gets REQUEST_CANCELLED promptly
// (the timeout), the statement no longer runs in Postgres while what held it up still
// does, and the pool's one connection serves the next read. The page's statement runs
// with a context that cannot end (db's queryRaw), so the request's end reaches
// Postgres only through the cancel queryRaw sends.
func TestHistoryReadCancelled(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name    string
		timeout time.Duration
		// client ends the request from the client's side (nil: the timeout ends it).
		client bool
	}{
		{name: "request timeout", timeout: 300 * time.Millisecond},
		{name: "client gone", timeout: time.Minute, client: true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := testserver.NewWith(t, testserver.Options{DB: db.Config{MaxOpenConns: 1},
				Configure: func(c *server.Config) { c.GraphQL.RequestTimeout = tt.timeout }})
			conv := s.CreateConversation(t, "cancelled")
			for i := range 3 {
				s.AddMessage(t, conv, testserver.Text("USER", fmt.Sprintf("message %d", i)))
			}
			const query = `query($c: ID!) { conversation(id: $c) { messages(first: 10) { edges { node { ... on MessageBase { position } } } } } }`
			vars := map[string]any{"c": conv}
			readAll := func(what string) {
				t.Helper()
				var out struct {
					Conversation struct {
						Messages struct {
							Edges []json.RawMessage
						}
					}
				}
				s.MustDo(t, query, vars, &out)
				if n := len(out.Conversation.Messages.Edges); n != 3 {
					t.Fatalf("%s: got %d messages, want 3", what, n)
				}
			}
			readAll("before") // the connection has the statement prepared

			other, err := sqlx.Open("postgres", s.DSN)
			if err != nil {
				t.Fatal(err)
			}
			defer other.Close()
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			tx, err := other.BeginTxx(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer tx.Rollback()
			// The page's statement waits for this lock, in Postgres.
			if _, err := tx.ExecContext(ctx, `LOCK TABLE messages IN ACCESS EXCLUSIVE MODE`); err != nil {
				t.Fatal(err)
			}
			waiting := func() int {
				var n int
				if err := other.GetContext(ctx, &n, `SELECT count(*) FROM pg_stat_activity
					WHERE datname = current_database() AND state = 'active' AND wait_event_type = 'Lock'`); err != nil {
					t.Fatal(err)
				}
				return n
			}

			body, err := json.Marshal(map[string]any{"query": query, "variables": vars})
			if err != nil {
				t.Fatal(err)
			}
			rctx, rcancel := context.WithCancel(ctx)
			defer rcancel()
			req, err := http.NewRequestWithContext(rctx, http.MethodPost, s.URL+"/graphql", bytes.NewReader(body))
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("Content-Type", "application/json")
			type result struct {
				resp testserver.Response
				err  error
			}
			done := make(chan result, 1)
			start := time.Now()
			go func() {
				var r result
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					r.err = err
				} else {
					r.resp.Status = resp.StatusCode
					r.err = json.NewDecoder(resp.Body).Decode(&r.resp)
					resp.Body.Close()
				}
				done <- r
			}()
			poll.For(t, "the read to wait for the lock", 10*time.Second, func() bool { return waiting() == 1 })
			if tt.client {
				rcancel()
			}
			var r result
			select {
			case r = <-done:
			case <-time.After(10 * time.Second):
				t.Fatalf("the read still runs %s after it started", time.Since(start))
			}
			if !tt.client {
				if r.err != nil || len(r.resp.Errors) != 1 || r.resp.Errors[0].Code() != "REQUEST_CANCELLED" {
					t.Errorf("stuck read: got %+v (%v), want REQUEST_CANCELLED", r.resp, r.err)
				}
				if took := time.Since(start); took > tt.timeout+5*time.Second {
					t.Errorf("stuck read took %s, want about %s", took, tt.timeout)
				}
			}
			// Cancelled in Postgres, while the lock is still held.
			poll.For(t, "the statement to be cancelled", 10*time.Second, func() bool { return waiting() == 0 })
			if err := tx.Rollback(); err != nil {
				t.Fatal(err)
			}
			readAll("after")
		})
	}
}
