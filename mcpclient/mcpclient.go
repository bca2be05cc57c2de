// Package mcpclient reads resources from the configured MCP servers, over stdio (a
// command) or streamable HTTP, with the official Go SDK. It keeps one session per server,
// opened on first use and opened again after a failure, and implements
// parley.ResourceReader.
package mcpclient

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"sort"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/parley-dev/parley"
)

// Server is one configured MCP server: Command (stdio) or URL (streamable HTTP).
type Server struct {
	Command []string
	Env     map[string]string
	URL     string
	Headers map[string]string
	// TTL is how long its resources stay fresh; Timeout bounds connecting and one read.
	TTL, Timeout time.Duration
}

// Pool holds the sessions to the configured servers.
type Pool struct {
	servers  map[string]Server
	maxBytes int
	version  string
	log      *slog.Logger

	mu       sync.Mutex
	sessions map[string]*mcp.ClientSession
	closed   bool
}

var _ parley.ResourceReader = (*Pool)(nil)

// New returns a Pool for servers. Text over maxBytes is truncated (0: no limit).
func New(servers map[string]Server, maxBytes int, version string, log *slog.Logger) *Pool {
	if log == nil {
		log = slog.Default()
	}
	return &Pool{servers: servers, maxBytes: maxBytes, version: version, log: log, sessions: map[string]*mcp.ClientSession{}}
}

// TTL implements parley.ResourceReader.
func (p *Pool) TTL(server string) time.Duration { return p.servers[server].TTL }

// Close ends every session (and stops the servers' commands).
func (p *Pool) Close() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.closed = true
	var errs []error
	for name, s := range p.sessions {
		errs = append(errs, s.Close())
		delete(p.sessions, name)
	}
	return errors.Join(errs...)
}

func (p *Pool) names() string {
	names := make([]string, 0, len(p.servers))
	for n := range p.servers {
		names = append(names, n)
	}
	sort.Strings(names)
	if len(names) == 0 {
		return "none are configured"
	}
	return "configured: " + strings.Join(names, ", ")
}

// session returns the open session to a server, connecting first when there is none.
// Connecting happens under the lock: a second reader of the same server waits for the
// first connection rather than starting a second server process.
func (p *Pool) session(ctx context.Context, name string, cfg Server) (*mcp.ClientSession, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return nil, parley.Errorf(parley.EUNAVAILABLE, "the server is shutting down")
	}
	if s, ok := p.sessions[name]; ok {
		return s, nil
	}
	var t mcp.Transport
	if cfg.URL != "" {
		hc := &http.Client{Timeout: 0, Transport: headerTransport{headers: cfg.Headers, next: http.DefaultTransport}}
		t = &mcp.StreamableClientTransport{Endpoint: cfg.URL, HTTPClient: hc, DisableStandaloneSSE: true, MaxRetries: 1}
	} else {
		// The command outlives this request: it is the pool's, stopped by Close.
		cmd := exec.Command(cfg.Command[0], cfg.Command[1:]...)
		cmd.Env = os.Environ()
		for k, v := range cfg.Env {
			cmd.Env = append(cmd.Env, k+"="+v)
		}
		t = &mcp.CommandTransport{Command: cmd, TerminateDuration: 2 * time.Second}
	}
	client := mcp.NewClient(&mcp.Implementation{Name: "parley", Version: p.version}, nil)
	cctx, cancel := context.WithTimeout(ctx, cfg.Timeout)
	defer cancel()
	s, err := client.Connect(cctx, t, nil)
	if err != nil {
		if ctx.Err() != nil && !errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return nil, ctx.Err()
		}
		p.log.Warn("MCP server unreachable", "server", name, "err", err)
		return nil, parley.Errorf(parley.EUNAVAILABLE, "MCP server %q cannot be reached; try again later", name)
	}
	p.sessions[name] = s
	return s, nil
}

