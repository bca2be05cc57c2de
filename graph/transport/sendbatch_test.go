package transport

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"github.com/99designs/gqlgen/graphql"
	"github.com/coder/websocket"

	"github.com/parley-dev/parley"
)

// queuedSource is a PushSource of the results queued for it: each Poll takes the next
// one, which the operation's execution then returns as its data.
type queuedSource struct {
	mu     sync.Mutex
	queue  [][]byte
	polled []byte
	pushed []byte
}

func (s *queuedSource) add(data []byte) {
	s.mu.Lock()
	s.queue = append(s.queue, data)
	s.mu.Unlock()
}

func (s *queuedSource) Poll(context.Context) (any, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.queue) == 0 {
		return nil, false, nil
	}
	s.polled, s.queue = s.queue[0], s.queue[1:]
	return nil, true, nil // no identity: each operation executes its own
}

func (s *queuedSource) Push() {
	s.mu.Lock()
	s.pushed = s.polled
	s.mu.Unlock()
}

func (s *queuedSource) result(context.Context) *graphql.Response {
	s.mu.Lock()
	defer s.mu.Unlock()
	return &graphql.Response{Data: s.pushed}
}

// pushedOp returns a started subscription of c with the given id, driven by src, as
// a resolver's Attach leaves one.
func pushedOp(c *wsConn, id string, src *queuedSource) *wsOp {
	ctx, cancel := context.WithCancel(context.Background())
	idJSON, _ := json.Marshal(id)
	return &wsOp{
		c: c, id: id, idJSON: idJSON, src: src, responses: src.result,
		ctx: ctx, cancel: cancel, rctx: ctx, wait: parley.Waiting(ctx), noWait: parley.NoWaiting(ctx),
	}
}

