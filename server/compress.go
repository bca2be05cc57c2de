package server

import (
	"net/http"

	"github.com/klauspost/compress/gzhttp"

	"github.com/parley-dev/parley/graph/transport"
)

// withCompression gzips answers for clients that accept it: pages of messages are
// JSON that compresses many times over. It uses
// klauspost/compress's gzhttp, which negotiates Accept-Encoding, sets Vary, skips small
// bodies and types that do not compress, and leaves ranges and already-encoded bodies
// alone. Streams are never wrapped (transport.Kind): an SSE event must reach the client
// when it is flushed, not when a compressor's block fills, and a websocket upgrade needs
// the connection untouched (websockets compress per message, if at all).
func withCompression(next http.Handler) http.Handler {
	wrap, err := gzhttp.NewWrapper()
	if err != nil {
		panic("server: gzhttp: " + err.Error()) // constant options
	}
	compressed := wrap(next)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if transport.KindOf(r.Context()).Streaming() {
			next.ServeHTTP(w, r)
			return
		}
		compressed.ServeHTTP(w, r)
	})
}
