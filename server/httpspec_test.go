package server_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/coder/websocket/wsjson"

	"github.com/parley-dev/parley/internal/testserver"
	"github.com/parley-dev/parley/server"
)

// The media types of the GraphQL-over-HTTP spec.
const (
	mediaJSON = "application/json"
	mediaGQL  = "application/graphql-response+json"
)

// httpReply is what the endpoint answered, as the spec's tests look at it.
type httpReply struct {
	status      int
	contentType string
	allow       string
	vary        []string
	body        map[string]json.RawMessage // nil when the body is not a JSON object
	raw         string
}

// hasData reports whether the body has a "data" entry (even null).
func (r httpReply) hasData() bool { _, ok := r.body["data"]; return ok }

// errorCode is the extensions.code of the first error, or "".
func (r httpReply) errorCode() string {
	var errs []struct {
		Extensions struct{ Code string } `json:"extensions"`
	}
	if json.Unmarshal(r.body["errors"], &errs) != nil || len(errs) == 0 {
		return ""
	}
	return errs[0].Extensions.Code
}

// send makes one request to the GraphQL endpoint; headers are set only when not "".
func send(t *testing.T, base, method, query, contentType, accept string, extra http.Header, body string) httpReply {
	t.Helper()
	u := base + "/graphql"
	if query != "" {
		u += "?" + query
	}
	req, err := http.NewRequest(method, u, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	if accept != "" {
		req.Header.Set("Accept", accept)
	}
	for k, vs := range extra {
		req.Header[k] = vs
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, u, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("read response: %v", err)
	}
	r := httpReply{
		status: resp.StatusCode, contentType: resp.Header.Get("Content-Type"),
		allow: resp.Header.Get("Allow"), vary: resp.Header.Values("Vary"), raw: string(raw),
	}
	if json.Unmarshal(raw, &r.body) != nil {
		r.body = nil
	}
	return r
}

// getQuery is the query string of a GET request for a GraphQL document.
func getQuery(doc string) string { return url.Values{"query": {doc}}.Encode() }

// TestGraphQLOverHTTP checks the endpoint against the GraphQL-over-HTTP spec: content
// negotiation, the status for each kind of request error under each media type, and
// that a request error's body has no "data" entry while an execution result does.
func TestGraphQLOverHTTP(t *testing.T) {
	t.Parallel()
	srv := testserver.New(t)
	const typename = `{"query":"{ __typename }"}`
	graphiQL := "application/graphql-response+json, application/json, multipart/mixed"

	tests := []struct {
		name        string
		method      string
		query       string // URL query string
		contentType string
		accept      string
		header      http.Header
		body        string
		wantStatus  int
		wantType    string // response media type; "" to skip
		wantData    bool   // the body has a "data" entry
		wantCode    string // extensions.code of the first error; "" for no check
		wantAllow   string
	}{
		// Content negotiation.
		{name: "accept graphql-response+json", method: "POST", contentType: mediaJSON, accept: mediaGQL, body: typename,
			wantStatus: 200, wantType: mediaGQL, wantData: true},
		{name: "accept json", method: "POST", contentType: mediaJSON, accept: mediaJSON, body: typename,
			wantStatus: 200, wantType: mediaJSON, wantData: true},
		{name: "no accept means json", method: "POST", contentType: mediaJSON, body: typename,
			wantStatus: 200, wantType: mediaJSON, wantData: true},
		{name: "any type means json", method: "POST", contentType: mediaJSON, accept: "*/*", body: typename,
			wantStatus: 200, wantType: mediaJSON, wantData: true},
		{name: "application wildcard means json", method: "POST", contentType: mediaJSON, accept: "application/*", body: typename,
			wantStatus: 200, wantType: mediaJSON, wantData: true},
		{name: "GraphiQL's accept", method: "POST", contentType: mediaJSON, accept: graphiQL, body: typename,
			wantStatus: 200, wantType: mediaGQL, wantData: true},
		{name: "q-values win over list order", method: "POST", contentType: mediaJSON,
			accept: "application/graphql-response+json;q=0.5, application/json", body: typename,
			wantStatus: 200, wantType: mediaJSON, wantData: true},
		{name: "named beats wildcard", method: "POST", contentType: mediaJSON, accept: "*/*, application/graphql-response+json", body: typename,
			wantStatus: 200, wantType: mediaGQL, wantData: true},
		{name: "first named wins a tie", method: "POST", contentType: mediaJSON, accept: "application/json, application/graphql-response+json", body: typename,
			wantStatus: 200, wantType: mediaJSON, wantData: true},
		{name: "utf-8 charset", method: "POST", contentType: "application/json; charset=UTF-8", accept: mediaGQL, body: typename,
			wantStatus: 200, wantType: mediaGQL, wantData: true},
		{name: "unacceptable type", method: "POST", contentType: mediaJSON, accept: "text/html", body: typename,
			wantStatus: 406, wantCode: "NOT_ACCEPTABLE"},
		{name: "both refused with q=0", method: "POST", contentType: mediaJSON,
			accept: "application/json;q=0, application/graphql-response+json;q=0, text/html", body: typename,
			wantStatus: 406, wantCode: "NOT_ACCEPTABLE"},
		{name: "unacceptable type on GET", method: "GET", query: getQuery("{ __typename }"), accept: "text/plain",
			wantStatus: 406, wantCode: "NOT_ACCEPTABLE"},

		// Methods and request media types.
		{name: "PUT", method: "PUT", contentType: mediaJSON, body: typename,
			wantStatus: 405, wantAllow: "GET, POST", wantCode: "METHOD_NOT_ALLOWED"},
		{name: "no content type", method: "POST", body: typename,
			wantStatus: 415, wantCode: "UNSUPPORTED_MEDIA_TYPE"},
		{name: "text/plain body", method: "POST", contentType: "text/plain", body: typename,
			wantStatus: 415, wantCode: "UNSUPPORTED_MEDIA_TYPE"},
		{name: "form body", method: "POST", contentType: "application/x-www-form-urlencoded", body: "query=%7B__typename%7D",
			wantStatus: 415, wantCode: "UNSUPPORTED_MEDIA_TYPE"},
		{name: "latin-1 charset", method: "POST", contentType: "application/json; charset=iso-8859-1", body: typename,
			wantStatus: 415, wantCode: "UNSUPPORTED_MEDIA_TYPE"},
		{name: "gzipped body", method: "POST", contentType: mediaJSON, header: http.Header{"Content-Encoding": {"gzip"}}, body: typename,
			wantStatus: 415, wantCode: "UNSUPPORTED_MEDIA_TYPE"},

		// GET.
		{name: "GET query", method: "GET", query: getQuery("{ __typename }"), accept: mediaGQL,
			wantStatus: 200, wantType: mediaGQL, wantData: true},
		{name: "GET mutation", method: "GET", query: getQuery(`mutation { createConversation(title: "x") { id } }`), accept: mediaGQL,
			wantStatus: 405, wantType: mediaGQL, wantAllow: "POST", wantCode: "METHOD_NOT_ALLOWED"},
		{name: "GET mutation as json", method: "GET", query: getQuery(`mutation { createConversation(title: "x") { id } }`), accept: mediaJSON,
			wantStatus: 405, wantType: mediaJSON, wantAllow: "POST", wantCode: "METHOD_NOT_ALLOWED"},
		{name: "GET without query", method: "GET", accept: mediaJSON,
			wantStatus: 400, wantType: mediaJSON, wantCode: "BAD_REQUEST"},
		{name: "GET broken query string", method: "GET", query: "query=%zz", accept: mediaJSON,
			wantStatus: 400, wantType: mediaJSON, wantCode: "BAD_REQUEST"},
		{name: "GET variables not JSON", method: "GET", query: getQuery("{ __typename }") + "&variables=%7B", accept: mediaGQL,
			wantStatus: 400, wantType: mediaGQL},

		// Requests that are not well-formed: 400 whatever the media type.
		{name: "body not JSON, json", method: "POST", contentType: mediaJSON, accept: mediaJSON, body: `{ "not a JSON`,
			wantStatus: 400, wantType: mediaJSON},
		{name: "body not JSON, graphql-response+json", method: "POST", contentType: mediaJSON, accept: mediaGQL, body: `{ "not a JSON`,
			wantStatus: 400, wantType: mediaGQL},
		{name: "no body", method: "POST", contentType: mediaJSON, accept: mediaJSON,
			wantStatus: 400, wantType: mediaJSON},
		{name: "query not a string", method: "POST", contentType: mediaJSON, accept: mediaJSON, body: `{"query":{"obj":"ect"}}`,
			wantStatus: 400, wantType: mediaJSON},
		{name: "variables not a map", method: "POST", contentType: mediaJSON, accept: mediaJSON, body: `{"query":"{ __typename }","variables":"x"}`,
			wantStatus: 400, wantType: mediaJSON},
		{name: "no query, json", method: "POST", contentType: mediaJSON, accept: mediaJSON, body: `{"qeury":"{ __typename }"}`,
			wantStatus: 400, wantType: mediaJSON, wantCode: "BAD_REQUEST"},
		{name: "no query, graphql-response+json", method: "POST", contentType: mediaJSON, accept: mediaGQL, body: `{"query":""}`,
			wantStatus: 400, wantType: mediaGQL, wantCode: "BAD_REQUEST"},

		// Request errors of well-formed requests: 200 under json, 400 under
		// graphql-response+json; never a "data" entry.
		{name: "parse error, json", method: "POST", contentType: mediaJSON, accept: mediaJSON, body: `{"query":"{"}`,
			wantStatus: 200, wantType: mediaJSON, wantCode: "GRAPHQL_PARSE_FAILED"},
		{name: "parse error, graphql-response+json", method: "POST", contentType: mediaJSON, accept: mediaGQL, body: `{"query":"{"}`,
			wantStatus: 400, wantType: mediaGQL, wantCode: "GRAPHQL_PARSE_FAILED"},
		{name: "validation error, json", method: "POST", contentType: mediaJSON, accept: mediaJSON, body: `{"query":"{ nope }"}`,
			wantStatus: 200, wantType: mediaJSON, wantCode: "GRAPHQL_VALIDATION_FAILED"},
		{name: "validation error, graphql-response+json", method: "POST", contentType: mediaJSON, accept: mediaGQL, body: `{"query":"{ nope }"}`,
			wantStatus: 400, wantType: mediaGQL, wantCode: "GRAPHQL_VALIDATION_FAILED"},
		{name: "variable coercion error, json", method: "POST", contentType: mediaJSON, accept: mediaJSON,
			body:       `{"query":"query($id: ID!) { conversation(id: $id) { id } }","variables":{"id":null}}`,
			wantStatus: 200, wantType: mediaJSON, wantCode: "GRAPHQL_VALIDATION_FAILED"},
		{name: "variable coercion error, graphql-response+json", method: "POST", contentType: mediaJSON, accept: mediaGQL,
			body:       `{"query":"query($id: ID!) { conversation(id: $id) { id } }","variables":{"id":null}}`,
			wantStatus: 400, wantType: mediaGQL, wantCode: "GRAPHQL_VALIDATION_FAILED"},
		{name: "unknown operation name", method: "POST", contentType: mediaJSON, accept: mediaGQL,
			body:       `{"query":"query A { __typename }","operationName":"B"}`,
			wantStatus: 400, wantType: mediaGQL, wantCode: "GRAPHQL_VALIDATION_FAILED"},
		{name: "unknown persisted query", method: "POST", contentType: mediaJSON, accept: mediaGQL,
			body:       `{"extensions":{"persistedQuery":{"version":1,"sha256Hash":"0000"}}}`,
			wantStatus: 400, wantType: mediaGQL, wantCode: "PERSISTED_QUERY_NOT_FOUND"},

		// Execution results keep their data, errors or not.
		{name: "field error keeps data", method: "POST", contentType: mediaJSON, accept: mediaGQL,
			body:       `{"query":"{ conversation(id: \"Q29udmVyc2F0aW9uOjA\") { id } }"}`,
			wantStatus: 200, wantType: mediaGQL, wantData: true, wantCode: "NOT_FOUND"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := send(t, srv.URL, tt.method, tt.query, tt.contentType, tt.accept, tt.header, tt.body)
			if got.status != tt.wantStatus {
				t.Errorf("status: got %d, want %d\nbody: %s", got.status, tt.wantStatus, got.raw)
			}
			if tt.wantType != "" && got.contentType != tt.wantType {
				t.Errorf("Content-Type: got %q, want %q", got.contentType, tt.wantType)
			}
			if got.body == nil {
				t.Fatalf("body is not a JSON object: %s", got.raw)
			}
			if got.hasData() != tt.wantData {
				t.Errorf("data entry: got %v, want %v\nbody: %s", got.hasData(), tt.wantData, got.raw)
			}
			if _, ok := got.body["errors"]; !tt.wantData && !ok {
				t.Errorf("no errors entry in a response without data: %s", got.raw)
			}
			if tt.wantCode != "" && got.errorCode() != tt.wantCode {
				t.Errorf("extensions.code: got %q, want %q\nbody: %s", got.errorCode(), tt.wantCode, got.raw)
			}
			if got.allow != tt.wantAllow {
				t.Errorf("Allow: got %q, want %q", got.allow, tt.wantAllow)
			}
			if !strings.Contains(strings.Join(got.vary, ","), "Accept") {
				t.Errorf("Vary: got %q, want it to name Accept", got.vary)
			}
		})
	}
}

