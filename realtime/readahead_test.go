package realtime_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/parley-dev/parley"
	"github.com/parley-dev/parley/db"
	"github.com/parley-dev/parley/internal/testserver"
	"github.com/parley-dev/parley/realtime"
)

// gatedStore counts the reads of added messages and, while closed, holds them until
// opened.
type gatedStore struct {
	*db.DB
	reads atomic.Int64
	mu    sync.Mutex
	gate  chan struct{} // nil: open
}

func (s *gatedStore) MessagesAfter(ctx context.Context, conv string, after, limit, maxBytes int) ([]parley.Message, bool, error) {
	s.reads.Add(1)
	s.mu.Lock()
	gate := s.gate
	s.mu.Unlock()
	if gate != nil {
		<-gate
	}
	return s.DB.MessagesAfter(ctx, conv, after, limit, maxBytes)
}

func (s *gatedStore) close() {
	s.mu.Lock()
	s.gate = make(chan struct{})
	s.mu.Unlock()
}

func (s *gatedStore) open() {
	s.mu.Lock()
	close(s.gate)
	s.gate = nil
	s.mu.Unlock()
}

// Subscribers caught up at a conversation's tail are woken for a new message only once
// the one read they will all make is done: the Hub makes it when the message is
// published, and each subscriber's wake-up finds its answer, with no read of its own and
// nothing to wait for. A subscriber behind the tail is woken at once.
func TestWakeAfterSharedRead(t *testing.T) {
	t.Parallel()
	srv := testserver.New(t)
	conv := srv.CreateConversation(t, "read ahead")
	srv.AddMessage(t, conv, testserver.Text("USER", "first"))
	store := &gatedStore{DB: srv.Store}
	hub := realtime.NewHub(store, realtime.Config{})
	ctx := parley.WithOwner(context.Background(), parley.LocalOwner)

	const n = 20
	streams := make([]parley.MessageStream, n)
	wakes := make([]atomic.Int64, n)
	for i := range streams {
		s, err := hub.SubscribeMessagesAdded(ctx, conv, 0)
		if err != nil {
			t.Fatal(err)
		}
		streams[i] = s
		s.OnWake(func() { wakes[i].Add(1) })
		if m, err := s.Poll(ctx); err != nil || m == nil || m.Meta().Seq != 1 {
			t.Fatalf("subscriber %d: got %v, %v; want message 1", i, m, err)
		}
		if m, err := s.Poll(ctx); m != nil || err != nil {
			t.Fatalf("subscriber %d after message 1: got %v, %v; want nothing", i, m, err)
		}
	}
	// One more, behind the tail: it has not polled since it started.
	behind, err := hub.SubscribeMessagesAdded(ctx, conv, 0)
	if err != nil {
		t.Fatal(err)
	}
	var behindWoken atomic.Bool
	behind.OnWake(func() { behindWoken.Store(true) })

	before := store.reads.Load()
	store.close()
	srv.AddMessage(t, conv, testserver.Text("USER", "second"))
	hub.Publish(parley.MessageEvent{Kind: parley.MessageAdded, ConversationID: conv, Owner: parley.LocalOwner})
	pollUntil(t, "the read ahead to start", func() bool { return store.reads.Load() > before })
	if !behindWoken.Load() {
		t.Error("the subscriber behind the tail was not woken at once")
	}
	for i := range wakes {
		if got := wakes[i].Load(); got != 0 {
			t.Fatalf("subscriber %d woken %d times while its read was under way; want 0", i, got)
		}
	}
	store.open()
	for i, s := range streams {
		pollUntil(t, "the wake-up", func() bool { return wakes[i].Load() == 1 })
		if m, err := s.Poll(ctx); err != nil || m == nil || m.Meta().Seq != 2 {
			t.Fatalf("subscriber %d: got %v, %v; want message 2", i, m, err)
		}
		if m, err := s.Poll(ctx); m != nil || err != nil {
			t.Fatalf("subscriber %d after message 2: got %v, %v; want nothing", i, m, err)
		}
	}
	if got := store.reads.Load() - before; got != 1 {
		t.Errorf("got %d reads of the database for %d subscribers of one message, want 1", got, n)
	}
}
