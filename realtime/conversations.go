package realtime

import (
	"context"

	"github.com/parley-dev/parley"
)

// ListStore is what a Hub reads for the live list of conversations. db.DB implements it.
type ListStore interface {
	// ConversationListHead returns the number of the owner's latest list change.
	ConversationListHead(ctx context.Context) (int64, error)
	// ConversationChangesAfter returns up to limit of the owner's list changes numbered
	// above after, in ascending number.
	ConversationChangesAfter(ctx context.Context, after int64, limit int) ([]parley.ConversationChange, error)
}

var _ parley.ConversationEventService = (*Hub)(nil)

// listKind registers a subscriber of an owner's list of conversations: it wakes for
// every event of the owner's conversations but appends (a list shows no delta).
const listKind parley.MessageEventKind = "list"

// ConversationListHead implements parley.ConversationEventService.
func (f *Hub) ConversationListHead(ctx context.Context) (int64, error) {
	ls, ok := f.store.(ListStore)
	if !ok {
		return 0, errNoList
	}
	return ls.ConversationListHead(ctx)
}

var errNoList = &parley.Error{Code: parley.EUNAVAILABLE, Message: "The conversation list cannot be followed on this server."}

// SubscribeConversations implements parley.ConversationEventService. Like a message
// subscription it registers for wake-ups before it reads where it starts, and reads the
// database (by list number, which is commit-ordered) after every wake-up, so that it
// delivers every change exactly once and in order whatever notifications were lost
// (a lost notification is made up by the Listener's resync, which wakes everyone).
func (f *Hub) SubscribeConversations(ctx context.Context, after int64) (parley.ConversationStream, error) {
	ls, ok := f.store.(ListStore)
	if !ok {
		return nil, errNoList
	}
	owner, ok := parley.OwnerFrom(ctx)
	if !ok {
		return nil, errNoOwner
	}
	w, cancel := f.watch(ctx, ownerTopic(owner), listKind)
	if after < 0 {
		head, err := ls.ConversationListHead(ctx)
		if err != nil {
			cancel()
			return nil, err
		}
		after = head
	}
	w.started.Store(true)
	return &listStream{f: f, store: ls, owner: owner, w: w, cancel: cancel, last: after, stale: true}, nil
}

// listStream delivers an owner's list changes numbered above last.
type listStream struct {
	f       *Hub
	store   ListStore
	owner   string
	w       *watcher
	cancel  func()
	last    int64
	pending []parley.ConversationChange // shared with other subscribers: never written to
	stale   bool
}

// Next implements parley.ConversationStream.
func (s *listStream) Next(ctx context.Context) (parley.ConversationChange, error) {
	for {
		if s.w.woken() {
			s.stale = true
		}
		for len(s.pending) > 0 {
			c := s.pending[0]
			s.pending = s.pending[1:]
			if c.Seq > s.last {
				s.last = c.Seq
				return c, nil
			}
		}
		if s.stale {
			after, size := s.last, s.f.cfg.PageSize
			res, err := s.f.read(ctx, s.w.t, "l", s.owner, "", after, func(ctx context.Context) (any, error) {
				return s.store.ConversationChangesAfter(ctx, after, size)
			})
			if err != nil {
				s.cancel()
				return parley.ConversationChange{}, err
			}
			s.pending = res.([]parley.ConversationChange)
			s.stale = len(s.pending) == size
			continue
		}
		select {
		case <-ctx.Done():
			s.cancel()
			return parley.ConversationChange{}, ctx.Err()
		case <-s.w.c:
			s.stale = true
		}
	}
}
