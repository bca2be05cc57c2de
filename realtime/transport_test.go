package realtime_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"runtime"
	"runtime/pprof"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/parley-dev/parley"
	"github.com/parley-dev/parley/server"
)

// errorCode returns the extensions.code of the first error in a subscription's errors.
func errorCode(t *testing.T, errs []json.RawMessage) string {
	t.Helper()
	if len(errs) == 0 {
		t.Fatal("no error")
	}
	var list []struct{ Extensions struct{ Code string } }
	if err := json.Unmarshal(errs[0], &list); err != nil || len(list) == 0 {
		t.Fatalf("undecodable errors %s", errs[0])
	}
	return list[0].Extensions.Code
}

// Bad arguments are refused before anything is streamed, with the API's error codes, on
// every transport.
func TestSubscriptionErrors(t *testing.T) {
	t.Parallel()
	a := newReplica(t, "", replicaOptions{})
	conv := a.CreateConversation(t, "errors")
	gone := a.CreateConversation(t, "gone")
	a.MustDo(t, `mutation($c: ID!) { deleteConversation(id: $c) }`, map[string]any{"c": gone}, nil)
	tests := []struct {
		name     string
		query    string
		vars     map[string]any
		wantCode string
	}{
		{"after is not a cursor", addedQuery(true), map[string]any{"c": conv, "a": "nonsense"}, "BAD_USER_INPUT"},
		{"after is a conversation cursor", addedQuery(true), map[string]any{"c": conv,
			"a": parley.ConversationCursor(time.Now(), "00000000-0000-0000-0000-000000000000")}, "BAD_USER_INPUT"},
		{"no such conversation", addedQuery(false), map[string]any{"c": gone}, "NOT_FOUND"},
		{"not a conversation id", addedQuery(false), map[string]any{"c": "msg_00000000-0000-0000-0000-000000000000"}, "NOT_FOUND"},
		{"updates of no such conversation", updatedQuery, map[string]any{"c": gone}, "NOT_FOUND"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, proto := range []string{transportWS, legacyWS, "sse"} {
				var s *sub
				if proto == "sse" {
					s = subscribeSSE(t, a.URL, tt.query, tt.vars).sub
				} else {
					s = dial(t, a.URL, proto).subscribe(t, tt.query, tt.vars)
				}
				errs, _ := s.waitEnd(t)
				if got := errorCode(t, errs); got != tt.wantCode {
					t.Errorf("%s: got %s, want %s (%s)", proto, got, tt.wantCode, errs[0])
				}
				if ev, _, _ := s.snapshot(); len(ev) > 0 {
					t.Errorf("%s: got %d events, want none", proto, len(ev))
				}
			}
		})
	}
}

// graphql-transport-ws connections are pinged and must answer; legacy graphql-ws ones
// get "ka" messages; a websocket that never sends connection_init is closed with 4408.
func TestKeepAliveAndInitTimeout(t *testing.T) {
	t.Parallel()
	a := newReplica(t, "", replicaOptions{configure: func(c *server.Config) {
		// Long enough for a client under the race detector on a busy machine to answer
		// within two intervals, and to send connection_init in time: 200 ms was not, on
		// a CI machine under load, and 1 s (2 s to answer) failed now and then at a load
		// average of 10-15 on 2 cores.
		c.GraphQL.KeepAlive = 2 * time.Second
		c.GraphQL.InitTimeout = 2 * time.Second
	}})
	conv := a.CreateConversation(t, "keepalive")

	t.Run("answering pings keeps the connection", func(t *testing.T) {
		c := dial(t, a.URL, transportWS)
		s := c.subscribe(t, addedQuery(false), map[string]any{"c": conv})
		pollUntil(t, "three pings", func() bool {
			c.mu.Lock()
			defer c.mu.Unlock()
			return c.pings >= 3 || c.closeErr != nil
		})
		select {
		case <-c.done:
			t.Fatalf("connection closed although it answered pings: %v", c.closeErr)
		default:
		}
		if _, _, completed := s.snapshot(); completed {
			t.Error("subscription completed")
		}
	})
	t.Run("a client that does not answer is dropped", func(t *testing.T) {
		c := dial(t, a.URL, transportWS)
		c.mu.Lock()
		c.answerPings = false
		c.mu.Unlock()
		c.subscribe(t, addedQuery(false), map[string]any{"c": conv})
		c.closeStatus(t) // any status: the server drops it without a handshake
	})
	t.Run("legacy keepalive", func(t *testing.T) {
		c := dialRaw(t, a.URL, legacyWS)
		if err := c.write(map[string]any{"type": "connection_init"}); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), wait)
		defer cancel()
		kas := 0
		for kas < 3 {
			_, b, err := c.conn.Read(ctx)
			if err != nil {
				t.Fatalf("after %d ka: %v", kas, err)
			}
			if strings.Contains(string(b), `"ka"`) {
				kas++
			}
		}
		close(c.done)
	})
	t.Run("init timeout", func(t *testing.T) {
		for _, proto := range []string{transportWS, legacyWS} {
			c := dialRaw(t, a.URL, proto)
			c.startReading()
			if got := c.closeStatus(t); got != 4408 {
				t.Errorf("%s: close status %d, want 4408", proto, got)
			}
		}
	})
}

