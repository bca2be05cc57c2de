package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/urfave/cli/v3"
	"go.opentelemetry.io/otel/trace"

	"github.com/parley-dev/parley/metrics"
	"github.com/parley-dev/parley/tracing"
)

// opsFlags are serve's operational flags: the request timeout and where metrics go.
// Tracing is configured by OpenTelemetry's standard environment variables (see
// tracing.FromEnv), not by flags.
func opsFlags() []cli.Flag {
	return []cli.Flag{
		&cli.DurationFlag{
			Name: "request-timeout", Value: 3 * time.Minute,
			Usage:   "how long one query or mutation may run before it is cancelled (0: no limit); above the processing steps' own timeouts (vision, OCR, fetch, MCP)",
			Sources: cli.EnvVars("PARLEY_REQUEST_TIMEOUT"),
		},
		&cli.StringFlag{
			Name:    "metrics-addr",
			Usage:   `HOST:PORT to serve Prometheus metrics (/metrics) on, apart from the API; empty: at /metrics on --addr; "off": nowhere`,
			Sources: cli.EnvVars("PARLEY_METRICS_ADDR"),
		},
	}
}

// observability is what serve measures and traces with.
type observability struct {
	metrics *metrics.Metrics
	// onAddr says whether /metrics is served on the API's own address.
	onAddr bool
	tracer trace.TracerProvider // nil when tracing is off
	stop   func()
}

// startObservability makes the metrics, serving them on --metrics-addr if one is given,
// and the tracer provider when the environment asks for tracing. stop flushes the
// traces and stops the metrics server.
func startObservability(ctx context.Context, cmd *cli.Command, log *slog.Logger) (*observability, error) {
	o := &observability{metrics: metrics.New()}
	tp, stopTracing, err := tracing.FromEnv(ctx, clientVersion)
	if err != nil {
		return nil, err
	}
	if tp != nil {
		o.tracer = tp
		log.Info("tracing: exporting spans over OTLP/HTTP as OTEL_EXPORTER_OTLP_* say")
	}
	stopMetrics := func() {}
	switch addr := cmd.String("metrics-addr"); addr {
	case "":
		o.onAddr = true
	case "off":
	default:
		if stopMetrics, err = serveMetrics(addr, o.metrics, log); err != nil {
			stopTracing(ctx)
			return nil, err
		}
	}
	o.stop = func() {
		stopMetrics()
		flushCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := stopTracing(flushCtx); err != nil {
			log.Warn("tracing: flushing spans", "err", err)
		}
	}
	return o, nil
}

// serveMetrics serves m at /metrics on addr, and returns a function that stops it.
func serveMetrics(addr string, m *metrics.Metrics, log *slog.Logger) (stop func(), err error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("listen on %s (--metrics-addr): %w", addr, err)
	}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", m.Handler())
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("metrics server", "err", err)
		}
	}()
	log.Info("serving metrics", "metricsAddr", ln.Addr().String())
	return func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
	}, nil
}
