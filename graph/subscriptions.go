package graph

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/99designs/gqlgen/graphql/handler/transport"

	"github.com/parley-dev/parley"
	"github.com/parley-dev/parley/graph/model"
)

var errNoEvents = &parley.Error{Code: parley.EUNAVAILABLE, Message: "Subscriptions are not available on this server."}

// forward runs a subscription: one goroutine owns the channel gqlgen reads, takes each
// message from the stream and sends it, never blocking past ctx. The stream reads the
// database at the pace of these sends, so a client that reads slowly holds no backlog
// here; one that stops reading is cut off by the transport's write timeout, which ends
// ctx.
func (r *Resolver) forward(ctx context.Context, s parley.MessageStream) <-chan *model.MessageEdge {
	ch := make(chan *model.MessageEdge)
	go func() {
		defer close(ch)
		defer func() {
			if v := recover(); v != nil {
				r.endSubscription(ctx, fmt.Errorf("panic in subscription: %v", v))
			}
		}()
		for {
			m, err := s.Next(ctx)
			if err != nil {
				r.endSubscription(ctx, err)
				return
			}
			select {
			case <-ctx.Done():
				return
			case ch <- messageEdge(m):
			}
		}
	}()
	return ch
}

// endSubscription tells the client why its subscription ended, if it did not end it
// itself. A deleted conversation just completes the subscription: nothing more will
// come. Any other failure (the database unavailable, an internal error) is reported as
// an error over a websocket; an SSE stream is cut without completing, which
// graphql-sse clients take as a reason to subscribe again.
func (r *Resolver) endSubscription(ctx context.Context, err error) {
	if ctx.Err() != nil || parley.ErrorCode(err) == parley.ENOTFOUND {
		return
	}
	switch {
	case overWebsocket(ctx):
		transport.AddSubscriptionError(ctx, errorPresenter(r.logger())(ctx, err))
	case abandonStream(ctx):
		r.logger().WarnContext(ctx, "subscription ended", "err", err, "requestId", RequestID(ctx))
	}
}

func (r *Resolver) logger() *slog.Logger {
	if r.Logger != nil {
		return r.Logger
	}
	return slog.Default()
}
