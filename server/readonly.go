package server

import (
	"context"

	"github.com/99designs/gqlgen/graphql"
	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/gqlerror"
)

// readOnly refuses every mutation of a read-only principal (an API token made with
// --read-only, a JWT whose scopes grant reading only): a read-only frontend or a share
// link may query and subscribe (subscriptions write nothing), never write. It checks
// the operation once it has parsed, before anything runs, over HTTP, websockets and
// SSE alike: a websocket's principal comes from connection_init.
type readOnly struct{}

var _ interface {
	graphql.HandlerExtension
	graphql.OperationContextMutator
} = readOnly{}

func (readOnly) ExtensionName() string                   { return "ReadOnly" }
func (readOnly) Validate(graphql.ExecutableSchema) error { return nil }

// MutateOperationContext implements graphql.OperationContextMutator.
func (readOnly) MutateOperationContext(ctx context.Context, op *graphql.OperationContext) *gqlerror.Error {
	if op.Operation == nil || op.Operation.Operation != ast.Mutation {
		return nil
	}
	if p := principalFrom(ctx); p != nil && p.ReadOnly {
		return &gqlerror.Error{
			Message:    "This credential may only read: it is read-only, and every mutation needs a credential that may write.",
			Extensions: map[string]any{"code": "FORBIDDEN"},
		}
	}
	return nil
}
