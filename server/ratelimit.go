package server

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/99designs/gqlgen/graphql"
	lru "github.com/hashicorp/golang-lru/v2"
	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/gqlerror"
	"golang.org/x/time/rate"

	"github.com/parley-dev/parley/graph/transport"
)

// RateLimits bound how fast one owner may go: requests to /graphql and mutations, each a
// token bucket (golang.org/x/time/rate) of a sustained rate per second and a burst. A
// zero rate is no limit. Local mode has none: there is one owner, on one machine.
type RateLimits struct {
	Requests, RequestsBurst int
	Writes, WritesBurst     int
}

// codeRateLimited is the error code of a request or write over its owner's rate.
const codeRateLimited = "RATE_LIMITED"

// maxLimitedOwners bounds the owners whose buckets are kept; the least recently seen
// go first, and come back full, which only ever errs on the side of letting a request
// through.
const maxLimitedOwners = 10000

// ownerLimiter keeps a token bucket per owner.
type ownerLimiter struct {
	limit rate.Limit
	burst int
	mu    sync.Mutex // makes get-or-create atomic
	byKey *lru.Cache[string, *rate.Limiter]
}

func newOwnerLimiter(perSecond, burst int) *ownerLimiter {
	if perSecond <= 0 {
		return nil
	}
	c, err := lru.New[string, *rate.Limiter](maxLimitedOwners)
	if err != nil {
		panic(err) // only for a size below 1
	}
	return &ownerLimiter{limit: rate.Limit(perSecond), burst: max(burst, 1), byKey: c}
}

// take takes a token from owner's bucket, or says how long until one is there. A nil
// ownerLimiter always allows.
func (l *ownerLimiter) take(owner string) (ok bool, retryAfter time.Duration) {
	if l == nil {
		return true, 0
	}
	l.mu.Lock()
	lim, found := l.byKey.Get(owner)
	if !found {
		lim = rate.NewLimiter(l.limit, l.burst)
		l.byKey.Add(owner, lim)
	}
	l.mu.Unlock()
	r := lim.Reserve()
	if d := r.Delay(); d > 0 {
		r.Cancel() // refused: the token is not spent
		return false, d
	}
	return true, 0
}

// retryAfterSeconds is d as Retry-After says it: whole seconds, rounded up, at least 1.
func retryAfterSeconds(d time.Duration) int {
	return max(1, int(math.Ceil(d.Seconds())))
}

// headerKey carries the response's header to the GraphQL extension, which can then say
// Retry-After on a refused write sent over HTTP (the transport writes the header after
// the operation ran).
type headerKey struct{}

// withRateLimit refuses a request over its owner's request rate with HTTP 429,
// RATE_LIMITED and Retry-After, before it is read. It runs after authentication: the
// owner is known.
func withRateLimit(l *ownerLimiter, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx := context.WithValue(r.Context(), headerKey{}, w.Header())
		if p := principalFrom(ctx); p != nil && p != localPrincipal {
			if ok, wait := l.take(p.Owner); !ok {
				secs := retryAfterSeconds(wait)
				w.Header().Set("Retry-After", strconv.Itoa(secs))
				transport.WriteError(w, r, http.StatusTooManyRequests, codeRateLimited,
					fmt.Sprintf("Too many requests for this owner: try again in %d s.", secs))
				return
			}
		}
		next.ServeHTTP(w, r.WithContext(ctx))
	})
}

// writeLimit refuses a mutation over its owner's write rate, over every transport:
// RATE_LIMITED with retryAfter (seconds) in the error's extensions, and Retry-After on
// an HTTP response.
type writeLimit struct{ l *ownerLimiter }

var _ interface {
	graphql.HandlerExtension
	graphql.OperationContextMutator
} = writeLimit{}

func (writeLimit) ExtensionName() string                   { return "WriteRateLimit" }
func (writeLimit) Validate(graphql.ExecutableSchema) error { return nil }

// MutateOperationContext implements graphql.OperationContextMutator.
func (e writeLimit) MutateOperationContext(ctx context.Context, op *graphql.OperationContext) *gqlerror.Error {
	if op.Operation == nil || op.Operation.Operation != ast.Mutation {
		return nil
	}
	p := principalFrom(ctx)
	if p == nil || p == localPrincipal {
		return nil
	}
	ok, wait := e.l.take(p.Owner)
	if ok {
		return nil
	}
	secs := retryAfterSeconds(wait)
	if h, _ := ctx.Value(headerKey{}).(http.Header); h != nil {
		h.Set("Retry-After", strconv.Itoa(secs))
	}
	return &gqlerror.Error{
		Message:    fmt.Sprintf("Too many writes for this owner: try again in %d s.", secs),
		Extensions: map[string]any{"code": codeRateLimited, "retryAfter": secs},
	}
}
