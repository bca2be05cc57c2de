package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/parley-dev/parley/internal/pgtest"
)

func TestMain(m *testing.M) {
	if os.Getenv(actAsParley) == "1" {
		// A child process of a test (see startProcess): this binary is parley.
		main()
		os.Exit(0)
	}
	pgtest.Main(m)
}

// syncBuffer is a bytes.Buffer safe to read while run writes to it.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func TestHelp(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		args    []string
		mention []string
	}{
		{[]string{"parley", "--help"}, []string{"serve", "migrate"}},
		{[]string{"parley", "serve", "--help"}, []string{"--addr", "PARLEY_ADDR", "--database-url", "DATABASE_URL", "--data-dir", "PARLEY_DATA_DIR", "127.0.0.1:8080",
			// The real defaults, from the declarations (config.Settings).
			"max-depth int", "(default: 12)", "(default: 100000)", "(default: 33554432)", "(default: 1048576)", "(default: 50)",
			"(default: 20s)", "(default: 3m0s)", "(default: true)", "(limits.max_depth)"}},
		{[]string{"parley", "migrate", "--help"}, []string{"--database-url", "--data-dir"}},
	} {
		var out, errOut syncBuffer
		if err := run(context.Background(), tt.args, &out, &errOut); err != nil {
			t.Errorf("%v: %v", tt.args, err)
		}
		for _, m := range tt.mention {
			if !strings.Contains(out.String(), m) {
				t.Errorf("%v: help lacks %q:\n%s", tt.args, m, out.String())
			}
		}
	}
}

func TestMigrate(t *testing.T) {
	t.Parallel()
	dsn := pgtest.NewDatabase(t)
	var out, errOut syncBuffer
	if err := run(context.Background(), []string{"parley", "migrate", "--database-url", dsn}, &out, &errOut); err != nil {
		t.Fatalf("migrate: %v\n%s", err, errOut.String())
	}
	if !regexp.MustCompile(`schema at version [1-9]`).MatchString(out.String()) {
		t.Errorf("migrate output: got %q, want the schema version", out.String())
	}
}

func TestBadFlags(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		args    []string
		mention string
	}{
		{[]string{"parley", "--log-level", "loud", "serve", "--database-url", "x"}, "--log-level"},
		{[]string{"parley", "serve", "--addr", "nonsense", "--database-url", pgtest.NewDatabase(t)}, "listen on nonsense"},
	} {
		var out, errOut syncBuffer
		err := run(context.Background(), tt.args, &out, &errOut)
		if err == nil || !strings.Contains(err.Error(), tt.mention) {
			t.Errorf("%v: got %v, want an error mentioning %q", tt.args, err, tt.mention)
		}
	}
}

var servingLine = regexp.MustCompile(`serving GraphQL at (http://[^ ]+)/graphql`)

// serve runs `parley serve` with args until the returned stop is called, and returns
// the server's base URL.
func serve(t *testing.T, args ...string) (url string, stop func()) {
	t.Helper()
	url, _, stop = serveLogged(t, args...)
	return url, stop
}

// serveLogged is serve, also returning the server's logs so far.
func serveLogged(t *testing.T, args ...string) (url string, logs func() string, stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var out, errOut syncBuffer
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, append([]string{"parley", "serve", "--addr", "127.0.0.1:0"}, args...), &out, &errOut)
	}()
	deadline := time.Now().Add(60 * time.Second)
	for {
		if m := servingLine.FindStringSubmatch(out.String()); m != nil {
			url = m[1]
			break
		}
		select {
		case err := <-done:
			cancel()
			t.Fatalf("serve ended early: %v\n%s", err, errOut.String())
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			cancel()
			t.Fatalf("serve did not start within a minute:\n%s", errOut.String())
		}
	}
	return url, errOut.String, func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("serve: %v\n%s", err, errOut.String())
			}
		case <-time.After(60 * time.Second):
			t.Errorf("serve did not stop within a minute")
		}
	}
}

func graphql(t *testing.T, url, query string) map[string]any {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"query": query})
	resp, err := http.Post(url+"/graphql", "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out struct {
		Data   map[string]any
		Errors []any
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		t.Fatal(err)
	}
	if len(out.Errors) > 0 {
		t.Fatalf("%s: %v", query, out.Errors)
	}
	return out.Data
}

// TestServeWithDatabaseURL serves an existing database and answers health checks.
func TestServeWithDatabaseURL(t *testing.T) {
	t.Parallel()
	url, stop := serve(t, "--database-url", pgtest.NewDatabase(t))
	defer stop()
	for _, path := range []string{"/healthz", "/readyz"} {
		resp, err := http.Get(url + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Errorf("%s: status %d", path, resp.StatusCode)
		}
	}
	data := graphql(t, url, `mutation { createConversation(title: "via url") { title } }`)
	if data["createConversation"].(map[string]any)["title"] != "via url" {
		t.Errorf("got %v", data)
	}
}

// TestServeEmbedded runs the embedded default: parley starts its own Postgres in the data
// directory, stops it on shutdown, and the data survives a restart.
func TestServeEmbedded(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("starts a Postgres cluster")
	}
	dir, err := os.MkdirTemp("", "parley-embedded-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	// The postgres user runs the cluster when the tests run as root.
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	// An empty --database-url overrides a DATABASE_URL in the environment: the embedded
	// default is what is tested.
	url, stop := serve(t, "--database-url=", "--data-dir", dir)
	created := graphql(t, url, `mutation { createConversation(title: "kept") { id } }`)
	id := created["createConversation"].(map[string]any)["id"].(string)
	stop()
	if _, err := http.Get(url + "/healthz"); err == nil {
		t.Fatal("server still answers after stop")
	}
	if _, err := os.Stat(dir + "/pgdata/postmaster.pid"); !os.IsNotExist(err) {
		t.Errorf("postmaster.pid still present after stop (err %v): Postgres was not stopped cleanly", err)
	}

	url, stop = serve(t, "--database-url=", "--data-dir", dir)
	defer stop()
	got := graphql(t, url, `{ conversation(id: "`+id+`") { title } }`)
	if got["conversation"].(map[string]any)["title"] != "kept" {
		t.Errorf("after restart: got %v, want the conversation titled kept", got)
	}
}
