// Package wire builds a whole Parley server from its configuration and a database:
// the store, the realtime hub and the one database listener that feeds it, the
// processing services (workspace reader, image fetcher, Tesseract, vision, MCP
// sessions) and the HTTP handler over them. `parley serve` and the tests both build
// through New, so the tests run what production runs.
package wire

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/netip"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/parley-dev/parley"
	"github.com/parley-dev/parley/auth"
	"github.com/parley-dev/parley/config"
	"github.com/parley-dev/parley/db"
	"github.com/parley-dev/parley/fileref"
	"github.com/parley-dev/parley/graph"
	"github.com/parley-dev/parley/interop"
	"github.com/parley-dev/parley/interop/anthropic"
	"github.com/parley-dev/parley/interop/openai"
	"github.com/parley-dev/parley/mcpclient"
	"github.com/parley-dev/parley/metrics"
	"github.com/parley-dev/parley/processing"
	"github.com/parley-dev/parley/realtime"
	"github.com/parley-dev/parley/recognize"
	"github.com/parley-dev/parley/render"
	"github.com/parley-dev/parley/server"
)

// Config is what New builds a server from.
type Config struct {
	// DSN is the database, already migrated (db.Migrate).
	DSN string
	// Config is the configuration (config.Load, config.Parse or config.Default, with
	// flags applied), already validated.
	Config config.Config
	// Version is how Parley names itself to MCP servers.
	Version string
	Logger  *slog.Logger
	// DB tunes the store; its Logger and ToolPolicies are set by New, and its
	// TracerProvider too when TracerProvider is set.
	DB db.Config
	// Realtime tunes the hub; its Logger is set by New.
	Realtime realtime.Config
	// Listener tunes the database listener; its OnEvent, OnResync and Logger are set by
	// New (and OnReconnect, when Metrics is set).
	Listener db.ListenerConfig
	// Auth, when set, builds the authenticator instead of Config.Auth (tests use it);
	// returning nil is local mode.
	Auth func(store *db.DB) (parley.Authenticator, error)
	// Metrics counts what the server does (nil: nothing); ServeMetrics serves them at
	// /metrics on the API's address.
	Metrics      *metrics.Metrics
	ServeMetrics bool
	// TracerProvider traces requests and transactions; nil traces nothing.
	TracerProvider trace.TracerProvider
	// GraphQL tunes the endpoint: Shutdown and RequestTimeout, say. Its limits and
	// websocket origins are set from Config.
	GraphQL graph.HandlerConfig
	// Configure, when set, may change the HTTP server's configuration last (tests).
	Configure func(*server.Config)
	// SweepInterval is how often this replica closes streaming messages whose lease ran
	// out, as INTERRUPTED (default a third of parley.DefaultLease).
	SweepInterval time.Duration
}

// Server is a wired Parley server: the pieces that run, and the handler over them.
type Server struct {
	Store *db.DB
	// Hub owns every fan-out of the database's events in this process; Listener, the
	// only one, feeds it.
	Hub        *realtime.Hub
	Listener   *db.Listener
	Processing *Processing
	Handler    http.Handler
	stopSweep  context.CancelFunc
	swept      chan struct{}
	// closeAuth stops what the authenticator runs (refreshing a JWKS URL).
	closeAuth func()
}

