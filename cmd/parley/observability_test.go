package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/parley-dev/parley/internal/pgtest"
	"github.com/parley-dev/parley/internal/poll"
)

// TestAccessLogTraced: with tracing on (OTEL_TRACES_EXPORTER=console), a request's
// access log line carries its trace id (the caller's), the owner it acted for, the
// operation's name and type, and its duration in milliseconds; the spans name the
// service's version, the build's (as parley version says it).
func TestAccessLogTraced(t *testing.T) {
	t.Parallel()
	p := startProcessEnv(t, []string{"OTEL_TRACES_EXPORTER=console", "OTEL_EXPORTER_OTLP_ENDPOINT=", "OTEL_SDK_DISABLED=", "OTEL_BSP_SCHEDULE_DELAY=100"},
		"--database-url", pgtest.NewDatabase(t))
	const traceID = "5b8efff798038103d269b633813fc60c"
	body, _ := json.Marshal(map[string]any{"query": `mutation Named { createConversation(title: "logged") { id } }`})
	req, _ := http.NewRequest(http.MethodPost, p.url+"/graphql", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("traceparent", "00-"+traceID+"-eee19b7ec3c1b174-01")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	var line string
	var rec map[string]any
	poll.Until(t, "an access log line for /graphql", 30*time.Second, func() error {
		for _, line = range strings.Split(p.stderr.String(), "\n") {
			rec = nil // a line's own fields, not merged into the last one's
			if json.Unmarshal([]byte(line), &rec) == nil && rec["msg"] == "request" && rec["path"] == "/graphql" {
				return nil
			}
		}
		return fmt.Errorf("the log:\n%s", p.stderr)
	})
	if rec["trace_id"] != traceID || rec["owner"] != "local" || rec["operation"] != "Named" || rec["operationType"] != "mutation" {
		t.Errorf("access log line: got %s, want trace_id %s, owner local, operation Named, operationType mutation", line, traceID)
	}
	if d, ok := rec["durationMs"].(float64); !ok || d <= 0 {
		t.Errorf("access log line: got durationMs %v, want a positive number of milliseconds", rec["durationMs"])
	}
	checkServiceVersion(t, p)
}

// TestMetricsNotOnAPIWithAuth: once authentication is configured, /metrics is not
// served on the API's address; --metrics-addr still serves it where it says.
func TestMetricsNotOnAPIWithAuth(t *testing.T) {
	t.Parallel()
	dsn := pgtest.NewDatabase(t)
	url, stop := serve(t, "--database-url", dsn, "--auth-tokens")
	if status, body := get(t, url+"/metrics"); strings.Contains(body, "go_goroutines") {
		t.Errorf("/metrics on the API's address with authentication: got %d with the metrics, want them elsewhere", status)
	}
	stop()
	addr := freeAddr(t)
	_, stop = serve(t, "--database-url", dsn, "--auth-tokens", "--metrics-addr", addr)
	defer stop()
	if status, body := get(t, "http://"+addr+"/metrics"); status != http.StatusOK || !strings.Contains(body, "parley_http_refused_total") && !strings.Contains(body, "go_sql_open_connections") {
		t.Errorf("/metrics on --metrics-addr with authentication: got %d %.300s", status, body)
	}
}

// freeAddr returns a loopback address nothing listens on just now.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// checkServiceVersion waits for p's console exporter to write a span of the trace
// traceID and checks that its resource names the build's version.
func checkServiceVersion(t *testing.T, p *process) {
	t.Helper()
	want := `{"Key":"service.version","Value":{"Type":"STRING","Value":` + strconv.Quote(clientVersion) + `}}`
	poll.Until(t, "a span with a service.version", 30*time.Second, func() error {
		if !strings.Contains(p.stdout.String(), `"service.version"`) {
			return fmt.Errorf("the spans:\n%s", p.stdout)
		}
		return nil
	})
	if out := strings.ReplaceAll(p.stdout.String(), " ", ""); !strings.Contains(strings.ReplaceAll(out, "\n", ""), want) {
		t.Errorf("the spans' resource: want %s in\n%.2000s", want, p.stdout)
	}
}
