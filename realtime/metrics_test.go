package realtime_test

import (
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/parley-dev/parley/db"
	"github.com/parley-dev/parley/metrics"
	"github.com/parley-dev/parley/server"
)

// scrape returns the server's /metrics, in Prometheus's text format.
func scrape(t *testing.T, baseURL string) string {
	t.Helper()
	resp, err := httpClient.Get(baseURL + "/metrics")
	if err != nil {
		t.Fatalf("GET /metrics: %v", err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /metrics: status %d, %v", resp.StatusCode, err)
	}
	return string(b)
}

// sample returns the value of the sample of series (a name with its labels, in the
// order Prometheus writes them: sorted by name), or 0 when there is none.
func sample(exposition, series string) float64 {
	m := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(series) + ` (\S+)$`).FindStringSubmatch(exposition)
	if m == nil {
		return 0
	}
	v, _ := strconv.ParseFloat(m[1], 64)
	return v
}

// TestMetrics scrapes /metrics after each kind of operation: requests by operation type
// and outcome with their latency, open subscriptions, the listener's reconnections and
// the lag from storing a message to delivering it, and Go's and the process's own.
func TestMetrics(t *testing.T) {
	t.Parallel()
	m := metrics.New()
	app := fmt.Sprintf("parley-listener-metrics-%d", time.Now().UnixNano())
	r := newReplica(t, "", replicaOptions{
		listener:  db.ListenerConfig{ApplicationName: app, OnReconnect: m.ListenerReconnected, MinReconnectInterval: 10 * time.Millisecond},
		configure: func(c *server.Config) { c.Metrics, c.ServeMetrics = m, true },
	})
	conv := r.CreateConversation(t, "metrics")                                                          // mutation, ok
	r.Do(t, `{ conversations(first: 1) { edges { cursor } } }`, nil)                                    // query, ok
	r.Do(t, `mutation { createConversation(title: "\u0000`+strings.Repeat("x", 600)+`") { id } }`, nil) // mutation, BAD_USER_INPUT
	r.Do(t, `{ conversation(id: "conv_nope") { title } }`, nil)                                         // query, NOT_FOUND
	r.Do(t, `{ nope `, nil)                                                                             // unknown, GRAPHQL_PARSE_FAILED

	s := subscribeSSE(t, r.URL, addedQuery(false), map[string]any{"c": conv})
	pollUntil(t, "the subscription to start", func() bool { return r.Hub.Stats().Subscribers == 1 })
	out := scrape(t, r.URL)
	for series, want := range map[string]float64{
		`parley_graphql_requests_total{operation_type="mutation",outcome="ok"}`:                  1,
		`parley_graphql_requests_total{operation_type="mutation",outcome="BAD_USER_INPUT"}`:      1,
		`parley_graphql_requests_total{operation_type="query",outcome="ok"}`:                     1,
		`parley_graphql_requests_total{operation_type="query",outcome="NOT_FOUND"}`:              1,
		`parley_graphql_requests_total{operation_type="unknown",outcome="GRAPHQL_PARSE_FAILED"}`: 1,
		`parley_graphql_request_duration_seconds_count{operation_type="mutation"}`:               2,
		`parley_graphql_request_duration_seconds_count{operation_type="query"}`:                  2,
		`parley_subscriptions_active`:      1,
		`parley_listener_reconnects_total`: 0,
	} {
		if got := sample(out, series); got != want {
			t.Errorf("%s: got %v, want %v", series, got, want)
		}
	}
	for _, name := range []string{"go_goroutines", "process_cpu_seconds_total", "parley_notify_delivery_lag_seconds_count"} {
		if !regexp.MustCompile(`(?m)^` + name + ` `).MatchString(out) {
			t.Errorf("no %s in /metrics", name)
		}
	}

	// A message stored now reaches the subscriber: one lag observed, and the
	// subscription counted once however many messages it delivers.
	for range 3 {
		r.AddMessage(t, conv, map[string]any{"text": map[string]any{"role": "USER", "content": "hi"}})
	}
	s.waitCount(t, 3)
	pollUntil(t, "the lags to be observed", func() bool {
		return sample(scrape(t, r.URL), "parley_notify_delivery_lag_seconds_count") == 3
	})
	out = scrape(t, r.URL)
	if got := sample(out, `parley_graphql_requests_total{operation_type="subscription",outcome="ok"}`); got != 1 {
		t.Errorf("subscriptions counted: got %v, want 1", got)
	}
	if sum := sample(out, "parley_notify_delivery_lag_seconds_sum"); sum <= 0 || sum > 3*wait.Seconds() {
		t.Errorf("delivery lag sum: got %vs, want a positive time", sum)
	}

	// The listener's connection is killed: it reconnects, and that is counted.
	pid := listenerPID(t, r, app)
	var killed bool
	if err := r.Store.SQL().Get(&killed, `SELECT pg_terminate_backend($1)`, pid); err != nil || !killed {
		t.Fatalf("pg_terminate_backend(%d): %v, %v", pid, killed, err)
	}
	pollUntil(t, "the reconnection to be counted", func() bool {
		return sample(scrape(t, r.URL), "parley_listener_reconnects_total") == 1
	})

	// The subscription ends: no longer active.
	s.cancel()
	<-s.ended
	pollUntil(t, "the subscription to be counted closed", func() bool {
		return sample(scrape(t, r.URL), "parley_subscriptions_active") == 0
	})
}
