package main

import (
	"io"
	"net"
	"net/http"
	"strings"
	"testing"

	"github.com/parley-dev/parley/internal/pgtest"
)

// get returns the status and body of GET url, or status 0 when nothing answers.
func get(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		return 0, ""
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestServeMetrics: /metrics is served on the API's address by default, on its own
// with --metrics-addr (and then not on the API's), and nowhere with "off"; what it
// serves counts the requests made.
func TestServeMetrics(t *testing.T) {
	t.Parallel()
	dsn := pgtest.NewDatabase(t)

	url, stop := serve(t, "--database-url", dsn)
	graphql(t, url, `mutation { createConversation(title: "metrics") { id } }`)
	status, body := get(t, url+"/metrics")
	if status != http.StatusOK || !strings.Contains(body, `parley_graphql_requests_total{operation_type="mutation",outcome="ok"} 1`) {
		t.Errorf("/metrics on --addr: got %d, want the mutation counted:\n%.2000s", status, body)
	}
	stop()

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	url, stop = serve(t, "--database-url", dsn, "--metrics-addr", addr)
	if status, body := get(t, "http://"+addr+"/metrics"); status != http.StatusOK || !strings.Contains(body, "go_goroutines") {
		t.Errorf("/metrics on --metrics-addr: got %d %.200s", status, body)
	}
	if status, body := get(t, url+"/metrics"); strings.Contains(body, "go_goroutines") {
		t.Errorf("/metrics still on --addr with --metrics-addr: got %d", status)
	}
	stop()

	url, stop = serve(t, "--database-url", dsn, "--metrics-addr", "off")
	defer stop()
	if _, body := get(t, url+"/metrics"); strings.Contains(body, "go_goroutines") {
		t.Error("/metrics served with --metrics-addr off")
	}
}
