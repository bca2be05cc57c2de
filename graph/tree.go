package graph

import (
	"context"

	"github.com/99designs/gqlgen/graphql"
	"github.com/vektah/gqlparser/v2/ast"

	"github.com/parley-dev/parley"
	"github.com/parley-dev/parley/graph/model"
)

var errNoTree = &parley.Error{Code: parley.EUNAVAILABLE, Message: "Branches are not available on this server."}

// treeOf returns where m sits in its tree: as read with its page, or through the
// response's loader (one statement for all the messages a response asks about).
func (r *Resolver) treeOf(ctx context.Context, m parley.Message) (*parley.TreeInfo, error) {
	meta := m.Meta()
	if meta.Tree != nil {
		return meta.Tree, nil
	}
	if r.TreeService == nil {
		return nil, errNoTree
	}
	var info *parley.TreeInfo
	if l, ok := ctx.Value(loadersKey{}).(*loaders); ok && l.trees != nil {
		var err error
		if info, err = l.trees.Load(ctx, meta.ID); err != nil {
			return nil, err
		}
	} else {
		all, err := r.TreeService.FindTreeInfo(ctx, []string{meta.ID})
		if err != nil {
			return nil, err
		}
		info = all[meta.ID]
	}
	if info == nil {
		// Deleted since it was read: alone, without a parent.
		info = &parley.TreeInfo{SiblingIDs: []string{meta.ID}}
	}
	// Not kept in meta: parentId and siblings resolve at once, and the loader keeps it.
	return info, nil
}

func (r *Resolver) parentID(ctx context.Context, m parley.Message) (*string, error) {
	t, err := r.treeOf(ctx, m)
	if err != nil || t.ParentID == "" {
		return nil, err
	}
	return &t.ParentID, nil
}

func (r *Resolver) siblings(ctx context.Context, m parley.Message) (*model.Siblings, error) {
	t, err := r.treeOf(ctx, m)
	if err != nil {
		return nil, err
	}
	s := siblingsOf(m, t)
	return &s, nil
}

func siblingsOf(m parley.Message, t *parley.TreeInfo) model.Siblings {
	ids := t.SiblingIDs
	i := t.SiblingIndex(m.Meta().ID)
	if i < 0 {
		ids, i = append([]string{m.Meta().ID}, ids...), 0
	}
	return model.Siblings{Count: len(ids), Index: i, Ids: ids}
}

// treeFields are the message fields that need the tree: a page whose selection has
// one reads the tree with the page.
var treeFields = map[string]bool{"parentId": true, "siblings": true}

// selectsTree reports whether the selection of the field being resolved (a
// MessageConnection) reaches a message's tree fields, through fragments too.
func selectsTree(ctx context.Context) bool {
	fc := graphql.GetFieldContext(ctx)
	if fc == nil || fc.Field.Field == nil {
		return false
	}
	return reaches(fc.Field.Selections, 0)
}

func reaches(sel ast.SelectionSet, depth int) bool {
	if depth > 8 {
		return false
	}
	for _, s := range sel {
		switch s := s.(type) {
		case *ast.Field:
			if treeFields[s.Name] || reaches(s.SelectionSet, depth+1) {
				return true
			}
		case *ast.InlineFragment:
			if reaches(s.SelectionSet, depth+1) {
				return true
			}
		case *ast.FragmentSpread:
			if s.Definition != nil && reaches(s.Definition.SelectionSet, depth+1) {
				return true
			}
		}
	}
	return false
}

func branchToModel(b *parley.Branch) *model.Branch {
	out := &model.Branch{Leaf: b.Leaf, ForkPosition: b.ForkPosition, Length: b.Length,
		LastActivityAt: b.Leaf.Meta().UpdatedAt, Active: b.Active}
	if b.ForkID != "" {
		out.ForkPointID = &b.ForkID
	}
	return out
}

func ptr[T any](v T) *T { return &v }

