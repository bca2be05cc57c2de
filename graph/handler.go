package graph

import (
	"context"
	"log/slog"
	"net/http"
	"time"

	"github.com/99designs/gqlgen/graphql"
	"github.com/99designs/gqlgen/graphql/handler"
	"github.com/99designs/gqlgen/graphql/handler/extension"
	"github.com/99designs/gqlgen/graphql/handler/lru"
	"github.com/vektah/gqlparser/v2/ast"

	"github.com/parley-dev/parley/graph/transport"
)

// HandlerConfig tunes the GraphQL endpoint.
type HandlerConfig struct {
	// MaxBodyBytes bounds a request body (default 32 MiB: inline images are large).
	MaxBodyBytes int64
	// ParserTokenLimit bounds the tokens of one query document (default 15,000).
	ParserTokenLimit int
	// Introspection allows schema introspection (the playground needs it).
	Introspection bool
	// WebsocketOrigins are the origin patterns allowed to open a websocket besides the
	// server's own host (see coder/websocket's OriginPatterns).
	WebsocketOrigins []string
	Logger           *slog.Logger
	// Shutdown is done when the server begins shutting down: websockets are then closed
	// with 1001 "going away" and SSE streams cut, without completing their
	// subscriptions, so that clients subscribe again elsewhere (see package transport).
	// Nil means never.
	Shutdown context.Context
	// WriteTimeout bounds one write to a websocket or SSE stream (default 20s): a client
	// that takes nothing for that long is disconnected, and catches up by cursor when it
	// comes back.
	WriteTimeout time.Duration
	// KeepAlive is how often a quiet subscription connection is pinged (default 15s):
	// graphql-transport-ws pings, which a client must answer within two intervals or be
	// disconnected, legacy graphql-ws "ka" messages, and SSE comments.
	KeepAlive time.Duration
	// InitTimeout is how long a websocket may stay open without connection_init
	// (default 10s).
	InitTimeout time.Duration
	// Limits bound each operation (see limits.go); MaxTokens defaults to
	// ParserTokenLimit.
	Limits Limits
	// MaxWebsocketMessageBytes bounds one message a client sends over a websocket
	// (default 1 MiB); a larger one closes the socket with 1009 "message too big".
	MaxWebsocketMessageBytes int64
	// WebsocketAuth authenticates websockets in connection_init; nil accepts every
	// connection as it is.
	WebsocketAuth transport.WebsocketAuthFunc
	// WebsocketCheck re-checks a websocket's credential before each operation it
	// starts (see transport.Config).
	WebsocketCheck func(ctx context.Context) error
	// RequestTimeout bounds the execution of each query and mutation (see timeout.go);
	// zero means no bound.
	RequestTimeout time.Duration
	// Extensions are used before any of the endpoint's own, so that they see every
	// response as the client gets it: metrics and tracing.
	Extensions []graphql.HandlerExtension
	// DisableIOUring sends each websocket delivery with a system call of its own,
	// never in batches through io_uring (see transport.Config).
	DisableIOUring bool
}

// DefaultMaxBodyBytes is HandlerConfig.MaxBodyBytes's default: 32 MiB (inline images
// are large).
const DefaultMaxBodyBytes = 32 << 20

// NewHandler returns the GraphQL endpoint: the schema's executor, with its extensions,
// served by package transport: GET and POST per the GraphQL-over-HTTP spec, and
// subscriptions over websockets (graphql-transport-ws and the legacy graphql-ws) and SSE
// (graphql-sse's distinct connections mode).
func NewHandler(r *Resolver, cfg HandlerConfig) http.Handler {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.MaxBodyBytes == 0 {
		cfg.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if cfg.ParserTokenLimit == 0 {
		cfg.ParserTokenLimit = 15000
	}
	if cfg.Shutdown == nil {
		cfg.Shutdown = context.Background()
	}
	if cfg.WriteTimeout <= 0 {
		cfg.WriteTimeout = 20 * time.Second
	}
	if cfg.KeepAlive <= 0 {
		cfg.KeepAlive = 15 * time.Second
	}
	if cfg.InitTimeout <= 0 {
		cfg.InitTimeout = 10 * time.Second
	}
	if cfg.Limits.MaxTokens <= 0 {
		cfg.Limits.MaxTokens = cfg.ParserTokenLimit
	}
	cfg.Limits = cfg.Limits.withDefaults()
	if cfg.MaxWebsocketMessageBytes <= 0 {
		cfg.MaxWebsocketMessageBytes = 1 << 20
	}
	schemaCfg := Config{Resolvers: r}
	complexityFuncs(&schemaCfg.Complexity, cfg.Limits)
	srv := handler.New(NewExecutableSchema(schemaCfg))
	srv.SetQueryCache(lru.New[*ast.QueryDocument](1000))
	srv.SetParserTokenLimit(cfg.Limits.MaxTokens)
	srv.SetDisableSuggestion(true)
	for _, ext := range cfg.Extensions {
		srv.Use(ext)
	}
	srv.Use(requestTimeout{cfg.RequestTimeout})
	if cfg.Introspection {
		srv.Use(extension.Introspection{})
	}
	srv.Use(extension.AutomaticPersistedQuery{Cache: lru.New[string](100)})
	srv.Use(&strictEnums{}) // enums.go: enum variables spelled exactly
	srv.Use(&limitsExtension{limits: cfg.Limits, introspection: cfg.Introspection})
	srv.AroundResponses(withLoaders(r.MessageService, r.TreeService, int64(cfg.Limits.MaxPageBytes)))
	srv.AroundFields(writeMessagePages(r.Renderer)) // pagewriter.go: message pages written straight to JSON
	srv.AroundFields(placeTranscripts())            // transcriptwriter.go: a transcript's body in its final form
	present := errorPresenter(cfg.Logger)
	srv.SetErrorPresenter(present)
	srv.SetRecoverFunc(recoverFunc(cfg.Logger))
	return transport.New(srv, transport.Config{
		MaxBodyBytes:             cfg.MaxBodyBytes,
		WebsocketOrigins:         cfg.WebsocketOrigins,
		MaxWebsocketMessageBytes: cfg.MaxWebsocketMessageBytes,
		WebsocketAuth:            cfg.WebsocketAuth,
		WebsocketCheck:           cfg.WebsocketCheck,
		Shutdown:                 cfg.Shutdown,
		WriteTimeout:             cfg.WriteTimeout,
		KeepAlive:                cfg.KeepAlive,
		InitTimeout:              cfg.InitTimeout,
		Present:                  present,
		Logger:                   cfg.Logger,
		DisableIOUring:           cfg.DisableIOUring,
	})
}
