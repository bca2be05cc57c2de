package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"

	"github.com/urfave/cli/v3"

	"github.com/parley-dev/parley/db"
	"github.com/parley-dev/parley/graph"
	"github.com/parley-dev/parley/internal/wire"
	"github.com/parley-dev/parley/server"
)

func serveCommand(stdout, stderr io.Writer) *cli.Command {
	return &cli.Command{
		Name:  "serve",
		Usage: "serve the GraphQL API and playground (migrates the database first)",
		Flags: append(append(append(append(databaseFlags(), configFlags()...), authFlags()...), opsFlags()...),
			&cli.StringFlag{
				Name: "addr", Value: "127.0.0.1:8080", Usage: "HOST:PORT to listen on",
				Sources: cli.EnvVars("PARLEY_ADDR"),
			},
			&cli.BoolFlag{
				Name: "introspection", Value: true, Usage: "allow GraphQL schema introspection (the playground needs it)",
				Sources: cli.EnvVars("PARLEY_INTROSPECTION"),
			},
			&cli.DurationFlag{
				Name: "shutdown-timeout", Value: 20 * time.Second, Usage: "how long in-flight requests may take to finish on shutdown",
				Sources: cli.EnvVars("PARLEY_SHUTDOWN_TIMEOUT"),
			},
			&cli.StringFlag{
				Name: "debug-addr", Usage: "HOST:PORT to serve Go's profiles (/debug/pprof/) and runtime counters (/debug/vars) on; off when empty",
				Sources: cli.EnvVars("PARLEY_DEBUG_ADDR"),
			},
		),
		Action: func(ctx context.Context, cmd *cli.Command) error {
			tuneGC()
			log, err := logger(cmd, stderr)
			if err != nil {
				return err
			}
			cfg, err := loadConfig(cmd)
			if err != nil {
				return err
			}
			if err := applyAuthFlags(cmd, &cfg); err != nil {
				return err
			}
			// Before anything starts: local mode on a reachable address is refused.
			if err := server.CheckListenAddr(cmd.String("addr"), cfg.Auth.Configured()); err != nil {
				return err
			}
			obs, err := startObservability(ctx, cmd, log)
			if err != nil {
				return err
			}
			defer obs.stop()
			dsn, release, err := openDatabase(ctx, cmd, log)
			if err != nil {
				return err
			}
			defer release()
			if err := db.Migrate(ctx, dsn); err != nil {
				return err
			}
			logAuth(log, cfg)
			// Streams (websockets, SSE) end first on shutdown: see below.
			streamsCtx, endStreams := context.WithCancel(context.Background())
			defer endStreams()
			app, err := wire.New(ctx, wire.Config{
				DSN: dsn, Config: cfg, Version: clientVersion, Logger: log,
				Metrics: obs.metrics, ServeMetrics: obs.onAddr, TracerProvider: obs.tracer,
				// Websockets close with "going away" and SSE streams are cut when
				// shutdown begins, so clients subscribe again elsewhere.
				GraphQL: graph.HandlerConfig{Shutdown: streamsCtx, RequestTimeout: cmd.Duration("request-timeout")},
			})
			if err != nil {
				return err
			}
			defer app.Close()
			reportProcessing(ctx, cfg, app.Processing, log)

			if addr := cmd.String("debug-addr"); addr != "" {
				stopDebug, err := serveDebug(addr, log)
				if err != nil {
					return err
				}
				defer stopDebug()
			}
			ln, err := net.Listen("tcp", cmd.String("addr"))
			if err != nil {
				return fmt.Errorf("listen on %s: %w", cmd.String("addr"), err)
			}
			// On shutdown, streams (websockets, SSE) end first, so that Shutdown need not
			// wait for them (it does not even see hijacked websockets), while other
			// requests in flight finish; what is left is cancelled through the base
			// context once Shutdown returns.
			baseCtx, cancelBase := context.WithCancel(context.WithoutCancel(ctx))
			defer cancelBase()
			srv := &http.Server{
				Handler:           app.Handler,
				BaseContext:       func(net.Listener) context.Context { return baseCtx },
				ReadHeaderTimeout: 10 * time.Second,
			}
			errc := make(chan error, 1)
			go func() { errc <- srv.Serve(ln) }()
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
			shutdownCtx, cancel := context.WithTimeout(context.Background(), cmd.Duration("shutdown-timeout"))
			defer cancel()
			if err := srv.Shutdown(shutdownCtx); err != nil && !errors.Is(err, http.ErrServerClosed) {
				return fmt.Errorf("shutdown: %w", err)
			}
			return nil
		},
	}
}
