package realtime_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/parley-dev/parley/db"
	"github.com/parley-dev/parley/internal/pgtest"
	"github.com/parley-dev/parley/internal/poll"
	"github.com/parley-dev/parley/internal/testserver"
	"github.com/parley-dev/parley/realtime"
	"github.com/parley-dev/parley/server"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// wait is how long a test waits for something that should happen promptly. It is
// generous because -race on a small machine is slow; waiting that long means failure.
const wait = 30 * time.Second

// replica is one Parley server, wired as cmd/parley wires it: a Hub fed by its own
// Listener.
type replica struct {
	*testserver.Server
}

// replicaOptions adjust a replica.
type replicaOptions struct {
	hub       realtime.Config
	listener  db.ListenerConfig // OnEvent and OnResync are the wiring's
	configure func(*server.Config)
}

// newReplica starts a replica on the database at dsn ("" for a fresh one).
func newReplica(t *testing.T, dsn string, opts replicaOptions) *replica {
	t.Helper()
	return &replica{testserver.NewWith(t, testserver.Options{DSN: dsn, Realtime: opts.hub,
		Listener: opts.listener, Configure: opts.configure})}
}

// waitUntil polls cond whenever signal fires, until it holds or wait passes.
func waitUntil(t *testing.T, what string, signal <-chan struct{}, cond func() bool) {
	t.Helper()
	deadline := time.NewTimer(wait)
	defer deadline.Stop()
	for !cond() {
		select {
		case <-signal:
		case <-deadline.C:
			t.Fatalf("timed out after %s waiting for %s", wait, what)
		}
	}
}

// pollUntil checks cond every few milliseconds until it holds or wait passes: for
// conditions nothing signals (another process's state).
func pollUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	poll.For(t, what, wait, cond)
}

// The GraphQL websocket subprotocols.
const (
	transportWS = "graphql-transport-ws"
	legacyWS    = "graphql-ws"
)

// edgeQuery is the selection a test subscription asks for.
const edgeSelection = `{ cursor node { __typename ... on MessageBase { id position updatedAt }
	... on ToolRequestMessage { toolCalls { id approvalStatus } } } }`

func addedQuery(withAfter bool) string {
	if withAfter {
		return `subscription($c: ID!, $a: String) { messageAdded(conversationId: $c, after: $a) ` + edgeSelection + ` }`
	}
	return `subscription($c: ID!) { messageAdded(conversationId: $c) ` + edgeSelection + ` }`
}

const updatedQuery = `subscription($c: ID!) { messageUpdated(conversationId: $c) ` + edgeSelection + ` }`

// event is one message a subscription delivered.
type event struct {
	Cursor string
	Node   struct {
		Typename  string `json:"__typename"`
		ID        string
		Position  int
		UpdatedAt string
		ToolCalls []struct {
			ID             string
			ApprovalStatus string
		}
	}
}

// sub records what one subscription received.
type sub struct {
	mu        sync.Mutex
	events    []event
	raw       []json.RawMessage // each event's data, as received
	errors    []json.RawMessage
	completed bool
	changed   chan struct{} // signalled on every change
}

func newSub() *sub { return &sub{changed: make(chan struct{}, 1)} }

func (s *sub) update(f func()) {
	s.mu.Lock()
	f()
	s.mu.Unlock()
	select {
	case s.changed <- struct{}{}:
	default:
	}
}

// positions returns the positions received, in order.
func (s *sub) positions() []int {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]int, len(s.events))
	for i, e := range s.events {
		out[i] = e.Node.Position
	}
	return out
}

func (s *sub) snapshot() (events []event, errs []json.RawMessage, completed bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.events), slices.Clone(s.errors), s.completed
}

