package server

import (
	"context"
	"net/http"

	"github.com/parley-dev/parley/graph/transport"
)

// withShutdown ends streaming requests (websockets, SSE: see transport.Kind) when
// shutdown is done:
// the endpoint then closes websockets with "going away" and cuts SSE streams without
// completing them (see graph.HandlerConfig.Shutdown), and http.Server.Shutdown, which
// waits for the requests in flight, need not wait for streams that never end. Other
// requests are left to finish. A nil shutdown never comes.
func withShutdown(shutdown context.Context, next http.Handler) http.Handler {
	if shutdown == nil {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !transport.KindOf(r.Context()).Streaming() {
			next.ServeHTTP(w, r)
			return
		}
		ctx, cancel := context.WithCancel(r.Context())
		defer cancel()
		defer context.AfterFunc(shutdown, cancel)()
		next.ServeHTTP(w, r.WithContext(ctx))
	})
}
