// Package server assembles Parley's HTTP surface: the GraphQL endpoint (package graph,
// served by package graph/transport), the playground and health checks, behind the
// middleware in this package, one per file: request ids (requestid.go), access logs
// (accesslog.go), authentication and local mode (auth.go), websocket origins
// (origins.go), cross-origin protection (csrf.go) and the end of streams on shutdown
// (shutdown.go). Each request to the endpoint is classified once, at its edge
// (transport.Classify), and the middleware asks transport.KindOf rather than the headers.
package server

import (
	"context"
	"log/slog"
	"net/http"
	"slices"
	"time"

	"github.com/99designs/gqlgen/graphql"
	"go.opentelemetry.io/otel/trace"

	"github.com/parley-dev/parley"
	"github.com/parley-dev/parley/graph"
	"github.com/parley-dev/parley/graph/transport"
	"github.com/parley-dev/parley/metrics"
	"github.com/parley-dev/parley/playground"
	"github.com/parley-dev/parley/render"
	"github.com/parley-dev/parley/tracing"
	"github.com/parley-dev/parley/viewer"
)

// Config is what the server serves.
type Config struct {
	Conversations parley.ConversationService
	Messages      parley.MessageService
	// Events serves subscriptions (a realtime.Hub); nil turns them away.
	Events parley.EventService
	// Processing runs processing steps and ToolWork serves tool workers; nil turns
	// those requests away.
	Processing parley.ProcessingService
	ToolWork   parley.ToolWorkService
	// Interop imports and exports histories (an interop.Service); nil turns those
	// requests away.
	Interop parley.InteropService
	// Live writes messages while they stream; nil turns those mutations off.
	Live parley.LiveMessageService
	// Tree reads and switches conversations' branches; nil turns those fields off.
	Tree parley.TreeService
	// Search finds messages and conversations; nil turns search off.
	Search parley.SearchService
	// ShareLinks makes share links and authenticates them, in local mode too (see
	// share.go); nil turns them off.
	ShareLinks parley.ShareLinkService
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
	// Renderer renders messages' html fields; nil is render.New with the defaults.
	Renderer *render.Renderer
	// RateLimits bound each owner's requests and writes (ratelimit.go); zero rates, and
	// local mode, have none.
	RateLimits RateLimits
	// ImportAPI bounds POST /api/import (importapi.go).
	ImportAPI ImportAPI
}

