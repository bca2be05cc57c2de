package main

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/parley-dev/parley/internal/pgtest"
)

// `parley serve` says once, at start, whether websocket deliveries go out in batches
// through io_uring, and why not; with --io-uring=false (or PARLEY_IO_URING=false) they
// do not, and many subscribers of one conversation still get every message exactly
// once, in order, as they do by default.
func TestServeIOUringSetting(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name string
		args []string
		want *regexp.Regexp
	}{
		{"default", nil, regexp.MustCompile(`msg="batched sends" (ioUring=true|ioUring=false reason="not available: [^"]+")\n`)},
		{"--io-uring=false", []string{"--io-uring=false"}, regexp.MustCompile(`msg="batched sends" ioUring=false reason="disabled by setting \(--io-uring=false, PARLEY_IO_URING\)"\n`)},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			url, logs, stop := serveLogged(t, append([]string{"--database-url", pgtest.NewDatabase(t)}, tt.args...)...)
			defer stop()
			if got := strings.Count(logs(), `msg="batched sends"`); got != 1 || !tt.want.MatchString(logs()) {
				t.Fatalf("got %d lines of batched sends in the logs, want one matching %s:\n%s", got, tt.want, logs())
			}
			t.Log(strings.TrimSpace(tt.want.FindString(logs())))
			deliverToSubscribers(t, url, 100, 10)
		})
	}
}

// deliverToSubscribers adds messages to a conversation with subscribers at its tail,
// each on its own websocket, and checks that each gets every message once, in order.
func deliverToSubscribers(t *testing.T, url string, subscribers, messages int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	conv := graphql(t, url, `mutation { createConversation(title: "fan-out") { id } }`)["createConversation"].(map[string]any)["id"].(string)
	add := func(text string) string {
		edge := graphql(t, url, `mutation { addMessage(conversationId: "`+conv+`", input: {text: {role: USER, content: "`+text+`"}}) { cursor } }`)
		return edge["addMessage"].(map[string]any)["cursor"].(string)
	}
	after := add("before")
	query := `subscription($c: ID!, $a: String) { messageAdded(conversationId: $c, after: $a) { node { ... on TextMessage { content } } } }`
	var mu sync.Mutex
	got := make([][]string, subscribers)
	for i := range subscribers {
		conn, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(url, "http")+"/graphql",
			&websocket.DialOptions{Subprotocols: []string{"graphql-transport-ws"}})
		if err != nil {
			t.Fatalf("subscriber %d: dial: %v", i, err)
		}
		defer conn.CloseNow()
		for _, m := range []any{
			map[string]any{"type": "connection_init"},
			map[string]any{"id": "1", "type": "subscribe", "payload": map[string]any{"query": query, "variables": map[string]any{"c": conv, "a": after}}},
		} {
			b, _ := json.Marshal(m)
			if err := conn.Write(ctx, websocket.MessageText, b); err != nil {
				t.Fatalf("subscriber %d: write: %v", i, err)
			}
		}
		go func() {
			for {
				_, b, err := conn.Read(ctx)
				if err != nil {
					return
				}
				var m struct {
					Type    string
					Payload struct {
						Data struct {
							MessageAdded struct{ Node struct{ Content string } }
						}
					}
				}
				json.Unmarshal(b, &m)
				switch m.Type {
				case "ping":
					conn.Write(ctx, websocket.MessageText, []byte(`{"type":"pong"}`))
				case "next":
					mu.Lock()
					got[i] = append(got[i], m.Payload.Data.MessageAdded.Node.Content)
					mu.Unlock()
				}
			}
		}()
	}
	// wait polls until every subscriber has n messages, or a deadline passes.
	wait := func(n int) {
		deadline := time.Now().Add(time.Minute)
		for {
			mu.Lock()
			short := -1
			for i := range got {
				if len(got[i]) < n {
					short = i
					break
				}
			}
			mu.Unlock()
			if short < 0 {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("subscriber %d has %d messages after a minute, want %d", short, len(got[short]), n)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	// The first message is read from the database by each subscriber; once all have
	// it, they are at the tail, and the others are delivered to them together.
	var want []string
	for i := range messages {
		want = append(want, fmt.Sprint("message ", i))
		add(want[i])
		if i == 0 {
			wait(1)
		}
	}
	wait(messages)
	mu.Lock()
	defer mu.Unlock()
	for i := range got {
		if fmt.Sprint(got[i]) != fmt.Sprint(want) {
			t.Errorf("subscriber %d: got %q, want %q", i, got[i], want)
		}
	}
}
