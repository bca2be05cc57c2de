package server

import (
	"net"
	"net/http"
	"time"

	"golang.org/x/net/netutil"
)

// Connections bounds what clients may hold open, before any credential is seen: each
// connection costs a file descriptor and buffers, so neither idle keep-alive
// connections nor slowly sent requests may pile up.
type Connections struct {
	// ReadTimeout bounds reading one request, headers and body (0: DefaultReadTimeout).
	// Websockets and SSE streams are not cut by it: net/http lifts the read deadline
	// once a request's body is read (and a hijacked websocket's), and their own
	// keep-alives and write deadlines bound them from then on.
	ReadTimeout time.Duration
	// IdleTimeout closes a keep-alive connection that sends no request for this long
	// (0: DefaultIdleTimeout).
	IdleTimeout time.Duration
	// MaxConnections bounds the connections open at once (0: DefaultMaxConnections);
	// further clients wait in the listen backlog until one closes.
	MaxConnections int
}

// The default connection bounds.
const (
	DefaultReadHeaderTimeout = 10 * time.Second
	DefaultReadTimeout       = time.Minute
	DefaultIdleTimeout       = time.Minute
	DefaultMaxConnections    = 10000
)

func (c Connections) withDefaults() Connections {
	if c.ReadTimeout <= 0 {
		c.ReadTimeout = DefaultReadTimeout
	}
	if c.IdleTimeout <= 0 {
		c.IdleTimeout = DefaultIdleTimeout
	}
	if c.MaxConnections <= 0 {
		c.MaxConnections = DefaultMaxConnections
	}
	return c
}

// Configure sets s's timeouts.
func (c Connections) Configure(s *http.Server) {
	c = c.withDefaults()
	s.ReadHeaderTimeout = min(DefaultReadHeaderTimeout, c.ReadTimeout)
	s.ReadTimeout = c.ReadTimeout
	s.IdleTimeout = c.IdleTimeout
}

// Listener returns ln accepting at most MaxConnections connections at once
// (golang.org/x/net/netutil's LimitListener).
func (c Connections) Listener(ln net.Listener) net.Listener {
	return netutil.LimitListener(ln, c.withDefaults().MaxConnections)
}
