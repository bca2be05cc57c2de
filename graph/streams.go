package graph

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/99designs/gqlgen/graphql/handler/transport"
	"github.com/coder/websocket"
)

// This file is what the streaming transports (websockets, SSE) need beyond gqlgen's:
//
//   - A write timeout. gqlgen writes websocket frames with no deadline and SSE events
//     under none either, so a client that stops reading would hold its goroutines and
//     buffers for as long as TCP lets it. Here a write that cannot finish within
//     WriteTimeout cuts the connection; the client reconnects with its last cursor and
//     catches up from the database.
//   - A proper end on shutdown. When the server shuts down (HandlerConfig.Shutdown is
//     done), a websocket is closed with 1001 "going away" and an SSE stream is cut, in
//     both cases without the "complete" that gqlgen would otherwise send for each
//     subscription as its context ends: complete tells a client that its subscription
//     is finished, and it would not subscribe again elsewhere.

// closeGoingAway is what a websocket is closed with on shutdown; graphql-ws clients
// reconnect on it.
const closeGoingAway = 1001

// closeTryAgainLater is what a websocket too slow to take a frame is closed with;
// graphql-ws clients reconnect on it (and catch up by cursor).
const closeTryAgainLater = 1013

// closeInitTimeout is graphql-transport-ws's close code for a connection that sent no
// connection_init in time.
const closeInitTimeout = 4408

// websocketKey marks the context of an operation that came over a websocket.
type websocketKey struct{}

// websocketInit marks every websocket operation's context, so that a failing
// subscription knows it may use transport.AddSubscriptionError, which works only there.
func websocketInit(ctx context.Context, _ transport.InitPayload) (context.Context, *transport.InitPayload, error) {
	return context.WithValue(ctx, websocketKey{}, true), nil, nil
}

func overWebsocket(ctx context.Context) bool {
	ok, _ := ctx.Value(websocketKey{}).(bool)
	return ok
}

// websocketImplementation accepts websockets with gqlgen's coder/websocket adapter and
// wraps each connection in a streamConn.
type websocketImplementation struct {
	accept       transport.CoderWebsocketImplementation
	writeTimeout time.Duration
	shutdown     context.Context
	log          *slog.Logger
}

func (i websocketImplementation) Accept(w http.ResponseWriter, r *http.Request, opts transport.WebsocketAcceptOptions) (transport.WebsocketConn, error) {
	c, err := i.accept.Accept(w, r, opts)
	if err != nil {
		return nil, err
	}
	return &streamConn{WebsocketConn: c, writeTimeout: i.writeTimeout, shutdown: i.shutdown, log: i.log,
		state: wsStateFrom(r.Context())}, nil
}

// streamConn is a websocket with a write timeout and a shutdown close code.
type streamConn struct {
	transport.WebsocketConn
	writeTimeout time.Duration
	shutdown     context.Context
	log          *slog.Logger
	tooSlow      atomic.Bool
	state        *wsState // the connection's credential expiry (auth.go)
}

var (
	_ transport.WebsocketReadLimiter   = (*streamConn)(nil)
	_ transport.WebsocketReadDeadliner = (*streamConn)(nil)
)

var errShuttingDown = errors.New("server shutting down")

// WriteJSON writes a message unless the server is shutting down: from then on the
// close frame has the last word.
func (c *streamConn) WriteJSON(v any) error {
	if c.shutdown.Err() != nil {
		return errShuttingDown
	}
	t := time.AfterFunc(c.writeTimeout, func() {
		// The close handshake waits for the stuck write, then gives up and drops the
		// connection, which ends the write (coder/websocket bounds it at 5s).
		c.tooSlow.Store(true)
		c.log.Warn("websocket client too slow: closing", "writeTimeout", c.writeTimeout)
		c.WebsocketConn.WriteClose(closeTryAgainLater, "too slow: the client did not read for "+c.writeTimeout.String())
	})
	defer t.Stop()
	return c.WebsocketConn.WriteJSON(v)
}

// WriteClose sends "going away" instead of gqlgen's "normal closure" on shutdown, and
// graphql-transport-ws's 4408 for an init timeout, where gqlgen sends 1002, which
// graphql-ws clients take as fatal and do not retry.
func (c *streamConn) WriteClose(code int, reason string) error {
	switch {
	case c.shutdown.Err() != nil:
		code, reason = closeGoingAway, "server shutting down"
	case c.tooSlow.Load():
		return nil // the timeout's close is under way
	case code == transport.WebsocketCloseProtocolError && reason == "connection initialisation timeout":
		code = closeInitTimeout
	case code == transport.WebsocketCloseNormalClosure && c.state.expired():
		// The context InitFunc returned ended at the credential's expiry: 4403 tells
		// graphql-ws clients to connect again, with a fresh credential.
		code, reason = CloseForbidden, "Forbidden: the credential expired"
	}
	return c.WebsocketConn.WriteClose(code, reason)
}

