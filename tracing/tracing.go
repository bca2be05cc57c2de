// Package tracing is Parley's optional OpenTelemetry tracing: a server span for every
// HTTP request (otelhttp, the current HTTP semantic conventions), refused ones too,
// continuing the caller's trace when the request carries a W3C traceparent header; a
// span for each GraphQL operation inside it (and each event a subscription delivers);
// and, in package db, a span for each database transaction and each statement
// (otelsql, the stable database conventions), reads as well as writes. It is off
// unless the standard environment variables ask for it; then spans are exported as
// OTEL_TRACES_EXPORTER and OTEL_EXPORTER_OTLP_PROTOCOL say (the contrib autoexport
// package: OTLP over HTTP/protobuf by default, or gRPC, or the console). Log lines
// carry the trace and span ids (LogHandler).
package tracing

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/99designs/gqlgen/graphql"
	"github.com/vektah/gqlparser/v2/ast"
	"go.opentelemetry.io/contrib/exporters/autoexport"
	"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.40.0"
	"go.opentelemetry.io/otel/trace"
)

// Name is the instrumentation scope of Parley's spans.
const Name = "github.com/parley-dev/parley"

// Enabled reports whether the environment (as getenv reads it) asks for tracing:
// OTEL_TRACES_EXPORTER names an exporter (otlp, console) or an OTLP endpoint is set
// (OTEL_EXPORTER_OTLP_TRACES_ENDPOINT or OTEL_EXPORTER_OTLP_ENDPOINT), and neither
// OTEL_TRACES_EXPORTER is "none" nor OTEL_SDK_DISABLED "true". (A server that traced
// to localhost:4318 whenever nothing was configured would fill its log with export
// errors, so, unlike the SDK's own default, nothing set means off.)
func Enabled(getenv func(string) string) bool {
	exporter := getenv("OTEL_TRACES_EXPORTER")
	if strings.EqualFold(getenv("OTEL_SDK_DISABLED"), "true") || strings.EqualFold(exporter, "none") {
		return false
	}
	return exporter != "" || getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") != "" || getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != ""
}

// FromEnv returns a tracer provider exporting as the standard variables say
// (OTEL_TRACES_EXPORTER, OTEL_EXPORTER_OTLP_PROTOCOL, OTEL_EXPORTER_OTLP_* endpoint,
// headers, timeout...: autoexport), sampling as OTEL_TRACES_SAMPLER says, with the
// service named by OTEL_SERVICE_NAME (default "parley") and version, and a function
// that flushes and stops it. When the environment does not ask for tracing (see
// Enabled) it returns nil and a no-op: nothing is traced.
func FromEnv(ctx context.Context, version string) (trace.TracerProvider, func(context.Context) error, error) {
	if !Enabled(os.Getenv) {
		return nil, func(context.Context) error { return nil }, nil
	}
	exp, err := autoexport.NewSpanExporter(ctx)
	if err != nil {
		return nil, nil, fmt.Errorf("tracing: exporter (OTEL_TRACES_EXPORTER, OTEL_EXPORTER_OTLP_PROTOCOL): %w", err)
	}
	name := os.Getenv("OTEL_SERVICE_NAME")
	if name == "" {
		name = "parley"
	}
	// resource.Default reads OTEL_RESOURCE_ATTRIBUTES; ours come after and win.
	res, err := resource.Merge(resource.Default(), resource.NewSchemaless(
		semconv.ServiceName(name), semconv.ServiceVersion(version)))
	if err != nil {
		return nil, nil, fmt.Errorf("tracing: resource: %w", err)
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))
	return tp, tp.Shutdown, nil
}

// Handler wraps next in a server span for every request, with tp (nil: next as it
// is), named for the method and the route ("POST /graphql"). It goes outermost, so
// that requests refused before GraphQL runs (401, 403, 405, 413, 429) have spans too,
// with their status.
func Handler(tp trace.TracerProvider, next http.Handler) http.Handler {
	if tp == nil {
		return next
	}
	return otelhttp.NewHandler(next, "parley",
		otelhttp.WithTracerProvider(tp),
		otelhttp.WithPropagators(propagator),
		otelhttp.WithSpanNameFormatter(func(_ string, r *http.Request) string { return r.Method + " " + route(r.URL.Path) }),
		// A websocket's upgrade request lasts as long as the socket: its span does
		// too, and each operation and event on it is a span of its own inside.
	)
}

// route is the route a path is served by, for span names: a path of its own for the
// API, health checks and metrics, "/" for the playground and anything else, so that
// span names stay few.
func route(path string) string {
	switch path {
	case "/graphql", "/healthz", "/readyz", "/metrics":
		return path
	}
	return "/"
}

