package graph

// This file makes the GraphQL endpoint follow the GraphQL-over-HTTP specification
// (https://graphql.github.io/graphql-over-http/draft/) where gqlgen's GET and POST
// transports don't, and gqlgen has no option to make them:
//
//   - Any method but GET and POST gets 405 with Allow (gqlgen: 400 "transport not
//     supported"), and so does a mutation sent with GET, with Allow: POST (gqlgen: 406).
//   - A POST whose Content-Type is missing, not application/json, not UTF-8 or
//     content-encoded gets 415 (gqlgen: 400 "transport not supported").
//   - Accept is negotiated by its q-values and wildcards; when it allows neither
//     application/graphql-response+json nor application/json the answer is 406 (gqlgen
//     takes the first type it knows in list order, ignoring q, and falls back to
//     application/graphql-response+json whatever the client asked for).
//   - A request without a query is not well-formed: 400 (gqlgen parses "" and reports
//     "no operation provided" as a validation error).
//   - Request errors (the document does not parse or validate, variables do not
//     coerce) get 200 under application/json (gqlgen: 422) and 400 under
//     application/graphql-response+json, and their body has no "data" entry (gqlgen
//     always writes "data": null, which claims execution started).
//   - A body over the size limit gets 413 (gqlgen: 200 with an error).
//
// The work is split between an http.Handler around the gqlgen server, which checks what
// can be checked before gqlgen runs and fixes the status and body of request errors
// afterwards, and a gqlgen extension (specExtension) that reports, from inside gqlgen,
// what only gqlgen knows: whether the operation was executed at all, whether the query
// was missing, and which kind of operation a GET asks for. The two share a specState
// carried in the request's context. Websocket upgrades and streams (a POST that accepts
// text/event-stream, for the SSE transport) go through untouched.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/99designs/gqlgen/graphql"
	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/gqlerror"
)

// The media types the endpoint speaks.
const (
	mediaJSON            = "application/json"
	mediaGraphQLResponse = "application/graphql-response+json"
	mediaEventStream     = "text/event-stream"
)

// specState is what the HTTP layer and the gqlgen extension learn about one request.
// Both run on the request's goroutine (gqlgen's GET and POST transports execute
// synchronously), so it needs no lock.
type specState struct {
	method string
	// executed is set when gqlgen dispatches the operation: the response is an
	// execution result, whose status and body gqlgen gets right. Otherwise it is a
	// request error.
	executed bool
	// status, when set, is the status the extension decided for a request error, and
	// allow the Allow header to send with a 405.
	status int
	allow  string
	// bodyErr is the first error reading the request body (too large, say).
	bodyErr error
}

// specStateKey carries the *specState in a request's context.
type specStateKey struct{}

func specStateFrom(ctx context.Context) *specState {
	st, _ := ctx.Value(specStateKey{}).(*specState)
	return st
}

