// Package realtime delivers a conversation's messages to subscribers as they are added
// or changed. Its Feed implements parley.EventService: it fans the database's wake-ups
// (Publish, Resync) out to the subscribers of each conversation in this process, and
// turns them into streams read from the database by position, so that a subscriber sees
// every message exactly once and in order, whatever notifications were lost and however
// slowly it reads.
package realtime

import (
	"context"
	"errors"
	"log/slog"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sync/singleflight"

	"github.com/parley-dev/parley"
)

// Store is what a Feed reads. db.DB implements it.
type Store interface {
	// ConversationHead returns the position of a conversation's newest message and the
	// number of its latest message change. Returns ENOTFOUND.
	ConversationHead(ctx context.Context, conversationID string) (lastPosition int, changeSeq int64, err error)
	// MessagesAfter returns up to limit messages with a position above after, in
	// ascending position. Returns ENOTFOUND when the conversation is gone.
	MessagesAfter(ctx context.Context, conversationID string, after, limit int) ([]parley.Message, error)
	// MessagesChangedAfter returns up to limit messages whose latest change is numbered
	// above after, in ascending number, and the number of the last one. Returns
	// ENOTFOUND when the conversation is gone.
	MessagesChangedAfter(ctx context.Context, conversationID string, after int64, limit int) ([]parley.Message, int64, error)
}

// Config tunes a Feed.
type Config struct {
	// PageSize bounds one read (default 100). A subscriber that is far behind catches
	// up page by page at its own pace, holding one page at a time: the database is
	// its buffer.
	PageSize int
	// ReadTimeout bounds one read of the database (default 10s).
	ReadTimeout time.Duration
	// RetryFor is how long a stream keeps retrying reads that fail before it ends with
	// EUNAVAILABLE (default 5s): long enough to ride out a failover, short enough that
	// the client reconnects, perhaps to a healthier replica.
	RetryFor time.Duration
	Logger   *slog.Logger
}

// Feed implements parley.EventService for the subscribers of one process. Feed it the
// database's events with Publish and Resync (a db.Listener does).
type Feed struct {
	store Store
	cfg   Config
	log   *slog.Logger

	mu     sync.RWMutex
	topics map[string]*topic // by conversation id

	// reads collapses identical concurrent reads: the subscribers of a conversation
	// wake together and all ask for what follows the same position, so one query
	// serves them all, however many they are.
	reads singleflight.Group
}

var _ parley.EventService = (*Feed)(nil)

// topic is the subscribers of one conversation.
type topic struct {
	added, updated map[*watcher]struct{}
}

// watcher is one subscriber's wake-up signal. One slot is enough: a wake-up means
// "read again", so wake-ups that arrive while one is pending add nothing, and a
// subscriber's memory stays the same however many events it misses while busy.
type watcher struct {
	c chan struct{}
	// started is set once the subscription has read where it starts; Stats counts only
	// these, so that a test can tell when a subscription is live.
	started atomic.Bool
}

func (w *watcher) wake() {
	select {
	case w.c <- struct{}{}:
	default:
	}
}

// NewFeed returns a Feed reading from store.
func NewFeed(store Store, cfg Config) *Feed {
	if cfg.PageSize <= 0 {
		cfg.PageSize = 100
	}
	if cfg.ReadTimeout <= 0 {
		cfg.ReadTimeout = 10 * time.Second
	}
	if cfg.RetryFor <= 0 {
		cfg.RetryFor = 5 * time.Second
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	return &Feed{store: store, cfg: cfg, log: cfg.Logger, topics: map[string]*topic{}}
}

// Publish wakes the subscribers an event concerns. It never blocks.
func (f *Feed) Publish(ev parley.MessageEvent) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	t := f.topics[ev.ConversationID]
	if t == nil {
		return
	}
	if ev.Kind != parley.MessageUpdated {
		for w := range t.added {
			w.wake()
		}
	}
	if ev.Kind != parley.MessageAdded {
		for w := range t.updated {
			w.wake()
		}
	}
}

// Resync wakes every subscriber, to read whatever events were lost (the listening
// connection was down). It never blocks.
func (f *Feed) Resync() {
	f.mu.RLock()
	defer f.mu.RUnlock()
	for _, t := range f.topics {
		for w := range t.added {
			w.wake()
		}
		for w := range t.updated {
			w.wake()
		}
	}
}

