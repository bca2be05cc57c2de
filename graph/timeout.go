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
// long as the client wants. The deadline counts from the request's arrival (when the
// transport began reading it), so reading, parsing and validating it count too: they
// cannot be interrupted, which is why the limits bound their work beforehand
// (TOO_MANY_TOKENS, TOO_MANY_SELECTIONS), but what they took is not given again.
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
	oc := graphql.GetOperationContext(ctx)
	if oc.Operation == nil || oc.Operation.Operation == ast.Subscription {
		return next(ctx)
	}
	start := oc.Stats.Read.Start
	if start.IsZero() {
		start = oc.Stats.OperationStart
	}
	if start.IsZero() {
		start = time.Now()
	}
	ctx, cancel := context.WithDeadline(ctx, start.Add(t.d))
	defer cancel()
	return next(ctx)
}