func (c *streamConn) SetReadLimit(limit int64) {
	if l, ok := c.WebsocketConn.(transport.WebsocketReadLimiter); ok {
		l.SetReadLimit(limit)
	}
}

func (c *streamConn) SetReadDeadline(t time.Time) error {
	if d, ok := c.WebsocketConn.(transport.WebsocketReadDeadliner); ok {
		return d.SetReadDeadline(t)
	}
	return nil
}

// sseState is shared by an SSE request's writer and its subscription.
type sseState struct {
	// abandoned is set when the subscription ended in a way the client should recover
	// from by subscribing again (the database unavailable): the stream is then cut
	// without "complete", which graphql-sse clients take as a network error to retry.
	abandoned atomic.Bool
}

type sseStateKey struct{}

// abandonStream cuts an SSE request's stream without completing it, and reports
// whether ctx was one.
func abandonStream(ctx context.Context) bool {
	st, _ := ctx.Value(sseStateKey{}).(*sseState)
	if st == nil {
		return false
	}
	st.abandoned.Store(true)
	return true
}

// withStreams gives SSE requests (graphql-sse's distinct connections mode, served by
// gqlgen's SSE transport) a write timeout and a proper end on shutdown; see the top of
// this file.
func withStreams(next http.Handler, shutdown context.Context, writeTimeout time.Duration) http.Handler {
	sse := transport.SSE{}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !sse.Supports(r) {
			next.ServeHTTP(w, r)
			return
		}
		st := &sseState{}
		ctx, cancel := context.WithCancel(context.WithValue(r.Context(), sseStateKey{}, st))
		defer cancel()
		if exp := credentialExpiry(ctx); !exp.IsZero() {
			// The credential expired: cut the stream, as for a failure the client
			// should recover from by subscribing again (with a fresh credential).
			t := time.AfterFunc(time.Until(exp), func() {
				st.abandoned.Store(true)
				cancel()
			})
			defer t.Stop()
		}
		sw := &sseWriter{
			ResponseWriter: w, rc: http.NewResponseController(w), timeout: writeTimeout,
			shutdown: shutdown, st: st, cancel: cancel,
		}
		next.ServeHTTP(sw, r.WithContext(ctx))
	})
}

// sseWriter writes an SSE response under a deadline per write, and writes nothing more
// once the stream is abandoned or the server shuts down. gqlgen's SSE transport calls
// it under its own lock.
type sseWriter struct {
	http.ResponseWriter
	rc       *http.ResponseController
	timeout  time.Duration
	shutdown context.Context
	st       *sseState
	cancel   context.CancelFunc // ends the subscription when a write fails
}

func (w *sseWriter) cut() bool {
	return w.shutdown.Err() != nil || w.st.abandoned.Load()
}

func (w *sseWriter) Write(p []byte) (int, error) {
	if w.cut() {
		return 0, net.ErrClosed
	}
	_ = w.rc.SetWriteDeadline(time.Now().Add(w.timeout))
	n, err := w.ResponseWriter.Write(p)
	if err != nil {
		w.cancel()
	}
	return n, err
}

func (w *sseWriter) Flush() {
	if w.cut() {
		return
	}
	_ = w.rc.SetWriteDeadline(time.Now().Add(w.timeout))
	if err := w.rc.Flush(); err != nil {
		w.cancel()
	}
}

// Unwrap lets http.ResponseController reach the connection's writer.
func (w *sseWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// newWebsocketTransport is the websocket transport: both subprotocols, keepalives, an
// init timeout, and the streamConn wrapper.
func newWebsocketTransport(cfg HandlerConfig) transport.Websocket {
	return transport.Websocket{
		Implementation: websocketImplementation{
			accept: transport.CoderWebsocketImplementation{AcceptOptions: websocket.AcceptOptions{
				OriginPatterns: cfg.WebsocketOrigins,
			}},
			writeTimeout: cfg.WriteTimeout,
			shutdown:     cfg.Shutdown,
			log:          cfg.Logger,
		},
		InitFunc:         websocketInitFunc(cfg.WebsocketAuth),
		InitTimeout:      cfg.InitTimeout,
		PayloadReadLimit: &cfg.MaxWebsocketMessageBytes,
		// graphql-ws (legacy) keepalive: "ka" messages.
		KeepAlivePingInterval: cfg.KeepAlive,
		// graphql-transport-ws keepalive: a ping, and a pong expected within two
		// intervals, or the connection is dropped (a half-open client).
		PingPongInterval: cfg.KeepAlive,
	}
}
