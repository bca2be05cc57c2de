package transport

import (
	"bufio"
	"net"
	"net/http"
	"sync"

	"github.com/parley-dev/parley/internal/bufpool"
)

// corkConn is a websocket's network connection that can hold back what is written to
// it and send it in one write: coder/websocket flushes each message to the connection
// as it is written, a system call per message, which was a third of the server's CPU
// per delivery. A subscription's drain that has several events ready frames them all
// while the connection is corked (wsConn.writeFrames) and the client gets them in one
// write. Everything written while corked is sent, in order, by uncork; writes while not
// corked (coder/websocket's own control frames, from its reader) go straight through.
type corkConn struct {
	net.Conn

	mu     sync.Mutex // held across each write to Conn, so that order is kept
	corked bool
	buf    []byte
}

// Write implements io.Writer: it holds p back while the connection is corked.
func (c *corkConn) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.corked {
		c.buf = append(c.buf, p...)
		return len(p), nil
	}
	return c.Conn.Write(p)
}

// cork holds back what is written from now on until uncork.
func (c *corkConn) cork() {
	c.mu.Lock()
	c.corked = true
	if c.buf == nil {
		c.buf = bufpool.Get()
	}
	c.mu.Unlock()
}

// uncork sends what was held back, in one write, and lets writes through again.
func (c *corkConn) uncork() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.corked = false
	b := c.buf
	c.buf = nil // an idle connection holds no buffer
	if b == nil {
		return nil
	}
	defer bufpool.Put(b)
	if len(b) == 0 {
		return nil
	}
	_, err := c.Conn.Write(b)
	return err
}

// corkingWriter is the upgrade's response writer, whose Hijack hands coder/websocket a
// corkConn in place of the connection, and a buffered writer over it.
type corkingWriter struct {
	http.ResponseWriter
	conn *corkConn // set by Hijack
}

// Hijack implements http.Hijacker.
func (w *corkingWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	nc, brw, err := http.NewResponseController(w.ResponseWriter).Hijack()
	if err != nil {
		return nil, nil, err
	}
	// Whatever the server still holds of its response goes out before the connection
	// is handed over (net/http has flushed it already; this costs nothing then).
	if err := brw.Writer.Flush(); err != nil {
		nc.Close()
		return nil, nil, err
	}
	w.conn = &corkConn{Conn: nc}
	return w.conn, bufio.NewReadWriter(brw.Reader, bufio.NewWriterSize(w.conn, 4096)), nil
}

// Unwrap lets http.ResponseController reach the server's writer.
func (w *corkingWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
