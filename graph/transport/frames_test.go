package transport

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"
)

// countingConn counts the writes that reach the network.
type countingConn struct {
	net.Conn
	mu     sync.Mutex
	writes int
}

func (c *countingConn) Write(p []byte) (int, error) {
	c.mu.Lock()
	c.writes++
	c.mu.Unlock()
	return c.Conn.Write(p)
}

func (c *countingConn) count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.writes
}

// serveConn starts a websocket server whose accepted connection is wrapped as the
// transport wraps it (framingWriter), under a countingConn, and returns it as a wsConn
// with the given write timeout, and the client's end.
func serveConn(t *testing.T, writeTimeout time.Duration) (*wsConn, *countingConn, *websocket.Conn) {
	t.Helper()
	return serveWrapped(t, writeTimeout, true)
}

// serveTCP is serveConn with the accepted TCP connection as it is, so that the
// transport can write to its file descriptor without waiting (wsConn.writeNow).
func serveTCP(t *testing.T, writeTimeout time.Duration) (*wsConn, *websocket.Conn) {
	t.Helper()
	c, _, client := serveWrapped(t, writeTimeout, false)
	if c.frames.fd < 0 {
		t.Fatal("the TCP connection's file descriptor is not reachable")
	}
	return c, client
}

func serveWrapped(t *testing.T, writeTimeout time.Duration, counting bool) (*wsConn, *countingConn, *websocket.Conn) {
	t.Helper()
	type accepted struct {
		c     *wsConn
		count *countingConn
	}
	got := make(chan accepted, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var count *countingConn
		fw := &framingWriter{ResponseWriter: hijackWrapper{w, func(nc net.Conn) net.Conn {
			if !counting {
				return nc
			}
			count = &countingConn{Conn: nc}
			return count
		}}}
		conn, err := websocket.Accept(fw, r, nil)
		if err != nil {
			t.Error(err)
			return
		}
		ctx, cancel := context.WithCancel(context.Background())
		c := &wsConn{
			t:    wsTransport{writeTimeout: writeTimeout, shutdown: context.Background(), log: slog.New(slog.DiscardHandler)},
			conn: conn, frames: fw.conn, ctx: ctx, cancel: cancel, ops: map[string]*wsOp{},
			timer: time.NewTimer(time.Hour),
		}
		got <- accepted{c, count}
	}))
	t.Cleanup(srv.Close)
	client, _, err := websocket.Dial(context.Background(), "ws"+strings.TrimPrefix(srv.URL, "http"), nil)
	if err != nil {
		t.Fatal(err)
	}
	client.SetReadLimit(-1)
	t.Cleanup(func() { client.CloseNow() })
	a := <-got
	t.Cleanup(func() { a.c.close(closeNormal, "") })
	return a.c, a.count, client
}

// hijackWrapper wraps the connection a Hijack returns.
type hijackWrapper struct {
	http.ResponseWriter
	wrap func(net.Conn) net.Conn
}

func (w hijackWrapper) Unwrap() http.ResponseWriter { return w.ResponseWriter }

func (w hijackWrapper) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	nc, brw, err := http.NewResponseController(w.ResponseWriter).Hijack()
	if err != nil {
		return nil, nil, err
	}
	return w.wrap(nc), brw, nil
}

// Messages written together reach the client whole and in order, in one write to the
// network; a single message is one write too. The sizes cover each of a frame's three
// length encodings and their edges.
func TestBatchedWritesKeepOrderInOneWrite(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		messages int
		size     int
	}{
		{"one message", 1, 10},
		{"small messages", 50, 20},
		{"the largest 7-bit length", 3, 125 - 2},
		{"the smallest 16-bit length", 3, 126 - 2},
		{"messages larger than the write buffer", 5, 20 << 10},
		{"the largest 16-bit length", 2, 0xffff - 2},
		{"64-bit lengths", 3, 0x10000 - 2},
		{"large messages", 2, 1 << 20},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c, count, client := serveConn(t, 10*time.Second)
			var msgs [][]byte
			for i := range tt.messages {
				msgs = append(msgs, fmt.Appendf(nil, "%d %s", i%10, strings.Repeat("x", tt.size)))
			}
			before := count.count()
			if err := c.write(msgs...); err != nil {
				t.Fatal(err)
			}
			if got := count.count() - before; got != 1 {
				t.Errorf("got %d writes to the network for %d messages, want 1", got, tt.messages)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			for i, want := range msgs {
				_, got, err := client.Read(ctx)
				if err != nil {
					t.Fatalf("message %d: %v", i, err)
				}
				if !bytes.Equal(got, want) {
					t.Fatalf("message %d: got %.40q, want %.40q", i, got, want)
				}
			}
		})
	}
}

// A batch the client does not take is cut off by the write timeout, as a single message
// is: the connection is closed and the write reports it, rather than the server
// holding the client's backlog.
func TestBatchedWriteToStuckClientTimesOut(t *testing.T) {
	t.Parallel()
	c, _, _ := serveConn(t, 300*time.Millisecond) // the client never reads
	big := bytes.Repeat([]byte("x"), 256<<10)
	start := time.Now()
	var err error
	for n := 0; err == nil; n++ {
		if n == 400 {
			t.Fatalf("%d batches of 16 × 256 KiB written to a client that reads nothing", n)
		}
		err = c.write(big, big, big, big, big, big, big, big, big, big, big, big, big, big, big, big)
	}
	if !c.tooSlow.Load() {
		t.Errorf("the write failed (%v) but not for the write timeout", err)
	}
	if d := time.Since(start); d > time.Minute {
		t.Errorf("cut off after %s", d)
	}
	if err := c.write([]byte("more")); err != errConnClosed {
		t.Errorf("a write after the cut-off: got %v, want %v", err, errConnClosed)
	}
}