// branchStream is a MessageStream that delivers one branch: first the replayed
// messages, then each message of the inner stream (every message stored after the
// branch was read) whose parent is the branch's tip, which it then becomes. The inner
// stream's messages carry their TreeInfo.
type branchStream struct {
	inner  parley.MessageStream
	replay []parley.Message
	tip    string // the last message of the branch delivered or replayed; "" before the root
}

func (s *branchStream) take(m parley.Message) bool {
	t := m.Meta().Tree
	if t == nil || t.ParentID != s.tip {
		return false
	}
	s.tip = m.Meta().ID
	return true
}

// Next implements parley.MessageStream.
func (s *branchStream) Next(ctx context.Context) (parley.Message, error) {
	if len(s.replay) > 0 {
		m := s.replay[0]
		s.replay = s.replay[1:]
		return m, nil
	}
	for {
		m, err := s.inner.Next(ctx)
		if err != nil || s.take(m) {
			return m, err
		}
	}
}

// Poll implements parley.MessageStream.
func (s *branchStream) Poll(ctx context.Context) (parley.Message, error) {
	if len(s.replay) > 0 {
		m := s.replay[0]
		s.replay = s.replay[1:]
		return m, nil
	}
	for {
		m, err := s.inner.Poll(ctx)
		if m == nil || err != nil || s.take(m) {
			return m, err
		}
	}
}

// OnWake implements parley.MessageStream.
func (s *branchStream) OnWake(f func()) { s.inner.OnWake(f) }

// OnReady implements parley.ReadyWaker when the inner stream does: the branch is kept
// in memory, so Poll waits only where the inner stream's would.
func (s *branchStream) OnReady(r parley.Readier) bool {
	w, ok := s.inner.(parley.ReadyWaker)
	return ok && w.OnReady(r)
}

// followBranch subscribes to the branch of a conversation (the active one, or the one
// through the message branch): the branch's messages after the position after (-1:
// none), then those that continue it.
func (r *Resolver) followBranch(ctx context.Context, conversationID string, after int, branch string) (parley.MessageStream, error) {
	seq, leaf, err := r.TreeService.BranchHead(ctx, conversationID, branch)
	if err != nil {
		return nil, err
	}
	s := &branchStream{}
	if leaf != nil {
		s.tip = leaf.Meta().ID
		if after >= 0 && after < leaf.Meta().Position {
			// The branch's messages after `after`, up to its leaf (pages run on past it
			// when messages came since: those are then the tip's, and skipped below).
			conv := &parley.Conversation{ID: conversationID}
			cur := parley.MessageCursor(after)
			for {
				n := parley.MaxPageSize
				page, err := r.MessageService.FindMessages(ctx, conv, parley.PageRequest{First: &n, After: &cur, Branch: s.tip})
				if err != nil {
					return nil, err
				}
				s.replay = append(s.replay, page.Messages...)
				if len(page.Messages) == 0 || !page.HasNextPage {
					break
				}
				cur = parley.MessageCursor(page.Messages[len(page.Messages)-1].Meta().Position)
			}
			if n := len(s.replay); n > 0 {
				s.tip = s.replay[n-1].Meta().ID
			}
		}
	}
	if s.inner, err = r.EventService.SubscribeMessagesAdded(ctx, conversationID, seq); err != nil {
		return nil, err
	}
	return s, nil
}

// branchFilter says which messages are on the branch a subscription follows: the branch
// through the active leaf when it started (the active branch, whatever it is, while the
// conversation was empty), or through the message named. What it decided is kept, so
// a message's appends and changes cost no further read.
type branchFilter struct {
	tree         parley.TreeService
	conv, branch string
	known        map[string]bool
}

// maxKnown bounds what a filter remembers: past it, it forgets and reads again.
const maxKnown = 4096

func (r *Resolver) newBranchFilter(ctx context.Context, conversationID, branch string) (*branchFilter, error) {
	if branch == "" {
		_, leaf, err := r.TreeService.BranchHead(ctx, conversationID, "")
		if err != nil {
			return nil, err
		}
		if leaf != nil {
			branch = leaf.Meta().ID
		}
	} else if _, _, err := r.TreeService.BranchHead(ctx, conversationID, branch); err != nil {
		return nil, err // a branch of another conversation is NOT_FOUND now, not at the first event
	}
	return &branchFilter{tree: r.TreeService, conv: conversationID, branch: branch, known: make(map[string]bool)}, nil
}