// waitCount waits until the subscription has received n events, or has ended.
func (s *sub) waitCount(t *testing.T, n int) []event {
	t.Helper()
	waitUntil(t, fmt.Sprintf("%d events", n), s.changed, func() bool {
		s.mu.Lock()
		defer s.mu.Unlock()
		return len(s.events) >= n || s.completed || len(s.errors) > 0
	})
	ev, errs, done := s.snapshot()
	if len(ev) < n {
		t.Fatalf("subscription ended after %d of %d events (completed %v, errors %s)", len(ev), n, done, errs)
	}
	return ev
}

// waitEnd waits until the subscription completes or fails.
func (s *sub) waitEnd(t *testing.T) (errs []json.RawMessage, completed bool) {
	t.Helper()
	waitUntil(t, "the subscription to end", s.changed, func() bool {
		s.mu.Lock()
		defer s.mu.Unlock()
		return s.completed || len(s.errors) > 0
	})
	_, errs, completed = s.snapshot()
	return errs, completed
}

// wsClient is a GraphQL websocket client, speaking either subprotocol, with any number
// of subscriptions.
type wsClient struct {
	t     testing.TB
	conn  *websocket.Conn
	proto string

	mu     sync.Mutex
	subs   map[string]*sub
	nextID int
	// answerPings: whether graphql-transport-ws pings get a pong.
	answerPings bool
	pings       int

	done     chan struct{} // closed when the reader ends
	reading  bool          // the reader has started
	closeErr error         // why the reader ended
}

// dial opens a websocket to srv's GraphQL endpoint and initializes it.
func dial(t testing.TB, baseURL, proto string) *wsClient {
	t.Helper()
	c := dialRaw(t, baseURL, proto)
	c.init(t)
	return c
}

// dialRaw opens a websocket without initializing it.
func dialRaw(t testing.TB, baseURL, proto string) *wsClient {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	conn, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(baseURL, "http")+"/graphql",
		&websocket.DialOptions{Subprotocols: []string{proto}})
	if err != nil {
		t.Fatalf("dial websocket: %v", err)
	}
	conn.SetReadLimit(64 << 20)
	c := &wsClient{t: t, conn: conn, proto: proto, subs: map[string]*sub{}, answerPings: true, done: make(chan struct{})}
	t.Cleanup(func() {
		c.conn.CloseNow()
		// The reader runs once the connection is initialized (or a test starts it);
		// without one, nothing will close done.
		c.mu.Lock()
		reading := c.reading
		c.mu.Unlock()
		if reading {
			<-c.done
		}
	})
	return c
}

func (c *wsClient) write(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	return c.conn.Write(ctx, websocket.MessageText, b)
}

