package graph

import (
	"context"

	"github.com/parley-dev/parley"
)

// node finds a conversation or message by its public id; an id of neither kind, or of
// nothing stored, is null rather than an error, as Relay's node field expects.
func (r *Resolver) node(ctx context.Context, id string) (parley.Node, error) {
	var (
		n   parley.Node
		err error
	)
	if _, ok := parley.ParseConversationID(id); ok {
		n, err = r.ConversationService.FindConversationByID(ctx, id)
	} else if _, ok := parley.ParseMessageID(id); ok {
		n, err = r.MessageService.FindMessageByID(ctx, id)
	} else {
		return nil, nil
	}
	if parley.ErrorCode(err) == parley.ENOTFOUND {
		return nil, nil
	}
	return n, err
}
