package server

import (
	"crypto/rand"
	"encoding/hex"
	"net/http"
	"regexp"

	"github.com/parley-dev/parley/graph/transport"
)

// validRequestID is what an incoming X-Request-Id may look like to be reused.
var validRequestID = regexp.MustCompile(`^[A-Za-z0-9._:-]{1,128}$`)

// withRequestID gives every request an id (the client's X-Request-Id when sane), sent
// back in the response header and carried to logs and error responses.
func withRequestID(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := r.Header.Get("X-Request-Id")
		if !validRequestID.MatchString(id) {
			var b [12]byte
			rand.Read(b[:])
			id = hex.EncodeToString(b[:])
		}
		w.Header().Set("X-Request-Id", id)
		next.ServeHTTP(w, r.WithContext(transport.WithRequestID(r.Context(), id)))
	})
}