// LogHandler adds the trace_id and span_id of the record's context's span, when it
// has one, to every record h handles: a log line can then be found from its trace and
// the other way round.
func LogHandler(h slog.Handler) slog.Handler { return logHandler{h} }

type logHandler struct{ slog.Handler }

func (l logHandler) Handle(ctx context.Context, r slog.Record) error {
	if sc := trace.SpanContextFromContext(ctx); sc.IsValid() {
		r = r.Clone()
		r.AddAttrs(slog.String("trace_id", sc.TraceID().String()), slog.String("span_id", sc.SpanID().String()))
	}
	return l.Handler.Handle(ctx, r)
}

func (l logHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return logHandler{l.Handler.WithAttrs(attrs)}
}

func (l logHandler) WithGroup(name string) slog.Handler { return logHandler{l.Handler.WithGroup(name)} }

// GraphQL returns a gqlgen extension that traces operations with tp; nil tp traces
// nothing. Use it before the endpoint's other extensions.
func GraphQL(tp trace.TracerProvider) graphql.HandlerExtension {
	if tp == nil {
		return extension{}
	}
	return extension{tracer: tp.Tracer(Name)}
}

type extension struct{ tracer trace.Tracer }

var (
	_ graphql.HandlerExtension    = extension{}
	_ graphql.ResponseInterceptor = extension{}
)

func (extension) ExtensionName() string                   { return "Tracing" }
func (extension) Validate(graphql.ExecutableSchema) error { return nil }

// propagator reads the W3C traceparent and tracestate headers of a request.
var propagator = propagation.TraceContext{}

// InterceptResponse runs each response (a query's or mutation's only one, a
// subscription's every event) in a span named as OpenTelemetry's GraphQL conventions
// say: the operation type, then its name. The query text is not recorded: it may hold
// what users wrote.
func (e extension) InterceptResponse(ctx context.Context, next graphql.ResponseHandler) *graphql.Response {
	if e.tracer == nil {
		return next(ctx)
	}
	typ, name := "unknown", ""
	var headers http.Header
	if graphql.HasOperationContext(ctx) {
		oc := graphql.GetOperationContext(ctx)
		headers = oc.Headers
		name = oc.OperationName
		if oc.Operation != nil {
			typ = string(oc.Operation.Operation)
			if name == "" {
				name = oc.Operation.Name
			}
		}
	}
	if headers != nil && !trace.SpanContextFromContext(ctx).IsValid() {
		ctx = propagator.Extract(ctx, propagation.HeaderCarrier(headers))
	}
	spanName := typ
	if name != "" {
		spanName += " " + name
	}
	attrs := []attribute.KeyValue{attribute.String("graphql.operation.type", typ)}
	if name != "" {
		attrs = append(attrs, attribute.String("graphql.operation.name", name))
	}
	var span trace.Span
	var resp *graphql.Response
	if typ == string(ast.Subscription) {
		// A span per event, not one for the subscription, which may last for days. The
		// last call answers nil, the end of the stream: no span for it, so the span is
		// started once the event is there.
		start := time.Now()
		if resp = next(ctx); resp == nil {
			return nil
		}
		_, span = e.tracer.Start(ctx, spanName, trace.WithSpanKind(trace.SpanKindInternal),
			trace.WithAttributes(attrs...), trace.WithTimestamp(start))
	} else {
		// Inside the HTTP request's server span (Handler) the operation is internal;
		// on its own (a test, another transport) it is the server span.
		kind := trace.SpanKindServer
		if trace.SpanContextFromContext(ctx).IsValid() && trace.SpanFromContext(ctx).IsRecording() {
			kind = trace.SpanKindInternal
		}
		opts := []trace.SpanStartOption{trace.WithSpanKind(kind), trace.WithAttributes(attrs...)}
		if start := graphql.GetStartTime(ctx); !start.IsZero() {
			opts = append(opts, trace.WithTimestamp(start)) // from the request's arrival
		}
		ctx, span = e.tracer.Start(ctx, spanName, opts...)
		if resp = next(ctx); resp == nil {
			span.End()
			return nil
		}
	}
	defer span.End()
	if len(resp.Errors) > 0 {
		codesSeen := make([]string, 0, len(resp.Errors))
		for _, err := range resp.Errors {
			if c, ok := err.Extensions["code"].(string); ok {
				codesSeen = append(codesSeen, c)
			}
		}
		span.SetAttributes(attribute.StringSlice("graphql.error.codes", codesSeen))
		span.SetStatus(codes.Error, resp.Errors[0].Message)
	}
	return resp
}
