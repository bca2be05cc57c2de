package processing

import (
	"context"
	"encoding/base64"
	"time"

	"github.com/parley-dev/parley"
)

func decodeBase64(s string) ([]byte, error) { return base64.StdEncoding.DecodeString(s) }

// watcher is one awaiting-call subscriber's wake-up signal: one slot, since a wake-up
// means "look again" and more of them while one is pending add nothing.
type watcher struct {
	conversationID string // "" for every conversation
	ch             chan struct{}
}

func (w *watcher) wake() {
	select {
	case w.ch <- struct{}{}:
	default:
	}
}

// Publish wakes the awaiting-call subscribers a message event may concern: a message
// added (a request decided by policy, a result) or changed (a decision). It never
// blocks. Feed it every event the database listener hears.
func (s *Service) Publish(ev parley.MessageEvent) {
	if ev.Kind == parley.ConversationDeleted {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for w := range s.watchers {
		if w.conversationID == "" || w.conversationID == ev.ConversationID {
			w.wake()
		}
	}
}

// Resync wakes every awaiting-call subscriber, to look again after events may have been
// lost. It never blocks.
func (s *Service) Resync() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for w := range s.watchers {
		w.wake()
	}
}

// Subscribers returns how many awaiting-call subscriptions are open in this process.
func (s *Service) Subscribers() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.watchers)
}

// SubscribeAwaitingToolCalls implements parley.ProcessingService. It registers for
// wake-ups before its first read, so a call approved in between is not missed; every
// wake-up (and every PollInterval, in case the listener is down) reads the awaiting
// calls again and sends those not sent before.
func (s *Service) SubscribeAwaitingToolCalls(ctx context.Context, f parley.AwaitingFilter) (<-chan *parley.AwaitingToolCall, error) {
	if f.ConversationID != "" {
		key, ok := parley.ParseConversationID(f.ConversationID)
		if !ok {
			return nil, parley.Errorf(parley.ENOTFOUND, "conversation %q not found", f.ConversationID)
		}
		f.ConversationID = parley.ConversationID(key)
	}
	f.Limit = parley.MaxPageSize
	w := &watcher{conversationID: f.ConversationID, ch: make(chan struct{}, 1)}
	s.mu.Lock()
	s.watchers[w] = struct{}{}
	s.mu.Unlock()
	unregister := func() {
		s.mu.Lock()
		delete(s.watchers, w)
		s.mu.Unlock()
	}
	first, err := s.cfg.Store.FindAwaitingToolCalls(ctx, f)
	if err != nil {
		unregister()
		return nil, err
	}
	ch := make(chan *parley.AwaitingToolCall)
	go func() {
		defer close(ch)
		defer unregister()
		defer func() {
			if v := recover(); v != nil {
				s.log.Error("panic in awaiting tool call subscription", "panic", v)
			}
		}()
		sent := map[string]bool{} // request id + call id of the calls sent, while awaiting
		batch := first
		ticker := time.NewTicker(s.cfg.PollInterval)
		defer ticker.Stop()
		for {
			seen := make(map[string]bool, len(batch))
			for _, a := range batch {
				k := a.Message.ID + "\x00" + a.Call.ID
				seen[k] = true
				if sent[k] {
					continue
				}
				select {
				case <-ctx.Done():
					return
				case ch <- a:
				}
				sent[k] = true
			}
			// Forget calls no longer awaiting, so memory follows the queue, not history.
			// A call is only listed once: the filter excludes it once it has a result.
			for k := range sent {
				if !seen[k] && len(batch) < f.Limit {
					delete(sent, k)
				}
			}
			select {
			case <-ctx.Done():
				return
			case <-w.ch:
			case <-ticker.C:
			}
			next, err := s.cfg.Store.FindAwaitingToolCalls(ctx, f)
			if err != nil {
				if ctx.Err() == nil {
					s.log.Warn("awaiting tool calls: read failed; retrying", "err", err)
				}
				continue // the calls already sent stay remembered
			}
			batch = next
		}
	}()
	return ch, nil
}
