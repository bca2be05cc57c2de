package transport

import (
	"context"
	"net/http"
)

// Kind is what a request to the GraphQL endpoint asks for. It is decided once, at the
// edge, by Classify; middleware and transports read it with KindOf instead of looking at
// headers again.
type Kind uint8

const (
	// HTTP is a request answered with one response: GET and POST per the
	// GraphQL-over-HTTP spec, and anything else, which is refused.
	HTTP Kind = iota
	// EventStream is graphql-sse's distinct connections mode: a POST with an
	// application/json body whose Accept names text/event-stream.
	EventStream
	// Websocket is an upgrade (any Upgrade header): graphql-transport-ws or graphql-ws.
	Websocket
)

// Streaming reports whether requests of kind k last as long as their subscription.
func (k Kind) Streaming() bool { return k != HTTP }

func (k Kind) String() string {
	switch k {
	case EventStream:
		return "event-stream"
	case Websocket:
		return "websocket"
	default:
		return "http"
	}
}

type kindKey struct{}

// Classify stores the request's Kind in its context for KindOf. A request already
// classified keeps its Kind.
func Classify(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, ok := r.Context().Value(kindKey{}).(Kind); ok {
			next.ServeHTTP(w, r)
			return
		}
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), kindKey{}, classify(r))))
	})
}

// KindOf returns the Kind Classify stored in ctx; HTTP when there is none.
func KindOf(ctx context.Context) Kind {
	k, _ := ctx.Value(kindKey{}).(Kind)
	return k
}

// classify decides a request's Kind. A POST whose body the HTTP transport would refuse
// (unsupportedContentType) is HTTP, which answers 415, whatever it accepts.
func classify(r *http.Request) Kind {
	switch {
	case r.Header.Get("Upgrade") != "":
		return Websocket
	case r.Method == http.MethodPost && unsupportedContentType(r.Header) == "" &&
		parseAccept(r.Header.Values("Accept")).allowsExactly(mediaEventStream):
		return EventStream
	default:
		return HTTP
	}
}
