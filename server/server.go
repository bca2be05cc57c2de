// Package server assembles Parley's HTTP surface: the GraphQL endpoint, the playground,
// health checks, request ids and access logs.
package server

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"log/slog"
	"net/http"
	"regexp"
	"strings"
	"time"

	"github.com/99designs/gqlgen/graphql"
	"go.opentelemetry.io/otel/trace"

	"github.com/parley-dev/parley"
	"github.com/parley-dev/parley/graph"
	"github.com/parley-dev/parley/metrics"
	"github.com/parley-dev/parley/playground"
	"github.com/parley-dev/parley/tracing"
)

// Config is what the server serves.
type Config struct {
	Conversations parley.ConversationService
	Messages      parley.MessageService
	// Events serves subscriptions (a realtime.Feed); nil turns them away.
	Events parley.EventService
	// Processing runs processing steps and ToolWork serves tool workers; nil turns
	// those requests away.
	Processing parley.ProcessingService
	ToolWork   parley.ToolWorkService
	// Interop imports and exports histories (an interop.Service); nil turns those
	// requests away.
	Interop parley.InteropService
	// Ready reports whether the server can serve requests (the database answers).
	Ready  func(ctx context.Context) error
	Logger *slog.Logger
	// Introspection allows schema introspection; the playground needs it.
	Introspection bool
	// GraphQL tunes the endpoint; its Logger and Introspection are set from this Config.
	GraphQL graph.HandlerConfig
	// Auth authenticates GraphQL requests (see auth.go); nil is local mode, where every
	// request acts for parley.LocalOwner: serve it on a loopback address only
	// (CheckListenAddr).
	Auth parley.Authenticator
	// TrustedOrigins are origins ("https://app.example.com") whose pages may send
	// cross-origin POSTs (CSRF protection refuses the others).
	TrustedOrigins []string
	// Metrics counts GraphQL operations and subscriptions; nil counts nothing.
	// ServeMetrics serves it at GET /metrics (else the caller serves it elsewhere).
	Metrics      *metrics.Metrics
	ServeMetrics bool
	// TracerProvider traces GraphQL operations (see package tracing); nil traces
	// nothing.
	TracerProvider trace.TracerProvider
}

// New returns the server's handler: the playground at /, GraphQL at /graphql, and
// /healthz (the process is up) and /readyz (it can serve: the database answers).
func New(cfg Config) http.Handler {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	gqlCfg := cfg.GraphQL
	gqlCfg.Logger, gqlCfg.Introspection = cfg.Logger, cfg.Introspection
	resolver := &graph.Resolver{
		ConversationService: cfg.Conversations,
		MessageService:      cfg.Messages,
		EventService:        cfg.Metrics.Events(cfg.Events), // counts delivery lag
		ProcessingService:   cfg.Processing,
		ToolWorkService:     cfg.ToolWork,
		InteropService:      cfg.Interop,
		Logger:              cfg.Logger,
	}
	gqlCfg.WebsocketAuth = websocketAuth(cfg.Auth)
	if cfg.TracerProvider != nil {
		gqlCfg.Extensions = append([]graphql.HandlerExtension{tracing.GraphQL(cfg.TracerProvider)}, gqlCfg.Extensions...)
	}
	if cfg.Metrics != nil {
		gqlCfg.Extensions = append([]graphql.HandlerExtension{cfg.Metrics.GraphQL()}, gqlCfg.Extensions...)
	}
	endpoint := withOrigins(gqlCfg.WebsocketOrigins, withAuth(cfg.Auth, graph.NewHandler(resolver, gqlCfg)))
	endpoint, err := withCSRF(cfg.TrustedOrigins, endpoint)
	if err != nil {
		panic("server: " + err.Error()) // checked with the configuration
	}
	mux := http.NewServeMux()
	mux.Handle("/graphql", withShutdown(gqlCfg.Shutdown, endpoint))
	mux.Handle("/", playground.Handler("Parley", "/graphql", "/playground/assets/"))
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.Write([]byte("ok\n"))
	})
	if cfg.Metrics != nil && cfg.ServeMetrics {
		mux.Handle("GET /metrics", cfg.Metrics.Handler())
	}
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		if cfg.Ready != nil {
			ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
			defer cancel()
			if err := cfg.Ready(ctx); err != nil {
				w.WriteHeader(http.StatusServiceUnavailable)
				w.Write([]byte("not ready: database unavailable\n"))
				return
			}
		}
		w.Write([]byte("ok\n"))
	})
	return withRequestID(withAccessLog(cfg.Logger, mux))
}

// withShutdown ends streaming requests (websocket upgrades, SSE) when shutdown is done:
// the endpoint then closes websockets with "going away" and cuts SSE streams without
// completing them (see graph.HandlerConfig.Shutdown), and http.Server.Shutdown, which
// waits for the requests in flight, need not wait for streams that never end. Other
// requests are left to finish. A nil shutdown never comes.
func withShutdown(shutdown context.Context, next http.Handler) http.Handler {
	if shutdown == nil {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !strings.EqualFold(r.Header.Get("Upgrade"), "websocket") && !strings.Contains(r.Header.Get("Accept"), "text/event-stream") {
			next.ServeHTTP(w, r)
			return
		}
		ctx, cancel := context.WithCancel(r.Context())
		defer cancel()
		defer context.AfterFunc(shutdown, cancel)()
		next.ServeHTTP(w, r.WithContext(ctx))
	})
}

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
		next.ServeHTTP(w, r.WithContext(graph.WithRequestID(r.Context(), id)))
	})
}

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

func withAccessLog(log *slog.Logger, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		rec := &statusRecorder{ResponseWriter: w}
		next.ServeHTTP(rec, r)
		if rec.status == 0 {
			rec.status = http.StatusOK
		}
		log.LogAttrs(r.Context(), slog.LevelInfo, "request",
			slog.String("method", r.Method), slog.String("path", r.URL.Path),
			slog.Int("status", rec.status), slog.Duration("duration", time.Since(start)),
			slog.String("requestId", graph.RequestID(r.Context())))
	})
}