// withHTTPSpec wraps the gqlgen server next, serving one GraphQL endpoint, so that it
// follows the GraphQL-over-HTTP spec (see the top of this file). The server must use
// specExtension.
func withHTTPSpec(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Upgrade") != "" { // a websocket: gqlgen's websocket transport
			next.ServeHTTP(w, r)
			return
		}
		w.Header().Add("Vary", "Accept")
		if r.Method != http.MethodGet && r.Method != http.MethodPost {
			w.Header().Set("Allow", "GET, POST")
			writeHTTPError(w, r, http.StatusMethodNotAllowed, "METHOD_NOT_ALLOWED",
				fmt.Sprintf("%s is not supported here: send GraphQL requests with GET (queries only) or POST", r.Method))
			return
		}
		accept := parseAccept(r.Header.Values("Accept"))
		if r.Method == http.MethodPost {
			if msg := unsupportedContentType(r.Header); msg != "" {
				writeHTTPError(w, r, http.StatusUnsupportedMediaType, "UNSUPPORTED_MEDIA_TYPE", msg)
				return
			}
			if accept.allowsExactly(mediaEventStream) { // gqlgen's SSE transport
				next.ServeHTTP(w, r)
				return
			}
		}
		media, ok := accept.negotiate()
		if !ok {
			writeHTTPError(w, r, http.StatusNotAcceptable, "NOT_ACCEPTABLE",
				fmt.Sprintf("none of the accepted media types (%s) is one this endpoint sends: accept %s or %s",
					strings.Join(r.Header.Values("Accept"), ", "), mediaGraphQLResponse, mediaJSON))
			return
		}
		if r.Method == http.MethodGet {
			// gqlgen answers a broken query string without a Content-Type.
			if _, err := url.ParseQuery(r.URL.RawQuery); err != nil {
				writeHTTPError(w, r, http.StatusBadRequest, "BAD_REQUEST", "the query string does not parse: "+err.Error())
				return
			}
		}

		st := &specState{method: r.Method}
		r = r.Clone(context.WithValue(r.Context(), specStateKey{}, st))
		// gqlgen's transports pick the media type from Accept by list order; leave them
		// only the one negotiated here.
		r.Header.Set("Accept", media)
		if r.Body != nil && r.Body != http.NoBody {
			r.Body = &recordingBody{ReadCloser: r.Body, st: st}
		}
		sw := &specWriter{ResponseWriter: w, st: st, media: media}
		next.ServeHTTP(sw, r)
		sw.finish()
	})
}

// unsupportedContentType says why a POST's body is not one the endpoint reads, or "".
// The spec requires application/json and UTF-8 (assumed when no charset is given).
func unsupportedContentType(h http.Header) string {
	ct := h.Get("Content-Type")
	if ct == "" {
		return "a POST needs Content-Type: " + mediaJSON
	}
	mt, params, err := mime.ParseMediaType(ct)
	if err != nil || mt != mediaJSON {
		return fmt.Sprintf("Content-Type %q is not supported: send %s", ct, mediaJSON)
	}
	if cs, ok := params["charset"]; ok && !strings.EqualFold(cs, "utf-8") {
		return fmt.Sprintf("charset %q is not supported: send UTF-8", cs)
	}
	if ce := h.Get("Content-Encoding"); ce != "" && !strings.EqualFold(ce, "identity") {
		return fmt.Sprintf("Content-Encoding %q is not supported: send the body unencoded", ce)
	}
	return ""
}

// mediaRange is one element of an Accept header.
type mediaRange struct {
	typ, sub string // "*" for a wildcard
	q        float64
}

// acceptHeader is a parsed Accept header; empty when the request has none.
type acceptHeader struct {
	ranges  []mediaRange
	present bool
}

// parseAccept parses the Accept header lines. Elements that do not parse, or whose q is
// not a number from 0 to 1, are ignored.
func parseAccept(values []string) acceptHeader {
	var a acceptHeader
	for _, v := range values {
		for part := range strings.SplitSeq(v, ",") {
			part = strings.TrimSpace(part)
			if part == "" {
				continue
			}
			a.present = true
			mt, params, err := mime.ParseMediaType(part)
			if err != nil {
				continue
			}
			if mt == "*" { // old clients (Java's URLConnection) send a bare *
				mt = "*/*"
			}
			typ, sub, ok := strings.Cut(mt, "/")
			if !ok || typ == "" || sub == "" || (typ == "*" && sub != "*") {
				continue
			}
			q := 1.0
			if s, ok := params["q"]; ok {
				if q, err = strconv.ParseFloat(s, 64); err != nil || q < 0 || q > 1 {
					continue
				}
			}
			a.ranges = append(a.ranges, mediaRange{typ: typ, sub: sub, q: q})
		}
	}
	return a
}

