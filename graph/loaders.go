package graph

import (
	"context"
	"time"

	"github.com/99designs/gqlgen/graphql"
	"github.com/vikstrous/dataloadgen"

	"github.com/parley-dev/parley"
)

// Loaders batch what a response asks for repeatedly: a list of conversations each with
// its messages is one query, not one per conversation. They live for one response
// (installed by AroundResponses), never across a websocket's operations, so nothing
// they hold goes stale.
type loaders struct {
	messagePages *dataloadgen.Loader[pageKey, *parley.MessagePage]
}

// pageKey is one conversation's page; conversations asking for the same page are read
// together.
type pageKey struct {
	conv *parley.Conversation
	page pageArgs
}

// pageArgs is a comparable copy of a parley.PageRequest.
type pageArgs struct {
	first, last                            int
	after, before                          string
	hasFirst, hasLast, hasAfter, hasBefore bool
}

func newPageArgs(p parley.PageRequest) pageArgs {
	var a pageArgs
	if p.First != nil {
		a.first, a.hasFirst = *p.First, true
	}
	if p.Last != nil {
		a.last, a.hasLast = *p.Last, true
	}
	if p.After != nil {
		a.after, a.hasAfter = *p.After, true
	}
	if p.Before != nil {
		a.before, a.hasBefore = *p.Before, true
	}
	return a
}

func (a pageArgs) request() parley.PageRequest {
	var p parley.PageRequest
	if a.hasFirst {
		p.First = &a.first
	}
	if a.hasLast {
		p.Last = &a.last
	}
	if a.hasAfter {
		p.After = &a.after
	}
	if a.hasBefore {
		p.Before = &a.before
	}
	return p
}

func newLoaders(messages parley.MessageService) *loaders {
	fetch := func(ctx context.Context, keys []pageKey) (map[pageKey]*parley.MessagePage, error) {
		groups := make(map[pageArgs][]*parley.Conversation)
		for _, k := range keys {
			groups[k.page] = append(groups[k.page], k.conv)
		}
		out := make(map[pageKey]*parley.MessagePage, len(keys))
		for args, convs := range groups {
			pages, err := messages.FindMessagePages(ctx, convs, args.request())
			if err != nil {
				return nil, err
			}
			for i, c := range convs {
				out[pageKey{conv: c, page: args}] = pages[i]
			}
		}
		return out, nil
	}
	return &loaders{
		// A short wait lets the sibling resolvers of one list register their keys.
		messagePages: dataloadgen.NewMappedLoader(fetch, dataloadgen.WithWait(time.Millisecond)),
	}
}

type loadersKey struct{}

// withLoaders is an AroundResponses hook giving each response its own loaders.
func withLoaders(messages parley.MessageService) graphql.ResponseMiddleware {
	return func(ctx context.Context, next graphql.ResponseHandler) *graphql.Response {
		return next(context.WithValue(ctx, loadersKey{}, newLoaders(messages)))
	}
}

// messagePage reads a conversation's page through the response's loader when there is
// one and the conversation is an element of a list, and directly otherwise: a
// conversation read on its own has no siblings to batch with, so it does not wait the
// loader's millisecond for them.
func (r *Resolver) messagePage(ctx context.Context, conv *parley.Conversation, page parley.PageRequest) (*parley.MessagePage, error) {
	if l, ok := ctx.Value(loadersKey{}).(*loaders); ok && inList(ctx) {
		return l.messagePages.Load(ctx, pageKey{conv: conv, page: newPageArgs(page)})
	}
	return r.MessageService.FindMessages(ctx, conv, page)
}

// inList reports whether the field being resolved is under an element of a list.
func inList(ctx context.Context) bool {
	for fc := graphql.GetFieldContext(ctx); fc != nil; fc = fc.Parent {
		if fc.Index != nil {
			return true
		}
	}
	return false
}
