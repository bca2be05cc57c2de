package server_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/parley-dev/parley/auth"
	"github.com/parley-dev/parley/config"
	"github.com/parley-dev/parley/db"
	"github.com/parley-dev/parley/internal/testserver"
	"github.com/parley-dev/parley/server"
)

// dialServer opens a raw TCP connection to srv.
func dialServer(t *testing.T, srv *testserver.Server) net.Conn {
	t.Helper()
	c, err := net.DialTimeout("tcp", strings.TrimPrefix(srv.URL, "http://"), 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// readStatus reads a response's status line within wait; "" if the connection closed.
func readStatus(t *testing.T, c net.Conn, br *bufio.Reader, wait time.Duration) string {
	t.Helper()
	c.SetReadDeadline(time.Now().Add(wait))
	line, err := br.ReadString('\n')
	if err == io.EOF {
		return ""
	} else if err != nil {
		t.Fatalf("read the response: %v", err)
	}
	return strings.TrimSpace(line)
}

// TestIdleConnectionsClosed: a keep-alive connection that sends no further request is
// closed after the idle timeout.
func TestIdleConnectionsClosed(t *testing.T) {
	t.Parallel()
	cfg := config.Default()
	cfg.Process.IdleTimeout = time.Second
	srv := testserver.NewWith(t, testserver.Options{Config: &cfg})
	c := dialServer(t, srv)
	fmt.Fprintf(c, "GET /healthz HTTP/1.1\r\nHost: localhost\r\n\r\n")
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	start := time.Now()
	c.SetReadDeadline(time.Now().Add(30 * time.Second))
	if _, err := br.ReadByte(); err != io.EOF {
		t.Fatalf("an idle keep-alive connection: got %v, want it closed by the server (EOF)", err)
	}
	if took := time.Since(start); took < 900*time.Millisecond {
		t.Errorf("closed after %s, before the idle timeout of 1s", took)
	}
}

// TestUnauthenticatedSlowBody: a POST without credentials is answered 401 at once,
// without the server waiting for its body, however slowly it comes; an authenticated
// request's body must arrive within the read timeout.
func TestUnauthenticatedSlowBody(t *testing.T) {
	t.Parallel()
	cfg := config.Default()
	cfg.Process.ReadTimeout = 2 * time.Second
	srv := testserver.NewWith(t, testserver.Options{Config: &cfg, Auth: func(store *db.DB) auth.Config {
		return auth.Config{Tokens: store}
	}})
	c := dialServer(t, srv)
	start := time.Now()
	fmt.Fprintf(c, "POST /graphql HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: 10000000\r\n\r\n{\"query\":")
	br := bufio.NewReader(c)
	// Well before the read timeout: the body is not waited for.
	if got := readStatus(t, c, br, 1500*time.Millisecond); !strings.Contains(got, " 401 ") {
		t.Fatalf("an unauthenticated slow POST: got %q, want 401 at once", got)
	}
	t.Logf("401 after %s", time.Since(start))

	// With a credential, the body is read, and must come within the read timeout.
	tok, _ := token(t, srv, "alice", nil)
	c2 := dialServer(t, srv)
	fmt.Fprintf(c2, "POST /graphql HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\nContent-Length: 10000000\r\n\r\n{\"query\":", tok)
	start = time.Now()
	br2 := bufio.NewReader(c2)
	got := readStatus(t, c2, br2, 30*time.Second)
	took := time.Since(start)
	if got != "" && !strings.Contains(got, " 400 ") && !strings.Contains(got, " 408 ") {
		t.Errorf("an authenticated body slower than the read timeout: got %q, want the connection closed or 400/408", got)
	}
	if took < 1500*time.Millisecond || took > 20*time.Second {
		t.Errorf("an authenticated slow body was cut after %s, want about the read timeout (2s)", took)
	}
}

// TestConnectionCap: no more than MaxConnections are served at once; the next waits
// until one closes.
func TestConnectionCap(t *testing.T) {
	t.Parallel()
	cfg := config.Default()
	cfg.Process.MaxConnections = 3
	srv := testserver.NewWith(t, testserver.Options{Config: &cfg})
	get := func(c net.Conn, br *bufio.Reader, wait time.Duration) string {
		fmt.Fprintf(c, "GET /healthz HTTP/1.1\r\nHost: localhost\r\n\r\n")
		c.SetReadDeadline(time.Now().Add(wait))
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			return err.Error()
		}
		io.Copy(io.Discard, resp.Body)
		return resp.Status
	}
	var held []net.Conn
	for i := range 3 {
		c := dialServer(t, srv)
		if got := get(c, bufio.NewReader(c), 30*time.Second); got != "200 OK" {
			t.Fatalf("connection %d: got %q, want 200 OK", i+1, got)
		}
		held = append(held, c)
	}
	extra := dialServer(t, srv) // the kernel accepts it; the server does not yet
	br := bufio.NewReader(extra)
	fmt.Fprintf(extra, "GET /healthz HTTP/1.1\r\nHost: localhost\r\n\r\n")
	extra.SetReadDeadline(time.Now().Add(time.Second))
	if _, err := br.ReadByte(); err == nil {
		t.Fatal("a fourth connection was served while three were open, want it to wait")
	}
	held[0].Close()
	extra.SetReadDeadline(time.Now().Add(30 * time.Second))
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatalf("the fourth connection, once one closed: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("the fourth connection: got %s, want 200 OK", resp.Status)
	}
}

// TestStreamsOutliveTheReadTimeout: the read timeout bounds reading a request, not a
// websocket's or an SSE stream's life.
func TestStreamsOutliveTheReadTimeout(t *testing.T) {
	t.Parallel()
	cfg := config.Default()
	cfg.Process.ReadTimeout = time.Second
	srv := testserver.NewWith(t, testserver.Options{Config: &cfg})
	conv := srv.CreateConversation(t, "streams")
	sub := `subscription($c: ID!) { messageAdded(conversationId: $c) { cursor } }`

	conn, typ, _, _ := wsDial(t, srv.URL, nil)
	if typ != "connection_ack" {
		t.Fatalf("got %q, want connection_ack", typ)
	}
	wsSubscribe(t, conn, "1", sub, map[string]any{"c": conv})

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	body := fmt.Sprintf(`{"query":%q,"variables":{"c":%q}}`, sub, conv)
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL+"/graphql", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("SSE: status %d", resp.StatusCode)
	}
	// What is under test is time passing: three read timeouts.
	<-time.After(3 * cfg.Process.ReadTimeout)
	srv.AddMessage(t, conv, testserver.Text("USER", "still there?"))

	if m, code, reason := wsNext(t, conn, 30*time.Second); m == nil || m["type"] != "next" {
		t.Errorf("websocket after the read timeout: got %v (close %d %q), want the message", m, code, reason)
	}
	sc := bufio.NewScanner(resp.Body)
	got := make(chan bool, 1)
	go func() {
		for sc.Scan() {
			if strings.HasPrefix(sc.Text(), "event: next") {
				got <- true
				return
			}
		}
		got <- false
	}()
	select {
	case ok := <-got:
		if !ok {
			t.Errorf("SSE after the read timeout: the stream ended, want the message")
		}
	case <-time.After(30 * time.Second):
		t.Errorf("SSE after the read timeout: no message in 30s")
	}
}

// The listener's connections keep their file descriptor reachable, for the websocket
// transport's writes that never wait, and give their slot back when closed, once
// however often they are closed.
func TestLimitedConnectionsKeepTheirDescriptor(t *testing.T) {
	t.Parallel()
	inner, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ln := server.Connections{MaxConnections: 1}.Listener(inner)
	defer ln.Close()
	for i := range 3 { // one slot: each connection must give it back for the next
		client, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		c, err := ln.Accept()
		if err != nil {
			t.Fatal(err)
		}
		sc, ok := c.(syscall.Conn)
		if !ok {
			t.Fatalf("connection %d: %T does not implement syscall.Conn", i, c)
		}
		raw, err := sc.SyscallConn()
		if err != nil {
			t.Fatalf("connection %d: SyscallConn: %v", i, err)
		}
		var fd uintptr
		if err := raw.Control(func(f uintptr) { fd = f }); err != nil || fd == 0 {
			t.Fatalf("connection %d: no descriptor (%d, %v)", i, fd, err)
		}
		c.Close()
		c.Close()
		client.Close()
	}
}
