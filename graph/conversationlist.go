package graph

import (
	"context"
	"slices"

	"github.com/99designs/gqlgen/graphql"

	"github.com/parley-dev/parley"
	"github.com/parley-dev/parley/graph/model"
)

// forwardList runs a conversationsChanged subscription (see pump).
func (r *Resolver) forwardList(ctx context.Context, s parley.ConversationStream) <-chan *model.ConversationListEvent {
	return pump(r, ctx, s.Next, func(c parley.ConversationChange) *model.ConversationListEvent {
		return &model.ConversationListEvent{Cursor: parley.ConversationListCursor(c.Seq), Kind: c.Kind,
			ConversationID: c.ConversationID, Conversation: c.Conversation}
	})
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
