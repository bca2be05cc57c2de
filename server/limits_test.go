package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/parley-dev/parley"
	"github.com/parley-dev/parley/graph"
	"github.com/parley-dev/parley/internal/selection"
	"github.com/parley-dev/parley/internal/testserver"
	"github.com/parley-dev/parley/server"
)

// TestLimits: each limit refuses what goes over it with its own code, before anything
// runs, following fragments; what stays within passes.
func TestLimits(t *testing.T) {
	t.Parallel()
	srv := testserver.NewWith(t, testserver.Options{Configure: func(c *server.Config) {
		// Selections well above the complexity, so that the complexity check is what the
		// fragments below meet (TestValidationCostBounded has the selections' own).
		c.GraphQL.Limits = graph.Limits{MaxDepth: 6, MaxAliases: 3, MaxComplexity: 2000, MaxPageSize: 100, MaxTokens: 400, MaxSelections: 100000}
	}})
	conv := srv.CreateConversation(t, "limits")
	deep := `{ conversations { edges { node { messages { edges { node { __typename } } } } } } }` // 7 deep
	// The same depth, hidden in fragments.
	deepFragments := `{ conversations { ...A } } fragment A on ConversationConnection { edges { ...B } }
		fragment B on ConversationEdge { node { messages { ...C } } } fragment C on MessageConnection { edges { node { __typename } } }`
	aliases := `{ a: __typename b: __typename c: __typename d: __typename }`
	// One alias, spread four times.
	aliasFragments := `{ ...F ...G } fragment F on Query { x: __typename ...H } fragment G on Query { y: __typename ...H }
		fragment H on Query { z: __typename }`
	// 100 × 100 messages of 2 fields each: over 2000, though no page is over 100.
	complexQ := `{ conversations(first: 100) { edges { node { messages(first: 100) { edges { cursor } } } } } }`
	complexVar := `query($n: Int) { conversations(first: $n) { edges { node { messages(first: 100) { edges { cursor } } } } } }`
	// Fragments spreading fragments twice each, ten deep: 2^10 fields once expanded.
	var nested strings.Builder
	nested.WriteString(`{ ...F0 }`)
	for i := range 10 {
		fmt.Fprintf(&nested, " fragment F%d on Query { ...F%d ...F%d }", i, i+1, i+1)
	}
	nested.WriteString(" fragment F10 on Query { conversation(id: \"x\") { id title } }")

	for _, tt := range []struct {
		name, query string
		vars        map[string]any
		want        string
	}{
		{"deep", deep, nil, "QUERY_TOO_DEEP"},
		{"deep through fragments", deepFragments, nil, "QUERY_TOO_DEEP"},
		{"within depth", `{ conversations { edges { node { title } } } }`, nil, ""},
		{"aliases", aliases, nil, "TOO_MANY_ALIASES"},
		{"aliases through fragments", aliasFragments, nil, "TOO_MANY_ALIASES"},
		{"within aliases", `{ a: __typename b: __typename }`, nil, ""},
		{"complex", complexQ, nil, "QUERY_TOO_COMPLEX"},
		{"complex by fragments", nested.String(), nil, "QUERY_TOO_COMPLEX"},
		{"within complexity", `{ conversations(first: 10) { edges { node { messages(first: 10) { edges { cursor } } } } } }`, nil, ""},
		// One document, within and then over: a cost that depends on the variables is
		// not remembered for the document (limits.go keeps the others').
		{"complexity in a variable, within", complexVar, map[string]any{"n": 10}, ""},
		{"the same document, over", complexVar, map[string]any{"n": 100}, "QUERY_TOO_COMPLEX"},
		{"page literal", `{ conversations(first: 101) { totalCount } }`, nil, "PAGE_TOO_LARGE"},
		{"page in a variable", `query($n: Int) { conversation(id: "` + conv + `") { messages(last: $n) { totalCount } } }`,
			map[string]any{"n": 500}, "PAGE_TOO_LARGE"},
		{"tokens", `{ ` + strings.Repeat("__typename ", 500) + `}`, nil, "TOO_MANY_TOKENS"},
	} {
		r := srv.Do(t, tt.query, tt.vars)
		if tt.want == "" {
			if len(r.Errors) > 0 {
				t.Errorf("%s: got %+v, want no error", tt.name, r.Errors)
			}
			continue
		}
		if code := r.ErrorCode(t); code != tt.want {
			t.Errorf("%s: got %s %q, want %s", tt.name, code, r.Errors[0].Message, tt.want)
		}
	}
}