// unsharedMessage is the message carrying data as the transport encodes a response
// that it does not frame by hand (json.Marshal of the message and of the response).
func unsharedMessage(t *testing.T, id string, data []byte) []byte {
	t.Helper()
	payload, err := json.Marshal(&graphql.Response{Data: data})
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(wsMessage{ID: id, Type: "next", Payload: payload})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// Deliveries woken within batches (parley.ReadyBatch), whose frames go out together
// through io_uring, reach every client whole and in order, each message's bytes those
// of the transport's unshared encoding, whatever the batch meets: more connections
// than one submission holds, several subscriptions of one connection side by side and
// apart, frames of every length encoding and larger than a batch holds, several events
// ready at once, sockets whose small buffers take part of a send (the rest written
// by a goroutine while later deliveries queue behind it), and a client gone mid-way.
func TestBatchedDeliveriesReachEveryClientInOrder(t *testing.T) {
	t.Parallel()
	rings := &sendRings{limit: 2}
	if sb := rings.get(); sb == nil {
		t.Skip("no io_uring on this system: deliveries are not batched")
	} else {
		rings.put(sb)
	}
	deliverInBatches(t, rings)
	rings.mu.Lock()
	made := rings.made
	rings.mu.Unlock()
	if made == 0 {
		t.Fatal("no batch was sent through io_uring")
	}
}

// deliverInBatches runs TestBatchedDeliveriesReachEveryClientInOrder's deliveries, on
// connections whose transport batches through sends (nil: none), and checks that
// every client got every message once, in order.
func deliverInBatches(t *testing.T, sends *sendRings) {
	t.Helper()
	const plain, pairs, smallBuffers, rounds = 100, 4, 4, 16
	type client struct {
		c      *wsConn
		client *websocket.Conn
		mu     sync.Mutex
		got    [][]byte
		closed bool
	}
	var clients []*client
	for range plain + pairs + 1 + smallBuffers + 1 {
		c, ws := serveTCP(t, time.Minute)
		c.t.sends = sends
		clients = append(clients, &client{c: c, client: ws})
	}
	for _, cl := range clients[plain+pairs+1 : plain+pairs+1+smallBuffers] {
		if err := syscall.SetsockoptInt(cl.c.frames.fd, syscall.SOL_SOCKET, syscall.SO_SNDBUF, 4096); err != nil {
			t.Fatal(err)
		}
	}
	gone := clients[len(clients)-1] // its client closes mid-way
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, cl := range clients {
		go func() {
			for {
				_, b, err := cl.client.Read(ctx)
				if err != nil {
					return
				}
				cl.mu.Lock()
				cl.got = append(cl.got, b)
				cl.mu.Unlock()
			}
		}()
	}
	// The order of the wake-ups in each batch: one subscription per connection, then
	// pairs side by side, then one connection's two apart, with another between.
	type sub struct {
		cl  *client
		op  *wsOp
		src *queuedSource
	}
	var subs []*sub
	add := func(cl *client) {
		src := &queuedSource{}
		subs = append(subs, &sub{cl, pushedOp(cl.c, fmt.Sprint(len(subs)), src), src})
	}
	for _, cl := range clients[:plain] {
		add(cl)
	}
	for _, cl := range clients[plain : plain+pairs] {
		add(cl)
		add(cl)
	}
	apart := clients[plain+pairs]
	add(apart)
	add(clients[0])
	add(apart)
	for _, cl := range clients[plain+pairs+1:] {
		add(cl)
	}
	// Every length encoding and every size of send, large ones for some connections only
	// (the race detector reads slowly).
	small, large := []int{1, 123, 124, 2000}, []int{1, 123, 124, 2000, 30_000, 0xffff, 70_000, sendBatchBytes + 1}
	want := map[*client][][]byte{}
	for r := range rounds {
		if r == rounds/3 {
			gone.client.CloseNow()
		}
		for i, s := range subs {
			for e := range 1 + r%2 { // odd rounds: two events ready at once
				sizes := small
				if i >= plain || i%10 == 0 {
					sizes = large
				}
				pad := strings.Repeat("x", sizes[(r+i+e)%len(sizes)])
				data := fmt.Appendf(nil, `{"messageAdded":{"round":%d,"event":%d,"sub":%d,"text":"%s"}}`, r, e, i, pad)
				s.src.add(data)
				if s.cl != gone || r < rounds/3 {
					want[s.cl] = append(want[s.cl], unsharedMessage(t, s.op.id, data))
				}
			}
		}
		var b parley.ReadyBatch
		for _, s := range subs {
			s.op.ReadyIn(&b)
		}
		b.End()
	}
	for i, cl := range clients {
		if cl == gone {
			continue
		}
		deadline := time.Now().Add(30 * time.Second)
		for {
			cl.mu.Lock()
			n := len(cl.got)
			cl.mu.Unlock()
			if n >= len(want[cl]) || time.Now().After(deadline) {
				break
			}
			time.Sleep(time.Millisecond)
		}
		cl.mu.Lock()
		got := cl.got
		cl.mu.Unlock()
		if len(got) != len(want[cl]) {
			t.Fatalf("connection %d: got %d messages, want %d", i, len(got), len(want[cl]))
		}
		for j := range got {
			if !bytes.Equal(got[j], want[cl][j]) {
				t.Fatalf("connection %d, message %d: got %.80q, want %.80q", i, j, got[j], want[cl][j])
			}
		}
	}
	// The connection whose client left is closed by the failed send, not written to.
	deadline := time.Now().Add(30 * time.Second)
	for gone.c.ctx.Err() == nil {
		if time.Now().After(deadline) {
			t.Fatal("the connection whose client left is still open")
		}
		time.Sleep(time.Millisecond)
	}
}

// partialRing is a send ring double whose every failEvery-th submission the kernel
// takes only half of before it fails with err (as io_uring_enter does when it runs out
// of requests part-way: EAGAIN, ENOMEM). The sends it takes it makes as the kernel
// does, each one non-blocking send, at once; their completions are ready only once
// waited for, as a kernel completing them later would have them. It records a Close
// while sends taken are not reaped: the kernel would still be reading the arena.
type partialRing struct {
	failEvery int
	err       error

	mu              sync.Mutex
	prepared        []preparedSend
	inFlight, ready []completion
	submits         int
	failures        int
	afterFailure    int // submissions after the first failure
	closed          bool
	closedInFlight  bool
	usedClosed      bool
}

type preparedSend struct {
	fd       int
	b        []byte
	flags    uint32
	userData uint64
}

type completion struct {
	userData uint64
	res      int32
}

func (r *partialRing) Send(fd int, b []byte, flags uint32, userData uint64) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.usedClosed = r.usedClosed || r.closed
	if len(r.prepared) == sendBatchEntries {
		return false
	}
	r.prepared = append(r.prepared, preparedSend{fd, b, flags, userData})
	return true
}

