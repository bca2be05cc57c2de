package server

import (
	"net/http"

	"github.com/rs/cors"
)

// withCORS lets pages on the trusted origins ("https://app.example.com") call the
// endpoint with fetch: it answers their preflight OPTIONS itself, before authentication
// (a preflight carries no credentials), and marks their responses readable, errors
// included, so that a page sees a 401's body and the X-Request-Id of every answer. With
// no trusted origin it sends no CORS header at all and browsers keep the same-origin
// rule. rs/cors is the maintained implementation of the Fetch standard's CORS protocol
// (origin reflection, Vary, preflight caching, Private Network Access); hand-written
// CORS gets these wrong in ways browsers punish silently.
//
// Credentials are allowed (Access-Control-Allow-Credentials: true) so that clients
// configured with credentials: "include" (a common Apollo and urql setting) work; Parley
// reads no cookie, so this grants a trusted page nothing a token-less request lacks.
func withCORS(trusted []string, next http.Handler) http.Handler {
	if len(trusted) == 0 {
		return next
	}
	c := cors.New(cors.Options{
		AllowedOrigins:   trusted,
		AllowedMethods:   []string{http.MethodGet, http.MethodPost},
		AllowedHeaders:   []string{"Authorization", "Content-Type", "Accept", "X-Request-Id", "Traceparent", "Tracestate"},
		ExposedHeaders:   []string{"X-Request-Id", "WWW-Authenticate"},
		AllowCredentials: true,
		MaxAge:           600,
	})
	return c.Handler(next)
}