func (f *branchFilter) on(ctx context.Context, id string) (bool, error) {
	if on, ok := f.known[id]; ok {
		return on, nil
	}
	on, err := f.tree.BranchContains(ctx, f.conv, f.branch, id)
	if err != nil {
		return false, err
	}
	if len(f.known) >= maxKnown {
		clear(f.known)
	}
	f.known[id] = on
	return on, nil
}

// branchUpdates is a MessageStream of the changed messages on one branch.
type branchUpdates struct {
	inner parley.MessageStream
	f     *branchFilter
}

func (s *branchUpdates) Next(ctx context.Context) (parley.Message, error) {
	for {
		m, err := s.inner.Next(ctx)
		if err != nil {
			return m, err
		}
		if on, err := s.f.on(ctx, m.Meta().ID); err != nil || on {
			return m, err
		}
	}
}

func (s *branchUpdates) Poll(ctx context.Context) (parley.Message, error) {
	for {
		m, err := s.inner.Poll(ctx)
		if m == nil || err != nil {
			return m, err
		}
		if on, err := s.f.on(ctx, m.Meta().ID); err != nil || on {
			return m, err
		}
	}
}

func (s *branchUpdates) OnWake(f func()) { s.inner.OnWake(f) }

// branchStreamEvents is a StreamSubscription of the messages, and their appends, on one
// branch.
type branchStreamEvents struct {
	inner parley.StreamSubscription
	f     *branchFilter
	// wake is OnWake's function; held is an event polled under parley.NoWaiting whose
	// message the filter must look up, kept for the next Poll, which may wait.
	wake func()
	held *heldStreamEvent
}

type heldStreamEvent struct {
	ev parley.StreamEvent
	id any
}

// messageOf returns the id of the message ev is about ("" for none).
func messageOf(ev parley.StreamEvent) string {
	switch {
	case ev.Message != nil:
		return ev.Message.Meta().ID
	case ev.Delta != nil:
		return ev.Delta.MessageID
	}
	return ""
}

func (s *branchStreamEvents) keep(ctx context.Context, ev parley.StreamEvent) (bool, error) {
	id := messageOf(ev)
	if id == "" {
		return true, nil
	}
	return s.f.on(ctx, id)
}

func (s *branchStreamEvents) Next(ctx context.Context) (parley.StreamEvent, error) {
	for {
		ev, err := s.inner.Next(ctx)
		if err != nil {
			return ev, err
		}
		if keep, err := s.keep(ctx, ev); err != nil || keep {
			return ev, err
		}
	}
}

func (s *branchStreamEvents) Poll(ctx context.Context) (parley.StreamEvent, any, bool, error) {
	for {
		var ev parley.StreamEvent
		var id any
		if h := s.held; h != nil {
			ev, id, s.held = h.ev, h.id, nil
		} else {
			var ok bool
			var err error
			if ev, id, ok, err = s.inner.Poll(ctx); !ok || err != nil {
				return ev, id, ok, err
			}
		}
		if m := messageOf(ev); m != "" && !parley.MayWait(ctx) {
			if _, known := s.f.known[m]; !known {
				// Looking the message up waits for the database: that is for a Poll
				// that may wait.
				s.held = &heldStreamEvent{ev, id}
				s.wake()
				return parley.StreamEvent{}, nil, false, nil
			}
		}
		if keep, err := s.keep(ctx, ev); err != nil || keep {
			return ev, id, err == nil, err
		}
	}
}

func (s *branchStreamEvents) OnWake(f func()) {
	s.wake = f
	s.inner.OnWake(f)
}

// OnReady implements parley.ReadyWaker when the inner stream does: an event whose
// message the filter knows is kept or dropped without waiting, and one it does not
// waits for a Poll that may wait (see Poll).
func (s *branchStreamEvents) OnReady(r parley.Readier) bool {
	w, ok := s.inner.(parley.ReadyWaker)
	return ok && w.OnReady(r)
}
