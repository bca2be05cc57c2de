package realtime_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/parley-dev/parley"
	"github.com/parley-dev/parley/db"
	"github.com/parley-dev/parley/internal/pgtest"
	"github.com/parley-dev/parley/internal/poll"
	"github.com/parley-dev/parley/internal/testserver"
	"github.com/parley-dev/parley/metrics"
	"github.com/parley-dev/parley/realtime"
	"github.com/parley-dev/parley/server"
)

// failFast is how long a request may take to fail while the database is down.
const failFast = 2 * time.Second

// attempt is one write made during the outage test.
type attempt struct {
	start, end time.Time
	status     int
	position   int // when it succeeded
	code       string
	retryable  bool
	message    string
}

func (a attempt) ok() bool { return a.code == "" }

// outageWriters keep adding messages until stopped, recording every attempt.
type outageWriters struct {
	mu       sync.Mutex
	attempts []attempt
	changed  chan struct{}
	stop     chan struct{}
	wg       sync.WaitGroup
}

var outageClient = &http.Client{Timeout: wait}

// addMessageAttempt adds a text message and reports how it went, without failing on a
// GraphQL error: those are what the test looks at.
func addMessageAttempt(baseURL, conv, text string) attempt {
	a := attempt{start: time.Now()}
	body, _ := json.Marshal(map[string]any{
		"query":     `mutation($c: ID!, $i: MessageInput!) { addMessage(conversationId: $c, input: $i) { node { ... on MessageBase { position } } } }`,
		"variables": map[string]any{"c": conv, "i": testserver.Text("USER", text)},
	})
	req, _ := http.NewRequest(http.MethodPost, baseURL+"/graphql", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	resp, err := outageClient.Do(req)
	a.end = time.Now()
	if err != nil {
		a.code, a.message = "TRANSPORT", err.Error()
		return a
	}
	defer resp.Body.Close()
	a.status = resp.StatusCode
	var out struct {
		Data struct {
			AddMessage struct{ Node struct{ Position int } }
		}
		Errors []testserver.Error
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		a.code, a.message = "UNDECODABLE", err.Error()
		return a
	}
	a.end = time.Now()
	if len(out.Errors) > 0 {
		e := out.Errors[0]
		a.code, a.message = e.Code(), e.Message
		a.retryable, _ = e.Extensions["retryable"].(bool)
		return a
	}
	a.position = out.Data.AddMessage.Node.Position
	return a
}

func startOutageWriters(baseURL, conv string, n int) *outageWriters {
	w := &outageWriters{changed: make(chan struct{}, 1), stop: make(chan struct{})}
	for i := range n {
		w.wg.Go(func() {
			for j := 0; ; j++ {
				select {
				case <-w.stop:
					return
				default:
				}
				a := addMessageAttempt(baseURL, conv, fmt.Sprintf("writer %d message %d", i, j))
				w.mu.Lock()
				w.attempts = append(w.attempts, a)
				w.mu.Unlock()
				select {
				case w.changed <- struct{}{}:
				default:
				}
				if !a.ok() {
					// A client backing off a little, as one should from SERVICE_UNAVAILABLE.
					select {
					case <-w.stop:
						return
					case <-time.After(20 * time.Millisecond):
					}
				}
			}
		})
	}
	return w
}

func (w *outageWriters) halt() {
	close(w.stop)
	w.wg.Wait()
}

func (w *outageWriters) snapshot() []attempt {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.attempts)
}

// count returns how many attempts that started after since match ok.
func (w *outageWriters) count(since time.Time, ok bool) int {
	n := 0
	for _, a := range w.snapshot() {
		if !a.start.Before(since) && a.ok() == ok {
			n++
		}
	}
	return n
}

// follower follows a conversation the way a graphql-ws or graphql-sse client does:
// when its subscription ends (the database was unreadable for too long), it subscribes
// again from the last cursor it received. It counts what it received over all of its
// subscriptions.
type follower struct {
	name string
	open func(vars map[string]any) followed
	conv string
	subs []followed
}

// followed is one subscription of a follower, and what tells that it is over: an
// error or complete, or for SSE also the stream cut without either.
type followed struct {
	*sub
	cut <-chan struct{} // nil for websockets
}

func (s followed) over() bool {
	_, errs, done := s.snapshot()
	if len(errs) > 0 || done {
		return true
	}
	select {
	case <-s.cut:
		return true
	default:
		return false
	}
}

func newFollower(t *testing.T, name, conv string, open func(vars map[string]any) followed) *follower {
	f := &follower{name: name, open: open, conv: conv}
	f.subs = append(f.subs, open(map[string]any{"c": conv, "a": parley.MessageCursor(0)}))
	return f
}

func (f *follower) events() []event {
	var out []event
	for _, s := range f.subs {
		ev, _, _ := s.snapshot()
		out = append(out, ev...)
	}
	return out
}