// subscribeStuck subscribes to conv's messages on a websocket of its own whose client
// then reads nothing at all.
func subscribeStuck(t *testing.T, url, conv string) {
	t.Helper()
	stuck := dialRaw(t, url, transportWS)
	close(stuck.done) // no reader
	if err := stuck.write(map[string]any{"type": "connection_init"}); err != nil {
		t.Fatal(err)
	}
	if err := stuck.write(map[string]any{"id": "1", "type": "subscribe", "payload": map[string]any{
		"query":     `subscription($c: ID!) { messageAdded(conversationId: $c) { node { ... on TextMessage { content } } } }`,
		"variables": map[string]any{"c": conv}}}); err != nil {
		t.Fatal(err)
	}
}

// A subscriber that stops reading is cut off after the write timeout, without slowing
// the writers or the other subscribers of the conversation, and without the server
// holding its backlog: what it missed stays in the database for when it comes back.
func TestSlowSubscriberCutOff(t *testing.T) {
	t.Parallel()
	a := newReplica(t, "", replicaOptions{configure: func(c *server.Config) {
		c.GraphQL.WriteTimeout = 300 * time.Millisecond
	}})
	b := newReplica(t, a.DSN, replicaOptions{})
	conv := b.CreateConversation(t, "slow")

	// The stuck client subscribes and then reads nothing at all.
	subscribeStuck(t, a.URL, conv)
	healthy := dial(t, a.URL, transportWS)
	s := healthy.subscribe(t, addedQuery(false), map[string]any{"c": conv})
	pollUntil(t, "both subscriptions to start", func() bool { return a.Hub.Stats().Subscribers == 2 })

	// Write until the stuck client's socket buffers are full and its write times out,
	// however large the buffers are.
	big := strings.Repeat("x", 512<<10)
	n := 0
	start := time.Now()
	for a.Hub.Stats().Subscribers == 2 {
		if n == 400 {
			t.Fatalf("the stuck subscriber is still connected after %d messages of 512 KiB", n)
		}
		if _, err := addText(b.URL, conv, fmt.Sprintf("%d %s", n, big)); err != nil {
			t.Fatal(err)
		}
		n++
	}
	t.Logf("the stuck subscriber was cut off after %d messages of 512 KiB, in %s", n, time.Since(start))
	checkSequence(t, "healthy subscriber", positions(s.waitCount(t, n)), 1, n)
}

// A subscriber whose client has stopped reading does not delay the others, however long
// the write timeout: deliveries to a conversation's subscribers at its tail are written
// one after another from a few goroutines (transport's inline drain), which must hand
// a write the network cannot take at once to a goroutine of its own instead of waiting
// for it. The write timeout here is longer than the test's wait, so that a delivery
// held up behind the stuck client fails the test rather than being cut free by it.
func TestStuckSubscriberDoesNotDelayOthers(t *testing.T) {
	t.Parallel()
	a := newReplica(t, "", replicaOptions{configure: func(c *server.Config) {
		c.GraphQL.WriteTimeout = 10 * time.Minute
	}})
	b := newReplica(t, a.DSN, replicaOptions{})
	conv := b.CreateConversation(t, "stuck")
	subscribeStuck(t, a.URL, conv)
	var subs []*sub
	for range 4 {
		subs = append(subs, dial(t, a.URL, transportWS).subscribe(t, addedQuery(false), map[string]any{"c": conv}))
	}
	pollUntil(t, "the subscriptions to start", func() bool { return a.Hub.Stats().Subscribers == 5 })
	// 32 MiB: more than loopback's socket buffers hold (a few MiB each way), so that
	// the stuck client's writes stop being taken long before the last message.
	const messages = 64
	big := strings.Repeat("x", 512<<10)
	for i := range messages {
		if _, err := addText(b.URL, conv, fmt.Sprintf("%d %s", i, big)); err != nil {
			t.Fatal(err)
		}
		// Each healthy subscriber gets each message while the stuck one holds its
		// writes, within the wait (far less than the write timeout).
		for j, s := range subs {
			checkSequence(t, fmt.Sprintf("subscriber %d", j), positions(s.waitCount(t, i+1)), 1, i+1)
		}
	}
}

