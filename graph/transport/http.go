package transport

// This file is the transport for GET and POST. It follows the GraphQL-over-HTTP
// specification (https://graphql.github.io/graphql-over-http/draft/) where gqlgen's GET
// and POST transports, which it replaces, do not:
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
// Everything else is as gqlgen's transports have it, message for message: reading the
// parameters, the errors about them, and the response of an executed operation, which
// data.go writes.

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"reflect"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/99designs/gqlgen/graphql"
	gojson "github.com/goccy/go-json"
	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/gqlerror"
)

// The media types the endpoint speaks.
const (
	mediaJSON            = "application/json"
	mediaGraphQLResponse = "application/graphql-response+json"
	mediaEventStream     = "text/event-stream"
)

// httpTransport serves the requests of Kind HTTP: GET and POST, and refuses the others.
type httpTransport struct{}

var _ graphql.Transport = httpTransport{}

// Supports implements graphql.Transport.
func (httpTransport) Supports(r *http.Request) bool { return KindOf(r.Context()) == HTTP }

// Do implements graphql.Transport: it checks the request, reads its parameters, and
// answers with the status and media type the spec gives the outcome.
func (httpTransport) Do(w http.ResponseWriter, r *http.Request, exec graphql.GraphExecutor) {
	w.Header().Add("Vary", "Accept")
	if r.Method != http.MethodGet && r.Method != http.MethodPost {
		w.Header().Set("Allow", "GET, POST")
		WriteError(w, r, http.StatusMethodNotAllowed, "METHOD_NOT_ALLOWED",
			fmt.Sprintf("%s is not supported here: send GraphQL requests with GET (queries only) or POST", r.Method))
		return
	}
	if r.Method == http.MethodPost {
		if msg := unsupportedContentType(r.Header); msg != "" {
			WriteError(w, r, http.StatusUnsupportedMediaType, "UNSUPPORTED_MEDIA_TYPE", msg)
			return
		}
	}
	media, ok := parseAccept(r.Header.Values("Accept")).negotiate()
	if !ok {
		WriteError(w, r, http.StatusNotAcceptable, "NOT_ACCEPTABLE",
			fmt.Sprintf("none of the accepted media types (%s) is one this endpoint sends: accept %s or %s",
				strings.Join(r.Header.Values("Accept"), ", "), mediaGraphQLResponse, mediaJSON))
		return
	}
	var query url.Values
	if r.Method == http.MethodGet {
		var err error
		if query, err = url.ParseQuery(r.URL.RawQuery); err != nil {
			WriteError(w, r, http.StatusBadRequest, "BAD_REQUEST", "the query string does not parse: "+err.Error())
			return
		}
	}
	w.Header().Set("Content-Type", media)

	ctx := r.Context()
	params := &graphql.RawParams{Headers: r.Header}
	params.ReadTime.Start = graphql.Now()
	if r.Method == http.MethodGet {
		// gqlgen's GET: its messages, which are not presented as errors.
		params.Query, params.OperationName = query.Get("query"), query.Get("operationName")
		if v := query.Get("variables"); v != "" && jsonDecode([]byte(v), &params.Variables) != nil {
			writeRequestError(w, http.StatusBadRequest, &graphql.Response{Errors: gqlerror.List{{Message: "variables could not be decoded"}}})
			return
		}
		if v := query.Get("extensions"); v != "" && jsonDecode([]byte(v), &params.Extensions) != nil {
			writeRequestError(w, http.StatusBadRequest, &graphql.Response{Errors: gqlerror.List{{Message: "extensions could not be decoded"}}})
			return
		}
	} else {
		// gqlgen's POST: its messages, presented.
		body, err := io.ReadAll(r.Body)
		if err != nil {
			status := http.StatusBadRequest
			if tooLarge := (*http.MaxBytesError)(nil); errors.As(err, &tooLarge) {
				status = http.StatusRequestEntityTooLarge
			}
			writeRequestError(w, status, exec.DispatchError(ctx, gqlerror.List{gqlerror.Errorf("could not read request body: %+v", err)}))
			return
		}
		if err := jsonDecode(body, params); err != nil {
			// The decoder's message says what and where; the body itself is not echoed
			// back, which would send a megabyte of error for a megabyte of garbage.
			writeRequestError(w, http.StatusBadRequest, exec.DispatchError(ctx, gqlerror.List{
				gqlerror.Errorf("the JSON request body (%d bytes) could not be decoded: %s", len(body), truncate(err.Error(), 200))}))
			return
		}
	}
	params.ReadTime.End = graphql.Now()

	// Without a query there is nothing to run, unless a persisted query's hash stands for
	// it (AutomaticPersistedQuery fills the query in from the hash, or answers that it
	// does not know it).
	missing := params.Query == "" && params.Extensions["persistedQuery"] == nil
	rc, errs := exec.CreateOperationContext(ctx, params)
	status, allow := http.StatusOK, ""
	switch {
	case missing:
		status = http.StatusBadRequest
		errs = gqlerror.List{codedError("BAD_REQUEST", `the request has no query: send the GraphQL document in the "query" parameter`)}
	case r.Method == http.MethodGet && validated(rc) && rc.Operation.Operation != ast.Query:
		// GET must be safe. This comes before any other verdict on a valid operation.
		status, allow = http.StatusMethodNotAllowed, http.MethodPost
		errs = gqlerror.List{codedError("METHOD_NOT_ALLOWED", fmt.Sprintf("a %s cannot be sent with GET: use POST", rc.Operation.Operation))}
	case errs != nil && media == mediaGraphQLResponse:
		status = http.StatusBadRequest
	}
	if errs != nil {
		if allow != "" {
			w.Header().Set("Allow", allow)
		}
		writeRequestError(w, status, exec.DispatchError(graphql.WithOperationContext(ctx, rc), errs))
		return
	}
	ctx, final := withFinal(ctx)
	responses, ctx := exec.DispatchOperation(ctx, rc)
	writeResponse(w, responses(ctx), final)
}

