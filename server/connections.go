package server

import (
	"errors"
	"net"
	"net/http"
	"sync"
	"syscall"
	"time"
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

// Listener returns ln accepting at most MaxConnections connections at once; further
// clients wait in the listen backlog until one closes. It does what
// golang.org/x/net/netutil's LimitListener does, except that its connections keep the
// network connection's file descriptor reachable (syscall.Conn): the websocket
// transport writes to it without waiting (see graph/transport), which LimitListener's
// wrapper hid.
func (c Connections) Listener(ln net.Listener) net.Listener {
	return &limitListener{Listener: ln, sem: make(chan struct{}, c.withDefaults().MaxConnections), done: make(chan struct{})}
}

type limitListener struct {
	net.Listener
	sem       chan struct{} // a token per connection open
	closeOnce sync.Once
	done      chan struct{} // closed by Close
}

// Accept waits for a connection's token, then for a connection. Once the listener is
// closed it returns the listener's error.
func (l *limitListener) Accept() (net.Conn, error) {
	select {
	case l.sem <- struct{}{}:
	case <-l.done:
		return nil, net.ErrClosed
	}
	c, err := l.Listener.Accept()
	if err != nil {
		<-l.sem
		return nil, err
	}
	return &limitedConn{Conn: c, release: func() { <-l.sem }}, nil
}

func (l *limitListener) Close() error {
	err := l.Listener.Close()
	l.closeOnce.Do(func() { close(l.done) })
	return err
}

// limitedConn gives its token back when closed.
type limitedConn struct {
	net.Conn
	releaseOnce sync.Once
	release     func()
}

func (c *limitedConn) Close() error {
	err := c.Conn.Close()
	c.releaseOnce.Do(c.release)
	return err
}

// SyscallConn implements syscall.Conn for a connection that has a file descriptor.
func (c *limitedConn) SyscallConn() (syscall.RawConn, error) {
	sc, ok := c.Conn.(syscall.Conn)
	if !ok {
		return nil, errors.ErrUnsupported
	}
	return sc.SyscallConn()
}
