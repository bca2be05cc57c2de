package graph

import (
	"context"
	"time"

	"github.com/99designs/gqlgen/graphql"
	"github.com/vektah/gqlparser/v2/ast"
)

// requestTimeout bounds the execution of each query and mutation: whatever waits on a
// database that does not answer (a pool whose connections all hang, a host gone without
// a word) gives up when the deadline passes, and the client gets REQUEST_CANCELLED
// instead of a request that never ends. Subscriptions are not bounded: they last as
// long as the client wants.
type requestTimeout struct{ d time.Duration }

var (
	_ graphql.HandlerExtension    = requestTimeout{}
	_ graphql.ResponseInterceptor = requestTimeout{}
)

func (requestTimeout) ExtensionName() string                   { return "RequestTimeout" }
func (requestTimeout) Validate(graphql.ExecutableSchema) error { return nil }

func (t requestTimeout) InterceptResponse(ctx context.Context, next graphql.ResponseHandler) *graphql.Response {
	if t.d <= 0 || !graphql.HasOperationContext(ctx) {
		return next(ctx)
	}
	op := graphql.GetOperationContext(ctx).Operation
	if op == nil || op.Operation == ast.Subscription {
		return next(ctx)
	}
	ctx, cancel := context.WithTimeout(ctx, t.d)
	defer cancel()
	return next(ctx)
}
