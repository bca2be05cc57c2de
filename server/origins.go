package server

import (
	"fmt"
	"net/http"
	"net/url"
	"path"
	"strings"

	"github.com/parley-dev/parley/graph/transport"
)

// withOrigins refuses a websocket upgrade from an origin other than the server's own
// and the patterns given, before gqlgen accepts it (coder/websocket checks the same,
// with the same patterns, as a backstop). Browsers do not apply CORS to websockets: the
// origin check is what keeps another site's page from subscribing with the user's
// ambient access (local mode).
func withOrigins(patterns []string, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if transport.KindOf(r.Context()) != transport.Websocket || originAllowed(r, patterns) {
			next.ServeHTTP(w, r)
			return
		}
		transport.WriteError(w, r, http.StatusForbidden, "ORIGIN_NOT_ALLOWED",
			fmt.Sprintf("websocket connections from origin %q are not allowed; the server's websocket origins setting lists those that are", r.Header.Get("Origin")))
	})
}

// originAllowed follows coder/websocket's rule: no Origin (not a browser), the
// request's own host, or a pattern matching the origin's host (path.Match), or the
// whole origin when the pattern has a scheme.
func originAllowed(r *http.Request, patterns []string) bool {
	origin := r.Header.Get("Origin")
	if origin == "" {
		return true
	}
	u, err := url.Parse(origin)
	if err != nil {
		return false
	}
	if strings.EqualFold(u.Host, r.Host) {
		return true
	}
	for _, p := range patterns {
		target := u.Host
		if strings.Contains(p, "://") {
			target = u.Scheme + "://" + u.Host
		}
		if ok, err := path.Match(strings.ToLower(p), strings.ToLower(target)); err == nil && ok {
			return true
		}
	}
	return false
}