// New returns the server's handler: the playground at /, the history viewer at
// /viewer/, GraphQL at /graphql, and
// /healthz (the process is up) and /readyz (it can serve: the database answers).
func New(cfg Config) http.Handler {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Renderer == nil {
		cfg.Renderer = render.New(render.Config{})
	}
	gqlCfg := cfg.GraphQL
	gqlCfg.Logger, gqlCfg.Introspection = cfg.Logger, cfg.Introspection
	resolver := &graph.Resolver{
		ConversationService:      cfg.Conversations,
		MessageService:           cfg.Messages,
		EventService:             cfg.Metrics.Events(cfg.Events), // counts delivery lag
		LiveEventService:         liveEvents(cfg.Events),
		ConversationEventService: listEvents(cfg.Events),
		ProcessingService:        cfg.Processing,
		ToolWorkService:          cfg.ToolWork,
		InteropService:           cfg.Interop,
		Renderer:                 cfg.Renderer,
		LiveMessageService:       cfg.Live,
		TreeService:              cfg.Tree,
		SearchService:            cfg.Search,
		ShareLinkService:         cfg.ShareLinks,
		Logger:                   cfg.Logger,
	}
	authn := withShareLinks(cfg.Auth, cfg.ShareLinks)
	rev := newRevocations(authn, cfg.ShareLinks, cfg.Logger) // nil without API tokens or share links
	gqlCfg.WebsocketAuth = websocketAuth(authn, rev)
	if rev != nil {
		gqlCfg.WebsocketCheck = rev.checkOperation
	}
	gqlCfg.Extensions = append(gqlCfg.Extensions, operationInfo{}, readOnly{}, shareScope{})
	// One bucket per owner for each rate, whichever endpoint takes from it.
	requests := newOwnerLimiter(cfg.RateLimits.Requests, cfg.RateLimits.RequestsBurst)
	writes := newOwnerLimiter(cfg.RateLimits.Writes, cfg.RateLimits.WritesBurst)
	if writes != nil {
		gqlCfg.Extensions = append(gqlCfg.Extensions, writeLimit{writes})
	}
	if cfg.TracerProvider != nil {
		gqlCfg.Extensions = append([]graphql.HandlerExtension{tracing.GraphQL(cfg.TracerProvider)}, gqlCfg.Extensions...)
	}
	if cfg.Metrics != nil {
		gqlCfg.Extensions = append([]graphql.HandlerExtension{cfg.Metrics.GraphQL()}, gqlCfg.Extensions...)
	}
	// A page on a trusted origin may also open websockets: that origin may already do
	// more with fetch.
	gqlCfg.WebsocketOrigins = append(slices.Clip(gqlCfg.WebsocketOrigins), cfg.TrustedOrigins...)
	endpoint := withOrigins(gqlCfg.WebsocketOrigins, withAuth(authn, rev,
		withRateLimit(requests, graph.NewHandler(resolver, gqlCfg))))
	endpoint, err := withCSRF(cfg.TrustedOrigins, endpoint)
	if err != nil {
		panic("server: " + err.Error()) // checked with the configuration
	}
	mux := http.NewServeMux()
	mux.Handle("/graphql", transport.Classify(withShutdown(gqlCfg.Shutdown,
		withCompression(withCORS(cfg.TrustedOrigins, endpoint)))))
	mux.Handle("/api/", apiHandler(cfg, authn, rev, requests, writes))
	mux.Handle("/", withCompression(playground.Handler("Parley", "/graphql", "/playground/assets/")))
	pages := withCompression(viewer.Handler("/graphql"))
	mux.Handle("/viewer", pages)
	mux.Handle(viewer.Prefix, pages)
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
	return withTraceRegion(tracing.Handler(cfg.TracerProvider, withRequestID(withAccessLog(cfg.Logger, cfg.Metrics, mux))))
}

// apiHandler serves the HTTP API beside GraphQL (importapi.go), authenticated and
// limited as /graphql is.
func apiHandler(cfg Config, authn parley.Authenticator, rev *revocations, requests, writes *ownerLimiter) http.Handler {
	limits := cfg.ImportAPI
	if limits.MaxBytes <= 0 {
		limits.MaxBytes = DefaultMaxImportBytes
	}
	if limits.Timeout <= 0 {
		limits.Timeout = DefaultImportTimeout
	}
	mux := http.NewServeMux()
	whole := cfg.GraphQL.MaxBodyBytes
	if whole <= 0 {
		whole = graph.DefaultMaxBodyBytes
	}
	mux.Handle("POST /api/import", &importHandler{interop: cfg.Interop, limits: limits, wholeBytes: whole, writes: writes, log: cfg.Logger})
	mux.HandleFunc("GET /api/whoami", serveWhoami)
	h, err := withCSRF(cfg.TrustedOrigins, withAuth(authn, rev, withRateLimit(requests, mux)))
	if err != nil {
		panic("server: " + err.Error()) // checked with the configuration
	}
	return h
}

// liveEvents returns events as the service of messageStream, when it is one (a
// realtime.Hub is), else nil.
func liveEvents(events parley.EventService) parley.LiveEventService {
	l, _ := events.(parley.LiveEventService)
	return l
}

// listEvents returns events as the service of conversationsChanged, when it is one (a
// realtime.Hub is), else nil.
func listEvents(events parley.EventService) parley.ConversationEventService {
	l, _ := events.(parley.ConversationEventService)
	return l
}
