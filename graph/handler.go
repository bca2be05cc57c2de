package graph

import (
	"log/slog"
	"net/http"
	"time"

	"github.com/99designs/gqlgen/graphql/handler"
	"github.com/99designs/gqlgen/graphql/handler/extension"
	"github.com/99designs/gqlgen/graphql/handler/lru"
	"github.com/99designs/gqlgen/graphql/handler/transport"
	"github.com/coder/websocket"
	"github.com/vektah/gqlparser/v2/ast"
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
}

// NewHandler returns the GraphQL endpoint: GET and POST per the GraphQL-over-HTTP spec
// (gqlgen's transports, made to conform by withHTTPSpec: see httpspec.go), and websocket
// subscriptions (graphql-transport-ws and the legacy graphql-ws).
func NewHandler(r *Resolver, cfg HandlerConfig) http.Handler {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.MaxBodyBytes == 0 {
		cfg.MaxBodyBytes = 32 << 20
	}
	if cfg.ParserTokenLimit == 0 {
		cfg.ParserTokenLimit = 15000
	}
	srv := handler.New(NewExecutableSchema(Config{Resolvers: r}))
	srv.AddTransport(transport.Websocket{
		Implementation: transport.CoderWebsocketImplementation{AcceptOptions: websocket.AcceptOptions{
			OriginPatterns: cfg.WebsocketOrigins,
		}},
		InitTimeout:           10 * time.Second,
		KeepAlivePingInterval: 15 * time.Second,
		PingPongInterval:      15 * time.Second,
	})
	srv.AddTransport(transport.GET{})
	srv.AddTransport(transport.POST{})
	srv.SetQueryCache(lru.New[*ast.QueryDocument](1000))
	srv.SetParserTokenLimit(cfg.ParserTokenLimit)
	srv.SetDisableSuggestion(true)
	if cfg.Introspection {
		srv.Use(extension.Introspection{})
	}
	srv.Use(extension.AutomaticPersistedQuery{Cache: lru.New[string](100)})
	srv.Use(specExtension{}) // after APQ, which fills the query in: see httpspec.go
	srv.AroundResponses(withLoaders(r.MessageService))
	srv.SetErrorPresenter(errorPresenter(cfg.Logger))
	srv.SetRecoverFunc(recoverFunc(cfg.Logger))
	return http.MaxBytesHandler(withHTTPSpec(srv), cfg.MaxBodyBytes)
}
