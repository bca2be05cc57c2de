package processing

import (
	"context"
	"encoding/base64"
	"time"

	"github.com/parley-dev/parley"
)

func decodeBase64(s string) ([]byte, error) { return base64.StdEncoding.DecodeString(s) }

// SubscribeAwaitingToolCalls implements parley.ProcessingService. It registers with
// the event hub (Config.Events) before its first read, so a call approved in between
// is not missed; every wake-up reads the awaiting calls again and sends those not sent
// before. The hub wakes it for its owner's changes only, and again after its listener
// reconnects (events may have been lost), so it does not poll; without a hub it reads
// every PollInterval.
func (s *Service) SubscribeAwaitingToolCalls(ctx context.Context, f parley.AwaitingFilter) (<-chan *parley.AwaitingToolCall, error) {
	if f.ConversationID != "" {
		key, ok := parley.ParseConversationID(f.ConversationID)
		if !ok {
			return nil, parley.Errorf(parley.ENOTFOUND, "conversation %q not found", f.ConversationID)
		}
		f.ConversationID = parley.ConversationID(key)
	}
	f.Limit = parley.MaxPageSize
	var wake <-chan struct{} // without a hub, nil: only PollInterval wakes
	unregister := func() {}
	if s.cfg.Events != nil {
		var err error
		if wake, unregister, err = s.cfg.Events.Watch(ctx, f.ConversationID); err != nil {
			return nil, err
		}
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
		var tick <-chan time.Time // nil with a hub: never
		if wake == nil {
			ticker := time.NewTicker(s.cfg.PollInterval)
			defer ticker.Stop()
			tick = ticker.C
		}
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
			case <-wake:
			case <-tick:
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
