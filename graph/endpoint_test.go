package graph

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"github.com/99designs/gqlgen/graphql"
	"github.com/99designs/gqlgen/graphql/handler"
	"github.com/99designs/gqlgen/graphql/handler/extension"
	"github.com/99designs/gqlgen/graphql/handler/lru"
	gqltransport "github.com/99designs/gqlgen/graphql/handler/transport"
	"github.com/vektah/gqlparser/v2/ast"

	"github.com/parley-dev/parley"
	"github.com/parley-dev/parley/graph/transport"
	"github.com/parley-dev/parley/internal/selection"
	"github.com/parley-dev/parley/render"
)

// postHandlers returns the same server with gqlgen's POST transport and with Parley's
// transports.
func postHandlers(msgs []parley.Message) (gqlgenPOST, ours http.Handler) {
	renderer := render.New(render.Config{})
	mk := func() *handler.Server {
		r := &Resolver{ConversationService: fakeConversations{msgs: msgs}, MessageService: fakeMessages{msgs: msgs}, Renderer: renderer}
		srv := handler.New(NewExecutableSchema(Config{Resolvers: r}))
		srv.SetQueryCache(lru.New[*ast.QueryDocument](100))
		srv.Use(extension.Introspection{})
		srv.Use(extension.AutomaticPersistedQuery{Cache: lru.New[string](100)})
		srv.AroundFields(writeMessagePages(renderer))
		return srv
	}
	plain := mk()
	plain.AddTransport(gqltransport.POST{})
	return plain, transport.New(mk(), transport.Config{MaxBodyBytes: 1 << 20})
}

// TestPostAnswersAsGqlgen sends the same requests to gqlgen's POST transport and to
// Parley's: an executed operation's status, headers and body must be gqlgen's, byte for
// byte, with Content-Length besides; a request error's are gqlgen's with the status the
// GraphQL-over-HTTP spec gives it and without "data", which gqlgen writes as null.
func TestPostAnswersAsGqlgen(t *testing.T) {
	t.Parallel()
	gqlgenPOST, ours := postHandlers(everyMessage())
	page := `{"query":"query($c: ID!) { conversation(id: $c) { messages { edges { cursor node {` +
		strings.ReplaceAll(strings.ReplaceAll(selection.MessageFields, "\n", " "), "\t", " ") + `} } } } }","variables":{"c":"conv_x"}}`
	tests := []struct {
		name, contentType, accept, body string
		// status is the spec's status for a request error, 0 for an executed operation.
		status int
	}{
		{"page", "application/json", "application/json", page, 0},
		{"page, graphql-response+json", "application/json", "application/graphql-response+json", page, 0},
		{"no accept", "application/json", "", page, 0},
		{"typename", "application/json", "", `{"query":"{ __typename }"}`, 0},
		{"introspection", "application/json", "", `{"query":"{ __schema { queryType { name } } }"}`, 0},
		{"validation error", "application/json", "application/json", `{"query":"{ nope }"}`, 200},
		{"validation error, graphql-response+json", "application/json", "application/graphql-response+json", `{"query":"{ nope }"}`, 400},
		{"parse error", "application/json", "", `{"query":"{"}`, 200},
		{"missing variable", "application/json", "", `{"query":"query($c: ID!) { conversation(id: $c) { id } }"}`, 200},
		{"bad json", "application/json", "", `{"query":`, 400},
		{"persisted query not found", "application/json", "", `{"extensions":{"persistedQuery":{"version":1,"sha256Hash":"00"}}}`, 200},
		{"operation name", "application/json", "", `{"query":"query A { __typename } query B { conversation(id: \"conv_x\") { title } }","operationName":"B"}`, 0},
	}
	// Where Parley's message differs from gqlgen's on purpose: gqlgen echoes the whole
	// body back; Parley says its size.
	ourMessage := map[string]string{"bad json": "the JSON request body (9 bytes) could not be decoded: unexpected EOF"}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			want := postTo(gqlgenPOST, tc.contentType, tc.accept, tc.body)
			if tc.status != 0 {
				want.status = tc.status
				want.body = withoutData(t, want.body)
			}
			if msg, ok := ourMessage[tc.name]; ok {
				want.body, _ = json.Marshal(map[string]any{"errors": []map[string]string{{"message": msg}}})
			}
			want.header.Add("Vary", "Accept")
			if tc.status == 0 {
				// An executed operation's data says its length: net/http then sends a
				// large body as it is instead of in chunks (the same bytes).
				want.header.Set("Content-Length", strconv.Itoa(len(want.body)))
			}
			got := postTo(ours, tc.contentType, tc.accept, tc.body)
			if got.String() != want.String() {
				t.Errorf("got\n%s\nwant\n%s", got, want)
			}
		})
	}
}

type answer struct {
	status int
	header http.Header
	body   []byte
}

func (a answer) String() string { return fmt.Sprintf("%d %v\n%s", a.status, a.header, a.body) }

func postTo(h http.Handler, contentType, accept, body string) answer {
	req := httptest.NewRequest(http.MethodPost, "/graphql", bytes.NewReader([]byte(body)))
	req.Header.Set("Content-Type", contentType)
	if accept != "" {
		req.Header.Set("Accept", accept)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	b, _ := io.ReadAll(rec.Body)
	return answer{rec.Code, rec.Header(), b}
}

// withoutData drops the null "data" gqlgen writes into a request error's body.
func withoutData(t *testing.T, body []byte) []byte {
	t.Helper()
	var resp graphql.Response
	if err := json.Unmarshal(body, &resp); err != nil {
		t.Fatalf("gqlgen answered %s: %v", body, err)
	}
	if resp.Data != nil && string(resp.Data) != "null" {
		t.Fatalf("gqlgen answered a request error with data: %s", body)
	}
	b, err := json.Marshal(struct {
		Errors     any            `json:"errors"`
		Extensions map[string]any `json:"extensions,omitempty"`
	}{resp.Errors, resp.Extensions})
	if err != nil {
		t.Fatal(err)
	}
	return b
}
