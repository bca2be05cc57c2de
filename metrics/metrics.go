// Package metrics counts what a Parley server does, for Prometheus: GraphQL requests by
// operation type and outcome, their latency, open subscriptions, reconnections of the
// database listener and how long a committed message takes to reach a subscriber. It
// has its own registry, with the Go runtime's and the process's collectors, served by
// Handler.
package metrics

import (
	"context"
	"database/sql"
	"net/http"
	"strconv"
	"time"

	"github.com/99designs/gqlgen/graphql"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/vektah/gqlparser/v2/ast"

	"github.com/parley-dev/parley/internal/buildinfo"
)

// Metrics holds the server's collectors. Its methods are safe for concurrent use; a nil
// *Metrics records nothing.
type Metrics struct {
	reg           *prometheus.Registry
	requests      *prometheus.CounterVec
	duration      *prometheus.HistogramVec
	subscriptions prometheus.Gauge
	reconnects    prometheus.Counter
	lag           *lagHistogram
	groupCommit   *prometheus.HistogramVec
	queued        prometheus.Observer // groupCommit's phases
	written       prometheus.Observer
	refused       *prometheus.CounterVec
}

// New returns a Metrics with its collectors registered, beside Go's and the process's.
func New() *Metrics {
	m := &Metrics{
		reg: prometheus.NewRegistry(),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "parley_graphql_requests_total",
			Help: "GraphQL operations answered, by operation type (query, mutation, subscription; " +
				"unknown for requests that did not parse or validate) and outcome (ok, or the first error's extensions.code). " +
				"A subscription counts once, by its first response.",
		}, []string{"operation_type", "outcome"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "parley_graphql_request_duration_seconds",
			Help: "Time from receiving a query or mutation to having its response, by operation type.",
			// From a cached read (under a millisecond) to a slow processing step (a minute).
			Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60},
		}, []string{"operation_type"}),
		subscriptions: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "parley_subscriptions_active",
			Help: "GraphQL subscriptions open now, over websockets and SSE.",
		}),
		reconnects: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "parley_listener_reconnects_total",
			Help: "Times the database listener (LISTEN) connected again after losing its connection; each is a resync of every subscriber.",
		}),
		lag: newLagHistogram(prometheus.HistogramOpts{
			Name: "parley_notify_delivery_lag_seconds",
			Help: "Time from a message being stored (its createdAt, or updatedAt for messageUpdated: the database's clock) " +
				"to its being handed to a subscriber's connection, for messages stored after the subscription began.",
			Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30},
		}),
	}
	m.groupCommit = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: "parley_append_group_commit_seconds",
		Help: "What group commit adds to a streaming message's append (appendMessageDeltas, appendProviderEvents) " +
			"before its acknowledgement, by phase: queued (waiting for the batch in flight to commit) and written " +
			"(its own batch's statement and commit). Appends that take the locking path are not counted.",
		Buckets: []float64{.0001, .00025, .0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1},
	}, []string{"phase"})
	m.queued, m.written = m.groupCommit.WithLabelValues("queued"), m.groupCommit.WithLabelValues("written")
	m.refused = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "parley_http_refused_total",
		Help: "Requests to /graphql answered with an error before GraphQL read them, by HTTP status: " +
			"401 unauthenticated, 403 origin or cross-origin refused, 405, 406, 413 body too large, 415, 421 local mode, 429 rate limited, 400 unreadable body.",
	}, []string{"status"})
	m.reg.MustRegister(m.requests, m.duration, m.subscriptions, m.reconnects, m.lag, m.groupCommit, m.refused, buildInfo(buildinfo.Get()),
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// buildInfo is the parley_build_info gauge: always 1, its labels saying which build
// runs, as Prometheus's own *_build_info metrics do (join on it to label other series).
func buildInfo(i buildinfo.Info) prometheus.Collector {
	g := prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "parley_build_info",
		Help: "Which build of Parley is running: its module version, VCS revision and Go toolchain. Always 1.",
		ConstLabels: prometheus.Labels{
			"version": i.Version, "revision": i.ShortRevision(), "goversion": i.GoVersion,
		},
	})
	g.Set(1)
	return g
}

// Handler serves the metrics in Prometheus's text (or OpenMetrics) format.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{Registry: m.reg})
}