// TestGraphQLOverHTTPBodyTooLarge checks that a body over the limit gets 413, not an
// error under 200.
func TestGraphQLOverHTTPBodyTooLarge(t *testing.T) {
	t.Parallel()
	srv := testserver.NewWith(t, testserver.Options{Configure: func(c *server.Config) {
		c.GraphQL.MaxBodyBytes = 1024
	}})
	big := `{"query":"{ __typename }","variables":{"pad":"` + strings.Repeat("x", 2048) + `"}}`
	for _, accept := range []string{mediaJSON, mediaGQL} {
		got := send(t, srv.URL, "POST", "", mediaJSON, accept, nil, big)
		if got.status != http.StatusRequestEntityTooLarge {
			t.Errorf("Accept %s: status: got %d, want 413\nbody: %s", accept, got.status, got.raw)
		}
		if got.hasData() {
			t.Errorf("Accept %s: data entry in a request error: %s", accept, got.raw)
		}
	}
	if got := send(t, srv.URL, "POST", "", mediaJSON, mediaGQL, nil, `{"query":"{ __typename }"}`); got.status != 200 {
		t.Errorf("small body: status: got %d, want 200\nbody: %s", got.status, got.raw)
	}
}

// TestGraphQLOverHTTPLeavesUpgradesAndStreams checks that the spec layer stays out of
// the way of what it does not handle: a websocket upgrade on the same path still speaks
// graphql-transport-ws, and a POST asking for text/event-stream reaches gqlgen's
// transports rather than being refused as not acceptable.
func TestGraphQLOverHTTPLeavesUpgradesAndStreams(t *testing.T) {
	t.Parallel()
	srv := testserver.New(t)

	t.Run("websocket", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		conn, resp, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(srv.URL, "http")+"/graphql",
			&websocket.DialOptions{Subprotocols: []string{"graphql-transport-ws"}})
		if err != nil {
			status := 0
			if resp != nil {
				status = resp.StatusCode
			}
			t.Fatalf("dial (HTTP %d): %v", status, err)
		}
		defer conn.CloseNow()
		if got := conn.Subprotocol(); got != "graphql-transport-ws" {
			t.Errorf("subprotocol: got %q, want graphql-transport-ws", got)
		}
		if err := wsjson.Write(ctx, conn, map[string]any{"type": "connection_init"}); err != nil {
			t.Fatalf("connection_init: %v", err)
		}
		var ack struct{ Type string }
		if err := wsjson.Read(ctx, conn, &ack); err != nil {
			t.Fatalf("read connection_ack: %v", err)
		}
		if ack.Type != "connection_ack" {
			t.Errorf("first message: got %q, want connection_ack", ack.Type)
		}
		conn.Close(websocket.StatusNormalClosure, "")
	})

	t.Run("event stream", func(t *testing.T) {
		got := send(t, srv.URL, "POST", "", mediaJSON, "text/event-stream", nil, `{"query":"{ __typename }"}`)
		if got.status != http.StatusOK {
			t.Errorf("status: got %d, want 200\nbody: %s", got.status, got.raw)
		}
		if !strings.Contains(got.raw, `"__typename":"Query"`) {
			t.Errorf("body: got %s, want the result of { __typename }", got.raw)
		}
	})
}