// Stats counts what a Feed serves.
type Stats struct {
	Conversations int // with at least one subscriber
	// Subscribers counts the subscriptions started: registered, and their starting
	// point read, so that any message committed from now on reaches them.
	Subscribers int
}

// Stats returns how many subscribers there are now.
func (f *Feed) Stats() Stats {
	f.mu.RLock()
	defer f.mu.RUnlock()
	s := Stats{Conversations: len(f.topics)}
	for _, t := range f.topics {
		for w := range t.added {
			if w.started.Load() {
				s.Subscribers++
			}
		}
		for w := range t.updated {
			if w.started.Load() {
				s.Subscribers++
			}
		}
	}
	return s
}

// watch registers a watcher of a conversation's added or updated messages until ctx
// ends. Registering before reading the database is what makes streams gap-free: any
// commit the read misses wakes the watcher.
func (f *Feed) watch(ctx context.Context, conversationID string, kind parley.MessageEventKind) *watcher {
	w := &watcher{c: make(chan struct{}, 1)}
	f.mu.Lock()
	t := f.topics[conversationID]
	if t == nil {
		t = &topic{added: map[*watcher]struct{}{}, updated: map[*watcher]struct{}{}}
		f.topics[conversationID] = t
	}
	set := t.added
	if kind == parley.MessageUpdated {
		set = t.updated
	}
	set[w] = struct{}{}
	f.mu.Unlock()
	context.AfterFunc(ctx, func() {
		f.mu.Lock()
		defer f.mu.Unlock()
		delete(set, w)
		if len(t.added) == 0 && len(t.updated) == 0 {
			delete(f.topics, conversationID)
		}
	})
	return w
}

// errNoOwner is what a subscription without an owner in its context gets: a wiring
// mistake.
var errNoOwner = errors.New("realtime: the context carries no owner (parley.WithOwner)")

// canonical returns the canonical form of a public conversation id, so that every
// spelling of one id finds the same subscribers.
func canonical(conversationID string) (string, error) {
	key, ok := parley.ParseConversationID(conversationID)
	if !ok {
		return "", parley.Errorf(parley.ENOTFOUND, "conversation %q not found", conversationID)
	}
	return parley.ConversationID(key), nil
}

// SubscribeMessagesAdded implements parley.EventService.
func (f *Feed) SubscribeMessagesAdded(ctx context.Context, conversationID string, after int) (parley.MessageStream, error) {
	id, err := canonical(conversationID)
	if err != nil {
		return nil, err
	}
	owner, ok := parley.OwnerFrom(ctx)
	if !ok {
		return nil, errNoOwner
	}
	watchCtx, cancel := context.WithCancel(ctx)
	w := f.watch(watchCtx, id, parley.MessageAdded)
	last, _, err := f.store.ConversationHead(ctx, id)
	if err != nil {
		cancel()
		return nil, err
	}
	if after >= 0 {
		last = after
	}
	w.started.Store(true)
	return &addedStream{f: f, conv: id, owner: owner, w: w, cancel: cancel, last: last, stale: true}, nil
}

// SubscribeMessagesUpdated implements parley.EventService.
func (f *Feed) SubscribeMessagesUpdated(ctx context.Context, conversationID string) (parley.MessageStream, error) {
	id, err := canonical(conversationID)
	if err != nil {
		return nil, err
	}
	owner, ok := parley.OwnerFrom(ctx)
	if !ok {
		return nil, errNoOwner
	}
	watchCtx, cancel := context.WithCancel(ctx)
	w := f.watch(watchCtx, id, parley.MessageUpdated)
	_, seq, err := f.store.ConversationHead(ctx, id)
	if err != nil {
		cancel()
		return nil, err
	}
	w.started.Store(true)
	return &updatedStream{f: f, conv: id, owner: owner, w: w, cancel: cancel, last: seq, stale: true}, nil
}

// addedStream delivers the messages after position last.
type addedStream struct {
	f      *Feed
	conv   string
	owner  string // the subscriber's: every read is scoped by it
	w      *watcher
	cancel context.CancelFunc // unregisters w
	last   int                // the position of the last message delivered (or the start)
	// pending is the rest of the last page read; shared with other subscribers that
	// read the same page, so never written to.
	pending []parley.Message
	// stale says the database may hold messages after last: at the start, after a full
	// page, and after every wake-up.
	stale bool
}

