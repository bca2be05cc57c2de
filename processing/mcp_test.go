package processing_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// stdioServerEnv makes the test binary an MCP server on stdin/stdout (see TestMain).
const stdioServerEnv = "PARLEY_TEST_MCP_STDIO_SERVER"

// docsServer is a real MCP server, made with the official SDK: docs://schema answers
// "schema v<n>" where n counts its reads, docs://big is 5000 bytes, anything else is
// not found.
func docsServer(reads *atomic.Int32) *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "docs", Version: "1.0.0"}, nil)
	s.AddResource(&mcp.Resource{URI: "docs://schema", Name: "schema", MIMEType: "text/markdown"},
		func(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			n := reads.Add(1)
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{
				URI: req.Params.URI, MIMEType: "text/markdown", Text: fmt.Sprintf("# Schema\n\nschema v%d", n),
			}}}, nil
		})
	s.AddResource(&mcp.Resource{URI: "docs://big", Name: "big", MIMEType: "text/plain"},
		func(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{
				URI: req.Params.URI, MIMEType: "text/plain", Text: strings.Repeat("x", 5000),
			}}}, nil
		})
	return s
}

// runStdioServer serves docsServer on stdin/stdout until the client hangs up.
func runStdioServer() {
	var reads atomic.Int32
	if err := docsServer(&reads).Run(context.Background(), &mcp.StdioTransport{}); err != nil {
		fmt.Fprintln(os.Stderr, "stdio MCP server:", err)
		os.Exit(1)
	}
	os.Exit(0)
}

const injectMutation = `mutation($c: ID!, $s: String!, $u: String!) { injectMCPResource(conversationId: $c, server: $s, uri: $u) {
	cursor node { ... on MCPResourceMessage { id position serverName resourceUri text mimeType retrievedAt createdAt truncated } } } }`

type resourceNode struct {
	ID, ServerName, ResourceURI, Text string
	Position                          int
	MimeType                          *string
	RetrievedAt, CreatedAt            string
	Truncated                         bool
}

func (e *env) inject(t *testing.T, conv, server, uri string) resourceNode {
	t.Helper()
	var out struct {
		InjectMCPResource struct{ Node resourceNode }
	}
	e.MustDo(t, injectMutation, map[string]any{"c": conv, "s": server, "u": uri}, &out)
	return out.InjectMCPResource.Node
}

func TestInjectMCPResource(t *testing.T) {
	t.Parallel()
	var reads atomic.Int32
	docs := docsServer(&reads)
	httpServer := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return docs }, nil))
	defer httpServer.Close()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	e := start(t, fmt.Sprintf(`
mcp:
  max_resource_bytes: 1000
  servers:
    docs: {url: %q}
    local: {command: [%q], env: {%s: "1"}, ttl: 1h}
    nocache: {url: %q, ttl: 1ns}
`, httpServer.URL, exe, stdioServerEnv, httpServer.URL))
	conv := e.CreateConversation(t, "mcp")

	first := e.inject(t, conv, "docs", "docs://schema")
	if first.Text != "# Schema\n\nschema v1" || deref(first.MimeType) != "text/markdown" || first.ServerName != "docs" || first.Truncated {
		t.Fatalf("got %+v, want the resource's first read", first)
	}
	if first.RetrievedAt != first.CreatedAt {
		t.Errorf("fetched: got retrievedAt %s, want createdAt %s", first.RetrievedAt, first.CreatedAt)
	}

	// Fresh: the content is reused, with its retrieval time; the server is not asked.
	hit := e.inject(t, conv, "docs", "docs://schema")
	if hit.Text != first.Text || hit.RetrievedAt != first.RetrievedAt || hit.Position != first.Position+1 || reads.Load() != 1 {
		t.Errorf("cache hit: got %+v after %d reads, want a new message with the first content and retrievedAt, 1 read", hit, reads.Load())
	}
	if hit.CreatedAt == hit.RetrievedAt {
		t.Errorf("cache hit: retrievedAt equals createdAt %s, want the older retrieval time", hit.CreatedAt)
	}

	// Stale: an hour and a minute later, the resource is read again.
	if _, err := e.Store.SQL().Exec(`UPDATE messages SET payload = jsonb_set(payload, '{retrievedAt}',
		to_jsonb(to_char((now() - interval '61 minutes') AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')))
		WHERE kind = 'mcp_resource'`); err != nil {
		t.Fatal(err)
	}
	stale := e.inject(t, conv, "docs", "docs://schema")
	if stale.Text != "# Schema\n\nschema v2" || stale.RetrievedAt != stale.CreatedAt || reads.Load() != 2 {
		t.Errorf("stale: got %+v after %d reads, want a second read", stale, reads.Load())
	}

	// Another conversation has its own cache.
	other := e.CreateConversation(t, "other")
	if got := e.inject(t, other, "docs", "docs://schema"); got.Text != "# Schema\n\nschema v3" {
		t.Errorf("other conversation: got %q, want a fresh read", got.Text)
	}
	// A server whose TTL is (nearly) zero is read every time.
	e.inject(t, conv, "nocache", "docs://schema")
	if got := e.inject(t, conv, "nocache", "docs://schema"); got.Text != "# Schema\n\nschema v5" {
		t.Errorf("ttl 1ns: got %q, want a read each time", got.Text)
	}

	// Large resources are truncated and flagged.
	big := e.inject(t, conv, "docs", "docs://big")
	if !big.Truncated || len(big.Text) != 1000 {
		t.Errorf("big: got truncated %v and %d bytes, want truncated at 1000", big.Truncated, len(big.Text))
	}

	// A stdio server, started by Parley as a command.
	for i := 0; i < 2; i++ {
		local := e.inject(t, conv, "local", "docs://schema")
		if local.Text != "# Schema\n\nschema v1" || local.ServerName != "local" {
			t.Errorf("stdio read %d: got %+v, want the stdio server's first read (then cached)", i, local)
		}
	}

	tests := []struct {
		name, server, uri, want string
	}{
		{"unknown server", "nope", "docs://schema", "BAD_USER_INPUT"},
		{"missing resource", "docs", "docs://missing", "NOT_FOUND"},
		{"bad uri", "docs", "no scheme", "BAD_USER_INPUT"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := e.Do(t, injectMutation, map[string]any{"c": conv, "s": tt.server, "u": tt.uri})
			if got := r.ErrorCode(t); got != tt.want {
				t.Errorf("got %s, want %s", got, tt.want)
			}
		})
	}
}

