package graph

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/parley-dev/parley"
	"github.com/parley-dev/parley/graph/model"
	"github.com/parley-dev/parley/graph/transport"
)

var errNoEvents = &parley.Error{Code: parley.EUNAVAILABLE, Message: "Subscriptions are not available on this server."}

// forward runs a subscription. Over a websocket (package transport) the operation drives it: the
// stream is attached to the operation, which polls it into a one-slot channel on every
// wake-up, and no goroutine waits while it is idle. Elsewhere (SSE) one goroutine owns
// the channel gqlgen reads, takes each message from the stream and sends it, never
// blocking past ctx. Either way the stream reads the database at the pace the client
// takes messages, so a client that reads slowly holds no backlog here; one that stops
// reading is cut off by the transport's write timeout, which ends ctx.
func (r *Resolver) forward(ctx context.Context, s parley.MessageStream) <-chan *model.MessageEdge {
	if target := transport.PushTargetFrom(ctx); target != nil {
		p := &messagePush{ch: make(chan *model.MessageEdge, 1)}
		if b, ok := s.(*branchStream); ok {
			// Moved into the push source (followBranch's is not referred to elsewhere):
			// one object fewer that each delivery touches.
			p.branch = *b
			s = &p.branch
		}
		p.s = s
		wake, ready := target.Attach(p)
		s.OnWake(wake)
		if r, ok := s.(parley.ReadyWaker); ok {
			r.OnReady(ready)
		}
		return p.ch
	}
	return pump(r, ctx, s.Next, messageEdge)
}

// messagePush is a message subscription's events, attached to its websocket operation
// (transport.PushSource).
type messagePush struct {
	s    parley.MessageStream
	next parley.Message // polled, not yet pushed; only the operation's drain touches it
	// branch is the stream of a messageAdded subscription that follows a branch (s then
	// points here): kept in the object a delivery reaches first, rather than its own.
	branch branchStream
	ch     chan *model.MessageEdge
}

func (p *messagePush) Poll(ctx context.Context) (any, bool, error) {
	m, err := p.s.Poll(ctx)
	if m == nil || err != nil {
		return nil, false, err
	}
	p.next = m
	// Subscribers at the tail of a conversation share the stream's read, and so the
	// very message: its identity says "the same event" to the transport, which then
	// encodes it once for all the operations alike. (Meta is a pointer into the message
	// whatever its variant, and comparable.)
	return m.Meta(), true, nil
}

// Prefetch implements parley.Prefetcher: the push source's first words (see
// transport.wsOp.Prefetch).
func (p *messagePush) Prefetch() { touch(p.s, p.branch.inner) }

// touch does nothing: a call to it reads its arguments from where they are kept (see
// messagePush.Prefetch), which the compiler would otherwise drop.
//
//go:noinline
func touch(_, _ parley.MessageStream) {}

func (p *messagePush) Push() {
	p.ch <- messageEdge(p.next) // the operation takes it before it polls again
	p.next = nil
}

// pump runs a subscription in a goroutine of its own that owns the channel gqlgen reads:
// it takes each event from next at the client's pace and sends it as convert makes it,
// never blocking past ctx; an error or a panic ends the subscription (endSubscription).
func pump[E, M any](r *Resolver, ctx context.Context, next func(context.Context) (E, error), convert func(E) M) <-chan M {
	ch := make(chan M)
	go func() {
		defer close(ch)
		defer func() {
			if v := recover(); v != nil {
				r.endSubscription(ctx, fmt.Errorf("panic in subscription: %v", v))
			}
		}()
		for {
			ev, err := next(ctx)
			if err != nil {
				r.endSubscription(ctx, err)
				return
			}
			select {
			case <-ctx.Done():
				return
			case ch <- convert(ev):
			}
		}
	}()
	return ch
}

// endSubscription tells the client why its subscription ended, if it did not end it
// itself. A deleted conversation just completes the subscription: nothing more will
// come. Any other failure (the database unavailable, an internal error) cuts an SSE
// stream without completing it, which graphql-sse clients take as a reason to
// subscribe again. (Websocket operations report errors themselves: see package transport.)
func (r *Resolver) endSubscription(ctx context.Context, err error) {
	if ctx.Err() != nil || parley.ErrorCode(err) == parley.ENOTFOUND {
		return
	}
	if transport.AbandonStream(ctx) {
		r.logger().WarnContext(ctx, "subscription ended", "err", err, "requestId", transport.RequestID(ctx))
	}
}

func (r *Resolver) logger() *slog.Logger {
	if r.Logger != nil {
		return r.Logger
	}
	return slog.Default()
}