// Next implements parley.MessageStream.
func (s *addedStream) Next(ctx context.Context) (parley.Message, error) {
	for {
		for len(s.pending) > 0 {
			m := s.pending[0]
			s.pending = s.pending[1:]
			if p := m.Meta().Position; p > s.last {
				s.last = p
				return m, nil
			}
		}
		if s.stale {
			msgs, err := s.f.read(ctx, "a", s.owner, s.conv, int64(s.last), func(ctx context.Context) (any, error) {
				return s.f.store.MessagesAfter(ctx, s.conv, s.last, s.f.cfg.PageSize)
			})
			if err != nil {
				s.cancel()
				return nil, err
			}
			s.pending = msgs.([]parley.Message)
			s.stale = len(s.pending) == s.f.cfg.PageSize
			continue
		}
		select {
		case <-ctx.Done():
			s.cancel()
			return nil, ctx.Err()
		case <-s.w.c:
			s.stale = true
		}
	}
}

// updatedStream delivers the messages changed after change number last.
type updatedStream struct {
	f       *Feed
	conv    string
	owner   string
	w       *watcher
	cancel  context.CancelFunc
	last    int64
	pending []parley.Message
	stale   bool
}

// changes is one read of changed messages: the messages and the number of the last.
type changes struct {
	msgs []parley.Message
	last int64
}

// Next implements parley.MessageStream.
func (s *updatedStream) Next(ctx context.Context) (parley.Message, error) {
	for {
		if len(s.pending) > 0 {
			m := s.pending[0]
			s.pending = s.pending[1:]
			return m, nil
		}
		if s.stale {
			after := s.last
			res, err := s.f.read(ctx, "u", s.owner, s.conv, after, func(ctx context.Context) (any, error) {
				msgs, last, err := s.f.store.MessagesChangedAfter(ctx, s.conv, after, s.f.cfg.PageSize)
				return changes{msgs, last}, err
			})
			if err != nil {
				s.cancel()
				return nil, err
			}
			c := res.(changes)
			s.pending, s.last = c.msgs, c.last
			s.stale = len(c.msgs) == s.f.cfg.PageSize
			continue
		}
		select {
		case <-ctx.Done():
			s.cancel()
			return nil, ctx.Err()
		case <-s.w.c:
			s.stale = true
		}
	}
}

// read runs one read of the database, shared with the subscribers of the same
// conversation that ask for the same thing at the same time, and retries failures for
// up to RetryFor. The read runs under its own timeout, not the caller's context, since
// other subscribers may be waiting on it, and on behalf of owner: the conversation's
// owner, checked when the subscription started (only subscribers of the same owner
// share a read).
func (f *Feed) read(ctx context.Context, kind, owner, conv string, after int64, fn func(context.Context) (any, error)) (any, error) {
	key := kind + conv + ":" + strconv.FormatInt(after, 10) + ":" + owner
	deadline := time.Now().Add(f.cfg.RetryFor)
	backoff := 50 * time.Millisecond
	for {
		ch := f.reads.DoChan(key, func() (any, error) {
			rctx, cancel := context.WithTimeout(parley.WithOwner(context.Background(), owner), f.cfg.ReadTimeout)
			defer cancel()
			return fn(rctx)
		})
		var res singleflight.Result
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case res = <-ch:
		}
		if res.Err == nil {
			return res.Val, nil
		}
		if parley.ErrorCode(res.Err) == parley.ENOTFOUND {
			return nil, res.Err
		}
		if time.Now().Add(backoff).After(deadline) {
			f.log.Error("realtime: cannot read the database; ending a subscription", "conversation", conv, "err", res.Err)
			return nil, &parley.Error{Code: parley.EUNAVAILABLE,
				Message: "The conversation cannot be read right now; subscribe again with the last cursor you received."}
		}
		f.log.Warn("realtime: read failed; retrying", "conversation", conv, "err", res.Err, "in", backoff)
		t := time.NewTimer(backoff)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, ctx.Err()
		case <-t.C:
		}
		backoff *= 2
	}
}
