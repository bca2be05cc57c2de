package graph

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/99designs/gqlgen/graphql"
	"github.com/99designs/gqlgen/graphql/handler"
	"github.com/99designs/gqlgen/graphql/handler/extension"
	"github.com/99designs/gqlgen/graphql/handler/lru"
	"github.com/99designs/gqlgen/graphql/handler/transport"
	"github.com/vektah/gqlparser/v2/ast"

	"github.com/parley-dev/parley"
)

// TestAppendDataIsJSONMarshal: appendData writes what json.Marshal writes for a
// response holding only data, whatever the data.
func TestAppendDataIsJSONMarshal(t *testing.T) {
	tests := []struct{ name, data string }{
		{"object", `{"a":1,"b":[true,false,null],"c":{"d":"e"}}`},
		{"whitespace", "{ \"a\" : [ 1 ,\n\t2 ] ,\r\n \"b\" : { } }"},
		{"html in strings", `{"a":"<p>x & y</p>","<":">"}`},
		{"escapes", `{"a":"quote \" backslash \\ slash \/ \u003c \n","b":"\\"}`},
		{"line separators", "{\"a\":\"x\u2028y\u2029z \xe2\x80\xa7 \xe2\x80\xaa\"}"},
		{"unicode", `{"a":"é 😀 日本"}`},
		{"invalid utf-8 in a string", "{\"a\":\"\xff\xfe\"}"},
		{"scalars", `{"n":-1.5e+10,"s":""}`},
		{"backslash before quote", `{"a":"\\\"","b":"c"}`},
	}
	for _, tc := range tests {
		want, err := json.Marshal(&graphql.Response{Data: json.RawMessage(tc.data)})
		if err != nil {
			t.Fatalf("%s: json.Marshal: %v", tc.name, err)
		}
		got, ok := appendData(nil, []byte(tc.data))
		if !ok || string(got) != string(want) {
			t.Errorf("%s: got %s (%v), want %s", tc.name, got, ok, want)
		}
	}
	if _, ok := appendData(nil, []byte(`{"a":"unterminated}`)); ok {
		t.Errorf("data ending inside a string was written")
	}
}

// postHandlers returns the same server with gqlgen's POST transport and with
// postTransport.
func postHandlers(msgs []parley.Message) (gqlgenPOST, ours http.Handler) {
	mk := func(tr graphql.Transport) http.Handler {
		r := &Resolver{ConversationService: fakeConversations{msgs: msgs}, MessageService: fakeMessages{msgs: msgs}}
		srv := handler.New(NewExecutableSchema(Config{Resolvers: r}))
		srv.AddTransport(tr)
		srv.SetQueryCache(lru.New[*ast.QueryDocument](100))
		srv.Use(extension.Introspection{})
		srv.Use(extension.AutomaticPersistedQuery{Cache: lru.New[string](100)})
		srv.AroundFields(writeMessagePages)
		return srv
	}
	return mk(transport.POST{}), mk(postTransport{})
}

// TestPostTransportAnswersAsGqlgen sends the same requests to gqlgen's POST transport and
// to postTransport: status, headers and body must be the same.
func TestPostTransportAnswersAsGqlgen(t *testing.T) {
	gqlgenPOST, ours := postHandlers(everyMessage())
	page := `{"query":"query($c: ID!) { conversation(id: $c) { messages { edges { cursor node {` +
		strings.ReplaceAll(strings.ReplaceAll(everyField, "\n", " "), "\t", " ") + `} } } } }","variables":{"c":"conv_x"}}`
	tests := []struct {
		name, contentType, accept, body string
	}{
		{"page", "application/json", "application/json", page},
		{"page, graphql-response+json", "application/json", "application/graphql-response+json", page},
		{"no accept", "application/json", "", page},
		{"typename", "application/json", "", `{"query":"{ __typename }"}`},
		{"introspection", "application/json", "", `{"query":"{ __schema { queryType { name } } }"}`},
		{"validation error", "application/json", "application/json", `{"query":"{ nope }"}`},
		{"validation error, graphql-response+json", "application/json", "application/graphql-response+json", `{"query":"{ nope }"}`},
		{"parse error", "application/json", "", `{"query":"{"}`},
		{"missing variable", "application/json", "", `{"query":"query($c: ID!) { conversation(id: $c) { id } }"}`},
		{"bad json", "application/json", "", `{"query":`},
		{"persisted query not found", "application/json", "", `{"extensions":{"persistedQuery":{"version":1,"sha256Hash":"00"}}}`},
		{"operation name", "application/json", "", `{"query":"query A { __typename } query B { conversation(id: \"conv_x\") { title } }","operationName":"B"}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			want := postTo(gqlgenPOST, tc.contentType, tc.accept, tc.body)
			before := dataWritten.Load()
			got := postTo(ours, tc.contentType, tc.accept, tc.body)
			if got != want {
				t.Errorf("postTransport answered\n%s\nwant (gqlgen's POST)\n%s", got, want)
			}
			if wrote, dataOnly := dataWritten.Load() > before, !strings.Contains(want, `"errors"`); wrote != dataOnly {
				t.Errorf("appendData wrote the response: %v; want %v (a response with data only)", wrote, dataOnly)
			}
		})
	}
}

func postTo(h http.Handler, contentType, accept, body string) string {
	req := httptest.NewRequest(http.MethodPost, "/graphql", bytes.NewReader([]byte(body)))
	req.Header.Set("Content-Type", contentType)
	if accept != "" {
		req.Header.Set("Accept", accept)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	b, _ := io.ReadAll(rec.Body)
	return fmt.Sprintf("%d %v\n%s", rec.Code, rec.Header(), b)
}

// BenchmarkAppendData writes a page of every variant with every field (about 40 KiB).
func BenchmarkAppendData(b *testing.B) {
	_, direct := pageHandlers(everyMessage())
	resp := post(b, direct, pageQueries[0].query, map[string]any{"c": "conv_x"})
	data := []byte(strings.TrimSuffix(strings.TrimPrefix(resp, `200 OK {"data":`), "}"))
	b.SetBytes(int64(len(data)))
	buf := make([]byte, 0, 2*len(data))
	for b.Loop() {
		if _, ok := appendData(buf[:0], data); !ok {
			b.Fatal("not written")
		}
	}
}

// BenchmarkJSONMarshalData is what gqlgen does instead, for scale.
func BenchmarkJSONMarshalData(b *testing.B) {
	_, direct := pageHandlers(everyMessage())
	resp := post(b, direct, pageQueries[0].query, map[string]any{"c": "conv_x"})
	data := json.RawMessage(strings.TrimSuffix(strings.TrimPrefix(resp, `200 OK {"data":`), "}"))
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		if _, err := json.Marshal(&graphql.Response{Data: data}); err != nil {
			b.Fatal(err)
		}
	}
}
