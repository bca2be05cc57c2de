package graph

import (
	"context"
	"sync/atomic"
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
	// trees reads the place in its tree of each message a response asks about that
	// was not read with its page (nil without a TreeService).
	trees *dataloadgen.Loader[string, *parley.TreeInfo]
	// pageBytes is what is left of the response's budget of message bytes
	// (Limits.MaxPageBytes), spent by every page read for it.
	pageBytes atomic.Int64
	// prefetched holds the pages read with their conversations (conversationpage.go).
	prefetched prefetched
}

// pageBudget is what a page read now may hold: what is left of the response's budget,
// and at least a byte, so that every page holds at least one message.
func (l *loaders) pageBudget() int { return int(max(l.pageBytes.Load(), 1)) }

// spend takes what pages hold from the response's budget.
func (l *loaders) spend(pages ...*parley.MessagePage) {
	for _, p := range pages {
		l.pageBytes.Add(-int64(p.Bytes))
	}
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
	branch                                 string
	tree                                   bool
}

func newPageArgs(p parley.PageRequest) pageArgs {
	a := pageArgs{branch: p.Branch, tree: p.Tree}
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
	p := parley.PageRequest{Branch: a.branch, Tree: a.tree}
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

func newLoaders(messages parley.MessageService, tree parley.TreeService, pageBytes int64) *loaders {
	l := &loaders{}
	l.pageBytes.Store(pageBytes)
	fetch := func(ctx context.Context, keys []pageKey) (map[pageKey]*parley.MessagePage, error) {
		groups := make(map[pageArgs][]*parley.Conversation)
		for _, k := range keys {
			groups[k.page] = append(groups[k.page], k.conv)
		}
		out := make(map[pageKey]*parley.MessagePage, len(keys))
		for args, convs := range groups {
			req := args.request()
			req.MaxBytes = l.pageBudget()
			pages, err := messages.FindMessagePages(ctx, convs, req)
			if err != nil {
				return nil, err
			}
			l.spend(pages...)
			for i, c := range convs {
				out[pageKey{conv: c, page: args}] = pages[i]
			}
		}
		return out, nil
	}
	// A short wait lets the sibling resolvers of one list register their keys.
	l.messagePages = dataloadgen.NewMappedLoader(fetch, dataloadgen.WithWait(time.Millisecond))
	if tree != nil {
		l.trees = dataloadgen.NewMappedLoader(func(ctx context.Context, ids []string) (map[string]*parley.TreeInfo, error) {
			return tree.FindTreeInfo(ctx, ids)
		}, dataloadgen.WithWait(time.Millisecond))
	}
	return l
}

type loadersKey struct{}

// withLoaders is an AroundResponses hook giving each response its own loaders.
func withLoaders(messages parley.MessageService, tree parley.TreeService, pageBytes int64) graphql.ResponseMiddleware {
	return func(ctx context.Context, next graphql.ResponseHandler) *graphql.Response {
		return next(context.WithValue(ctx, loadersKey{}, newLoaders(messages, tree, pageBytes)))
	}
}

// messagePage reads a conversation's page through the response's loader when there is
// one and the conversation is an element of a list, and directly otherwise: a
// conversation read on its own has no siblings to batch with, so it does not wait the
// loader's millisecond for them.
func (r *Resolver) messagePage(ctx context.Context, conv *parley.Conversation, page parley.PageRequest) (*parley.MessagePage, error) {
	l, ok := ctx.Value(loadersKey{}).(*loaders)
	if ok {
		if p, found := l.prefetched.take(pageKey{conv: conv, page: newPageArgs(page)}); found {
			return p, nil
		}
	}
	if ok && inList(ctx) {
		return l.messagePages.Load(ctx, pageKey{conv: conv, page: newPageArgs(page)})
	}
	if ok {
		page.MaxBytes = l.pageBudget()
	}
	p, err := r.MessageService.FindMessages(ctx, conv, page)
	if ok && err == nil {
		l.spend(p)
	}
	return p, err
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
