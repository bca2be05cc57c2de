package realtime_test

import (
	"context"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/parley-dev/parley"
	"github.com/parley-dev/parley/db"
)

// dialGate is a listener's Dial that can be held shut, so a test decides when the
// listener gets its connection back, and that can freeze its connections: a frozen
// connection swallows what is written and delivers nothing read, as a half-open TCP
// connection does.
type dialGate struct {
	mu     sync.Mutex
	open   chan struct{} // closed while dials may proceed
	conns  []*freezableConn
	dials  atomic.Int32
	frozen atomic.Bool
}

func newDialGate(t *testing.T) *dialGate {
	g := &dialGate{open: make(chan struct{})}
	close(g.open)
	// A listener closing while the gate is shut would wait for its dial.
	t.Cleanup(g.let)
	return g
}

func (g *dialGate) dial(ctx context.Context, network, address string) (net.Conn, error) {
	g.mu.Lock()
	open := g.open
	g.mu.Unlock()
	select {
	case <-open:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	var d net.Dialer
	c, err := d.DialContext(ctx, network, address)
	if err != nil {
		return nil, err
	}
	g.dials.Add(1)
	fc := &freezableConn{Conn: c, frozen: &g.frozen}
	g.mu.Lock()
	g.conns = append(g.conns, fc)
	g.mu.Unlock()
	return fc, nil
}

// hold makes dials wait until let.
func (g *dialGate) hold() {
	g.mu.Lock()
	defer g.mu.Unlock()
	select {
	case <-g.open:
		g.open = make(chan struct{})
	default:
	}
}

func (g *dialGate) let() {
	g.mu.Lock()
	defer g.mu.Unlock()
	select {
	case <-g.open:
	default:
		close(g.open)
	}
}

// freezableConn is a connection that, once its gate freezes, drops what is written and
// what is read, without an error: the listener can only find out by a ping that goes
// unanswered.
type freezableConn struct {
	net.Conn
	frozen *atomic.Bool
	// dead is set for a connection that was frozen: it stays frozen for good, like a
	// connection whose peer is gone, even after the gate thaws for new ones.
	dead atomic.Bool
}

func (c *freezableConn) isFrozen() bool {
	if c.frozen.Load() {
		c.dead.Store(true)
	}
	return c.dead.Load()
}

func (c *freezableConn) Read(p []byte) (int, error) {
	for {
		n, err := c.Conn.Read(p)
		if !c.isFrozen() || err != nil {
			return n, err
		}
	}
}

func (c *freezableConn) Write(p []byte) (int, error) {
	if c.isFrozen() {
		return len(p), nil
	}
	return c.Conn.Write(p)
}

// listenerPID returns the backend pid of the listening connection named app, or 0.
func listenerPID(t *testing.T, r *replica, app string) int {
	t.Helper()
	var pids []int
	err := r.Store.SQL().SelectContext(context.Background(), &pids, `SELECT pid FROM pg_stat_activity
		WHERE datname = current_database() AND application_name = $1`, app)
	if err != nil {
		t.Fatalf("find listener: %v", err)
	}
	if len(pids) > 1 {
		t.Fatalf("%d listening connections named %s, want at most 1", len(pids), app)
	}
	if len(pids) == 0 {
		return 0
	}
	return pids[0]
}

// writer keeps adding messages through a replica until stopped, from several goroutines.
type writer struct {
	written atomic.Int64
	stop    chan struct{}
	wg      sync.WaitGroup
	errs    chan error
}

func startWriters(baseURL, conv string, n int) *writer {
	w := &writer{stop: make(chan struct{}), errs: make(chan error, n)}
	for i := range n {
		w.wg.Go(func() {
			for j := 0; ; j++ {
				select {
				case <-w.stop:
					return
				default:
				}
				if _, err := addText(baseURL, conv, fmt.Sprintf("writer %d message %d", i, j)); err != nil {
					w.errs <- err
					return
				}
				w.written.Add(1)
			}
		})
	}
	return w
}

// halt stops the writers and returns how many messages they wrote.
func (w *writer) halt(t *testing.T) int {
	t.Helper()
	close(w.stop)
	w.wg.Wait()
	close(w.errs)
	for err := range w.errs {
		t.Fatalf("writer: %v", err)
	}
	return int(w.written.Load())
}

// waitWritten waits until the writers have written at least n messages in all.
func (w *writer) waitWritten(t *testing.T, n int64) {
	t.Helper()
	pollUntil(t, fmt.Sprintf("%d messages written", n), func() bool { return w.written.Load() >= n || len(w.errs) > 0 })
	select {
	case err := <-w.errs:
		t.Fatalf("writer: %v", err)
	default:
	}
}

// The listener's backend is killed (pg_terminate_backend) while 20 writers go on, and
// its reconnection is held back while they write more; the writers then stop, so only
// the resync after reconnecting can deliver what was written during the outage. Twice.
// The subscriber, on the killed listener's replica, gets every position exactly once
// and in order; so does an SSE subscriber, and updates decided during the outage
// arrive too.
func TestListenerKilledLosesNothing(t *testing.T) {
	t.Parallel()
	gate := newDialGate(t)
	app := fmt.Sprintf("parley-listener-kill-%d", time.Now().UnixNano())
	a := newReplica(t, "", replicaOptions{listener: db.ListenerConfig{
		ApplicationName: app, Dial: gate.dial, MinReconnectInterval: 10 * time.Millisecond,
	}})
	b := newReplica(t, a.DSN, replicaOptions{})
	conv := b.CreateConversation(t, "kill")
	c := dial(t, a.URL, transportWS)
	s := c.subscribe(t, addedQuery(true), map[string]any{"c": conv, "a": parley.MessageCursor(0)})
	sse := subscribeSSE(t, a.URL, addedQuery(true), map[string]any{"c": conv, "a": parley.MessageCursor(0)})

	total := 0
	for round := 1; round <= 2; round++ {
		w := startWriters(b.URL, conv, 20)
		w.waitWritten(t, 30)
		pid := listenerPID(t, a, app)
		if pid == 0 {
			t.Fatalf("round %d: no listening connection named %s", round, app)
		}
		gate.hold()
		var killed bool
		if err := a.Store.SQL().Get(&killed, `SELECT pg_terminate_backend($1)`, pid); err != nil || !killed {
			t.Fatalf("round %d: pg_terminate_backend(%d): %v, %v", round, pid, killed, err)
		}
		// Once the backend is gone, nothing written reaches this replica by notification.
		pollUntil(t, "the listener's backend to exit", func() bool { return listenerPID(t, a, app) == 0 })
		before := w.written.Load()
		w.waitWritten(t, before+50)
		total = w.halt(t) + total
		dials := gate.dials.Load()
		gate.let()
		pollUntil(t, "the listener to reconnect", func() bool { return gate.dials.Load() > dials && listenerPID(t, a, app) != 0 })
		checkSequence(t, fmt.Sprintf("round %d", round), positions(s.waitCount(t, total)), 1, total)
		checkSequence(t, fmt.Sprintf("round %d (SSE)", round), positions(sse.waitCount(t, total)), 1, total)
	}
	// Live delivery works after the reconnections.
	writeConcurrently(t, b.URL, conv, 5, 20)
	checkSequence(t, "after the reconnections", positions(s.waitCount(t, total+20)), 1, total+20)
}

// A half-open listening connection (writes vanish, nothing comes back, no error) is
// found by a ping that goes unanswered and replaced; messages and updates committed
// while it was dead arrive through the resync.
func TestHalfOpenListenerReplaced(t *testing.T) {
	t.Parallel()
	gate := newDialGate(t)
	a := newReplica(t, "", replicaOptions{listener: db.ListenerConfig{
		Dial: gate.dial, PingInterval: 50 * time.Millisecond, PingTimeout: 300 * time.Millisecond,
		MinReconnectInterval: 10 * time.Millisecond,
	}})
	b := newReplica(t, a.DSN, replicaOptions{})
	conv := b.CreateConversation(t, "half-open")
	req := addToolRequest(t, b, conv, "call_a")
	c := dial(t, a.URL, transportWS)
	added := c.subscribe(t, addedQuery(true), map[string]any{"c": conv, "a": parley.MessageCursor(1)})
	updated := c.subscribe(t, updatedQuery, map[string]any{"c": conv})
	pollUntil(t, "the subscriptions to register", func() bool { return a.Hub.Stats().Subscribers == 2 })

	dials := gate.dials.Load()
	gate.frozen.Store(true)
	gate.hold() // keep the replacement back until the writes are done
	writeConcurrently(t, b.URL, conv, 4, 20)
	decide(t, b, req, "call_a", "APPROVED")
	gate.frozen.Store(false)
	gate.let()
	pollUntil(t, "a new listening connection", func() bool { return gate.dials.Load() > dials })
	checkSequence(t, "added", positions(added.waitCount(t, 20)), 2, 21)
	ev := updated.waitCount(t, 1)
	if ev[0].Node.ID != req || ev[0].Node.ToolCalls[0].ApprovalStatus != "APPROVED" {
		t.Errorf("update: got %+v, want %s with call_a APPROVED", ev[0].Node, req)
	}
}