// A thousand subscribers of one conversation, over fifty websockets, all receive every
// message, in order.
func TestThousandSubscribers(t *testing.T) {
	t.Parallel()
	a := newReplica(t, "", replicaOptions{})
	b := newReplica(t, a.DSN, replicaOptions{})
	conv := b.CreateConversation(t, "crowd")
	const conns, perConn, messages = 50, 20, 20
	var subs []*sub
	for range conns {
		c := dial(t, a.URL, transportWS)
		for range perConn {
			subs = append(subs, c.subscribe(t, addedQuery(false), map[string]any{"c": conv}))
		}
	}
	pollUntil(t, "all subscriptions to start", func() bool { return a.Hub.Stats().Subscribers == conns*perConn })
	writeConcurrently(t, b.URL, conv, 5, messages)
	for i, s := range subs {
		ev := s.waitCount(t, messages)
		checkSequence(t, fmt.Sprintf("subscriber %d", i), positions(ev), 1, messages)
	}
}

// Subscribers come and go, over every transport, ended by the client in every way (a
// complete or stop message, a normal close, dropping the connection, cancelling the SSE
// request); afterwards the process runs as many goroutines as before. Not parallel: it
// counts the process's goroutines.
func TestNoGoroutineLeak(t *testing.T) {
	a := newReplica(t, "", replicaOptions{})
	b := newReplica(t, a.DSN, replicaOptions{})
	conv := b.CreateConversation(t, "leaks")
	round := func(k int) {
		var subs []*sub
		var conns []*wsClient
		var streams []*sseStream
		for i := range 6 {
			c := dial(t, a.URL, []string{transportWS, legacyWS}[i%2])
			conns = append(conns, c)
			subs = append(subs, c.subscribe(t, addedQuery(false), map[string]any{"c": conv}))
			c.subscribe(t, updatedQuery, map[string]any{"c": conv})
		}
		for range 3 {
			st := subscribeSSE(t, a.URL, addedQuery(false), map[string]any{"c": conv})
			streams = append(streams, st)
			subs = append(subs, st.sub)
		}
		pollUntil(t, "the subscriptions to start", func() bool { return a.Hub.Stats().Subscribers == 6*2+3 })
		writeConcurrently(t, b.URL, conv, 2, 3)
		for _, s := range subs {
			s.waitCount(t, 3)
		}
		for i, c := range conns {
			switch i % 3 {
			case 0: // the client ends its subscriptions, then closes normally
				c.mu.Lock()
				var ids []string
				for id := range c.subs {
					ids = append(ids, id)
				}
				c.mu.Unlock()
				for _, id := range ids {
					typ := "complete"
					if c.proto == legacyWS {
						typ = "stop"
					}
					c.write(map[string]any{"id": id, "type": typ})
				}
				c.conn.Close(websocket.StatusNormalClosure, "")
			case 1:
				c.conn.Close(websocket.StatusGoingAway, "bye")
			case 2:
				c.conn.CloseNow()
			}
			<-c.done
		}
		for _, st := range streams {
			st.cancel()
			<-st.ended
		}
		pollUntil(t, fmt.Sprintf("round %d's subscriptions to end", k), func() bool { return a.Hub.Stats().Subscribers == 0 })
	}
	count := func() int {
		// Idle keep-alive connections of the writers' client hold goroutines on both
		// ends; they are a pool, not a leak.
		httpClient.CloseIdleConnections()
		http.DefaultClient.CloseIdleConnections()
		return runtime.NumGoroutine()
	}
	round(0) // warms up pools and lazily started goroutines
	baseline := -1
	pollUntil(t, "the goroutine count to settle", func() bool {
		n := count()
		settled := n == baseline
		baseline = n
		return settled
	})
	for k := 1; k <= 3; k++ {
		round(k)
	}
	deadline := time.Now().Add(10 * time.Second)
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for count() > baseline && time.Now().Before(deadline) {
		<-tick.C
	}
	if n := count(); n > baseline {
		var sb strings.Builder
		pprof.Lookup("goroutine").WriteTo(&sb, 1)
		t.Fatalf("%d goroutines after the subscribers left, %d before:\n%s", n, baseline, sb.String())
	}
}
