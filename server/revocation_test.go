package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/parley-dev/parley"
	"github.com/parley-dev/parley/auth"
	"github.com/parley-dev/parley/db"
	"github.com/parley-dev/parley/internal/testserver"
)

// TestRevokedTokenEndsStreams: revoking an API token closes the websockets it opened
// (4403) and cuts its SSE streams within seconds, whether they authenticated in
// connection_init or by header, and an operation started on such a socket after the
// revocation is refused; other tokens' sockets stay.
func TestRevokedTokenEndsStreams(t *testing.T) {
	t.Parallel()
	srv := testserver.NewWiredWith(t, "", testserver.Options{Auth: func(store *db.DB) auth.Config {
		return auth.Config{Tokens: store}
	}})
	revoked, tok := token(t, srv.Server, "alice", nil)
	other, _ := token(t, srv.Server, "alice", nil)
	conv := srv.As(revoked).CreateConversation(t, "revocation")
	// From the start, so that the message added below reaches each, however late it
	// registers.
	sub := `subscription($c: ID!, $a: String) { messageAdded(conversationId: $c, after: $a) { cursor } }`
	vars := map[string]any{"c": conv, "a": parley.MessageCursor(0)}

	open := func(name, cred string) *websocket.Conn {
		t.Helper()
		conn, typ, code, reason := wsDial(t, srv.URL, map[string]any{"authToken": cred})
		if typ != "connection_ack" {
			t.Fatalf("%s: got %q (close %d %q), want connection_ack", name, typ, code, reason)
		}
		wsSubscribe(t, conn, "1", sub, vars)
		return conn
	}
	subscribed := open("the revoked token's subscription", revoked)
	idle := open("the revoked token's second socket", revoked)
	kept := open("another token's subscription", other)

	// An SSE stream of the same token, by header.
	body, _ := json.Marshal(map[string]any{"query": sub, "variables": vars})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL+"/graphql", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Authorization", "Bearer "+revoked)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("SSE: status %d", resp.StatusCode)
	}
	// Every subscription is live: a message reaches each.
	srv.As(other).AddMessage(t, conv, testserver.Text("USER", "before"))
	for name, conn := range map[string]*websocket.Conn{"subscribed": subscribed, "idle": idle, "kept": kept} {
		if m, code, reason := wsNext(t, conn, 30*time.Second); m == nil || m["type"] != "next" {
			t.Fatalf("%s before revoking: got %v (close %d %q), want the message", name, m, code, reason)
		}
	}

	revokedAt := time.Now()
	if _, err := srv.Store.RevokeToken(context.Background(), tok.ID); err != nil {
		t.Fatal(err)
	}
	// A new operation on a socket of the revoked token is refused, closing it.
	wsSubscribe(t, idle, "2", `query { __typename }`, nil)
	if m, code, reason := wsNext(t, idle, 30*time.Second); m != nil || code != 4403 {
		t.Errorf("an operation after revoking: got %v (close %d %q), want close 4403", m, code, reason)
	}
	// The open subscription's socket is closed within seconds, without any message.
	m, code, reason := wsNext(t, subscribed, 30*time.Second)
	took := time.Since(revokedAt)
	if m != nil || code != 4403 || !strings.Contains(reason, "revoked") {
		t.Errorf("the open subscription after revoking: got %v (close %d %q), want close 4403, revoked", m, code, reason)
	}
	if took > 10*time.Second {
		t.Errorf("the socket closed %s after revoking, want within a few seconds", took)
	}
	t.Logf("websocket closed %s after revoking", took)
	// The SSE stream is cut, without complete.
	rest, _ := io.ReadAll(resp.Body)
	if ctx.Err() != nil {
		t.Fatal("the SSE stream was not cut after revoking")
	}
	if strings.Contains(string(rest), "event: complete") {
		t.Errorf("the SSE stream completed; want it cut:\n%s", rest)
	}
	t.Logf("SSE cut %s after revoking", time.Since(revokedAt))

	// Another token's socket stays, and still gets messages.
	srv.As(other).AddMessage(t, conv, testserver.Text("USER", "after"))
	if m, code, reason := wsNext(t, kept, 30*time.Second); m == nil || m["type"] != "next" {
		t.Errorf("another token's subscription after revoking: got %v (close %d %q), want the message", m, code, reason)
	}
}
