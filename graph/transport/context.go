package transport

import (
	"context"
	"encoding/json"
	"net/http"
	"time"

	"github.com/vektah/gqlparser/v2/gqlerror"
)

// requestIDKey carries the request id from the HTTP middleware to error responses and
// logs.
type requestIDKey struct{}

// WithRequestID returns ctx carrying the request's id.
func WithRequestID(ctx context.Context, id string) context.Context {
	return context.WithValue(ctx, requestIDKey{}, id)
}

// RequestID returns the request id carried by ctx, or "".
func RequestID(ctx context.Context) string {
	id, _ := ctx.Value(requestIDKey{}).(string)
	return id
}

// credentialExpiryKey carries when an HTTP request's credential expires.
type credentialExpiryKey struct{}

// WithCredentialExpiry returns ctx carrying when its credential expires: an SSE stream
// started with it is cut then, without completing, so that its client subscribes again
// with a fresh credential.
func WithCredentialExpiry(ctx context.Context, t time.Time) context.Context {
	return context.WithValue(ctx, credentialExpiryKey{}, t)
}

func credentialExpiry(ctx context.Context) time.Time {
	t, _ := ctx.Value(credentialExpiryKey{}).(time.Time)
	return t
}

// credentialKey carries a context that ends when an HTTP request's credential stops
// holding.
type credentialKey struct{}

// WithCredentialContext returns ctx carrying valid, a context that ends when its
// credential is revoked: an SSE stream started with it is cut then, without
// completing, as at its expiry.
func WithCredentialContext(ctx, valid context.Context) context.Context {
	return context.WithValue(ctx, credentialKey{}, valid)
}

func credentialContext(ctx context.Context) context.Context {
	v, _ := ctx.Value(credentialKey{}).(context.Context)
	return v
}

// WriteError answers a request turned away before GraphQL runs (unauthenticated,
// cross-origin, not GraphQL-over-HTTP...) with a GraphQL response holding one error with
// this code, and the request id.
func WriteError(w http.ResponseWriter, r *http.Request, status int, code, msg string) {
	ext := map[string]any{"code": code}
	if id := RequestID(r.Context()); id != "" {
		ext["requestId"] = id
	}
	body, err := json.Marshal(struct {
		Errors gqlerror.List `json:"errors"`
	}{gqlerror.List{{Message: msg, Extensions: ext}}})
	if err != nil {
		panic(err) // a struct of strings always marshals
	}
	w.Header().Set("Content-Type", mediaJSON)
	w.WriteHeader(status)
	w.Write(body)
}