// TestIntrospectionSetting: introspection is on by default and off when configured
// (INTROSPECTION_DISABLED, __typename still answered); nesting its lists three deep
// is refused either way, while the playground's introspection query passes.
func TestIntrospectionSetting(t *testing.T) {
	t.Parallel()
	on := testserver.New(t)
	off := testserver.NewWith(t, testserver.Options{Configure: func(c *server.Config) { c.Introspection = false }})
	full := `query IntrospectionQuery { __schema { queryType { name } mutationType { name } subscriptionType { name }
		types { ...FullType } directives { name description locations args { ...InputValue } } } }
		fragment FullType on __Type { kind name description fields(includeDeprecated: true) { name description
		args { ...InputValue } type { ...TypeRef } isDeprecated deprecationReason } inputFields { ...InputValue }
		interfaces { ...TypeRef } enumValues(includeDeprecated: true) { name description isDeprecated deprecationReason }
		possibleTypes { ...TypeRef } }
		fragment InputValue on __InputValue { name description type { ...TypeRef } defaultValue }
		fragment TypeRef on __Type { kind name ofType { kind name ofType { kind name ofType { kind name ofType { kind name
		ofType { kind name ofType { kind name ofType { kind name ofType { kind name ofType { kind name } } } } } } } } } }`
	if r := on.Do(t, full, nil); len(r.Errors) > 0 {
		t.Errorf("the playground's introspection query: %+v", r.Errors)
	}
	tooDeep := `{ __schema { types { fields { type { fields { type { fields { name } } } } } } } }`
	// gqlparser's validation has graphql-js's rule too, and answers first; ours stands
	// behind it.
	if r := on.Do(t, tooDeep, nil); len(r.Errors) != 1 || !strings.Contains(strings.ToLower(r.Errors[0].Message), "introspection") {
		t.Errorf("lists nested three deep: got %+v, want one error about introspection depth", r.Errors)
	}
	if code := off.Do(t, `{ __schema { types { name } } }`, nil).ErrorCode(t); code != "INTROSPECTION_DISABLED" {
		t.Errorf("introspection off: got %s, want INTROSPECTION_DISABLED", code)
	}
	if r := off.Do(t, `{ __typename }`, nil); len(r.Errors) > 0 {
		t.Errorf("__typename with introspection off: %+v", r.Errors)
	}
	// Suggestions are off: a misspelt field is not answered with the schema's names.
	r := on.Do(t, `{ conversatoins { totalCount } }`, nil)
	if len(r.Errors) != 1 || strings.Contains(r.Errors[0].Message, "Did you mean") {
		t.Errorf("misspelt field: got %+v, want one error without suggestions", r.Errors)
	}
}

