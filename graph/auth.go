package graph

import (
	"context"
	"errors"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/99designs/gqlgen/graphql/handler/transport"
)

// Authentication happens in front of the handler (server's middleware) for HTTP and
// SSE, and here, in connection_init, for websockets: a browser cannot set headers on a
// websocket. This file is what the handler needs for that: the hook that checks the
// init payload, the per-connection state that remembers when the credential expires
// (so the socket closes then, with graphql-transport-ws's 4403), and the expiry of an
// SSE request's credential (its stream is cut then).

// Close codes of graphql-transport-ws for refused credentials. graphql-ws clients do
// not retry 4401 (no credentials: retrying cannot help) and do retry 4403 (a bad or
// expired credential: the client's connectionParams may fetch a fresh one).
const (
	CloseUnauthorized = 4401
	CloseForbidden    = 4403
)

// WebsocketAuthFunc authenticates a websocket from its connection_init payload and
// returns the context its operations run in (carrying the owner) and when the
// credential expires (zero for never). An error refuses the connection; a
// *WebsocketRefusal error says with which close code.
type WebsocketAuthFunc func(ctx context.Context, payload map[string]any) (context.Context, time.Time, error)

// WebsocketRefusal refuses a websocket connection with a close code and a reason the
// client sees.
type WebsocketRefusal struct {
	Code   int
	Reason string
}

func (e *WebsocketRefusal) Error() string { return e.Reason }

// wsState is one websocket connection's: put in the upgrade request's context, so that
// both the connection wrapper (streamConn) and the operations see it.
type wsState struct {
	expiresAt     atomic.Pointer[time.Time]
	subscriptions atomic.Int64
}

type wsStateKey struct{}

func wsStateFrom(ctx context.Context) *wsState {
	st, _ := ctx.Value(wsStateKey{}).(*wsState)
	return st
}

// expired reports whether the connection's credential has expired.
func (st *wsState) expired() bool {
	if st == nil {
		return false
	}
	t := st.expiresAt.Load()
	return t != nil && !time.Now().Before(*t)
}

// withWebsocketState gives each websocket upgrade its wsState.
func withWebsocketState(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Upgrade") != "" {
			r = r.WithContext(context.WithValue(r.Context(), wsStateKey{}, &wsState{}))
		}
		next.ServeHTTP(w, r)
	})
}

// websocketInitFunc is the transport's InitFunc: it marks the context as a websocket's
// (see websocketInit) and runs auth, if any. On success the context ends when the
// credential expires, which closes the socket.
func websocketInitFunc(auth WebsocketAuthFunc) transport.WebsocketInitFunc {
	return func(ctx context.Context, payload transport.InitPayload) (context.Context, *transport.InitPayload, error) {
		ctx, _, _ = websocketInit(ctx, payload)
		if auth == nil {
			return ctx, nil, nil
		}
		actx, expires, err := auth(ctx, payload)
		if err != nil {
			refusal := &WebsocketRefusal{Code: CloseForbidden, Reason: "Forbidden"}
			if !errors.As(err, &refusal) {
				refusal.Reason = err.Error()
			}
			ctx = transport.WithWebsocketCloseCode(ctx, refusal.Code)
			return transport.AppendCloseReason(ctx, refusal.Reason), nil, refusal
		}
		if !expires.IsZero() {
			if st := wsStateFrom(ctx); st != nil {
				st.expiresAt.Store(&expires)
			}
			var cancel context.CancelFunc
			actx, cancel = context.WithDeadline(actx, expires)
			context.AfterFunc(ctx, cancel) // released with the connection
		}
		return actx, nil, nil
	}
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

// WriteError answers a request turned away before GraphQL runs (unauthenticated,
// cross-origin...) with a GraphQL response holding one error with this code.
func WriteError(w http.ResponseWriter, r *http.Request, status int, code, msg string) {
	writeHTTPError(w, r, status, code, msg)
}
