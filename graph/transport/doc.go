// Package transport carries GraphQL requests to and from gqlgen's executor: GET and
// POST per the GraphQL-over-HTTP specification, graphql-sse's distinct connections mode,
// and websockets (graphql-transport-ws and the legacy graphql-ws). Package graph, which
// owns the schema and the resolvers, builds the executor and hands it to New; the
// transports are configuration around it, as in gqlgen's examples.
//
// The seam between the two is small: a request's Kind, decided once at the edge
// (Classify) and read by every transport and middleware; the request id and the
// credential expiry the HTTP middleware puts in the context; and, for subscription
// resolvers, PushTargetFrom (a websocket operation to attach a stream to),
// AbandonStream (cut an SSE stream so its client subscribes again) and
// OpenSubscriptions (a websocket's count of open subscriptions, for its limit).
//
// Two parts are Parley's own rather than gqlgen's, for reasons measured:
//
//   - The websocket transport (websocket.go). gqlgen's holds five goroutines for a
//     websocket with one subscription, each with its own stack: 67 KiB of memory per
//     idle subscription as measured (docs/realtime.md, make bench-realtime), against
//     about 23 KiB here, where a connection holds one goroutine and an idle
//     subscription none. It also bounds each write by a deadline and ends
//     every connection with 1001 "going away" on shutdown, which gqlgen's does not.
//   - The HTTP transport's writer for data-only responses (data.go). gqlgen writes every
//     response with json.Marshal, which re-validates and re-compacts the data it has just
//     written: a quarter of the CPU of reading a page of history (bench/report.md).
//     appendData writes the same bytes in one pass, and copies without a pass the
//     pieces resolvers wrote in their final form (Final: a page of history).
//
// The HTTP transport (http.go) decides each answer's status and media type before it
// writes, as the specification asks, where gqlgen's GET and POST transports do not.
package transport