func TestInjectMCPResourceUnreachable(t *testing.T) {
	t.Parallel()
	dead := httptest.NewServer(nil)
	dead.Close()
	e := start(t, fmt.Sprintf("mcp:\n  servers:\n    gone: {url: %q, timeout: 5s}\n", dead.URL))
	conv := e.CreateConversation(t, "unreachable")
	start := time.Now()
	r := e.Do(t, injectMutation, map[string]any{"c": conv, "s": "gone", "u": "docs://schema"})
	if got := r.ErrorCode(t); got != "SERVICE_UNAVAILABLE" {
		t.Errorf("got %s, want SERVICE_UNAVAILABLE", got)
	}
	if d := time.Since(start); d > 20*time.Second {
		t.Errorf("took %s, want the configured timeout to bound it", d)
	}
}

// TestInjectMCPResourceIntoFork: a fork's cache of a resource is what it shares of its
// source's too (copy-free forks, issue 16), as in a fork that copied them: a fresh copy
// on the path it shares is reused, one the source read after the fork's point is not.
func TestInjectMCPResourceIntoFork(t *testing.T) {
	t.Parallel()
	var reads atomic.Int32
	docs := docsServer(&reads)
	httpServer := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return docs }, nil))
	defer httpServer.Close()
	e := start(t, fmt.Sprintf("mcp:\n  servers:\n    docs: {url: %q}\n", httpServer.URL))
	src := e.CreateConversation(t, "source")
	first := e.inject(t, src, "docs", "docs://schema")
	var fork struct{ ForkConversation struct{ ID string } }
	e.MustDo(t, `mutation($m: ID!) { forkConversation(messageId: $m) { id } }`, map[string]any{"m": first.ID}, &fork)
	hit := e.inject(t, fork.ForkConversation.ID, "docs", "docs://schema")
	if hit.Text != first.Text || hit.RetrievedAt != first.RetrievedAt || hit.Position != 2 || reads.Load() != 1 {
		t.Errorf("in the fork: got %+v after %d reads, want the source's copy reused at position 2, 1 read", hit, reads.Load())
	}
	// Read in a source after a fork at its start: that fork has none of it.
	var early struct{ ForkConversation struct{ ID string } }
	other := e.CreateConversation(t, "other")
	m := e.AddMessage(t, other, map[string]any{"text": map[string]any{"role": "USER", "content": "hi"}})
	e.MustDo(t, `mutation($m: ID!) { forkConversation(messageId: $m) { id } }`, map[string]any{"m": m.ID}, &early)
	e.inject(t, other, "docs", "docs://schema")
	if got := e.inject(t, early.ForkConversation.ID, "docs", "docs://schema"); got.RetrievedAt != got.CreatedAt || reads.Load() != 3 {
		t.Errorf("in a fork before the source's read: got %+v after %d reads, want a read of its own", got, reads.Load())
	}
}
