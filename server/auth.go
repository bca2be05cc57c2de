package server

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"time"

	"github.com/parley-dev/parley"
	"github.com/parley-dev/parley/graph/transport"
)

// Who may see what. With an Authenticator, every GraphQL request names its principal
// with Authorization: Bearer <credential> (websockets may instead put it in
// connection_init's payload), and acts for its owner. Without one the server is in
// local mode: every request acts for parley.LocalOwner, which is safe only on a
// loopback address (CheckListenAddr), and only for requests addressed to a loopback
// host name, so that a web page cannot reach it by rebinding its own name to 127.0.0.1.

// CheckListenAddr refuses local mode (no authentication configured) on an address
// other clients could reach.
func CheckListenAddr(addr string, authConfigured bool) error {
	if authConfigured {
		return nil
	}
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil // not an address: listening on it fails, saying so
	}
	if isLoopbackHost(host) {
		return nil
	}
	return fmt.Errorf("refusing to serve %s without authentication: every request would act as the local owner. "+
		"Bind to a loopback address (--addr 127.0.0.1:8080), or configure authentication: "+
		"API tokens (--auth-tokens, then parley token create --owner NAME) or JWTs (--jwt-secret, --jwks-file)", addr)
}

// isLoopbackHost reports whether host (a name or an address, without port) is this
// machine only. An empty host (":8080") listens everywhere.
func isLoopbackHost(host string) bool {
	if strings.EqualFold(host, "localhost") || strings.HasSuffix(strings.ToLower(host), ".localhost") {
		return true
	}
	a, err := netip.ParseAddr(strings.TrimSuffix(strings.TrimPrefix(host, "["), "]"))
	return err == nil && a.IsLoopback()
}

type principalKey struct{}

func principalFrom(ctx context.Context) *parley.Principal {
	p, _ := ctx.Value(principalKey{}).(*parley.Principal)
	return p
}

func withPrincipal(ctx context.Context, p *parley.Principal) context.Context {
	requestInfoFrom(ctx).setOwner(p.Owner)
	return parley.WithOwner(context.WithValue(ctx, principalKey{}, p), p.Owner)
}

var localPrincipal = &parley.Principal{Owner: parley.LocalOwner, Method: "local"}

// bearer returns the credential of an Authorization header, and whether there was a
// header at all.
func bearer(h string) (string, bool) {
	if h == "" {
		return "", false
	}
	scheme, cred, ok := strings.Cut(strings.TrimSpace(h), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", true
	}
	return strings.TrimSpace(cred), true
}

func unauthenticated(w http.ResponseWriter, r *http.Request, msg string) {
	w.Header().Set("WWW-Authenticate", `Bearer realm="parley"`)
	transport.WriteError(w, r, http.StatusUnauthorized, "UNAUTHENTICATED", msg)
}

// withAuth authenticates GraphQL requests. A websocket upgrade without an
// Authorization header goes through: it authenticates in connection_init.
func withAuth(a parley.Authenticator, rev *revocations, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		cred, present := bearer(r.Header.Get("Authorization"))
		if localMode(a) {
			if !isLoopbackHost(hostOnly(r.Host)) {
				transport.WriteError(w, r, http.StatusMisdirectedRequest, "LOCAL_MODE_HOST",
					fmt.Sprintf("this server runs without authentication and answers only requests addressed to localhost or a loopback address, not %q", r.Host))
				return
			}
			if a == nil || !isShareCredential(cred) {
				next.ServeHTTP(w, r.WithContext(withPrincipal(r.Context(), localPrincipal)))
				return
			}
			// A share link holds to its scope in local mode too: authenticated below.
		}
		if !present {
			if transport.KindOf(r.Context()) == transport.Websocket {
				next.ServeHTTP(w, r)
				return
			}
			unauthenticated(w, r, "This server requires authentication: send Authorization: Bearer <token>.")
			return
		}
		if cred == "" {
			unauthenticated(w, r, "The Authorization header must be Bearer <token>.")
			return
		}
		p, err := a.Authenticate(r.Context(), cred)
		if err != nil {
			if parley.ErrorCode(err) != parley.EUNAUTHORIZED {
				status, code := http.StatusInternalServerError, "INTERNAL_SERVER_ERROR"
				msg := "Internal server error."
				if parley.ErrorCode(err) == parley.EUNAVAILABLE {
					status, code, msg = http.StatusServiceUnavailable, "SERVICE_UNAVAILABLE", parley.ErrorMessage(err)
				}
				transport.WriteError(w, r, status, code, msg)
				return
			}
			unauthenticated(w, r, parley.ErrorMessage(err))
			return
		}
		ctx := withPrincipal(r.Context(), p)
		if transport.KindOf(ctx) == transport.EventStream {
			// An SSE stream ends when its token is revoked. (A websocket outlives its
			// request's context: websocketAuth watches it.)
			if valid := rev.watch(ctx, p); valid != ctx {
				ctx = transport.WithCredentialContext(ctx, valid)
			}
		}
		if !p.ExpiresAt.IsZero() {
			ctx = transport.WithCredentialExpiry(ctx, p.ExpiresAt)
		}
		next.ServeHTTP(w, r.WithContext(ctx))
	})
}

// websocketAuth authenticates a websocket's connection_init payload: {"Authorization":
// "Bearer <token>"} (any case of the key) or {"authToken": "<token>"}. Without either,
// the Authorization header of the upgrade request, if it had one, holds.
func websocketAuth(a parley.Authenticator, rev *revocations) transport.WebsocketAuthFunc {
	return func(ctx context.Context, payload map[string]any) (context.Context, time.Time, error) {
		cred, present := "", false
		for k, v := range payload {
			s, _ := v.(string)
			switch {
			case strings.EqualFold(k, "authorization"):
				cred, _ = bearer(s)
				present = true
			case k == "authToken":
				cred, present = strings.TrimSpace(s), true
			}
		}
		if localMode(a) && (a == nil || !isShareCredential(cred)) {
			if p := principalFrom(ctx); !present && p != nil && p.Conversation != "" {
				return rev.watch(ctx, p), p.ExpiresAt, nil // the upgrade's share link holds
			}
			return withPrincipal(ctx, localPrincipal), time.Time{}, nil
		}
		if !present {
			if p := principalFrom(ctx); p != nil {
				return rev.watch(ctx, p), p.ExpiresAt, nil
			}
			return ctx, time.Time{}, &transport.WebsocketRefusal{Code: transport.CloseUnauthorized,
				Reason: `Unauthorized: send {"Authorization": "Bearer <token>"} in connection_init`}
		}
		p, err := a.Authenticate(ctx, cred)
		if err != nil {
			reason := "Forbidden: " + parley.ErrorMessage(err)
			if code := parley.ErrorCode(err); code != parley.EUNAUTHORIZED {
				reason = "Forbidden: the credential could not be checked"
			}
			// A close reason is at most 123 bytes.
			if len(reason) > 120 {
				reason = reason[:120]
			}
			return ctx, time.Time{}, &transport.WebsocketRefusal{Code: transport.CloseForbidden, Reason: reason}
		}
		return rev.watch(withPrincipal(ctx, p), p), p.ExpiresAt, nil
	}
}

func hostOnly(hostport string) string {
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		return h
	}
	return hostport
}