// TestWebsocketLimits: subscriptions per connection, the message size limit, and
// origins.
func TestWebsocketLimits(t *testing.T) {
	t.Parallel()
	srv := testserver.NewWiredWith(t, "", testserver.Options{Configure: func(c *server.Config) {
		c.GraphQL.Limits = graph.Limits{MaxSubscriptionsPerConnection: 2}
		c.GraphQL.MaxWebsocketMessageBytes = 4096
		c.GraphQL.WebsocketOrigins = []string{"app.example.com"}
	}})
	conv := srv.CreateConversation(t, "ws limits")

	conn, typ, _, _ := wsDial(t, srv.URL, nil)
	if typ != "connection_ack" {
		t.Fatalf("got %q, want connection_ack", typ)
	}
	sub := `subscription($c: ID!) { messageAdded(conversationId: $c) { cursor } }`
	wsSubscribe(t, conn, "1", sub, map[string]any{"c": conv})
	wsSubscribe(t, conn, "2", sub, map[string]any{"c": conv})
	wsSubscribe(t, conn, "3", sub, map[string]any{"c": conv})
	// Operations start concurrently: any one of the three may be the one refused.
	m, code, reason := wsNext(t, conn, 10*time.Second)
	if m == nil || !strings.Contains(fmt.Sprint(m["payload"]), "TOO_MANY_SUBSCRIPTIONS") {
		t.Fatalf("third subscription: got %v (close %d %q), want TOO_MANY_SUBSCRIPTIONS", m, code, reason)
	}
	open := "1"
	if m["id"] == "1" {
		open = "2"
	}
	// Completing one frees its place.
	done, _ := json.Marshal(map[string]any{"id": open, "type": "complete"})
	conn.Write(context.Background(), websocket.MessageText, done)
	// The fourth, from the start of the conversation, gets its replay once a place is free.
	srv.AddMessage(t, conv, testserver.Text("USER", "one"))
	replay := `subscription($c: ID!, $a: String) { messageAdded(conversationId: $c, after: $a) { cursor } }`
	deadline := time.Now().Add(10 * time.Second)
	for try := 0; ; try++ {
		if time.Now().After(deadline) {
			t.Fatal("a fourth subscription was still refused after one was completed")
		}
		id := fmt.Sprintf("4-%d", try)
		wsSubscribe(t, conn, id, replay, map[string]any{"c": conv, "a": "bTow"})
		var m map[string]any
		for m == nil || m["id"] != id { // skip the other subscriptions' messages
			var code websocket.StatusCode
			var reason string
			if m, code, reason = wsNext(t, conn, 10*time.Second); m == nil {
				t.Fatalf("fourth subscription: closed %d %q", code, reason)
			}
		}
		if !strings.Contains(fmt.Sprint(m["payload"]), "TOO_MANY_SUBSCRIPTIONS") {
			break // live: its replay came
		}
	}
	conn.Close(websocket.StatusNormalClosure, "")

	// A message over the limit closes the socket with 1009.
	big, _, _, _ := wsDial(t, srv.URL, nil)
	wsSubscribe(t, big, "1", sub+strings.Repeat(" ", 5000), map[string]any{"c": conv})
	if _, code, _ := wsNext(t, big, 10*time.Second); code != websocket.StatusMessageTooBig {
		t.Errorf("a message over the limit: close %d, want 1009", code)
	}

	// Origins: the server's own and the listed patterns only.
	for _, tt := range []struct {
		origin string
		want   int
	}{
		{"", http.StatusSwitchingProtocols},
		{srv.URL, http.StatusSwitchingProtocols},
		{"https://app.example.com", http.StatusSwitchingProtocols},
		{"https://evil.example", http.StatusForbidden},
	} {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		h := http.Header{}
		if tt.origin != "" {
			h.Set("Origin", tt.origin)
		}
		c, resp, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(srv.URL, "http")+"/graphql",
			&websocket.DialOptions{Subprotocols: []string{"graphql-transport-ws"}, HTTPHeader: h})
		cancel()
		if c != nil {
			c.CloseNow()
		}
		if resp == nil {
			t.Errorf("origin %q: %v", tt.origin, err)
			continue
		}
		if resp.StatusCode != tt.want {
			t.Errorf("origin %q: status %d, want %d", tt.origin, resp.StatusCode, tt.want)
		}
	}
}