// quality returns the q the client gives media (type/subtype), taken from the most
// specific range matching it (RFC 9110, 12.5.1), that range's specificity (3 exact,
// 2 type/*, 1 */*, 0 no match) and its position in the header, for breaking ties.
func (a acceptHeader) quality(media string) (q float64, specificity, pos int) {
	typ, sub, _ := strings.Cut(media, "/")
	for i, r := range a.ranges {
		s := 0
		switch {
		case r.typ == typ && r.sub == sub:
			s = 3
		case r.typ == typ && r.sub == "*":
			s = 2
		case r.typ == "*":
			s = 1
		}
		if s > specificity {
			q, specificity, pos = r.q, s, i
		}
	}
	return q, specificity, pos
}

// allowsExactly reports whether the client names media itself, with a q above 0
// (wildcards do not ask for a stream).
func (a acceptHeader) allowsExactly(media string) bool {
	q, specificity, _ := a.quality(media)
	return specificity == 3 && q > 0
}

// negotiate picks the response's media type: the acceptable one with the highest q;
// on a tie the one named more specifically, then the one named first. Without an
// Accept header, or when only a wildcard matches both, it is application/json, as the
// spec recommends while clients move to application/graphql-response+json. It reports
// false when neither is acceptable.
func (a acceptHeader) negotiate() (string, bool) {
	if !a.present {
		return mediaJSON, true
	}
	gq, gs, gp := a.quality(mediaGraphQLResponse)
	jq, js, jp := a.quality(mediaJSON)
	switch {
	case gq == 0 && jq == 0:
		return "", false
	case gq != jq:
		return pick(gq > jq), true
	case gs != js:
		return pick(gs > js), true
	default:
		return pick(gp < jp), true
	}
}

func pick(graphQLResponse bool) string {
	if graphQLResponse {
		return mediaGraphQLResponse
	}
	return mediaJSON
}

// recordingBody remembers the first error reading a request body into st.
type recordingBody struct {
	io.ReadCloser
	st *specState
}

func (b *recordingBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err != nil && err != io.EOF && b.st.bodyErr == nil {
		b.st.bodyErr = err
	}
	return n, err
}

// specWriter passes an execution result through as gqlgen writes it, and holds back a
// request error until the handler returns, so that finish can set its status and drop
// its "data" entry. Request errors are small; results, which may be large, are never
// buffered.
type specWriter struct {
	http.ResponseWriter
	st     *specState
	media  string
	status int           // the status gqlgen wrote
	held   *bytes.Buffer // the request error's body, when held back
	wrote  bool
}

func (w *specWriter) WriteHeader(code int) {
	if w.wrote {
		return
	}
	w.wrote, w.status = true, code
	if w.st.executed && w.st.bodyErr == nil {
		w.ResponseWriter.WriteHeader(code)
		return
	}
	w.held = new(bytes.Buffer)
}

func (w *specWriter) Write(p []byte) (int, error) {
	if !w.wrote {
		w.WriteHeader(http.StatusOK)
	}
	if w.held != nil {
		return w.held.Write(p)
	}
	return w.ResponseWriter.Write(p)
}

