package server

import (
	"net/http"
	"runtime/trace"
)

// RequestRegion is the type of the execution-trace region each request is served in
// (runtime/trace; the trace from --debug-addr's /debug/pprof/trace). In `go tool trace`
// a request is then one span of its goroutine, and a tool can tell what of its wall
// time went where (bench/pair -trace: its waits for Postgres, and the goroutines it
// started), which a CPU profile cannot: at one client much of a read is waiting.
const RequestRegion = "http request"

// withTraceRegion serves each request in a RequestRegion while the execution tracer
// runs, and costs an atomic load when it does not.
func withTraceRegion(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !trace.IsEnabled() {
			next.ServeHTTP(w, r)
			return
		}
		defer trace.StartRegion(r.Context(), RequestRegion).End()
		next.ServeHTTP(w, r)
	})
}
