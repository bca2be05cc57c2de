package server

import (
	"context"
	"strings"

	"github.com/99designs/gqlgen/graphql"
	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/gqlerror"

	"github.com/parley-dev/parley"
)

// Share links (parley.ShareLinkService) are read-only API tokens scoped to one
// conversation. They are authenticated by the store whatever else the server accepts
// (JWTs only, or nothing: local mode), because a share link handed to someone must
// never fall back to acting as the owner: in local mode a request with a share link's
// secret acts for that link, and one with a revoked or expired link is refused.

// shareAuth authenticates share links with the store and every other credential with
// next (nil: local mode).
type shareAuth struct {
	next   parley.Authenticator
	shares parley.ShareLinkService
}

// withShareLinks returns a, authenticating share links too when shares is set.
func withShareLinks(a parley.Authenticator, shares parley.ShareLinkService) parley.Authenticator {
	if shares == nil {
		return a
	}
	return shareAuth{next: a, shares: shares}
}

func (s shareAuth) Authenticate(ctx context.Context, cred string) (*parley.Principal, error) {
	if isShareCredential(cred) {
		return s.shares.AuthenticateToken(ctx, cred)
	}
	if s.next == nil {
		return localPrincipal, nil
	}
	return s.next.Authenticate(ctx, cred)
}

func isShareCredential(cred string) bool { return strings.HasPrefix(cred, parley.ShareTokenPrefix) }

// localMode reports whether a authenticates nothing but share links: the server runs
// without authentication.
func localMode(a parley.Authenticator) bool {
	if s, ok := a.(shareAuth); ok {
		return s.next == nil
	}
	return a == nil
}

// shareScope holds a share link to its conversation: its operations may read that
// conversation (conversation(id:) or node(id:) with its id, and its messageAdded,
// messageStream and messageUpdated subscriptions) and nothing else, checked once the
// operation has parsed, before anything runs, on every transport. It is an allowlist,
// so a root field added later is refused to share links until it is listed here.
// Mutations are refused already by readOnly (a share link is read-only).
type shareScope struct{}

var _ interface {
	graphql.HandlerExtension
	graphql.OperationContextMutator
} = shareScope{}

func (shareScope) ExtensionName() string                   { return "ShareScope" }
func (shareScope) Validate(graphql.ExecutableSchema) error { return nil }

// The root fields a share link may select, and the argument naming the conversation
// ("" for fields that read nothing of any conversation).
var shareFields = map[ast.Operation]map[string]string{
	ast.Query: {
		"conversation": "id",
		"node":         "id",
		"__typename":   "",
	},
	ast.Subscription: {
		"messageAdded":   "conversationId",
		"messageStream":  "conversationId",
		"messageUpdated": "conversationId",
	},
}

// MutateOperationContext implements graphql.OperationContextMutator.
func (shareScope) MutateOperationContext(ctx context.Context, op *graphql.OperationContext) *gqlerror.Error {
	p := principalFrom(ctx)
	if p == nil || p.Conversation == "" || op.Operation == nil {
		return nil
	}
	allowed := shareFields[op.Operation.Operation]
	if err := checkShareSelections(op, allowed, p.Conversation, op.Operation.SelectionSet, map[string]bool{}); err != nil {
		return err
	}
	return nil
}

func shareRefusal(what string) *gqlerror.Error {
	return &gqlerror.Error{
		Message:    "This share link may only read its own conversation: " + what + ".",
		Extensions: map[string]any{"code": "FORBIDDEN"},
	}
}

func checkShareSelections(op *graphql.OperationContext, allowed map[string]string, conv string, set ast.SelectionSet, seen map[string]bool) *gqlerror.Error {
	for _, sel := range set {
		switch s := sel.(type) {
		case *ast.Field:
			arg, ok := allowed[s.Name]
			if !ok {
				return shareRefusal(s.Name + " is not available to it")
			}
			if arg == "" {
				continue
			}
			a := s.Arguments.ForName(arg)
			if a == nil {
				return shareRefusal(s.Name + " needs " + arg)
			}
			v, err := a.Value.Value(op.Variables)
			if err != nil {
				return shareRefusal(s.Name + ": " + err.Error())
			}
			id, _ := v.(string)
			if !sameConversation(id, conv) {
				return shareRefusal(s.Name + "(" + arg + ": " + quoteID(id) + ") is another")
			}
		case *ast.InlineFragment:
			if err := checkShareSelections(op, allowed, conv, s.SelectionSet, seen); err != nil {
				return err
			}
		case *ast.FragmentSpread:
			if seen[s.Name] {
				continue
			}
			seen[s.Name] = true
			f := op.Doc.Fragments.ForName(s.Name)
			if f == nil {
				return shareRefusal("fragment " + s.Name + " is unknown")
			}
			if err := checkShareSelections(op, allowed, conv, f.SelectionSet, seen); err != nil {
				return err
			}
		}
	}
	return nil
}

// sameConversation compares conversation ids by their keys, so that another spelling of
// the same id (a UUID's case) reads the same conversation and nothing else does.
func sameConversation(id, conv string) bool {
	a, ok1 := parley.ParseConversationID(id)
	b, ok2 := parley.ParseConversationID(conv)
	return ok1 && ok2 && strings.EqualFold(a, b)
}

func quoteID(id string) string {
	if len(id) > 60 {
		id = id[:60] + "…"
	}
	return `"` + id + `"`
}
