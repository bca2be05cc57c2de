package graph

import (
	"context"
	"sync"

	"github.com/99designs/gqlgen/graphql"

	"github.com/parley-dev/parley"
)

// The history read, `conversation(id:) { ... messages(...) { ... } }`, in one statement.
//
// gqlgen resolves conversation before its messages, each with a read of its own. But the
// conversation's field already holds its selection: when that asks for messages of the
// active branch, conversation reads the conversation and that page together
// (MessageService.FindConversationPage: one statement), and leaves the page for the
// messages resolver, which finds it here instead of reading it. Anything the folded read
// cannot answer exactly as the two reads would (another branch, arguments gqlgen would
// refuse, a page request the store refuses) is left to them.

// prefetched holds the pages read with their conversations for one response, until the
// messages field asking for each takes it.
type prefetched struct {
	mu    sync.Mutex
	pages map[pageKey]*parley.MessagePage
}

func (p *prefetched) put(k pageKey, page *parley.MessagePage) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.pages == nil {
		p.pages = map[pageKey]*parley.MessagePage{}
	}
	p.pages[k] = page
}

// take returns the page read for k, once.
func (p *prefetched) take(k pageKey) (*parley.MessagePage, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	page, ok := p.pages[k]
	delete(p.pages, k)
	return page, ok
}

// conversation reads the conversation id, and with it the page its selection asks for
// when it can (see above).
func (r *Resolver) conversation(ctx context.Context, id string) (*parley.Conversation, error) {
	l, ok := ctx.Value(loadersKey{}).(*loaders)
	page, fold := r.selectedPage(ctx)
	if !ok || !fold {
		return r.ConversationService.FindConversationByID(ctx, id)
	}
	page.MaxBytes = l.pageBudget()
	conv, p, err := r.MessageService.FindConversationPage(ctx, id, page)
	if parley.ErrorCode(err) == parley.EINVALID {
		// The page's error is the messages field's, which reads it again and says so.
		return r.ConversationService.FindConversationByID(ctx, id)
	}
	if err != nil {
		return nil, err
	}
	l.spend(p)
	page.MaxBytes = 0
	l.prefetched.put(pageKey{conv: conv, page: newPageArgs(page)}, p)
	return conv, nil
}

// selectedPage returns the page the first messages field of the resolving field's
// selection asks for, as the messages resolver would make it, and whether there is one
// to read with the conversation: on the active branch, with arguments gqlgen accepts.
func (r *Resolver) selectedPage(ctx context.Context) (parley.PageRequest, bool) {
	fc := graphql.GetFieldContext(ctx)
	oc := graphql.GetOperationContext(ctx)
	if fc == nil || fc.Field.Field == nil || oc == nil {
		return parley.PageRequest{}, false
	}
	for _, f := range graphql.CollectFields(oc, fc.Field.Selections, []string{"Conversation"}) {
		if f.Name != "messages" {
			continue
		}
		args := f.ArgumentMap(oc.Variables)
		if b, ok := args["branch"]; ok && b != nil {
			return parley.PageRequest{}, false
		}
		var page parley.PageRequest
		var err error
		if page.First, err = optInt(args["first"]); err != nil {
			return page, false
		}
		if page.Last, err = optInt(args["last"]); err != nil {
			return page, false
		}
		if page.After, err = optString(args["after"]); err != nil {
			return page, false
		}
		if page.Before, err = optString(args["before"]); err != nil {
			return page, false
		}
		page.Tree = r.TreeService != nil && reaches(f.Selections, 0)
		return page, true
	}
	return parley.PageRequest{}, false
}

func optInt(v any) (*int, error) {
	if v == nil {
		return nil, nil
	}
	n, err := graphql.UnmarshalInt(v)
	return &n, err
}

func optString(v any) (*string, error) {
	if v == nil {
		return nil, nil
	}
	s, err := graphql.UnmarshalString(v)
	return &s, err
}
