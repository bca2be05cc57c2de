package server

import (
	"log/slog"
	"net/http"
	"time"

	"github.com/parley-dev/parley/graph/transport"
	"github.com/parley-dev/parley/metrics"
)

// statusRecorder remembers the status a handler wrote. It passes Flush and Unwrap
// through, so streaming responses and websocket upgrades still work behind it.
type statusRecorder struct {
	http.ResponseWriter
	status int
}

func (s *statusRecorder) WriteHeader(code int) {
	if s.status == 0 {
		s.status = code
	}
	s.ResponseWriter.WriteHeader(code)
}

func (s *statusRecorder) Flush() {
	if f, ok := s.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (s *statusRecorder) Unwrap() http.ResponseWriter { return s.ResponseWriter }

// withAccessLog logs every request once it is answered: method, path, status, duration
// in milliseconds, request id, and for GraphQL requests the owner it acted for and the
// operation it ran (the log handler adds the trace id). A request refused before it
// reached GraphQL (401, 403, 405, 413, 421, 429...) is counted by m, by status.
func withAccessLog(log *slog.Logger, m *metrics.Metrics, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		rec := &statusRecorder{ResponseWriter: w}
		ctx, ri := withRequestInfo(r.Context())
		next.ServeHTTP(rec, r.WithContext(ctx))
		if rec.status == 0 {
			rec.status = http.StatusOK
		}
		owner, op, opType, reached := ri.get()
		attrs := []slog.Attr{
			slog.String("method", r.Method), slog.String("path", r.URL.Path),
			slog.Int("status", rec.status),
			slog.Float64("durationMs", float64(time.Since(start).Microseconds())/1000),
			slog.String("requestId", transport.RequestID(r.Context())),
		}
		if owner != "" {
			attrs = append(attrs, slog.String("owner", owner))
		}
		if opType != "" {
			attrs = append(attrs, slog.String("operationType", opType))
		}
		if op != "" {
			attrs = append(attrs, slog.String("operation", op))
		}
		log.LogAttrs(r.Context(), slog.LevelInfo, "request", attrs...)
		if r.URL.Path == "/graphql" && !reached && rec.status >= 400 {
			m.Refused(rec.status)
		}
	})
}