func (r *partialRing) Submit() (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.usedClosed = r.usedClosed || r.closed
	r.submits++
	if r.failures > 0 {
		r.afterFailure++
	}
	take, err := len(r.prepared), error(nil)
	if r.submits%r.failEvery == 0 && take > 1 {
		take, err = take/2, r.err
		r.failures++
	}
	for _, p := range r.prepared[:take] {
		m, _, e := syscall.RawSyscall6(syscall.SYS_SENDTO, uintptr(p.fd), uintptr(unsafe.Pointer(&p.b[0])), uintptr(len(p.b)),
			uintptr(p.flags), 0, 0)
		res := int32(m)
		if e != 0 {
			res = -int32(e)
		}
		r.inFlight = append(r.inFlight, completion{p.userData, res})
	}
	clear(r.prepared)
	r.prepared = r.prepared[:0]
	return take, err
}

func (r *partialRing) Wait(n int) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.inFlight)+len(r.ready) < n {
		return fmt.Errorf("waiting for %d completions of %d sends", n, len(r.inFlight)+len(r.ready))
	}
	r.ready, r.inFlight = append(r.ready, r.inFlight...), r.inFlight[:0]
	return nil
}

func (r *partialRing) Reap(f func(userData uint64, res int32)) int {
	r.mu.Lock()
	ready := r.ready
	r.ready = nil
	r.mu.Unlock()
	for _, c := range ready {
		f(c.userData, c.res)
	}
	return len(ready)
}

func (r *partialRing) Close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.closedInFlight = r.closedInFlight || len(r.inFlight)+len(r.ready) > 0
	r.closed = true
	return nil
}

// A submission the kernel takes part of before it fails loses no frame and sends none
// twice: the sends it took are waited for and completed with their own results, only
// the others are sent directly, and the ring is closed only with nothing under way.
// A ring short of resources for the moment (EAGAIN) is kept for the next batches; one
// that fails otherwise is closed, and no other is made.
func TestBatchedDeliveriesAfterAPartialSubmission(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name     string
		err      error
		wantKept bool
	}{
		{"out of requests for the moment", syscall.EAGAIN, true},
		{"a ring that failed", syscall.EINVAL, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ring := &partialRing{failEvery: 3, err: tt.err}
			var made int
			rings := &sendRings{limit: 2, newRing: func(int) (sendRing, error) {
				made++ // under rings.mu
				if made > 1 {
					return nil, errors.New("one ring only")
				}
				return ring, nil
			}}
			deliverInBatches(t, rings)
			ring.mu.Lock()
			defer ring.mu.Unlock()
			t.Logf("%d submissions, %d failed part-way, %d after the first failure", ring.submits, ring.failures, ring.afterFailure)
			if ring.failures == 0 {
				t.Fatal("no submission failed part-way")
			}
			if ring.closedInFlight {
				t.Error("the ring was closed with sends it took not yet reaped")
			}
			if ring.usedClosed {
				t.Error("the ring was used after it was closed")
			}
			if ring.closed == tt.wantKept {
				t.Errorf("got the ring closed %v, want %v", ring.closed, !tt.wantKept)
			}
			if tt.wantKept && ring.afterFailure == 0 {
				t.Error("no submission after the failure: the ring was not kept")
			}
			rings.mu.Lock()
			defer rings.mu.Unlock()
			if rings.off == tt.wantKept {
				t.Errorf("got rings off %v, want %v", rings.off, !tt.wantKept)
			}
		})
	}
}

// With Config.DisableIOUring the websocket transport makes no ring, and every client
// still gets every message once, in order; without it, the same deliveries make one.
func TestDisableIOUringMakesNoRing(t *testing.T) {
	t.Parallel()
	for _, disable := range []bool{true, false} {
		t.Run(fmt.Sprintf("DisableIOUring=%v", disable), func(t *testing.T) {
			t.Parallel()
			var made int
			rings := &sendRings{limit: 2, newRing: func(int) (sendRing, error) {
				made++ // under rings.mu
				return &partialRing{failEvery: 1 << 30}, nil
			}}
			deliverInBatches(t, newWSTransport(Config{DisableIOUring: disable}, rings).sends)
			rings.mu.Lock()
			defer rings.mu.Unlock()
			if disable && made != 0 {
				t.Errorf("got %d rings made, want none", made)
			}
			if !disable && made == 0 {
				t.Error("got no ring made, want one")
			}
		})
	}
}