// init sends connection_init, waits for the ack, then reads in the background.
func (c *wsClient) init(t testing.TB) {
	t.Helper()
	if err := c.write(map[string]any{"type": "connection_init"}); err != nil {
		t.Fatalf("connection_init: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	for {
		_, b, err := c.conn.Read(ctx)
		if err != nil {
			t.Fatalf("waiting for connection_ack: %v", err)
		}
		var m struct{ Type string }
		json.Unmarshal(b, &m)
		if m.Type == "connection_ack" {
			break
		}
		if m.Type != "ka" {
			t.Fatalf("got %s, want connection_ack", b)
		}
	}
	c.startReading()
}

// startReading runs read in the background; cleanup then waits for it to end.
func (c *wsClient) startReading() {
	c.mu.Lock()
	c.reading = true
	c.mu.Unlock()
	go c.read()
}

// read dispatches incoming messages to their subscriptions until the connection ends.
func (c *wsClient) read() {
	defer close(c.done)
	for {
		_, b, err := c.conn.Read(context.Background())
		if err != nil {
			c.mu.Lock()
			c.closeErr = err
			c.mu.Unlock()
			return
		}
		var m struct {
			ID      string
			Type    string
			Payload json.RawMessage
		}
		if err := json.Unmarshal(b, &m); err != nil {
			c.t.Errorf("undecodable message %s", b)
			continue
		}
		c.mu.Lock()
		s := c.subs[m.ID]
		c.mu.Unlock()
		switch m.Type {
		case "ping":
			c.mu.Lock()
			c.pings++
			answer := c.answerPings
			c.mu.Unlock()
			if answer {
				c.write(map[string]any{"type": "pong"})
			}
		case "pong", "ka":
		case "next", "data":
			var p struct {
				Data   map[string]event
				Errors json.RawMessage
			}
			if err := json.Unmarshal(m.Payload, &p); err != nil || s == nil {
				c.t.Errorf("unexpected message %s", b)
				continue
			}
			s.update(func() {
				if len(p.Errors) > 0 && string(p.Errors) != "null" {
					s.errors = append(s.errors, p.Errors)
				}
				for _, e := range p.Data {
					s.events = append(s.events, e)
				}
				var raw struct{ Data map[string]json.RawMessage }
				if json.Unmarshal(m.Payload, &raw) == nil {
					for _, r := range raw.Data {
						s.raw = append(s.raw, r)
					}
				}
			})
		case "error":
			if s != nil {
				s.update(func() { s.errors = append(s.errors, m.Payload) })
			}
		case "complete":
			if s != nil {
				s.update(func() { s.completed = true })
			}
		default:
			c.t.Errorf("unexpected message %s", b)
		}
	}
}

// subscribe starts a subscription and returns what records its events.
func (c *wsClient) subscribe(t testing.TB, query string, vars map[string]any) *sub {
	t.Helper()
	s := newSub()
	c.mu.Lock()
	c.nextID++
	id := strconv.Itoa(c.nextID)
	c.subs[id] = s
	c.mu.Unlock()
	typ := "subscribe"
	if c.proto == legacyWS {
		typ = "start"
	}
	if err := c.write(map[string]any{"id": id, "type": typ, "payload": map[string]any{"query": query, "variables": vars}}); err != nil {
		t.Fatalf("subscribe: %v", err)
	}
	return s
}

// closeStatus waits for the connection to end and returns its close status (-1 when
// it ended without a close frame).
func (c *wsClient) closeStatus(t testing.TB) websocket.StatusCode {
	t.Helper()
	select {
	case <-c.done:
	case <-time.After(wait):
		t.Fatalf("connection still open after %s", wait)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return websocket.CloseStatus(c.closeErr)
}

// sseStream is a subscription over SSE (graphql-sse's distinct connections mode).
type sseStream struct {
	*sub
	cancel context.CancelFunc
	ended  chan struct{} // closed when the response body ends
	// sawComplete says the stream ended with "event: complete".
	sawComplete bool
}

// subscribeSSE posts a subscription with Accept: text/event-stream and records the
// events of its response in the background.
func subscribeSSE(t testing.TB, baseURL, query string, vars map[string]any) *sseStream {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"query": query, "variables": vars})
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, baseURL+"/graphql", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		cancel()
		t.Fatalf("POST (SSE): %v", err)
	}
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		cancel()
		t.Fatalf("SSE response: status %d, Content-Type %q", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	s := &sseStream{sub: newSub(), cancel: cancel, ended: make(chan struct{})}
	t.Cleanup(func() { cancel(); <-s.ended })
	go func() {
		defer close(s.ended)
		defer resp.Body.Close()
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(nil, 64<<20)
		var name string
		for sc.Scan() {
			line := sc.Text()
			switch {
			case strings.HasPrefix(line, "event: "):
				name = strings.TrimPrefix(line, "event: ")
				if name == "complete" {
					s.sawComplete = true
					s.update(func() { s.completed = true })
				}
			case strings.HasPrefix(line, "data: ") && name == "next":
				var p struct {
					Data   map[string]event
					Errors json.RawMessage
				}
				if err := json.Unmarshal([]byte(strings.TrimPrefix(line, "data: ")), &p); err != nil {
					t.Errorf("undecodable SSE data %q", line)
					continue
				}
				s.update(func() {
					if len(p.Errors) > 0 && string(p.Errors) != "null" {
						s.errors = append(s.errors, p.Errors)
					}
					for _, e := range p.Data {
						s.events = append(s.events, e)
					}
				})
			}
		}
	}()
	return s
}