// Refused counts a request refused before GraphQL read it, with its HTTP status.
func (m *Metrics) Refused(status int) {
	if m != nil {
		m.refused.WithLabelValues(strconv.Itoa(status)).Inc()
	}
}

// RegisterDB exports the connection pool's statistics (database/sql's DBStats: open,
// in use and idle connections, waits for a connection and their total time,
// connections closed for each reason) as go_sql_* metrics labelled db_name="parley".
func (m *Metrics) RegisterDB(db *sql.DB) {
	if m != nil {
		m.reg.MustRegister(collectors.NewDBStatsCollector(db, "parley"))
	}
}

// ListenerReconnected counts a reconnection of the database listener.
func (m *Metrics) ListenerReconnected() {
	if m != nil {
		m.reconnects.Inc()
	}
}

// ObserveDeliveryLag records how long a message took from being stored to a subscriber.
func (m *Metrics) ObserveDeliveryLag(d time.Duration) {
	if m != nil {
		m.lag.Observe(d)
	}
}

// ObserveGroupCommit records how long an append waited for the batch in flight
// (queued) and for its own batch's statement and commit (written).
func (m *Metrics) ObserveGroupCommit(queued, written time.Duration) {
	if m != nil {
		m.queued.Observe(max(queued, 0).Seconds())
		m.written.Observe(max(written, 0).Seconds())
	}
}

// GraphQL returns a gqlgen extension that counts operations and times them. Use it
// before the endpoint's other extensions, so that it sees responses as clients do.
func (m *Metrics) GraphQL() graphql.HandlerExtension { return extension{m} }

type extension struct{ m *Metrics }

var (
	_ graphql.HandlerExtension     = extension{}
	_ graphql.OperationInterceptor = extension{}
	_ graphql.ResponseInterceptor  = extension{}
)

func (extension) ExtensionName() string                   { return "Metrics" }
func (extension) Validate(graphql.ExecutableSchema) error { return nil }

// subscriptionKey marks the context of a subscription's responses, so that only its
// first one is counted.
type subscriptionKey struct{}

type subscriptionState struct{ counted bool }

// InterceptOperation counts subscriptions open until their context ends: the
// transports end it when the subscription is over, however it ends.
func (e extension) InterceptOperation(ctx context.Context, next graphql.OperationHandler) graphql.ResponseHandler {
	if operationType(ctx) != "subscription" {
		return next(ctx)
	}
	e.m.subscriptions.Inc()
	context.AfterFunc(ctx, e.m.subscriptions.Dec)
	return next(context.WithValue(ctx, subscriptionKey{}, &subscriptionState{}))
}

// InterceptResponse counts each response of a query or mutation (and of a request
// that never became an operation) with its duration, and a subscription's first.
func (e extension) InterceptResponse(ctx context.Context, next graphql.ResponseHandler) *graphql.Response {
	resp := next(ctx)
	if resp == nil {
		return nil
	}
	typ := operationType(ctx)
	if typ == "subscription" {
		st, _ := ctx.Value(subscriptionKey{}).(*subscriptionState)
		if st == nil || st.counted {
			return resp
		}
		st.counted = true
	} else if start := graphql.GetStartTime(ctx); !start.IsZero() {
		e.m.duration.WithLabelValues(typ).Observe(time.Since(start).Seconds())
	}
	e.m.requests.WithLabelValues(typ, outcome(resp)).Inc()
	return resp
}

// operationType returns the type of ctx's operation, or "unknown" before there is one.
func operationType(ctx context.Context) string {
	if !graphql.HasOperationContext(ctx) {
		return "unknown"
	}
	op := graphql.GetOperationContext(ctx).Operation
	if op == nil {
		return "unknown"
	}
	switch op.Operation {
	case ast.Query, ast.Mutation, ast.Subscription:
		return string(op.Operation)
	}
	return "unknown"
}

// outcome is "ok" for a response without errors, else its first error's code.
func outcome(resp *graphql.Response) string {
	if len(resp.Errors) == 0 {
		return "ok"
	}
	if code, ok := resp.Errors[0].Extensions["code"].(string); ok && code != "" {
		return code
	}
	return "error"
}