// validated reports whether rc's document parsed and validated, with its variables:
// only the extensions' checks may have failed since.
func validated(rc *graphql.OperationContext) bool {
	return rc != nil && rc.Operation != nil && !rc.Stats.Validation.End.IsZero()
}

// writeRequestError answers a request that was not executed: its errors (and
// extensions) and no "data" entry, which would claim execution began.
func writeRequestError(w http.ResponseWriter, status int, resp *graphql.Response) {
	body, err := json.Marshal(struct {
		Errors     gqlerror.List  `json:"errors"`
		Extensions map[string]any `json:"extensions,omitempty"`
	}{resp.Errors, resp.Extensions})
	if err != nil {
		panic(fmt.Errorf("marshal a request error: %w", err))
	}
	w.WriteHeader(status)
	w.Write(body)
}

// jsonDecode decodes the first JSON value of data into v (a pointer) as gqlgen does,
// with encoding/json and numbers as json.Number. goccy/go-json decodes it to the same
// value, in about a third of the time: a history read's request is mostly its query of
// some 2 KB, whose decoding was 3.5% of the read's CPU at one client (issue 15 §6;
// http_test.go holds the two to the same values). A request goccy cannot decode is
// decoded again by encoding/json, whose error the response quotes.
func jsonDecode(data []byte, v any) error {
	fast := gojson.NewDecoder(bytes.NewReader(data))
	fast.UseNumber()
	if fast.Decode(v) == nil {
		return nil
	}
	reflect.ValueOf(v).Elem().SetZero()
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	return dec.Decode(v)
}

func codedError(code, msg string) *gqlerror.Error {
	return &gqlerror.Error{Message: msg, Extensions: map[string]any{"code": code}}
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

// truncate cuts s to at most n bytes, at a rune boundary, marking the cut.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "..."
}
