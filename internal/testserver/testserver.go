// Package testserver runs a real Parley HTTP server on a fresh, migrated database for a
// test, and speaks GraphQL over HTTP to it, so behaviour is tested through the public
// surface. A package using it calls pgtest.Main from its TestMain.
package testserver

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/parley-dev/parley"
	"github.com/parley-dev/parley/auth"
	"github.com/parley-dev/parley/config"
	"github.com/parley-dev/parley/db"
	"github.com/parley-dev/parley/internal/pgtest"
	"github.com/parley-dev/parley/internal/wire"
	"github.com/parley-dev/parley/metrics"
	"github.com/parley-dev/parley/realtime"
	"github.com/parley-dev/parley/server"
)

// Server is a running Parley server for one test, wired by wire.New as `parley serve`
// wires it.
type Server struct {
	URL   string // base URL; GraphQL is at URL + "/graphql"
	DSN   string // the database it serves
	Store *db.DB
	// Hub fans the database's events out to subscribers; Listener feeds it.
	Hub        *realtime.Hub
	Listener   *db.Listener
	Processing *wire.Processing
	HTTP       *httptest.Server
	// Token, when set, is sent as Authorization: Bearer by Do (see As).
	Token string
}

// As returns the server as a client sending token.
func (s *Server) As(token string) *Server {
	c := *s
	c.Token = token
	return &c
}

// Options adjust a test server.
type Options struct {
	// DSN serves an existing database (for several servers on one database); empty
	// makes a fresh one.
	DSN string
	// Config is the configuration (nil: config.Default()); it must be valid.
	Config *config.Config
	// DB tunes the store (its ToolPolicies come from Config).
	DB db.Config
	// Realtime tunes the hub, Listener the database listener.
	Realtime realtime.Config
	Listener db.ListenerConfig
	// Configure may change the server configuration before the server starts.
	Configure func(*server.Config)
	// Auth, when set, makes the server require authentication, with the
	// authenticator auth.New makes of what it returns (given the server's store, for
	// API tokens). Without it the configuration decides (local mode by default).
	Auth func(store *db.DB) auth.Config
	// SweepInterval is how often the server closes streaming messages whose lease ran
	// out (wire.Config.SweepInterval).
	SweepInterval time.Duration
	// Metrics, when set, counts what the server and its store do, served at /metrics.
	Metrics *metrics.Metrics
}

// New starts a server on a fresh database and stops it when t ends.
func New(t testing.TB) *Server { return NewWith(t, Options{}) }

// NewWith starts a server as opts say and stops it when t ends.
func NewWith(t testing.TB, opts Options) *Server {
	t.Helper()
	dsn := opts.DSN
	if dsn == "" {
		dsn = pgtest.NewDatabase(t)
	}
	log := slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelWarn}))
	cfg := config.Default()
	if opts.Config != nil {
		cfg = *opts.Config
	}
	wc := wire.Config{DSN: dsn, Config: cfg, Version: "test", Logger: log, DB: opts.DB,
		Realtime: opts.Realtime, Listener: opts.Listener, Configure: opts.Configure,
		SweepInterval: opts.SweepInterval, Metrics: opts.Metrics, ServeMetrics: opts.Metrics != nil}
	if opts.DB.Logger != nil {
		wc.Logger = opts.DB.Logger
	}
	if opts.Auth != nil {
		wc.Auth = func(store *db.DB) (parley.Authenticator, error) { return auth.New(opts.Auth(store)) }
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ws, err := wire.New(ctx, wc)
	if err != nil {
		t.Fatalf("testserver: %v", err)
	}
	// The connection bounds of parley serve, from the configuration.
	hs := httptest.NewUnstartedServer(ws.Handler)
	conns := server.Connections{ReadTimeout: cfg.Process.ReadTimeout, IdleTimeout: cfg.Process.IdleTimeout,
		MaxConnections: cfg.Process.MaxConnections}
	conns.Configure(hs.Config)
	hs.Listener = conns.Listener(hs.Listener)
	hs.Start()
	t.Cleanup(func() {
		hs.CloseClientConnections()
		hs.Close()
		ws.Close()
	})
	return &Server{URL: hs.URL, DSN: dsn, Store: ws.Store, Hub: ws.Hub, Listener: ws.Listener,
		Processing: ws.Processing, HTTP: hs}
}