// resume subscribes again from the last cursor if the current subscription is over,
// and says whether it did.
func (f *follower) resume() bool {
	if !f.subs[len(f.subs)-1].over() {
		return false
	}
	cursor := parley.MessageCursor(0)
	if ev := f.events(); len(ev) > 0 {
		cursor = ev[len(ev)-1].Cursor
	}
	f.subs = append(f.subs, f.open(map[string]any{"c": f.conv, "a": cursor}))
	return true
}

// ready returns the status of /readyz.
func ready(baseURL string) int {
	resp, err := outageClient.Get(baseURL + "/readyz")
	if err != nil {
		return 0
	}
	resp.Body.Close()
	return resp.StatusCode
}

// TestPostgresStoppedAndRestarted stops Postgres (its own cluster, so other tests are
// unaffected) under write and subscription load, then starts it again, without
// restarting the server. While it is down, every write and read fails within failFast
// with SERVICE_UNAVAILABLE and retryable: true, new subscriptions are refused the same
// way, and /readyz says 503; when it is back, /readyz says 200, writes succeed again,
// and subscribers over both websocket protocols and SSE, resubscribing from their last
// cursor when a subscription is ended for them, have received every message stored,
// acknowledged or not, exactly once and in order.
func TestPostgresStoppedAndRestarted(t *testing.T) {
	t.Parallel()
	cluster, dsn := pgtest.OwnCluster(t)
	m := metrics.New()
	const retryFor = 300 * time.Millisecond
	r := newReplica(t, dsn, replicaOptions{
		hub:       realtime.Config{RetryFor: retryFor},
		listener:  db.ListenerConfig{OnReconnect: m.ListenerReconnected},
		configure: func(c *server.Config) { c.Metrics, c.ServeMetrics = m, true },
	})
	conv := r.CreateConversation(t, "outage")

	wsConn := dial(t, r.URL, transportWS)
	legacyConn := dial(t, r.URL, legacyWS)
	followers := []*follower{
		newFollower(t, transportWS, conv, func(v map[string]any) followed { return followed{sub: wsConn.subscribe(t, addedQuery(true), v)} }),
		newFollower(t, legacyWS, conv, func(v map[string]any) followed { return followed{sub: legacyConn.subscribe(t, addedQuery(true), v)} }),
		newFollower(t, "sse", conv, func(v map[string]any) followed {
			s := subscribeSSE(t, r.URL, addedQuery(true), v)
			return followed{sub: s.sub, cut: s.ended}
		}),
	}
	received := func(n int) bool {
		for _, f := range followers {
			f.resume()
			if len(f.events()) < n {
				return false
			}
		}
		return true
	}

	w := startOutageWriters(r.URL, conv, 3)
	defer func() {
		select {
		case <-w.stop:
		default:
			w.halt()
		}
	}()
	poll.For(t, "30 messages written and received", wait, func() bool { return w.count(time.Time{}, true) >= 30 && received(30) })

	// Down.
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	stopping := time.Now()
	if err := cluster.Stop(ctx); err != nil {
		t.Fatalf("stop Postgres: %v", err)
	}
	down := time.Now()
	t.Logf("Postgres stopped in %s", down.Sub(stopping).Round(time.Millisecond))
	toNotReady := poll.For(t, "/readyz to say 503", 10*time.Second, func() bool { return ready(r.URL) == http.StatusServiceUnavailable })
	poll.For(t, "15 failed writes", wait, func() bool { return w.count(down, false) >= 15 })

	// Reads and new subscriptions fail the same way.
	for name, query := range map[string]string{
		"conversation": `query($c: ID!) { conversation(id: $c) { title messages(first: 5) { edges { cursor } } } }`,
		"list":         `{ conversations(first: 5) { edges { cursor } } }`,
	} {
		start := time.Now()
		resp := r.Do(t, query, map[string]any{"c": conv})
		if code := resp.ErrorCode(t); code != "SERVICE_UNAVAILABLE" || resp.Errors[0].Extensions["retryable"] != true {
			t.Errorf("%s read while down: got %s (%s, retryable %v), want SERVICE_UNAVAILABLE, retryable",
				name, code, resp.Errors[0].Message, resp.Errors[0].Extensions["retryable"])
		}
		if d := time.Since(start); d > failFast {
			t.Errorf("%s read while down took %s, want under %s", name, d, failFast)
		}
	}
	refused := subscribeSSE(t, r.URL, addedQuery(true), map[string]any{"c": conv})
	if errs, _ := refused.waitEnd(t); errorCode(t, errs) != "SERVICE_UNAVAILABLE" {
		t.Errorf("subscribing while down: got %s, want SERVICE_UNAVAILABLE", errs)
	}
	// A wake-up while down (as from a commit just before the stop): the subscribers'
	// reads fail for retryFor, and their subscriptions end, telling them to subscribe
	// again (a websocket error SERVICE_UNAVAILABLE; an SSE stream cut without complete).
	r.Hub.Resync()
	poll.For(t, "the subscriptions to end", wait, func() bool {
		for _, f := range followers {
			if !f.subs[len(f.subs)-1].over() {
				return false
			}
		}
		return true
	})
	for _, f := range followers[:2] {
		s := f.subs[len(f.subs)-1]
		if _, errs, done := s.snapshot(); done || errorCode(t, errs) != "SERVICE_UNAVAILABLE" {
			t.Errorf("%s: the subscription ended with %s (complete %v), want SERVICE_UNAVAILABLE", f.name, errs, done)
		}
	}
	if _, errs, done := followers[2].subs[len(followers[2].subs)-1].snapshot(); done || len(errs) > 0 {
		t.Errorf("sse: the stream ended with %s (complete %v), want it cut", errs, done)
	}

	// Up again, same server.
	restarting := time.Now()
	if err := cluster.Restart(ctx); err != nil {
		t.Fatalf("start Postgres again: %v", err)
	}
	up := time.Now()
	t.Logf("Postgres started again in %s", up.Sub(restarting).Round(time.Millisecond))
	toReady := poll.For(t, "/readyz to say 200", wait, func() bool { return ready(r.URL) == http.StatusOK })
	toWrite := poll.For(t, "a write to succeed", wait, func() bool { return w.count(up, true) >= 1 })
	poll.For(t, "30 more messages written", wait, func() bool { return w.count(up, true) >= 30 })
	w.halt()

	var last int
	if err := r.Store.SQL().Get(&last, `SELECT last_position FROM conversations`); err != nil {
		t.Fatal(err)
	}
	poll.For(t, fmt.Sprintf("every follower to receive %d messages", last), wait, func() bool { return received(last) })
	caughtUp := time.Since(up)
	for _, f := range followers {
		checkSequence(t, f.name, positions(f.events()), 1, last)
		if len(f.subs) < 2 {
			t.Errorf("%s: never subscribed again", f.name)
		}
		t.Logf("%s: %d messages over %d subscriptions", f.name, last, len(f.subs))
	}
	poll.For(t, "the listener to reconnect", wait, func() bool {
		return sample(scrape(t, r.URL), "parley_listener_reconnects_total") == 1
	})
	relistened := time.Since(up)

	// What the writers saw.
	attempts := w.snapshot()
	acked := map[int]bool{}
	var failures []time.Duration
	for _, a := range attempts {
		if a.ok() {
			if acked[a.position] {
				t.Errorf("position %d acknowledged twice", a.position)
			}
			acked[a.position] = true
			if a.position > last {
				t.Errorf("acknowledged position %d is not stored (last %d)", a.position, last)
			}
			continue
		}
		failures = append(failures, a.end.Sub(a.start))
		if a.code != "SERVICE_UNAVAILABLE" || !a.retryable || a.status >= 500 {
			t.Errorf("write at %s (Postgres down at %s, up at %s): got %s %q, retryable %v, status %d; want SERVICE_UNAVAILABLE, retryable",
				a.start.Sub(stopping).Round(time.Millisecond), down.Sub(stopping).Round(time.Millisecond),
				up.Sub(stopping).Round(time.Millisecond), a.code, a.message, a.retryable, a.status)
		}
		if d := a.end.Sub(a.start); d > failFast {
			t.Errorf("a write failed after %s, want under %s", d, failFast)
		}
		if a.start.After(up.Add(toReady)) {
			t.Errorf("a write failed %s after /readyz said 200 again: %s %q", a.start.Sub(up), a.code, a.message)
		}
	}
	sort.Slice(failures, func(i, j int) bool { return failures[i] < failures[j] })
	if len(failures) == 0 {
		t.Fatal("no write failed while Postgres was down")
	}
	t.Logf("%d writes, %d acknowledged, %d stored, %d failed: time to fail median %s, max %s",
		len(attempts), len(acked), last, len(failures), failures[len(failures)/2].Round(time.Microsecond),
		failures[len(failures)-1].Round(time.Microsecond))
	t.Logf("/readyz 503 %s after the stop; after the restart /readyz 200 in %s, first write in %s, every subscriber caught up in %s, listening again in %s",
		toNotReady.Round(time.Millisecond), toReady.Round(time.Millisecond), toWrite.Round(time.Millisecond),
		caughtUp.Round(time.Millisecond), relistened.Round(time.Millisecond))

	// A crash while nothing is going on (immediate shutdown, then crash recovery): the
	// pool's connections are all dead, yet the first request afterwards succeeds, and
	// the subscribers get its message.
	if err := cluster.Kill(); err != nil {
		t.Fatal(err)
	}
	if err := cluster.Restart(ctx); err != nil {
		t.Fatalf("start Postgres after the crash: %v", err)
	}
	if a := addMessageAttempt(r.URL, conv, "after the crash"); !a.ok() || a.position != last+1 {
		t.Fatalf("first write after the crash: got %s %q at position %d, want success at %d", a.code, a.message, a.position, last+1)
	}
	poll.For(t, "every follower to receive the message written after the crash", wait, func() bool { return received(last + 1) })
	for _, f := range followers {
		checkSequence(t, f.name+" after the crash", positions(f.events()), 1, last+1)
	}
}
