package tracing_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/parley-dev/parley/db"
	"github.com/parley-dev/parley/internal/pgtest"
	"github.com/parley-dev/parley/internal/testserver"
	"github.com/parley-dev/parley/server"
	"github.com/parley-dev/parley/tracing"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// post sends a GraphQL request with the given traceparent header ("" for none).
func post(t *testing.T, url, query, traceparent string) {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"query": query})
	req, _ := http.NewRequest(http.MethodPost, url+"/graphql", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	if traceparent != "" {
		req.Header.Set("traceparent", traceparent)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
}

// tracedServer is a test server whose GraphQL endpoint and store trace to tp.
func tracedServer(t *testing.T, tp trace.TracerProvider) *testserver.Server {
	return testserver.NewWith(t, testserver.Options{
		DB:        db.Config{TracerProvider: tp},
		Configure: func(c *server.Config) { c.TracerProvider = tp },
	})
}

func TestEnabled(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		env  map[string]string
		want bool
	}{
		{"nothing set", nil, false},
		{"endpoint", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318"}, true},
		{"traces endpoint", map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://collector:4318/v1/traces"}, true},
		{"SDK disabled", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318", "OTEL_SDK_DISABLED": "true"}, false},
		{"exporter none", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318", "OTEL_TRACES_EXPORTER": "none"}, false},
	}
	for _, tt := range tests {
		if got := tracing.Enabled(func(k string) string { return tt.env[k] }); got != tt.want {
			t.Errorf("%s: got %v, want %v", tt.name, got, tt.want)
		}
	}
}

// With a tracer provider, each operation gets a span named for it, continuing the
// caller's trace, with the database transaction it ran as a child; an operation that
// fails has an error status and the error codes.
func TestSpans(t *testing.T) {
	t.Parallel()
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	srv := tracedServer(t, tp)
	const traceID = "4bf92f3577b34da6a3ce929d0e0e4736"
	post(t, srv.URL, `mutation Create { createConversation(title: "traced") { id } }`, "00-"+traceID+"-00f067aa0ba902b7-01")
	post(t, srv.URL, `{ conversation(id: "conv_00000000-0000-0000-0000-000000000000") { title } }`, "")

	spans := exp.GetSpans()
	byName := map[string]tracetest.SpanStub{}
	for _, s := range spans {
		byName[s.Name] = s
	}
	op, ok := byName["mutation Create"]
	if !ok {
		t.Fatalf("no span named \"mutation Create\" in %d spans: %v", len(spans), names(spans))
	}
	if got := op.SpanContext.TraceID().String(); got != traceID {
		t.Errorf("operation span: trace id %s, want the caller's %s", got, traceID)
	}
	if op.SpanKind != trace.SpanKindServer {
		t.Errorf("operation span kind: got %v, want server", op.SpanKind)
	}
	tx, ok := byName["db.transaction"]
	if !ok {
		t.Fatalf("no db.transaction span in %v", names(spans))
	}
	if tx.Parent.SpanID() != op.SpanContext.SpanID() {
		t.Errorf("db.transaction's parent: got %s, want the operation's span %s", tx.Parent.SpanID(), op.SpanContext.SpanID())
	}
	q, ok := byName["query"]
	if !ok {
		t.Fatalf("no span named \"query\" in %v", names(spans))
	}
	if q.Status.Code != codes.Error {
		t.Errorf("failed query's span: status %v, want error", q.Status)
	}
	found := false
	for _, a := range q.Attributes {
		if a.Key == "graphql.error.codes" && len(a.Value.AsStringSlice()) == 1 && a.Value.AsStringSlice()[0] == "NOT_FOUND" {
			found = true
		}
	}
	if !found {
		t.Errorf("failed query's span: attributes %v lack graphql.error.codes [NOT_FOUND]", q.Attributes)
	}
}

func names(spans tracetest.SpanStubs) []string {
	var out []string
	for _, s := range spans {
		out = append(out, s.Name)
	}
	return out
}

// Without a tracer provider nothing is traced, not even through OpenTelemetry's global
// provider; and without an OTLP endpoint in the environment FromEnv gives none. Not
// parallel: it sets the global provider and the environment.
func TestDisabled(t *testing.T) {
	for _, k := range []string{"OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"} {
		t.Setenv(k, "")
	}
	tp, shutdown, err := tracing.FromEnv(context.Background(), "test")
	if err != nil || tp != nil {
		t.Fatalf("FromEnv without an endpoint: got %v, %v; want no provider", tp, err)
	}
	if err := shutdown(context.Background()); err != nil {
		t.Error(err)
	}
	exp := tracetest.NewInMemoryExporter()
	global := otel.GetTracerProvider()
	otel.SetTracerProvider(sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp)))
	defer otel.SetTracerProvider(global)
	srv := tracedServer(t, tp)
	post(t, srv.URL, `mutation { createConversation(title: "untraced") { id } }`, "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")
	if spans := exp.GetSpans(); len(spans) != 0 {
		t.Errorf("tracing off: got %d spans %v, want none", len(spans), names(spans))
	}
}

// FromEnv with an endpoint exports over OTLP/HTTP: spans reach a collector's
// /v1/traces when the provider shuts down. Not parallel: it sets the environment.
func TestFromEnvExports(t *testing.T) {
	var mu sync.Mutex
	var got []string
	collector := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		got = append(got, r.Method+" "+r.URL.Path+" "+r.Header.Get("Content-Type"))
		mu.Unlock()
		w.Header().Set("Content-Type", "application/x-protobuf")
	}))
	defer collector.Close()
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", collector.URL)
	t.Setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "")
	tp, shutdown, err := tracing.FromEnv(context.Background(), "test")
	if err != nil || tp == nil {
		t.Fatalf("FromEnv with an endpoint: got %v, %v", tp, err)
	}
	srv := tracedServer(t, tp)
	post(t, srv.URL, `mutation { createConversation(title: "exported") { id } }`, "")
	if err := shutdown(context.Background()); err != nil {
		t.Fatalf("shutdown: %v", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(got) == 0 || got[0] != "POST /v1/traces application/x-protobuf" {
		t.Errorf("collector got %v, want POST /v1/traces application/x-protobuf", got)
	}
}
