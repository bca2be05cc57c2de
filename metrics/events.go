package metrics

import (
	"context"
	"time"

	"github.com/parley-dev/parley"
)

// Events returns es, recording for each message a subscription delivers how long it
// took from being stored to being delivered: parley_notify_delivery_lag_seconds. Only
// messages stored after the subscription began count: a replay of history is not lag.
// The time stored is the database's (createdAt for messageAdded, updatedAt for
// messageUpdated), set in the transaction that stores the message, so the lag covers
// the commit, the notification to every replica, the replica's read and the handing of
// the message to the subscriber's connection; across hosts it is only as good as their
// clocks agree. A nil Metrics returns es itself.
func (m *Metrics) Events(es parley.EventService) parley.EventService {
	if m == nil || es == nil {
		return es
	}
	return events{es, m}
}

type events struct {
	parley.EventService
	m *Metrics
}

func (e events) SubscribeMessagesAdded(ctx context.Context, conversationID string, after int) (parley.MessageStream, error) {
	since := time.Now()
	s, err := e.EventService.SubscribeMessagesAdded(ctx, conversationID, after)
	if err != nil {
		return nil, err
	}
	return observed(s, (*addedLag)(e.m), since), nil
}

func (e events) SubscribeMessagesUpdated(ctx context.Context, conversationID string) (parley.MessageStream, error) {
	since := time.Now()
	s, err := e.EventService.SubscribeMessagesUpdated(ctx, conversationID)
	if err != nil {
		return nil, err
	}
	return observed(s, (*updatedLag)(e.m), since), nil
}

// observed has o told of each message s delivers to a subscription that began at
// since: by s itself when it can tell (parley.ObservedStream), else through a wrapper.
func observed(s parley.MessageStream, o parley.DeliveryObserver, since time.Time) parley.MessageStream {
	if obs, ok := s.(parley.ObservedStream); ok {
		obs.Observe(o, since)
		return s
	}
	return &lagStream{MessageStream: s, o: o, since: since}
}

// addedLag and updatedLag observe the lag of the messages a stream delivers (observed):
// one object for all the streams.
type (
	addedLag   Metrics
	updatedLag Metrics
)

func (l *addedLag) Delivered(msg parley.Message, since time.Time) {
	(*Metrics)(l).observeLag(msg.Meta().CreatedAt, since)
}

func (l *updatedLag) Delivered(msg parley.Message, since time.Time) {
	(*Metrics)(l).observeLag(msg.Meta().UpdatedAt, since)
}

// lagStream tells its observer of each message its stream delivers, for a stream that
// cannot tell it itself.
type lagStream struct {
	parley.MessageStream
	o     parley.DeliveryObserver
	since time.Time
}

func (s *lagStream) Next(ctx context.Context) (parley.Message, error) {
	msg, err := s.MessageStream.Next(ctx)
	s.observe(msg)
	return msg, err
}

// Poll observes what websocket subscriptions take: they poll the stream on wake-ups
// instead of waiting in Next.
func (s *lagStream) Poll(ctx context.Context) (parley.Message, error) {
	msg, err := s.MessageStream.Poll(ctx)
	s.observe(msg)
	return msg, err
}

// OnReady implements parley.ReadyWaker when the stream it wraps does.
func (s *lagStream) OnReady(r parley.Readier) bool {
	w, ok := s.MessageStream.(parley.ReadyWaker)
	return ok && w.OnReady(r)
}

func (s *lagStream) observe(msg parley.Message) {
	if msg != nil {
		s.o.Delivered(msg, s.since)
	}
}

// observeLag records the delivery lag of a message stored at stored, to a subscription
// that began at since: only messages stored after it count (a replay is not lag).
func (m *Metrics) observeLag(stored, since time.Time) {
	if stored.IsZero() || stored.Before(since) {
		return
	}
	m.ObserveDeliveryLag(time.Since(stored))
}
