package server

import (
	"context"
	"sync"

	"github.com/99designs/gqlgen/graphql"
	"github.com/vektah/gqlparser/v2/gqlerror"
)

// requestInfo is what the access log says about a request beyond its HTTP line: who
// it acted for and which GraphQL operation it ran. The handlers further in fill it in
// (authentication the owner, the GraphQL extension the operation); a websocket's
// operations may do so from their own goroutines, hence the lock.
type requestInfo struct {
	mu sync.Mutex
	// owner is the principal's owner ("" before authentication, or when it failed).
	owner string
	// operation is the last operation's name ("" for an anonymous one) and type.
	operation, operationType string
	// graphQL is set once the request reached GraphQL (its parameters were read):
	// a request answered with an error before that was refused at the HTTP layer.
	graphQL bool
}

type requestInfoKey struct{}

func withRequestInfo(ctx context.Context) (context.Context, *requestInfo) {
	ri := &requestInfo{}
	return context.WithValue(ctx, requestInfoKey{}, ri), ri
}

func requestInfoFrom(ctx context.Context) *requestInfo {
	ri, _ := ctx.Value(requestInfoKey{}).(*requestInfo)
	return ri
}

func (ri *requestInfo) setOwner(owner string) {
	if ri == nil {
		return
	}
	ri.mu.Lock()
	ri.owner = owner
	ri.mu.Unlock()
}

func (ri *requestInfo) get() (owner, operation, operationType string, graphQL bool) {
	ri.mu.Lock()
	defer ri.mu.Unlock()
	return ri.owner, ri.operation, ri.operationType, ri.graphQL
}

// operationInfo records each request's operation in its requestInfo.
type operationInfo struct{}

var _ interface {
	graphql.HandlerExtension
	graphql.OperationParameterMutator
	graphql.OperationContextMutator
} = operationInfo{}

func (operationInfo) ExtensionName() string                   { return "OperationInfo" }
func (operationInfo) Validate(graphql.ExecutableSchema) error { return nil }

// MutateOperationParameters marks the request as having reached GraphQL, and records
// the operation name it asked for, which is all there is when the document does not
// parse.
func (operationInfo) MutateOperationParameters(ctx context.Context, p *graphql.RawParams) *gqlerror.Error {
	if ri := requestInfoFrom(ctx); ri != nil {
		ri.mu.Lock()
		ri.graphQL, ri.operation = true, p.OperationName
		ri.mu.Unlock()
	}
	return nil
}

// MutateOperationContext records the operation as parsed: its type, and its name
// when the request named none.
func (operationInfo) MutateOperationContext(ctx context.Context, op *graphql.OperationContext) *gqlerror.Error {
	ri := requestInfoFrom(ctx)
	if ri == nil || op.Operation == nil {
		return nil
	}
	ri.mu.Lock()
	ri.operationType = string(op.Operation.Operation)
	if ri.operation == "" {
		ri.operation = op.Operation.Name
	}
	ri.mu.Unlock()
	return nil
}