// Flush passes through for results; a held request error is written by finish.
func (w *specWriter) Flush() {
	if w.held != nil {
		return
	}
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Unwrap lets http.ResponseController reach the connection's writer.
func (w *specWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// finish writes a held request error with its status per the spec and without "data".
func (w *specWriter) finish() {
	if w.held == nil {
		return
	}
	h := w.ResponseWriter.Header()
	if w.st.allow != "" {
		h.Set("Allow", w.st.allow)
	}
	h.Del("Content-Length")
	w.ResponseWriter.WriteHeader(w.requestErrorStatus())
	w.ResponseWriter.Write(withoutData(w.held.Bytes()))
}

// requestErrorStatus is the status of a response that is not an execution result.
func (w *specWriter) requestErrorStatus() int {
	var tooLarge *http.MaxBytesError
	switch {
	case errors.As(w.st.bodyErr, &tooLarge):
		return http.StatusRequestEntityTooLarge
	case w.st.bodyErr != nil:
		return http.StatusBadRequest
	case w.st.status != 0:
		return w.st.status
	case w.media == mediaJSON && w.status == http.StatusUnprocessableEntity:
		// gqlgen's 422 means a well-formed request whose document failed to parse or
		// validate, or whose variables failed to coerce: under application/json the
		// spec wants 200 for every well-formed request. gqlgen's 400s (body or
		// variables not JSON, parameters of the wrong type) are not well-formed: 400.
		return http.StatusOK
	case w.media == mediaGraphQLResponse && w.status < http.StatusBadRequest:
		// A request error of a kind gqlgen gives 200 (an extension's, such as an
		// unknown persisted query). Without "data" it needs a 4xx.
		return http.StatusBadRequest
	default:
		return w.status
	}
}

// withoutData drops a null "data" entry from a JSON response body: a request error was
// raised before execution began, so the response must not claim it started. Anything
// else comes back unchanged.
func withoutData(body []byte) []byte {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(body, &m); err != nil {
		return body
	}
	if d, ok := m["data"]; !ok || string(d) != "null" {
		return body
	}
	delete(m, "data")
	out, err := json.Marshal(m)
	if err != nil {
		return body
	}
	return out
}

// writeHTTPError answers a request the endpoint turns away before gqlgen sees it, in
// the shape of a GraphQL response with the error presenter's extensions.
func writeHTTPError(w http.ResponseWriter, r *http.Request, status int, code, msg string) {
	ext := map[string]any{"code": code}
	if id := RequestID(r.Context()); id != "" {
		ext["requestId"] = id
	}
	body, err := json.Marshal(struct {
		Errors gqlerror.List `json:"errors"`
	}{gqlerror.List{{Message: msg, Extensions: ext}}})
	if err != nil {
		panic(err) // a struct of strings always marshals
	}
	w.Header().Set("Content-Type", mediaJSON)
	w.WriteHeader(status)
	w.Write(body)
}

// specExtension is the part of the GraphQL-over-HTTP layer that lives inside gqlgen:
// it tells withHTTPSpec what only gqlgen knows. Add it after any extension that fills
// the query in (AutomaticPersistedQuery), or a persisted query would count as missing.
type specExtension struct{}

var _ interface {
	graphql.HandlerExtension
	graphql.OperationParameterMutator
	graphql.OperationContextMutator
	graphql.OperationInterceptor
} = specExtension{}

func (specExtension) ExtensionName() string                   { return "GraphQLOverHTTP" }
func (specExtension) Validate(graphql.ExecutableSchema) error { return nil }

// MutateOperationParameters rejects a request without a query as not well-formed.
func (specExtension) MutateOperationParameters(ctx context.Context, p *graphql.RawParams) *gqlerror.Error {
	st := specStateFrom(ctx)
	if st == nil || p.Query != "" {
		return nil
	}
	st.status = http.StatusBadRequest
	return codedError("BAD_REQUEST", `the request has no query: send the GraphQL document in the "query" parameter`)
}

// MutateOperationContext refuses anything but a query over GET: GET must be safe.
func (specExtension) MutateOperationContext(ctx context.Context, op *graphql.OperationContext) *gqlerror.Error {
	st := specStateFrom(ctx)
	if st == nil || st.method != http.MethodGet || op.Operation == nil || op.Operation.Operation == ast.Query {
		return nil
	}
	st.status, st.allow = http.StatusMethodNotAllowed, http.MethodPost
	return codedError("METHOD_NOT_ALLOWED", fmt.Sprintf("a %s cannot be sent with GET: use POST", op.Operation.Operation))
}

// InterceptOperation records that the operation is being executed.
func (specExtension) InterceptOperation(ctx context.Context, next graphql.OperationHandler) graphql.ResponseHandler {
	if st := specStateFrom(ctx); st != nil {
		st.executed = true
	}
	return next(ctx)
}

func codedError(code, msg string) *gqlerror.Error {
	return &gqlerror.Error{Message: msg, Extensions: map[string]any{"code": code}}
}
