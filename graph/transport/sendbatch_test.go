package transport

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

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
		c.t.sends = rings
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
	rings.mu.Lock()
	made := rings.made
	rings.mu.Unlock()
	if made == 0 {
		t.Fatal("no batch was sent through io_uring")
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