// checkSequence fails t unless got is exactly from, from+1, ..., to.
func checkSequence(t testing.TB, what string, got []int, from, to int) {
	t.Helper()
	want := make([]int, 0, to-from+1)
	for p := from; p <= to; p++ {
		want = append(want, p)
	}
	if !slices.Equal(got, want) {
		t.Fatalf("%s: got positions %s, want %d..%d exactly once, in order", what, summarize(got), from, to)
	}
}

// summarize shows a list of positions briefly, pointing at the first irregularity.
func summarize(ps []int) string {
	if len(ps) <= 20 {
		return fmt.Sprint(ps)
	}
	for i := 1; i < len(ps); i++ {
		if ps[i] != ps[i-1]+1 {
			lo, hi := max(0, i-5), min(len(ps), i+5)
			return fmt.Sprintf("%d positions, irregular at index %d: ...%v...", len(ps), i, ps[lo:hi])
		}
	}
	return fmt.Sprintf("%d positions %d..%d", len(ps), ps[0], ps[len(ps)-1])
}

// httpClient is the tests' own HTTP client, so that their idle connections can be
// closed for goroutine counts.
var httpClient = &http.Client{Timeout: wait}

// post sends a GraphQL request and returns its data, or an error for a transport
// failure or a GraphQL error. Unlike testserver's helpers it does not need the test's
// goroutine, so concurrent writers can use it.
func post(baseURL, query string, vars map[string]any) (json.RawMessage, error) {
	body, _ := json.Marshal(map[string]any{"query": query, "variables": vars})
	req, _ := http.NewRequest(http.MethodPost, baseURL+"/graphql", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	resp, err := httpClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var out struct {
		Data   json.RawMessage
		Errors []testserver.Error
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		return nil, fmt.Errorf("status %d: %w", resp.StatusCode, err)
	}
	if len(out.Errors) > 0 {
		return nil, fmt.Errorf("%s: %s", out.Errors[0].Code(), out.Errors[0].Message)
	}
	return out.Data, nil
}

// addText adds a text message through baseURL's GraphQL API and returns its position.
func addText(baseURL, conv, text string) (int, error) {
	data, err := post(baseURL, `mutation($c: ID!, $i: MessageInput!) { addMessage(conversationId: $c, input: $i) {
		node { ... on MessageBase { position } } } }`, map[string]any{"c": conv, "i": testserver.Text("USER", text)})
	if err != nil {
		return 0, err
	}
	var out struct {
		AddMessage struct{ Node struct{ Position int } }
	}
	if err := json.Unmarshal(data, &out); err != nil {
		return 0, err
	}
	return out.AddMessage.Node.Position, nil
}

// writeConcurrently adds n text messages through baseURL with the given number of
// concurrent writers, and returns when all are stored.
func writeConcurrently(t *testing.T, baseURL, conv string, writers, n int) {
	t.Helper()
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	next := make(chan int, n)
	for i := range n {
		next <- i
	}
	close(next)
	for range writers {
		wg.Go(func() {
			for i := range next {
				if _, err := addText(baseURL, conv, fmt.Sprintf("message %d", i)); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("writer: %v", err)
	}
}

// startMessage starts a streaming message in conv through baseURL, as a child of parent
// (the active branch when ""), and returns its id.
func startMessage(t *testing.T, baseURL, conv, parent string) string {
	t.Helper()
	vars := map[string]any{"c": conv}
	if parent != "" {
		vars["p"] = parent
	}
	data, err := post(baseURL, `mutation($c: ID!, $p: ID) { startMessage(conversationId: $c, input: {parentId: $p}) { node { ... on MessageBase { id } } } }`, vars)
	if err != nil {
		t.Fatal(err)
	}
	var started struct {
		StartMessage struct{ Node struct{ ID string } }
	}
	if err := json.Unmarshal(data, &started); err != nil {
		t.Fatal(err)
	}
	return started.StartMessage.Node.ID
}
