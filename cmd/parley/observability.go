package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/parley-dev/parley/config"
	"github.com/parley-dev/parley/metrics"
	"github.com/parley-dev/parley/tracing"
)

// observability is what serve measures and traces with.
type observability struct {
	metrics *metrics.Metrics
	// onAddr says whether /metrics is served on the API's own address.
	onAddr bool
	tracer trace.TracerProvider // nil when tracing is off
	stop   func()
}

// startObservability makes the metrics, serving them on --metrics-addr if one is given,
// and the tracer provider when the environment asks for tracing (tracing.FromEnv: the
// OpenTelemetry SDK's variables, not flags). stop flushes the traces and stops the
// metrics server.
func startObservability(ctx context.Context, cfg config.Config, log *slog.Logger) (*observability, error) {
	o := &observability{metrics: metrics.New()}
	tp, stopTracing, err := tracing.FromEnv(ctx, clientVersion)
	if err != nil {
		return nil, err
	}
	if tp != nil {
		o.tracer = tp
		log.Info("tracing: exporting spans as OTEL_TRACES_EXPORTER and OTEL_EXPORTER_OTLP_* say")
	}
	stopMetrics := func() {}
	switch addr := cfg.Process.MetricsAddr; {
	case addr == "" && cfg.Auth.Configured():
		// With authentication configured the API's address is meant for the
		// world, and /metrics (every owner's traffic, the build, the pool) is not:
		// serve it on loopback apart. Another process may hold the port: the API
		// serves anyway, and the log says how to choose one.
		if stopMetrics, err = serveMetrics(defaultAuthMetricsAddr, o.metrics, log); err != nil {
			log.Warn("metrics: not served; set --metrics-addr to a free HOST:PORT", "err", err)
			stopMetrics = func() {}
		}
	case addr == "":
		o.onAddr = true
	case addr == "off":
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

// defaultAuthMetricsAddr is where /metrics is served when authentication is configured
// and --metrics-addr is not given: loopback only, on the port OpenTelemetry's
// Prometheus exporter uses by convention.
const defaultAuthMetricsAddr = "127.0.0.1:9464"

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
