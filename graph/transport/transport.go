package transport

import (
	"context"
	"log/slog"
	"net/http"
	"time"

	"github.com/99designs/gqlgen/graphql"
	"github.com/99designs/gqlgen/graphql/handler"
	gqltransport "github.com/99designs/gqlgen/graphql/handler/transport"
)

// Config configures the transports. Zero durations and sizes must have been given
// their defaults by the caller (graph.NewHandler does).
type Config struct {
	// MaxBodyBytes bounds a request body; a larger one gets 413.
	MaxBodyBytes int64
	// WebsocketOrigins are the origin patterns allowed to open a websocket besides the
	// server's own host (see coder/websocket's OriginPatterns).
	WebsocketOrigins []string
	// MaxWebsocketMessageBytes bounds one message a client sends over a websocket; a
	// larger one closes the socket with 1009 "message too big".
	MaxWebsocketMessageBytes int64
	// WebsocketAuth authenticates websockets in connection_init; nil accepts every
	// connection as it is.
	WebsocketAuth WebsocketAuthFunc
	// WebsocketCheck, when set, is asked before each operation a websocket starts,
	// with the context WebsocketAuth made: an error (a *WebsocketRefusal says with
	// which close code, else CloseForbidden) closes the connection instead, so that a
	// credential revoked since connection_init starts nothing more.
	WebsocketCheck func(ctx context.Context) error
	// Shutdown is done when the server begins shutting down: websockets are then closed
	// with 1001 "going away" and SSE streams cut, without completing their
	// subscriptions, so that clients subscribe again elsewhere.
	Shutdown context.Context
	// WriteTimeout bounds one write to a websocket or SSE stream: a client that takes
	// nothing for that long is disconnected, and catches up by cursor when it comes back.
	WriteTimeout time.Duration
	// KeepAlive is how often a quiet subscription connection is pinged: graphql-transport-ws
	// pings, which a client must answer within two intervals or be disconnected, legacy
	// graphql-ws "ka" messages, and SSE comments.
	KeepAlive time.Duration
	// InitTimeout is how long a websocket may stay open without connection_init.
	InitTimeout time.Duration
	// Present turns an error that ends a websocket subscription into what its client
	// sees (the server's error presenter).
	Present graphql.ErrorPresenterFunc
	Logger  *slog.Logger
	// DisableIOUring sends each websocket delivery with a system call of its own,
	// never in batches through io_uring (see sendbatch.go), and sets up no ring: for
	// where io_uring is unwanted even though the kernel has it (a seccomp profile, the
	// kernel.io_uring_disabled sysctl). Without it batches use io_uring where it can be
	// set up (IOUringAvailable).
	DisableIOUring bool
}

// New adds the transports to srv, a gqlgen server with none, and returns the endpoint:
// srv behind the body limit, its requests classified (Classify) unless they already are.
func New(srv *handler.Server, cfg Config) http.Handler {
	srv.AddTransport(newWSTransport(cfg, theSendRings))
	// The comment lines keep proxies from closing a quiet stream.
	srv.AddTransport(sseTransport{
		sse:          gqltransport.SSE{KeepAlivePingInterval: cfg.KeepAlive},
		shutdown:     cfg.Shutdown,
		writeTimeout: cfg.WriteTimeout,
	})
	srv.AddTransport(httpTransport{})
	return Classify(http.MaxBytesHandler(srv, cfg.MaxBodyBytes))
}

// newWSTransport is the websocket transport cfg describes, its batches sent through
// rings (none when cfg disables io_uring).
func newWSTransport(cfg Config, rings *sendRings) wsTransport {
	if cfg.DisableIOUring {
		rings = nil
	}
	return wsTransport{
		origins:      cfg.WebsocketOrigins,
		keepAlive:    cfg.KeepAlive,
		initTimeout:  cfg.InitTimeout,
		writeTimeout: cfg.WriteTimeout,
		shutdown:     cfg.Shutdown,
		log:          cfg.Logger,
		present:      cfg.Present,
		readLimit:    cfg.MaxWebsocketMessageBytes,
		auth:         cfg.WebsocketAuth,
		shared:       newSharedResults(),
		sends:        rings,
		check:        cfg.WebsocketCheck,
	}
}
