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
		// The calls sent, while awaiting (request id + call id), each with its offer
		// state when last read: a call is sent when first seen, and again each time a
		// claim on it lapses, since a worker that claimed it and died leaves it to others.
		sent := map[string]string{}
		batch := first
		var tick <-chan time.Time // nil with a hub: never
		if wake == nil {
			ticker := time.NewTicker(s.cfg.PollInterval)
			defer ticker.Stop()
			tick = ticker.C
		}
		// lapse wakes the subscription when the earliest live claim it knows of expires:
		// an expiry is no write, so no event announces it. (A claim taken after a read
		// wakes the subscription with a ToolCallClaimed event, and the next read sees it.)
		lapse := time.NewTimer(time.Hour)
		lapse.Stop()
		defer lapse.Stop()
		for {
			seen := make(map[string]bool, len(batch))
			var nextLapse time.Time
			for _, a := range batch {
				k := a.Message.ID + "\x00" + a.Call.ID
				seen[k] = true
				st := offerState(a)
				if st == offerClaimed && (nextLapse.IsZero() || a.ClaimExpiresAt.Before(nextLapse)) {
					nextLapse = *a.ClaimExpiresAt
				}
				prev, was := sent[k]
				sent[k] = st
				if was && (prev == st || st == offerClaimed) {
					continue // sent already, and no claim lapsed since
				}
				select {
				case <-ctx.Done():
					return
				case ch <- a:
				}
			}
			// Forget calls no longer awaiting, so memory follows the queue, not history.
			// A call is only listed once: the filter excludes it once it has a result.
			for k := range sent {
				if !seen[k] && len(batch) < f.Limit {
					delete(sent, k)
				}
			}
			lapse.Stop()
			if !nextLapse.IsZero() {
				// A little after the expiry, and never a busy loop when this clock is
				// ahead of the database's, which decides.
				lapse.Reset(max(time.Until(nextLapse), 0) + lapseMargin)
			}
			select {
			case <-ctx.Done():
				return
			case <-wake:
			case <-tick:
			case <-lapse.C:
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

// The offer states of an awaiting call, as a subscription last read it: never claimed
// (""), under a live claim, or freed by the lapse of the claim that ended at a time
// (offerLapsed and the time): each distinct lapse offers the call again.
const (
	offerClaimed = "claimed"
	offerLapsed  = "lapsed "
)

// lapseMargin is how long after a claim's expiry a subscription reads again.
const lapseMargin = 100 * time.Millisecond

func offerState(a *parley.AwaitingToolCall) string {
	switch {
	case a.ClaimExpiresAt == nil:
		return ""
	case a.ClaimLapsed:
		return offerLapsed + a.ClaimExpiresAt.UTC().Format(time.RFC3339Nano)
	default:
		return offerClaimed
	}
}
