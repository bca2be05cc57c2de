package processing_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/parley-dev/parley/internal/pgtest"
	"github.com/parley-dev/parley/internal/testserver"
)

func TestMain(m *testing.M) {
	if os.Getenv(stdioServerEnv) == "1" {
		runStdioServer() // this process is an MCP server a test started
	}
	pgtest.Main(m)
}

// wait bounds how long a test waits for something that should happen promptly; -race
// on two cores is slow, so it is generous.
const wait = 30 * time.Second

// env is a Parley server wired as cmd/parley wires it, from a configuration: processing,
// tool policies, realtime subscriptions fed by a database listener.
type env struct {
	*testserver.Wired
}

// start runs a server configured by yaml (a configuration file's text).
func start(t *testing.T, yaml string) *env {
	t.Helper()
	return &env{testserver.NewWired(t, yaml)}
}

// subscription reads a GraphQL subscription over SSE (graphql-sse, distinct connections).
type subscription struct {
	t      *testing.T
	cancel context.CancelFunc
	events chan json.RawMessage
}

// subscribe starts a subscription and returns once the server has accepted it.
func (e *env) subscribe(t *testing.T, query string, vars map[string]any) *subscription {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	body, _ := json.Marshal(map[string]any{"query": query, "variables": vars})
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, e.URL+"/graphql", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		cancel()
		t.Fatalf("subscribe: %v", err)
	}
	if resp.StatusCode != http.StatusOK {
		cancel()
		t.Fatalf("subscribe: status %d", resp.StatusCode)
	}
	s := &subscription{t: t, cancel: cancel, events: make(chan json.RawMessage, 100)}
	t.Cleanup(cancel)
	go func() {
		defer resp.Body.Close()
		defer close(s.events)
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 1<<20), 16<<20)
		event := ""
		for sc.Scan() {
			line := sc.Text()
			switch {
			case strings.HasPrefix(line, "event:"):
				event = strings.TrimSpace(strings.TrimPrefix(line, "event:"))
			case strings.HasPrefix(line, "data:") && event == "next":
				s.events <- json.RawMessage(strings.TrimSpace(strings.TrimPrefix(line, "data:")))
			}
		}
	}()
	return s
}

// next returns the next event's data, decoded into v, failing after wait.
func (s *subscription) next(v any) {
	s.t.Helper()
	select {
	case raw, ok := <-s.events:
		if !ok {
			s.t.Fatal("subscription ended")
		}
		s.decode(raw, v)
	case <-time.After(wait):
		s.t.Fatal("no subscription event in time")
	}
}

// decode decodes an event's data into v, failing on errors.
func (s *subscription) decode(raw json.RawMessage, v any) {
	s.t.Helper()
	var r struct {
		Data   json.RawMessage
		Errors []any
	}
	if err := json.Unmarshal(raw, &r); err != nil || len(r.Errors) > 0 {
		s.t.Fatalf("subscription event %s: %v", raw, err)
	}
	if err := json.Unmarshal(r.Data, v); err != nil {
		s.t.Fatalf("decode %s: %v", r.Data, err)
	}
}

func (s *subscription) close() { s.cancel() }