// TestCSRF: a POST a page of another site sends is refused; one from the server's own
// pages, from a trusted origin, or from outside a browser goes through.
func TestCSRF(t *testing.T) {
	t.Parallel()
	srv := testserver.NewWith(t, testserver.Options{Configure: func(c *server.Config) {
		c.TrustedOrigins = []string{"https://app.example.com"}
	}})
	for _, tt := range []struct {
		name string
		h    map[string]string
		want int
	}{
		{"not a browser", nil, 200},
		{"same origin", map[string]string{"Sec-Fetch-Site": "same-origin", "Origin": srv.URL}, 200},
		{"cross-site", map[string]string{"Sec-Fetch-Site": "cross-site", "Origin": "https://evil.example"}, 403},
		{"cross-site, old browser", map[string]string{"Origin": "https://evil.example"}, 403},
		{"trusted origin", map[string]string{"Sec-Fetch-Site": "cross-site", "Origin": "https://app.example.com"}, 200},
	} {
		req, _ := http.NewRequest(http.MethodPost, srv.URL+"/graphql", strings.NewReader(`{"query":"{ __typename }"}`))
		req.Header.Set("Content-Type", "application/json")
		for k, v := range tt.h {
			req.Header.Set(k, v)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var body testserver.Response
		json.NewDecoder(resp.Body).Decode(&body)
		resp.Body.Close()
		if resp.StatusCode != tt.want {
			t.Errorf("%s: status %d, want %d", tt.name, resp.StatusCode, tt.want)
		}
		if tt.want == 403 && (len(body.Errors) != 1 || body.Errors[0].Code() != "CROSS_ORIGIN_REFUSED") {
			t.Errorf("%s: got %+v, want CROSS_ORIGIN_REFUSED", tt.name, body.Errors)
		}
	}
}

// TestFullPageOfMaximumSize: the documented maximum page, 1,000 messages with every field
// of every variant (selection.MessageFields), is within the default limits and reads;
// what multiplies pages, or goes past the maximum, is still refused.
func TestFullPageOfMaximumSize(t *testing.T) {
	t.Parallel()
	srv := testserver.New(t)
	msgs := make([]map[string]any, parley.MaxPageSize)
	for i := range msgs {
		msgs[i] = map[string]any{"type": "text", "role": "USER", "parts": []any{map[string]any{"kind": "TEXT", "text": fmt.Sprint("m", i)}}}
	}
	doc, err := json.Marshal(map[string]any{"format": "parley.conversation", "version": 1, "messages": msgs})
	if err != nil {
		t.Fatal(err)
	}
	var imported struct {
		ImportConversation struct{ Conversation struct{ ID string } }
	}
	srv.MustDo(t, `mutation($d: String!) { importConversation(format: PARLEY_JSON, data: $d) { conversation { id } } }`,
		map[string]any{"d": string(doc)}, &imported)
	conv := imported.ImportConversation.Conversation.ID

	p := readPage(t, srv, map[string]any{"c": conv, "first": parley.MaxPageSize})
	if got := len(p.Conversation.Messages.Edges); got != parley.MaxPageSize {
		t.Fatalf("read %d messages, want %d", got, parley.MaxPageSize)
	}
	if got := p.Conversation.Messages.Edges[parley.MaxPageSize-1].Node["text"]; got != fmt.Sprint("m", parley.MaxPageSize-1) {
		t.Errorf("last message's text %v, want m%d", got, parley.MaxPageSize-1)
	}
	// The same page backwards, and by a named fragment.
	r := srv.Do(t, `query($c: ID!) { conversation(id: $c) { messages(last: 1000) { edges { cursor node { ...M } } } } }
		fragment M on Message {`+selection.MessageFields+`}`, map[string]any{"c": conv})
	if len(r.Errors) > 0 {
		t.Errorf("last: 1000 with a fragment: %+v", r.Errors)
	}

	for _, tt := range []struct{ name, query, want string }{
		{"pages of pages", `{ conversations(first: 1000) { edges { node { messages(first: 1000) { edges { node {` + selection.MessageFields + `} } } } } } }`, "QUERY_TOO_COMPLEX"},
		{"two full pages", `query($c: ID!) { conversation(id: $c) { a: messages(first: 1000) { edges { node {` + selection.MessageFields + `} } }
			b: messages(last: 1000) { edges { node {` + selection.MessageFields + `} } } } }`, "QUERY_TOO_COMPLEX"},
		{"over the maximum", `query($c: ID!) { conversation(id: $c) { messages(first: 1001) { edges { cursor } } } }`, "PAGE_TOO_LARGE"},
	} {
		if code := srv.Do(t, tt.query, map[string]any{"c": conv}).ErrorCode(t); code != tt.want {
			t.Errorf("%s: got %s, want %s", tt.name, code, tt.want)
		}
	}
}
