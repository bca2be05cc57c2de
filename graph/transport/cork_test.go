package transport

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
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
// transport wraps it (corkingWriter), under a countingConn, and returns it as a wsConn
// with the given write timeout, and the client's end.
func serveConn(t *testing.T, writeTimeout time.Duration) (*wsConn, *countingConn, *websocket.Conn) {
	t.Helper()
	type accepted struct {
		c     *wsConn
		count *countingConn
	}
	got := make(chan accepted, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var count *countingConn
		cw := &corkingWriter{ResponseWriter: hijackWrapper{w, func(nc net.Conn) net.Conn {
			count = &countingConn{Conn: nc}
			return count
		}}}
		conn, err := websocket.Accept(cw, r, nil)
		if err != nil {
			t.Error(err)
			return
		}
		ctx, cancel := context.WithCancel(context.Background())
		c := &wsConn{
			t:    wsTransport{writeTimeout: writeTimeout, shutdown: context.Background(), log: slog.New(slog.DiscardHandler)},
			conn: conn, cork: cw.conn, ctx: ctx, cancel: cancel, ops: map[string]*wsOp{},
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
// network; a single message is one write too, and the connection holds no buffer
// afterwards.
func TestBatchedWritesKeepOrderInOneWrite(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		messages int
		size     int
	}{
		{"one message", 1, 10},
		{"small messages", 50, 20},
		{"messages larger than the write buffer", 5, 20 << 10},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c, count, client := serveConn(t, 10*time.Second)
			var msgs [][]byte
			for i := range tt.messages {
				msgs = append(msgs, fmt.Appendf(nil, "%d %s", i, strings.Repeat("x", tt.size)))
			}
			before := count.count()
			if err := c.write(msgs...); err != nil {
				t.Fatal(err)
			}
			if got := count.count() - before; got != 1 {
				t.Errorf("got %d writes to the network for %d messages, want 1", got, tt.messages)
			}
			if c.cork.buf != nil {
				t.Errorf("the connection still holds a buffer of %d bytes", cap(c.cork.buf))
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

// Writes while corked are held back and sent, in order, in one write by uncork; writes
// while not corked go straight through.
func TestCorkConn(t *testing.T) {
	t.Parallel()
	server, client := net.Pipe()
	defer client.Close()
	count := &countingConn{Conn: server}
	c := &corkConn{Conn: count}
	read := make(chan []byte, 1)
	go func() {
		b, _ := io.ReadAll(client)
		read <- b
	}()
	c.Write([]byte("a"))
	c.cork()
	c.Write([]byte("b"))
	c.Write([]byte("c"))
	if got := count.count(); got != 1 {
		t.Errorf("got %d writes before uncork, want 1", got)
	}
	if err := c.uncork(); err != nil {
		t.Fatal(err)
	}
	c.Write([]byte("d"))
	if got := count.count(); got != 3 {
		t.Errorf("got %d writes, want 3 (a, bc, d)", got)
	}
	server.Close()
	if got := string(<-read); got != "abcd" {
		t.Errorf("got %q, want %q", got, "abcd")
	}
}