// testWriter sends server logs to the test's log, shown when it fails.
type testWriter struct{ t testing.TB }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// Response is a GraphQL response.
type Response struct {
	Status int
	Data   json.RawMessage `json:"data"`
	Errors []Error         `json:"errors"`
}

// Error is one GraphQL error.
type Error struct {
	Message    string         `json:"message"`
	Path       []any          `json:"path"`
	Extensions map[string]any `json:"extensions"`
}

// Code is the error's extensions.code.
func (e Error) Code() string {
	c, _ := e.Extensions["code"].(string)
	return c
}

// Do posts a GraphQL request and decodes the response; transport failures fail t.
func (s *Server) Do(t testing.TB, query string, vars map[string]any) *Response {
	t.Helper()
	body, err := json.Marshal(map[string]any{"query": query, "variables": vars})
	if err != nil {
		t.Fatalf("encode request: %v", err)
	}
	req, err := http.NewRequest(http.MethodPost, s.URL+"/graphql", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/graphql-response+json, application/json")
	if s.Token != "" {
		req.Header.Set("Authorization", "Bearer "+s.Token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("POST /graphql: %v", err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("read response: %v", err)
	}
	out := &Response{Status: resp.StatusCode}
	if err := json.Unmarshal(raw, out); err != nil {
		t.Fatalf("decode response (status %d): %v\n%s", resp.StatusCode, err, raw)
	}
	return out
}

// MustDo is Do that fails t when the response has errors, and decodes data into v.
func (s *Server) MustDo(t testing.TB, query string, vars map[string]any, v any) {
	t.Helper()
	r := s.Do(t, query, vars)
	if len(r.Errors) > 0 {
		t.Fatalf("unexpected errors: %+v\nquery: %s", r.Errors, query)
	}
	if v != nil {
		if err := json.Unmarshal(r.Data, v); err != nil {
			t.Fatalf("decode data: %v\n%s", err, r.Data)
		}
	}
}

// ErrorCode returns the code of the response's only error, failing t when there is not
// exactly one error.
func (r *Response) ErrorCode(t testing.TB) string {
	t.Helper()
	if len(r.Errors) != 1 {
		t.Fatalf("got %d errors, want 1: %+v (data %s)", len(r.Errors), r.Errors, r.Data)
	}
	return r.Errors[0].Code()
}

// CreateConversation makes a conversation and returns its id.
func (s *Server) CreateConversation(t testing.TB, title string) string {
	t.Helper()
	var out struct {
		CreateConversation struct{ ID string } `json:"createConversation"`
	}
	s.MustDo(t, `mutation($t: String) { createConversation(title: $t) { id } }`, map[string]any{"t": title}, &out)
	return out.CreateConversation.ID
}

// AddMessage adds a message given as a MessageInput value and returns its edge's node
// fields common to all messages plus the cursor.
func (s *Server) AddMessage(t testing.TB, conversationID string, input map[string]any) AddedMessage {
	t.Helper()
	var out struct {
		AddMessage struct {
			Cursor string
			Node   AddedMessage
		} `json:"addMessage"`
	}
	s.MustDo(t, `mutation($c: ID!, $i: MessageInput!) { addMessage(conversationId: $c, input: $i) {
		cursor node { __typename ... on MessageBase { id position role } } } }`,
		map[string]any{"c": conversationID, "i": input}, &out)
	out.AddMessage.Node.Cursor = out.AddMessage.Cursor
	return out.AddMessage.Node
}

// AddedMessage is what AddMessage returns.
type AddedMessage struct {
	Typename string `json:"__typename"`
	ID       string `json:"id"`
	Position int    `json:"position"`
	Role     string `json:"role"`
	Cursor   string `json:"-"`
}

// Text is a MessageInput for a text message.
func Text(role, content string) map[string]any {
	return map[string]any{"text": map[string]any{"role": role, "content": content}}
}
