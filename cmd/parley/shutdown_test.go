package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/parley-dev/parley/internal/pgtest"
)

// TestShutdownEndsSubscriptions stops `parley serve` as SIGTERM does (its context ends)
// with subscribers on every transport. Each websocket is closed with 1001 "going away"
// and no subscription is reported complete, and each SSE stream ends without "event:
// complete": clients take both as a reason to reconnect, to another replica, rather than
// as the end of their subscription. Shutdown does not wait for the subscriptions.
func TestShutdownEndsSubscriptions(t *testing.T) {
	t.Parallel()
	url, stop := serve(t, "--database-url", pgtest.NewDatabase(t))
	stopped := false
	defer func() {
		if !stopped {
			stop()
		}
	}()
	conv := graphql(t, url, `mutation { createConversation(title: "shutdown") { id } }`)["createConversation"].(map[string]any)["id"].(string)
	query := `subscription($c: ID!) { messageAdded(conversationId: $c) { cursor } }`
	vars := map[string]any{"c": conv}

	type wsResult struct {
		status   websocket.StatusCode
		messages []string
	}
	results := map[string]chan wsResult{}
	live := make(chan string, 10) // each subscriber's name, once, when it gets its first message
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, proto := range []string{"graphql-transport-ws", "graphql-ws"} {
		conn, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(url, "http")+"/graphql",
			&websocket.DialOptions{Subprotocols: []string{proto}})
		if err != nil {
			t.Fatalf("%s: dial: %v", proto, err)
		}
		defer conn.CloseNow()
		write := func(v any) {
			b, _ := json.Marshal(v)
			if err := conn.Write(ctx, websocket.MessageText, b); err != nil {
				t.Fatalf("%s: write: %v", proto, err)
			}
		}
		typ := map[string]string{"graphql-transport-ws": "subscribe", "graphql-ws": "start"}[proto]
		write(map[string]any{"type": "connection_init"})
		write(map[string]any{"id": "1", "type": typ, "payload": map[string]any{"query": query, "variables": vars}})
		res := make(chan wsResult, 1)
		results[proto] = res
		go func() {
			var r wsResult
			for {
				_, b, err := conn.Read(ctx)
				if err != nil {
					r.status = websocket.CloseStatus(err)
					res <- r
					return
				}
				var m struct{ Type string }
				json.Unmarshal(b, &m)
				if m.Type == "ping" {
					b, _ := json.Marshal(map[string]any{"type": "pong"})
					conn.Write(ctx, websocket.MessageText, b)
				}
				if m.Type != "ka" && m.Type != "ping" && m.Type != "pong" {
					r.messages = append(r.messages, m.Type)
				}
				if (m.Type == "next" || m.Type == "data") && len(r.messages) == 2 {
					live <- proto
				}
			}
		}()
	}

	body, _ := json.Marshal(map[string]any{"query": query, "variables": vars})
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url+"/graphql", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("SSE: %v", err)
	}
	defer resp.Body.Close()
	sseEvents := make(chan string, 100)
	go func() {
		defer close(sseEvents)
		sc := bufio.NewScanner(resp.Body)
		first := true
		for sc.Scan() {
			if e, ok := strings.CutPrefix(sc.Text(), "event: "); ok {
				sseEvents <- e
				if e == "next" && first {
					first = false
					live <- "sse"
				}
			}
		}
	}()

	// Keep adding a message until every subscriber has one: then all are live.
	deadline := time.After(time.Minute)
	for waiting := 3; waiting > 0; {
		graphql(t, url, `mutation { addMessage(conversationId: "`+conv+`", input: {text: {role: USER, content: "hi"}}) { cursor } }`)
		select {
		case <-live:
			waiting--
		case <-time.After(100 * time.Millisecond):
		case <-deadline:
			t.Fatal("the subscribers got nothing within a minute")
		}
	}

	start := time.Now()
	stop()
	stopped = true
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("shutdown took %s with subscribers connected", d)
	}
	for proto, res := range results {
		r := <-res
		if r.status != websocket.StatusGoingAway {
			t.Errorf("%s: close status %d, want 1001 (going away)", proto, r.status)
		}
		for _, m := range r.messages {
			if m == "complete" {
				t.Errorf("%s: got complete (%v): the client would not resubscribe", proto, r.messages)
			}
		}
		if len(r.messages) < 2 || r.messages[0] != "connection_ack" || r.messages[1] != map[string]string{"graphql-transport-ws": "next", "graphql-ws": "data"}[proto] {
			t.Errorf("%s: got %v, want connection_ack then messages", proto, r.messages)
		}
	}
	for e := range sseEvents {
		if e == "complete" {
			t.Error("SSE: got event: complete: the client would not resubscribe")
		}
	}
}
