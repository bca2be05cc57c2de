package realtime_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/parley-dev/parley"
	"github.com/parley-dev/parley/db"
	"github.com/parley-dev/parley/internal/testserver"
	"github.com/parley-dev/parley/realtime"
)

// measuringStore records the text each read of the database hands a Hub.
type measuringStore struct {
	*db.DB
	mu    sync.Mutex
	reads []int // bytes of text (messages and appends) of each read
}

func (s *measuringStore) record(msgs []parley.Message, batches []parley.DeltaBatch) {
	n := 0
	for _, m := range msgs {
		if t, ok := m.(*parley.TextMessage); ok {
			n += len(t.Text())
		}
	}
	for _, b := range batches {
		for _, d := range b.Deltas {
			n += len(d.Text)
		}
	}
	s.mu.Lock()
	s.reads = append(s.reads, n)
	s.mu.Unlock()
}

func (s *measuringStore) MessagesAfter(ctx context.Context, conv string, after, limit, maxBytes int) ([]parley.Message, bool, error) {
	msgs, more, err := s.DB.MessagesAfter(ctx, conv, after, limit, maxBytes)
	s.record(msgs, nil)
	return msgs, more, err
}

func (s *measuringStore) StreamAfter(ctx context.Context, conv string, c parley.StreamCursor, limit, maxBytes int) (parley.StreamRead, bool, error) {
	r, more, err := s.DB.StreamAfter(ctx, conv, c, limit, maxBytes)
	s.record(append(r.Open, r.New...), r.Batches)
	return r, more, err
}

func (s *measuringStore) largest() (largest, reads int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, n := range s.reads {
		largest = max(largest, n)
	}
	return largest, len(s.reads)
}

// TestReplayBoundedByBytes: a subscriber resuming over many large messages, or over
// many large appends of a streaming message, catches up a byte budget at a time (each
// read of the database holds at most the budget, never a page of 100 messages), and
// still gets every message and append exactly once, in order. Through GraphQL, a
// replica with the same budget replays the same history whole.
func TestReplayBoundedByBytes(t *testing.T) {
	t.Parallel()
	const (
		budget = 1 << 20
		big    = 300 << 10 // each message's text, and each append's
		count  = 20
	)
	srv := testserver.NewWith(t, testserver.Options{Realtime: realtime.Config{PageBytes: budget}})
	conv := srv.CreateConversation(t, "large")
	want := make([]string, count)
	for i := range want {
		want[i] = fmt.Sprintf("%02d", i) + strings.Repeat("x", big)
		srv.AddMessage(t, conv, testserver.Text("USER", want[i]))
	}
	ctx := parley.WithOwner(context.Background(), parley.LocalOwner)

	t.Run("messageAdded", func(t *testing.T) {
		t.Parallel()
		store := &measuringStore{DB: srv.Store}
		hub := realtime.NewHub(store, realtime.Config{PageBytes: budget})
		s, err := hub.SubscribeMessagesAdded(ctx, conv, 0)
		if err != nil {
			t.Fatal(err)
		}
		for i := range count {
			m, err := s.Next(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if got := m.Meta().Seq; got != i+1 {
				t.Fatalf("message %d: got position %d, want %d", i, got, i+1)
			}
			if got := m.(*parley.TextMessage).Text(); got != want[i] {
				t.Fatalf("message %d: got %.10q..., want %.10q...", i, got, want[i])
			}
		}
		if m, err := s.Poll(ctx); m != nil || err != nil {
			t.Fatalf("after the last message: got %v, %v; want nothing more", m, err)
		}
		largest, reads := store.largest()
		if largest > budget {
			t.Errorf("a read held %d bytes of text; want at most the budget, %d", largest, budget)
		}
		if reads < count*big/budget {
			t.Errorf("%d reads for %d bytes; want the replay in reads of at most %d", reads, count*big, budget)
		}
		t.Logf("%d messages of %d KiB replayed in %d reads of at most %d KiB", count, big>>10, reads, largest>>10)
	})

	t.Run("messageStream", func(t *testing.T) {
		t.Parallel()
		conv := srv.CreateConversation(t, "large appends")
		var started struct {
			StartMessage struct{ Node struct{ ID string } }
		}
		srv.MustDo(t, `mutation($c: ID!) { startMessage(conversationId: $c) { node { ... on MessageBase { id } } } }`,
			map[string]any{"c": conv}, &started)
		id := started.StartMessage.Node.ID
		const appends = 12 // 900 KiB of text in all: under a message's 1 MiB limit, past a quarter of the budget
		for i := 1; i <= appends; i++ {
			piece := strings.Repeat("y", big/4)
			srv.MustDo(t, `mutation($m: ID!, $s: Int!, $d: [MessageDeltaInput!]!) { appendMessageDeltas(messageId: $m, seq: $s, deltas: $d) { seq } }`,
				map[string]any{"m": id, "s": i, "d": []map[string]any{{"kind": "TEXT", "index": 0, "text": piece}}}, nil)
		}
		store := &measuringStore{DB: srv.Store}
		hub := realtime.NewHub(store, realtime.Config{PageBytes: budget / 4})
		// Resume as a subscriber that had the message open before its first append.
		pos := 1
		s, err := hub.SubscribeStream(ctx, conv, &parley.StreamCursor{Position: pos, Open: []parley.OpenMessage{{Position: pos, Seq: 0}}})
		if err != nil {
			t.Fatal(err)
		}
		for i := 1; i <= appends; i++ {
			ev, err := s.Next(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if ev.Delta == nil || ev.Delta.Seq != i {
				t.Fatalf("event %d: got %+v, want append %d", i, ev, i)
			}
		}
		largest, reads := store.largest()
		if largest > budget/4 {
			t.Errorf("a read held %d bytes of appends; want at most the budget, %d", largest, budget/4)
		}
		if reads < appends*(big/4)/(budget/4) {
			t.Errorf("%d reads for %d bytes of appends; want reads of at most %d", reads, appends*big/4, budget/4)
		}
		t.Logf("%d appends of %d KiB replayed in %d reads of at most %d KiB", appends, big>>12, reads, largest>>10)
	})

	t.Run("graphql", func(t *testing.T) {
		t.Parallel()
		c := dial(t, srv.URL, transportWS)
		s := c.subscribe(t, addedQuery(true), map[string]any{"c": conv, "a": parley.MessageCursor(0)})
		s.waitCount(t, count)
		checkSequence(t, "replayed", s.positions(), 1, count)
	})
}
