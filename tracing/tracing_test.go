package tracing_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/parley-dev/parley/auth"
	"github.com/parley-dev/parley/db"
	"github.com/parley-dev/parley/internal/pgtest"
	"github.com/parley-dev/parley/internal/poll"
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

	// The HTTP server spans end once the handler returns, which may be just after the
	// client has read the response.
	spans := waitSpans(t, exp, func(s tracetest.SpanStubs) bool { return count(s, "POST /graphql") == 2 })
	byName := map[string]tracetest.SpanStub{}
	for _, s := range spans {
		if _, seen := byName[s.Name]; !seen {
			byName[s.Name] = s
		}
	}
	op, ok := byName["mutation Create"]
	if !ok {
		t.Fatalf("no span named \"mutation Create\" in %d spans: %v", len(spans), names(spans))
	}
	if got := op.SpanContext.TraceID().String(); got != traceID {
		t.Errorf("operation span: trace id %s, want the caller's %s", got, traceID)
	}
	if op.SpanKind != trace.SpanKindInternal {
		t.Errorf("operation span kind: got %v, want internal, inside the HTTP request's server span", op.SpanKind)
	}
	var httpSpan tracetest.SpanStub
	for _, s := range spans {
		if s.Name == "POST /graphql" && s.SpanContext.SpanID() == op.Parent.SpanID() {
			httpSpan = s
		}
	}
	if httpSpan.SpanKind != trace.SpanKindServer || httpSpan.SpanContext.TraceID().String() != traceID {
		t.Errorf("the operation's parent: got %q kind %v trace %s, want the server span POST /graphql in the caller's trace",
			httpSpan.Name, httpSpan.SpanKind, httpSpan.SpanContext.TraceID())
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

// waitSpans polls exp until done holds for its spans, for at most 30 s.
func waitSpans(t *testing.T, exp *tracetest.InMemoryExporter, done func(tracetest.SpanStubs) bool) tracetest.SpanStubs {
	t.Helper()
	var spans tracetest.SpanStubs
	poll.Until(t, "the spans", 30*time.Second, func() error {
		if spans = exp.GetSpans(); !done(spans) {
			return fmt.Errorf("got %v", names(spans))
		}
		return nil
	})
	return spans
}

func count(spans tracetest.SpanStubs, name string) int {
	n := 0
	for _, s := range spans {
		if s.Name == name {
			n++
		}
	}
	return n
}

func attr(s tracetest.SpanStub, key string) (attribute.Value, bool) {
	for _, a := range s.Attributes {
		if string(a.Key) == key {
			return a.Value, true
		}
	}
	return attribute.Value{}, false
}

// TestSpansOfRefusedRequests: requests refused before GraphQL runs, without a
// credential (401) or with a body over the limit (413), still have a server span with
// their status, and the caller's trace.
func TestSpansOfRefusedRequests(t *testing.T) {
	t.Parallel()
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	srv := testserver.NewWith(t, testserver.Options{
		Auth: func(store *db.DB) auth.Config { return auth.Config{Tokens: store} },
		Configure: func(c *server.Config) {
			c.TracerProvider = tp
			c.GraphQL.MaxBodyBytes = 1024
		},
	})
	const traceID = "0af7651916cd43dd8448eb211c80319c"
	post(t, srv.URL, `{ conversations { totalCount } }`, "00-"+traceID+"-b7ad6b7169203331-01")
	_, secret, err := srv.Store.CreateToken(context.Background(), "zoe", "", nil, false)
	if err != nil {
		t.Fatal(err)
	}
	big := `{"query": "{ conversations { totalCount } }", "variables": {"pad": "` + strings.Repeat("x", 4096) + `"}}`
	req, _ := http.NewRequest(http.MethodPost, srv.URL+"/graphql", strings.NewReader(big))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+secret)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusRequestEntityTooLarge {
		t.Fatalf("a body over the limit: got %d, want 413", resp.StatusCode)
	}
	spans := waitSpans(t, exp, func(s tracetest.SpanStubs) bool { return count(s, "POST /graphql") == 2 })
	statuses := map[int64]tracetest.SpanStub{}
	for _, s := range spans {
		if v, ok := attr(s, "http.response.status_code"); ok && s.Name == "POST /graphql" {
			statuses[v.AsInt64()] = s
		}
	}
	if s, ok := statuses[401]; !ok || s.SpanContext.TraceID().String() != traceID || s.SpanKind != trace.SpanKindServer {
		t.Errorf("401: got span %+v, want a server span with http.response.status_code 401 in the caller's trace", s.Name)
	}
	if _, ok := statuses[413]; !ok {
		t.Errorf("413: no server span with http.response.status_code 413 in %v", names(spans))
	}
	if count(spans, "query") != 0 {
		t.Errorf("refused requests ran GraphQL: spans %v", names(spans))
	}
}

