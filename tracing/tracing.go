// Package tracing is Parley's optional OpenTelemetry tracing: a span for each GraphQL
// operation (and each event a subscription delivers), continuing the caller's trace when
// the request carries a W3C traceparent header, and, in package db, a span for each
// database transaction inside it. It is off unless an OTLP endpoint is configured in the
// standard environment variables; then spans are exported over OTLP/HTTP.
package tracing

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/99designs/gqlgen/graphql"
	"github.com/vektah/gqlparser/v2/ast"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.26.0"
	"go.opentelemetry.io/otel/trace"
)

// Name is the instrumentation scope of Parley's spans.
const Name = "github.com/parley-dev/parley"

// Enabled reports whether the environment (as getenv reads it) asks for tracing: an
// OTLP endpoint is set (OTEL_EXPORTER_OTLP_TRACES_ENDPOINT or
// OTEL_EXPORTER_OTLP_ENDPOINT), OTEL_TRACES_EXPORTER is not "none" and
// OTEL_SDK_DISABLED is not "true".
func Enabled(getenv func(string) string) bool {
	if strings.EqualFold(getenv("OTEL_SDK_DISABLED"), "true") || strings.EqualFold(getenv("OTEL_TRACES_EXPORTER"), "none") {
		return false
	}
	return getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") != "" || getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != ""
}

// FromEnv returns a tracer provider exporting over OTLP/HTTP as the standard
// OTEL_EXPORTER_OTLP_* variables say (endpoint, headers, timeout...), sampling as
// OTEL_TRACES_SAMPLER says, with the service named by OTEL_SERVICE_NAME (default
// "parley") and version, and a function that flushes and stops it. Without an endpoint
// (see Enabled) it returns nil and a no-op: nothing is traced.
func FromEnv(ctx context.Context, version string) (trace.TracerProvider, func(context.Context) error, error) {
	if !Enabled(os.Getenv) {
		return nil, func(context.Context) error { return nil }, nil
	}
	exp, err := otlptracehttp.New(ctx)
	if err != nil {
		return nil, nil, fmt.Errorf("tracing: OTLP exporter: %w", err)
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
		opts := []trace.SpanStartOption{trace.WithSpanKind(trace.SpanKindServer), trace.WithAttributes(attrs...)}
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