// drop forgets a session that failed, so the next read connects again.
func (p *Pool) drop(name string, s *mcp.ClientSession) {
	p.mu.Lock()
	if p.sessions[name] == s {
		delete(p.sessions, name)
	}
	p.mu.Unlock()
	s.Close()
}

// ReadResource implements parley.ResourceReader. Text contents are joined; binary
// contents are refused unless they are UTF-8 text. The text is cut to the size limit
// and flagged when longer.
func (p *Pool) ReadResource(ctx context.Context, name, uri string) (parley.MCPResource, error) {
	cfg, ok := p.servers[name]
	if !ok {
		return parley.MCPResource{}, parley.Errorf(parley.EINVALID, "server: no MCP server %q (%s)", name, p.names())
	}
	var res *mcp.ReadResourceResult
	for attempt := 0; ; attempt++ {
		s, err := p.session(ctx, name, cfg)
		if err != nil {
			return parley.MCPResource{}, err
		}
		rctx, cancel := context.WithTimeout(ctx, cfg.Timeout)
		res, err = s.ReadResource(rctx, &mcp.ReadResourceParams{URI: uri})
		cancel()
		if err == nil {
			break
		}
		var werr *jsonrpc.Error
		if errors.As(err, &werr) {
			// The server answered: the session is fine, the request was not.
			if werr.Code == mcp.CodeResourceNotFound {
				return parley.MCPResource{}, parley.Errorf(parley.ENOTFOUND, "MCP server %q has no resource %s", name, uri)
			}
			return parley.MCPResource{}, parley.Errorf(parley.EINVALID, "MCP server %q could not read %s: %s", name, uri, werr.Message)
		}
		if ctx.Err() != nil {
			return parley.MCPResource{}, ctx.Err()
		}
		// The connection broke (the command exited, the HTTP session expired): connect
		// again once.
		p.drop(name, s)
		if attempt > 0 {
			p.log.Warn("MCP read failed", "server", name, "uri", uri, "err", err)
			return parley.MCPResource{}, parley.Errorf(parley.EUNAVAILABLE, "MCP server %q did not answer; try again later", name)
		}
	}
	return p.contents(name, uri, res.Contents)
}

func (p *Pool) contents(name, uri string, contents []*mcp.ResourceContents) (parley.MCPResource, error) {
	var out parley.MCPResource
	var parts []string
	for _, c := range contents {
		if c == nil {
			continue
		}
		if out.MimeType == "" {
			out.MimeType = c.MIMEType
		}
		switch {
		case c.Text != "":
			parts = append(parts, c.Text)
		case len(c.Blob) > 0 && utf8.Valid(c.Blob) && !strings.ContainsRune(string(c.Blob), 0):
			parts = append(parts, string(c.Blob))
		case len(c.Blob) > 0:
			return out, parley.Errorf(parley.EINVALID, "MCP resource %s of %q is binary (%s); only text resources can be injected",
				uri, name, fallback(c.MIMEType, "no media type"))
		}
	}
	out.Text = strings.Join(parts, "\n\n")
	if p.maxBytes > 0 && len(out.Text) > p.maxBytes {
		cut := p.maxBytes
		for cut > 0 && !utf8.RuneStart(out.Text[cut]) {
			cut--
		}
		out.Text, out.Truncated = out.Text[:cut], true
	}
	return out, nil
}

func fallback(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// headerTransport adds configured headers (an Authorization header) to every request.
type headerTransport struct {
	headers map[string]string
	next    http.RoundTripper
}

func (t headerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if len(t.headers) == 0 {
		return t.next.RoundTrip(r)
	}
	r = r.Clone(r.Context())
	for k, v := range t.headers {
		r.Header.Set(k, v)
	}
	return t.next.RoundTrip(r)
}

// String describes a server for logs.
func (s Server) String() string {
	if s.URL != "" {
		return s.URL
	}
	return fmt.Sprint(s.Command)
}