// New builds the server cfg describes on the database at cfg.DSN and starts its
// listener. Close releases what it holds.
func New(ctx context.Context, cfg Config) (_ *Server, err error) {
	log := cfg.Logger
	if log == nil {
		log = slog.Default()
	}
	s := &Server{}
	defer func() {
		if err != nil {
			s.Close()
		}
	}()
	policies := cfg.Config.ToolPolicies()
	dbc := cfg.DB
	dbc.Logger, dbc.ToolPolicies = log, &policies
	dbc.Assemblers = map[parley.StreamFormat]func() parley.StreamAssembler{
		parley.FormatOpenAIChat:        func() parley.StreamAssembler { return openai.NewChatStream() },
		parley.FormatOpenAIResponses:   func() parley.StreamAssembler { return openai.NewResponsesStream() },
		parley.FormatAnthropicMessages: func() parley.StreamAssembler { return anthropic.NewMessageStream() },
	}
	if cfg.TracerProvider != nil {
		dbc.TracerProvider = cfg.TracerProvider
	}
	if s.Store, err = db.Open(ctx, cfg.DSN, dbc); err != nil {
		return nil, err
	}
	if sc := cfg.Config.Search.Config; sc != "" {
		changed, err := s.Store.SetSearchConfig(ctx, sc)
		if err != nil {
			return nil, err
		}
		if changed {
			log.Info("search configuration changed: every message's search vector was rebuilt", "config", sc)
		}
	}
	cfg.Metrics.RegisterDB(s.Store.SQL().DB)
	authn, err := authenticator(cfg, s.Store)
	if err != nil {
		return nil, err
	}
	if c, ok := authn.(interface{ Close() }); ok {
		s.closeAuth = c.Close
	}
	rc := cfg.Realtime
	rc.Logger = log
	if rc.PageBytes == 0 {
		rc.PageBytes = cfg.Config.Limits.MaxReplayBytes
	}
	s.Hub = realtime.NewHub(s.Store, rc)
	// The appends this process commits reach its subscribers from memory (the hub's
	// tail); its listener skips their notifications, meant for the other replicas.
	s.Store.OnAppended(s.Hub.PublishAppend)
	if cfg.Metrics != nil {
		s.Store.OnGroupCommit(cfg.Metrics.ObserveGroupCommit)
	}
	s.Processing = newProcessing(cfg.Config, s.Store, s.Hub, cfg.Version, log)
	// One LISTEN connection per process hears every replica's commits and wakes this
	// process's subscribers through the hub, who read what changed from the database.
	lc := cfg.Listener
	lc.OnEvent, lc.OnResync, lc.Logger, lc.Origin = s.Hub.Publish, s.Hub.Resync, log, s.Store.Origin()
	if cfg.Metrics != nil {
		lc.OnReconnect = cfg.Metrics.ListenerReconnected
	}
	if s.Listener, err = db.Listen(ctx, cfg.DSN, lc); err != nil {
		return nil, err
	}
	s.sweep(cfg.SweepInterval, log)
	gql := cfg.GraphQL
	l := cfg.Config.Limits
	gql.Limits = graph.Limits{
		MaxDepth: l.MaxDepth, MaxAliases: l.MaxAliases, MaxComplexity: l.MaxComplexity,
		MaxPageSize: l.MaxPageSize, MaxTokens: l.MaxTokens, MaxSelections: l.MaxSelections, MaxPageBytes: l.MaxPageBytes,
		MaxSubscriptionsPerConnection: l.MaxSubscriptionsPerConnection,
	}
	gql.MaxBodyBytes, gql.MaxWebsocketMessageBytes = l.MaxBodyBytes, l.MaxWebsocketMessageBytes
	gql.WebsocketOrigins = cfg.Config.HTTP.WebsocketOrigins
	gql.DisableIOUring = !cfg.Config.Process.IOUring
	sc := server.Config{
		Conversations: s.Store, Messages: s.Store, Ready: s.Store.Ping, Logger: log,
		Introspection:  cfg.Config.HTTP.Introspection == nil || *cfg.Config.HTTP.Introspection, // nil: config's default, on
		Auth:           authn,
		TrustedOrigins: cfg.Config.HTTP.TrustedOrigins,
		Events:         s.Hub,
		Processing:     s.Processing.Service,
		ToolWork:       s.Store,
		Interop: interop.New(s.Store, s.Store, s.Store).WithMaxBytes(l.MaxTranscriptBytes).WithVisionModels(func(model string) (bool, bool) {
			return recognize.SupportsVision(cfg.Config.Vision.Models, model)
		}),
		Live:       s.Store,
		Tree:       s.Store,
		Search:     s.Store,
		ShareLinks: s.Store,
		Metrics:    cfg.Metrics, ServeMetrics: cfg.ServeMetrics, TracerProvider: cfg.TracerProvider,
		GraphQL:   gql,
		Renderer:  render.New(render.Config{ImageHosts: cfg.Config.Render.ImageHosts}),
		ImportAPI: server.ImportAPI{MaxBytes: l.MaxImportBytes, Timeout: time.Duration(l.ImportTimeout)},
	}
	if authn != nil {
		// Local mode has no rate limits: one owner, on one machine.
		r := cfg.Config.RateLimits
		sc.RateLimits = server.RateLimits{Requests: deref(r.Requests), RequestsBurst: deref(r.RequestsBurst),
			Writes: deref(r.Writes), WritesBurst: deref(r.WritesBurst)}
	}
	if cfg.Configure != nil {
		cfg.Configure(&sc)
	}
	s.Handler = server.New(sc)
	return s, nil
}

func deref(p *int) int {
	if p == nil {
		return 0
	}
	return *p
}

