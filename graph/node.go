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

// messageSizer measures stored messages without reading them (db.DB does).
type messageSizer interface {
	MessageBytes(ctx context.Context, ids []string) (int, error)
}

// checkNodeBytes refuses nodes(ids:) whose messages hold more stored bytes than what is
// left of the response's page budget (Limits.MaxPageBytes), before reading any, and
// spends what they hold. A list of ids cannot end early with a cursor as a page does,
// and returning some as null would read as "not found": refusing, with a code that
// says to ask for fewer, is what a client can act on. One id is never refused, as a
// page always holds a message.
func (r *Resolver) checkNodeBytes(ctx context.Context, ids []string) error {
	l, ok := ctx.Value(loadersKey{}).(*loaders)
	sizer, measurable := r.MessageService.(messageSizer)
	if !ok || !measurable {
		return nil
	}
	n, err := sizer.MessageBytes(ctx, ids)
	if err != nil {
		return err
	}
	if left := l.pageBudget(); len(ids) > 1 && n > left {
		return parley.Errorf(parley.ENODESTOOLARGE,
			"ids: the messages named hold %d bytes as stored, more than the %d left of --max-page-bytes in this response; ask for fewer ids", n, left)
	}
	l.pageBytes.Add(-int64(n))
	return nil
}
