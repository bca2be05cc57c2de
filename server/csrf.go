package server

import (
	"fmt"
	"net/http"

	"github.com/parley-dev/parley/graph/transport"
)

// withCSRF refuses cross-origin unsafe requests (POST from another site's page) with
// Go's http.CrossOriginProtection, which reads Sec-Fetch-Site and Origin; requests
// without them (not from a browser) go through. trusted lists origins allowed anyway
// ("https://app.example.com"). GraphQL POSTs must be application/json, which a page
// cannot send cross-origin without a CORS preflight this server never grants, so this
// is a second line; the multipart and form transports, which browsers can send
// cross-origin, are not registered at all.
func withCSRF(trusted []string, next http.Handler) (http.Handler, error) {
	p := http.NewCrossOriginProtection()
	for _, o := range trusted {
		if err := p.AddTrustedOrigin(o); err != nil {
			return nil, fmt.Errorf("trusted origin %q: %w", o, err)
		}
	}
	p.SetDenyHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		transport.WriteError(w, r, http.StatusForbidden, "CROSS_ORIGIN_REFUSED",
			"cross-origin requests are refused: send this request from the server's own origin, or list the page's origin in the trusted origins setting")
	}))
	return p.Handler(next), nil
}
