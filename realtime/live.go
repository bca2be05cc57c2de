package realtime

import (
	"context"
	"strconv"
	"strings"

	"github.com/parley-dev/parley"
)

// LiveStore is what a Hub reads for live subscribers (SubscribeStream). db.DB
// implements it.
type LiveStore interface {
	// StreamStart returns where a subscriber without a cursor starts. Returns ENOTFOUND.
	StreamStart(ctx context.Context, conversationID string) (int, error)
	// StreamAfter reads what a subscriber at c has not had (parley.StreamRead); more
	// says another read may find more. Returns ENOTFOUND when the conversation is gone.
	StreamAfter(ctx context.Context, conversationID string, c parley.StreamCursor, limit, maxBytes int) (parley.StreamRead, bool, error)
}

var (
	_ parley.LiveEventService = (*Hub)(nil)
	_ parley.ReadyWaker       = (*liveStream)(nil)
)

// errNoLiveStore is what SubscribeStream answers when the Hub's store cannot serve it.
var errNoLiveStore = &parley.Error{Code: parley.EUNAVAILABLE, Message: "Live message streams are not available on this server."}

// SubscribeStream implements parley.LiveEventService. Like the other streams it
// registers before it reads, re-reads after every wake-up (deltas wake it too), and
// shares each read with the conversation's subscribers at the same cursor: a stream
// watched by many costs one read per append, not one per subscriber.
func (f *Hub) SubscribeStream(ctx context.Context, conversationID string, after *parley.StreamCursor) (parley.StreamSubscription, error) {
	store, ok := f.store.(LiveStore)
	if !ok {
		return nil, errNoLiveStore
	}
	id, err := canonical(conversationID)
	if err != nil {
		return nil, err
	}
	owner, ok := parley.OwnerFrom(ctx)
	if !ok {
		return nil, errNoOwner
	}
	w, cancel := f.watch(ctx, id, liveKind)
	var cur parley.StreamCursor
	if after != nil {
		cur = *after
	} else if cur.Position, err = store.StreamStart(ctx, id); err != nil {
		cancel()
		return nil, err
	}
	w.started.Store(true)
	return &liveStream{f: f, store: store, conv: id, owner: owner, w: w, cancel: cancel, cur: cur, stale: true, db: true}, nil
}

// liveStream delivers a conversation's messages and appends after cur.
type liveStream struct {
	f       *Hub
	store   LiveStore
	conv    string
	owner   string
	w       *watcher
	cancel  func()
	cur     parley.StreamCursor
	pending []parley.StreamEvent
	read    *liveRead // the read pending came from
	next    int       // the index in read's events of pending[0]
	stale   bool
	// db says the next read must be of the database: at the start, and after a read
	// that found there may be more. Otherwise a wake-up that did not mark the watcher
	// dirty (appends this process committed) is served from the topic's tail.
	db bool
}

// liveRead is one shared read: what it found and whether there may be more. It is
// shared by pointer: the identity of the events a subscriber takes from it.
type liveRead struct {
	r    parley.StreamRead
	more bool
}

// liveEventID is the identity of an event (parley.StreamSubscription.Poll): the i-th
// event that the read r gives. A read is shared only by subscribers at the same cursor
// (its key holds the whole cursor), and the events a cursor takes from a read are a
// function of the two, so subscribers given the same identity were given equal events.
type liveEventID struct {
	r *liveRead
	i int
}

// Next implements parley.StreamSubscription.
func (s *liveStream) Next(ctx context.Context) (parley.StreamEvent, error) {
	for {
		ev, _, ok, err := s.Poll(ctx)
		if ok || err != nil {
			return ev, err
		}
		select {
		case <-ctx.Done():
			s.cancel()
			return parley.StreamEvent{}, ctx.Err()
		case <-s.w.c:
			s.stale = true
		}
	}
}

// Poll implements parley.StreamSubscription.
func (s *liveStream) Poll(ctx context.Context) (parley.StreamEvent, any, bool, error) {
	if s.w.woken() {
		s.stale = true
	}
	for {
		if len(s.pending) > 0 {
			ev := s.pending[0]
			s.pending = s.pending[1:]
			s.cur = ev.Cursor
			id := liveEventID{s.read, s.next}
			s.next++
			return ev, id, true, nil
		}
		if !s.stale {
			return parley.StreamEvent{}, nil, false, nil
		}
		if s.w.dirty.Swap(false) {
			s.db = true
		}
		if !s.db && s.fromTail() {
			continue
		}
		if !parley.MayWait(ctx) {
			s.w.wake() // the read waits for a Poll that may wait
			return parley.StreamEvent{}, nil, false, nil
		}
		cur, conv, size, budget := s.cur, s.conv, s.f.cfg.PageSize, s.f.cfg.PageBytes
		res, err := s.f.read(ctx, s.w.t, "s"+openKey(cur), s.owner, conv, int64(cur.Position), func(ctx context.Context) (any, error) {
			s.f.storeReads.Add(1)
			r, more, err := s.store.StreamAfter(ctx, conv, cur, size, budget)
			return &liveRead{r, more}, err
		})
		if err != nil {
			s.cancel()
			return parley.StreamEvent{}, nil, false, err
		}
		lr := res.(*liveRead)
		s.pending, s.read, s.next = cur.Advance(lr.r), lr, 0
		s.stale, s.db = lr.more, lr.more
	}
}

// fromTail takes what the topic's tail holds for the stream (tail.read), and reports
// whether it could: if not, the database must be read.
func (s *liveStream) fromTail() bool {
	t := s.w.t
	key := strconv.Itoa(s.cur.Position) + "|" + openKey(s.cur)
	t.mu.Lock()
	lr, fresh, ok := t.tail.read(key, s.cur)
	t.mu.Unlock()
	if fresh {
		s.f.tailReads.Add(1)
	}
	if !ok {
		return false
	}
	s.pending, s.read, s.next = s.cur.AdvanceAppends(lr.r.Batches), lr, 0
	s.stale = false
	return true
}

// OnWake implements parley.StreamSubscription.
func (s *liveStream) OnWake(f func()) { s.w.setOnWake(f) }

// OnReady implements parley.ReadyWaker: the appends this process commits wake the
// stream's subscribers with what they read at hand, in the topic's tail (PublishAppend).
func (s *liveStream) OnReady(r parley.Readier) bool {
	s.w.setOnReady(r)
	return true
}

// openKey tells shared reads apart by the open messages of their cursor.
func openKey(c parley.StreamCursor) string {
	var sb strings.Builder
	for _, o := range c.Open {
		sb.WriteString(strconv.Itoa(o.Position) + "." + strconv.Itoa(o.Seq) + ";")
	}
	return sb.String()
}
