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
	meta.Tree = info
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
	return siblingsOf(m, t), nil
}

func siblingsOf(m parley.Message, t *parley.TreeInfo) *model.Siblings {
	ids := t.SiblingIDs
	i := t.SiblingIndex(m.Meta().ID)
	if i < 0 {
		ids, i = append([]string{m.Meta().ID}, ids...), 0
	}
	return &model.Siblings{Count: len(ids), Index: i, Ids: ids}
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
