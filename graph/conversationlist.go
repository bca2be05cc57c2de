package graph

import (
	"context"
	"fmt"
	"slices"

	"github.com/99designs/gqlgen/graphql"

	"github.com/parley-dev/parley"
	"github.com/parley-dev/parley/graph/model"
)

// forwardList runs a conversationsChanged subscription: one goroutine owns the channel
// gqlgen reads, takes each change from the stream at the client's pace and sends it,
// never blocking past ctx.
func (r *Resolver) forwardList(ctx context.Context, s parley.ConversationStream) <-chan *model.ConversationListEvent {
	ch := make(chan *model.ConversationListEvent)
	go func() {
		defer close(ch)
		defer func() {
			if v := recover(); v != nil {
				r.endSubscription(ctx, fmt.Errorf("panic in subscription: %v", v))
			}
		}()
		for {
			c, err := s.Next(ctx)
			if err != nil {
				r.endSubscription(ctx, err)
				return
			}
			ev := &model.ConversationListEvent{Cursor: parley.ConversationListCursor(c.Seq), Kind: c.Kind,
				ConversationID: c.ConversationID, Conversation: c.Conversation}
			select {
			case <-ctx.Done():
				return
			case ch <- ev:
			}
		}
	}()
	return ch
}

// changesCursor returns the list's conversationsChanged cursor when the connection being
// resolved asks for it, "" otherwise. Read it before the page: a change committed in
// between is then both in the page and after the cursor (a repeat the client merges),
// never in neither.
func (r *Resolver) changesCursor(ctx context.Context) (string, error) {
	if !slices.Contains(graphql.CollectAllFields(ctx), "changesCursor") {
		return "", nil
	}
	if r.ConversationEventService == nil {
		return "", errNoEvents
	}
	head, err := r.ConversationEventService.ConversationListHead(ctx)
	if err != nil {
		return "", err
	}
	return parley.ConversationListCursor(head), nil
}