// TestSpansOfAHistoryRead: a read of a conversation's history, which runs no
// transaction, has a span for each statement, with the stable database conventions,
// inside the operation's span.
func TestSpansOfAHistoryRead(t *testing.T) {
	t.Parallel()
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	srv := tracedServer(t, tp)
	conv := srv.CreateConversation(t, "history")
	srv.AddMessage(t, conv, testserver.Text("USER", "hello"))
	exp.Reset()
	body, _ := json.Marshal(map[string]any{"query": `query History($c: ID!) { conversation(id: $c) { messages(first: 10) { edges { cursor } } } }`,
		"variables": map[string]any{"c": conv}})
	resp, err := http.Post(srv.URL+"/graphql", "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	spans := waitSpans(t, exp, func(s tracetest.SpanStubs) bool { return count(s, "POST /graphql") == 1 })
	var op tracetest.SpanStub
	for _, s := range spans {
		if s.Name == "query History" {
			op = s
		}
	}
	if !op.SpanContext.IsValid() {
		t.Fatalf("no span \"query History\" in %v", names(spans))
	}
	reads := 0
	for _, s := range spans {
		system, _ := attr(s, "db.system.name")
		text, _ := attr(s, "db.query.text")
		if system.AsString() != "postgresql" || !strings.Contains(text.AsString(), "SELECT") {
			continue
		}
		reads++
		if s.SpanContext.TraceID() != op.SpanContext.TraceID() {
			t.Errorf("statement span %q is not in the operation's trace", s.Name)
		}
		if s.SpanKind != trace.SpanKindClient {
			t.Errorf("statement span %q: kind %v, want client", s.Name, s.SpanKind)
		}
	}
	if reads == 0 {
		t.Errorf("no statement span with db.system.name postgresql and a SELECT in db.query.text among %v", names(spans))
	}
	if count(spans, "db.transaction") != 0 {
		t.Errorf("a read ran a transaction: %v", names(spans))
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

// TestSpansOfSaves: a save that is one statement (a message continuing the active
// branch or placed under a parent, of a kind with nothing recorded beside its row,
// without a client message id) sends that statement alone, in autocommit: its
// db.transaction span holds one statement and no BEGIN or COMMIT. Every other save
// still runs in a transaction.
func TestSpansOfSaves(t *testing.T) {
	t.Parallel()
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	srv := tracedServer(t, tp)
	conv := srv.CreateConversation(t, "saves")
	first := srv.AddMessage(t, conv, testserver.Text("USER", "hello")).ID
	srv.AddMessage(t, conv, map[string]any{"toolRequest": map[string]any{"toolCalls": []any{
		map[string]any{"id": "c1", "name": "ls", "arguments": map[string]any{}}}}})
	const save = `mutation Save($c: ID!, $i: MessageInput!, $k: String, $p: ID) {
		addMessage(conversationId: $c, input: $i, clientMessageId: $k, parentId: $p) { cursor } }`
	tests := []struct {
		name  string
		input map[string]any
		key   string // clientMessageId
		under string // parentId
		alone bool
	}{
		{name: "text", input: testserver.Text("USER", "one statement"), alone: true},
		{name: "image", input: map[string]any{"image": map[string]any{"url": "https://example.com/a.png"}}, alone: true},
		{name: "file reference", input: map[string]any{"fileReference": map[string]any{"path": "main.go"}}, alone: true},
		{name: "system control", input: map[string]any{"systemControl": map[string]any{"kind": "MODE_CHANGE", "from": "a", "to": "b"}}, alone: true},
		{name: "mcp resource retrieved before", input: map[string]any{"mcpResource": map[string]any{
			"serverName": "docs", "resourceUri": "docs://a", "content": "a", "retrievedAt": "2026-03-04T05:06:07Z"}}, alone: true},
		{name: "mcp resource retrieved now", input: map[string]any{"mcpResource": map[string]any{
			"serverName": "docs", "resourceUri": "docs://b", "content": "b"}}},
		{name: "text with a client message id", input: testserver.Text("USER", "keyed"), key: "k1"},
		{name: "tool request", input: map[string]any{"toolRequest": map[string]any{"toolCalls": []any{
			map[string]any{"id": "c2", "name": "ls", "arguments": map[string]any{}}}}}},
		{name: "tool result", input: map[string]any{"toolResult": map[string]any{"toolCallId": "c1", "status": "SUCCESS", "output": 1}}},
		{name: "compaction", input: map[string]any{"compaction": map[string]any{"content": "So far.", "coversThrough": 1}}},
		// Last: they start branches. insertUnderSQL places each in one statement.
		{name: "text under a parent", input: testserver.Text("USER", "branch"), under: first, alone: true},
		{name: "text under the same parent again", input: testserver.Text("USER", "another branch"), under: first, alone: true},
	}
	for _, tt := range tests {
		vars := map[string]any{"c": conv, "i": tt.input}
		if tt.key != "" {
			vars["k"] = tt.key
		}
		if tt.under != "" {
			vars["p"] = tt.under
		}
		exp.Reset()
		srv.MustDo(t, save, vars, nil)
		spans := waitSpans(t, exp, func(s tracetest.SpanStubs) bool { return count(s, "POST /graphql") == 1 })
		if n := count(spans, "db.transaction"); n != 1 {
			t.Errorf("%s: got %d db.transaction spans, want 1: %v", tt.name, n, names(spans))
		}
		// The statements a transaction's fn sends are traced under the operation's span,
		// beside db.transaction (fn's ctx is the caller's): count them all.
		statements := 0
		for _, s := range spans {
			if strings.HasSuffix(s.Name, ".query") || strings.HasSuffix(s.Name, ".exec") {
				statements++
			}
		}
		begun, committed := count(spans, "sql.conn.begin_tx"), count(spans, "sql.tx.commit")
		switch {
		case tt.alone && (begun != 0 || committed != 0 || statements != 1):
			t.Errorf("%s: spans %v, want one statement and no BEGIN or COMMIT", tt.name, names(spans))
		case !tt.alone && (begun != 1 || committed != 1):
			t.Errorf("%s: spans %v, want a transaction (BEGIN, the statements, COMMIT)", tt.name, names(spans))
		}
	}
}
