package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"

	"github.com/urfave/cli/v3"

	"github.com/parley-dev/parley"
	"github.com/parley-dev/parley/config"
	"github.com/parley-dev/parley/graph"
	"github.com/parley-dev/parley/graph/transport"
	"github.com/parley-dev/parley/internal/buildinfo"
	"github.com/parley-dev/parley/internal/wire"
	"github.com/parley-dev/parley/server"
)

func serveCommand(stdout, stderr io.Writer) *cli.Command {
	return &cli.Command{
		Name:  "serve",
		Usage: "serve the GraphQL API and playground (migrates the database first)",
		Flags: append(flagsOf(config.Database), flagsOf(config.Serve)...),
		Action: func(ctx context.Context, cmd *cli.Command) error {
			cfg, err := loadConfig(cmd, config.Global, config.Database, config.Serve)
			if err != nil {
				return err
			}
			return runServer(ctx, cfg, stdout, stderr)
		},
	}
}

// runServer runs the server cfg describes until ctx ends, then shuts it down.
func runServer(ctx context.Context, cfg config.Config, stdout, stderr io.Writer) error {
	memLimit := tuneGC()
	log, err := logger(cfg, stderr)
	if err != nil {
		return err
	}
	log.Info("starting", "version", clientVersion, "revision", buildinfo.Get().ShortRevision(), "memoryLimit", memLimit)
	// Before anything starts: local mode on a reachable address is refused.
	if err := server.CheckListenAddr(cfg.Process.Addr, cfg.Auth.Configured()); err != nil {
		return err
	}
	obs, err := startObservability(ctx, cfg, log)
	if err != nil {
		return err
	}
	defer obs.stop()
	dsn, release, err := openMigrated(ctx, cfg, log, true)
	if err != nil {
		return err
	}
	defer release()
	logAuth(log, cfg)
	logSends(log, cfg)
	// Streams (websockets, SSE) end first on shutdown: see below.
	streamsCtx, endStreams := context.WithCancel(context.Background())
	defer endStreams()
	app, err := wire.New(ctx, wire.Config{
		DSN: dsn, Config: cfg, Version: clientVersion, Logger: log,
		Metrics: obs.metrics, ServeMetrics: obs.onAddr, TracerProvider: obs.tracer,
		// Websockets close with "going away" and SSE streams are cut when
		// shutdown begins, so clients subscribe again elsewhere.
		GraphQL: graph.HandlerConfig{Shutdown: streamsCtx, RequestTimeout: cfg.Process.RequestTimeout},
	})
	if err != nil {
		return err
	}
	defer app.Close()
	reportProcessing(ctx, cfg, app.Processing, log)

	if addr := cfg.Process.DebugAddr; addr != "" {
		stopDebug, err := serveDebug(addr, log)
		if err != nil {
			return err
		}
		defer stopDebug()
	}
	ln, err := net.Listen("tcp", cfg.Process.Addr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", cfg.Process.Addr, err)
	}
	// On shutdown, streams (websockets, SSE) end first, so that Shutdown need not
	// wait for them (it does not even see hijacked websockets), while other
	// requests in flight finish; what is left is cancelled through the base
	// context once Shutdown returns.
	baseCtx, cancelBase := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelBase()
	conns := server.Connections{ReadTimeout: cfg.Process.ReadTimeout, IdleTimeout: cfg.Process.IdleTimeout,
		MaxConnections: cfg.Process.MaxConnections}
	srv := &http.Server{
		Handler:     app.Handler,
		BaseContext: func(net.Listener) context.Context { return baseCtx },
	}
	conns.Configure(srv)
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(conns.Listener(ln)) }()
	url := "http://" + ln.Addr().String()
	log.Info("serving", "addr", ln.Addr().String(), "playground", url+"/", "graphql", url+"/graphql")
	fmt.Fprintf(stdout, "Parley is serving GraphQL at %s/graphql (playground at %s/)\n", url, url)

	select {
	case err := <-errc:
		return fmt.Errorf("serve: %w", err)
	case <-ctx.Done():
	}
	log.Info("shutting down")
	endStreams()
	shutdownCtx, cancel := context.WithTimeout(context.Background(), cfg.Process.ShutdownTimeout)
	defer cancel()
	if err := srv.Shutdown(shutdownCtx); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("shutdown: %w", err)
	}
	return nil
}

// logAuth says at start who the server will let in.
func logAuth(log *slog.Logger, cfg config.Config) {
	if !cfg.Auth.Configured() {
		log.Info("local mode: no authentication configured; every request acts as the local owner", "owner", parley.LocalOwner)
		return
	}
	log.Info("authentication", "apiTokens", cfg.Auth.Tokens, "jwtHS256", cfg.Auth.JWTSecret != "",
		"jwks", cfg.Auth.JWKSFile, "jwksURL", cfg.Auth.JWKSURL, "ownerClaim", cfg.Auth.OwnerClaim,
		"issuer", cfg.Auth.Issuer, "audience", cfg.Auth.Audience)
}

// logSends says at start how websocket deliveries are sent: in batches through
// io_uring, or each with a system call of its own, and why.
func logSends(log *slog.Logger, cfg config.Config) {
	if !cfg.Process.IOUring {
		log.Info("batched sends", "ioUring", false, "reason", "disabled by setting (--io-uring=false, PARLEY_IO_URING)")
		return
	}
	if err := transport.IOUringAvailable(); err != nil {
		log.Info("batched sends", "ioUring", false, "reason", "not available: "+err.Error())
		return
	}
	log.Info("batched sends", "ioUring", true)
}