// coder/websocket's own frames (here the pongs it answers a client's pings with) reach
// the client whole between the transport's, which arrive whole and in order.
func TestControlFramesBetweenMessages(t *testing.T) {
	t.Parallel()
	c, _, client := serveConn(t, 10*time.Second)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	go c.conn.Read(ctx) // the server reads: that is where pings are answered
	const batches, perBatch = 200, 5
	read := make(chan error, 1)
	go func() {
		for i := range batches * perBatch {
			_, got, err := client.Read(ctx)
			if err != nil {
				read <- fmt.Errorf("message %d: %w", i, err)
				return
			}
			if want := fmt.Sprintf("%d %s", i, strings.Repeat("y", i%300)); string(got) != want {
				read <- fmt.Errorf("message %d: got %.40q, want %.40q", i, got, want)
				return
			}
		}
		read <- nil
		for { // and on, for the pings still under way: a client's Ping needs its reader
			if _, _, err := client.Read(ctx); err != nil {
				return
			}
		}
	}()
	pinged := make(chan error, 1)
	go func() {
		for range 50 {
			if err := client.Ping(ctx); err != nil {
				pinged <- err
				return
			}
		}
		pinged <- nil
	}()
	for i := 0; i < batches*perBatch; i += perBatch {
		var msgs [][]byte
		for j := i; j < i+perBatch; j++ {
			msgs = append(msgs, fmt.Appendf(nil, "%d %s", j, strings.Repeat("y", j%300)))
		}
		if err := c.write(msgs...); err != nil {
			t.Fatal(err)
		}
	}
	if err := <-read; err != nil {
		t.Fatal(err)
	}
	if err := <-pinged; err != nil {
		t.Fatalf("ping: %v", err)
	}
}

// writeNowUntilFull writes numbered messages of size bytes with writeNow until the
// network takes only part of one; it returns the messages, that write's rest and its
// buffer (which must stay as it is until the rest is written).
func writeNowUntilFull(t *testing.T, c *wsConn, size int) (msgs [][]byte, rest func() error) {
	t.Helper()
	for i := range 10000 {
		m := fmt.Appendf(nil, "%d %s", i, strings.Repeat("z", size))
		msgs = append(msgs, m)
		rest, err := c.writeNow(appendTextFrame(nil, m), 1)
		if err != nil {
			t.Fatal(err)
		}
		if rest != nil {
			return msgs, rest
		}
	}
	t.Fatal("the network took 10,000 messages from a client that reads nothing")
	return nil, nil
}

// A write the network cannot take at once is finished by its rest, run elsewhere, which
// keeps the connection for itself until then: a writeNow meanwhile returns at once
// with a rest of its own, and everything reaches the client whole and in order.
func TestWriteNowHandsOverWhatMustWait(t *testing.T) {
	t.Parallel()
	c, client := serveTCP(t, time.Minute)
	msgs, rest := writeNowUntilFull(t, c, 32<<10)
	done := make(chan error, 1)
	go func() { done <- rest() }()
	// The rest holds the connection: this write waits its turn, never the caller.
	last := []byte("last")
	lastRest, err := c.writeNow(appendTextFrame(nil, last), 1)
	if err != nil {
		t.Fatal(err)
	}
	if lastRest == nil { // the client reads nothing yet: the rest before it cannot be written
		t.Fatal("a write went out while an earlier one's rest was still waiting")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	read := make(chan error, 1)
	go func() {
		for i, want := range append(msgs, last) {
			_, got, err := client.Read(ctx)
			if err != nil {
				read <- fmt.Errorf("message %d: %w", i, err)
				return
			}
			if !bytes.Equal(got, want) {
				read <- fmt.Errorf("message %d: got %.40q, want %.40q", i, got, want)
				return
			}
		}
		read <- nil
	}()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if err := lastRest(); err != nil {
		t.Fatal(err)
	}
	if err := <-read; err != nil {
		t.Fatal(err)
	}
}

// Closing a connection while a rest waits for the network ends that write with an
// error and gives the connection up: later writes report it closed, at once.
func TestCloseWhileARestWaits(t *testing.T) {
	t.Parallel()
	for _, who := range []string{"server", "client"} {
		t.Run(who, func(t *testing.T) {
			t.Parallel()
			c, client := serveTCP(t, time.Minute)
			_, rest := writeNowUntilFull(t, c, 32<<10)
			done := make(chan error, 1)
			go func() { done <- rest() }()
			if who == "server" {
				c.conn.CloseNow()
			} else {
				client.CloseNow()
			}
			select {
			case err := <-done:
				if err == nil {
					t.Fatal("the rest was written to a closed connection")
				}
			case <-time.After(30 * time.Second):
				t.Fatal("the rest still waits 30 s after the connection closed")
			}
			if rest, err := c.writeNow(appendTextFrame(nil, []byte("more")), 1); rest != nil || err != errConnClosed {
				t.Errorf("writeNow after the close: got rest %v, err %v; want none, %v", rest != nil, err, errConnClosed)
			}
		})
	}
}