// Close stops the listener, ends the MCP sessions and closes the store.
func (s *Server) Close() error {
	var errs []error
	if s.stopSweep != nil {
		s.stopSweep()
		<-s.swept
	}
	if s.closeAuth != nil {
		s.closeAuth()
	}
	if s.Listener != nil {
		errs = append(errs, s.Listener.Close())
	}
	if s.Processing != nil {
		errs = append(errs, s.Processing.Close())
	}
	if s.Store != nil {
		errs = append(errs, s.Store.Close())
	}
	return errors.Join(errs...)
}

// authenticator builds the server's authenticator: cfg.Auth's, or the configuration's,
// or nil for local mode.
func authenticator(cfg Config, store *db.DB) (parley.Authenticator, error) {
	if cfg.Auth != nil {
		return cfg.Auth(store)
	}
	a := cfg.Config.Auth
	if !a.Configured() {
		return nil, nil
	}
	ac := auth.Config{JWTSecret: []byte(a.JWTSecret), JWKSFile: a.JWKSFile, JWKSURL: a.JWKSURL,
		JWKSRefresh: a.JWKSRefresh.Std(), OwnerClaim: a.OwnerClaim, Issuer: a.Issuer, Audience: a.Audience}
	if a.Tokens {
		ac.Tokens = store
	}
	authn, err := auth.New(ac)
	if err != nil {
		return nil, fmt.Errorf("authentication: %w", err)
	}
	return authn, nil
}

// Processing is the processing side of a server.
type Processing struct {
	Service *processing.Service
	MCP     *mcpclient.Pool
	OCR     *recognize.Tesseract
	Vision  *recognize.Vision
}

// Close ends the MCP sessions (stopping stdio servers).
func (p *Processing) Close() error { return p.MCP.Close() }

// newProcessing builds the processing services for store from cfg, which must have been
// validated; events wakes the tool work queue's subscribers.
func newProcessing(cfg config.Config, store parley.ProcessingStore, events parley.EventWatcher, version string, log *slog.Logger) *Processing {
	var allow []netip.Prefix
	for _, n := range cfg.Fetch.AllowNetworks {
		if p, err := config.ParseNetwork(n); err == nil {
			allow = append(allow, p)
		}
	}
	servers := make(map[string]mcpclient.Server, len(cfg.MCP.Servers))
	for name, s := range cfg.MCP.Servers {
		servers[name] = mcpclient.Server{
			Command: s.Command, Env: s.Env, URL: s.URL, Headers: s.Headers,
			TTL: s.TTL.Std(), Timeout: s.Timeout.Std(),
		}
	}
	p := &Processing{
		MCP: mcpclient.New(servers, cfg.MCP.MaxResourceBytes, version, log),
		OCR: &recognize.Tesseract{Command: cfg.OCR.Command, Languages: cfg.OCR.Languages, Timeout: cfg.OCR.Timeout.Std()},
		Vision: recognize.NewVision(recognize.VisionConfig{
			URL: cfg.Vision.URL, Model: cfg.Vision.Model, APIKey: cfg.Vision.APIKey, Models: cfg.Vision.Models,
			Timeout: cfg.Vision.Timeout.Std(), MaxTokens: cfg.Vision.MaxTokens, Detail: cfg.Vision.Detail,
		}),
	}
	fetcher := recognize.NewFetcher(cfg.Fetch.MaxBytes, cfg.Fetch.Timeout.Std(), allow)
	fetcher.Logger = log // the causes of failed fetches, which the stored failures leave out
	p.Service = processing.New(processing.Config{
		Store:         store,
		Permissions:   cfg.AgentPermissions(),
		Files:         &fileref.Workspace{Root: cfg.Workspace.Root, MaxBytes: cfg.Workspace.MaxFileBytes},
		Fetcher:       fetcher,
		OCR:           p.OCR,
		Vision:        p.Vision,
		Resources:     p.MCP,
		MaxImageBytes: cfg.Fetch.MaxBytes,
		Events:        events,
		Logger:        log,
	})
	return p
}

// sweep starts the sweeper: every interval, it closes the streaming messages whose lease
// ran out as INTERRUPTED. Every replica runs one; they skip each other's rows (SKIP
// LOCKED), so a message is closed once, by whichever comes first.
func (s *Server) sweep(interval time.Duration, log *slog.Logger) {
	if interval <= 0 {
		interval = parley.DefaultLease / 3
	}
	ctx, cancel := context.WithCancel(context.Background())
	s.stopSweep, s.swept = cancel, make(chan struct{})
	go func() {
		defer close(s.swept)
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			if n, err := s.Store.InterruptExpired(ctx); err != nil && ctx.Err() == nil {
				log.Warn("cannot close interrupted messages", "err", err)
			} else if n > 0 {
				log.Info("closed interrupted messages", "count", n)
			}
		}
	}()
}
