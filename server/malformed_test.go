package server_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/parley-dev/parley/internal/testserver"
	"github.com/parley-dev/parley/server"
)

// postRaw posts body as it is to the GraphQL endpoint and returns the status and body.
func postRaw(t *testing.T, srv *testserver.Server, body []byte) (int, []byte) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, srv.URL+"/graphql", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/graphql-response+json, application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("POST: %v", err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, raw
}

// fingerprint sums up what the database holds, so that a failed request can be shown
// to have written nothing, not even half of something.
func fingerprint(t *testing.T, srv *testserver.Server) string {
	t.Helper()
	var f struct {
		Conversations, Messages, ToolCalls int
		Positions, Changes                 int64
		Titles                             string
	}
	err := srv.Store.SQL().QueryRow(`SELECT (SELECT count(*) FROM conversations), (SELECT count(*) FROM messages),
		(SELECT count(*) FROM tool_calls), (SELECT coalesce(sum(last_position), 0) FROM conversations),
		(SELECT coalesce(sum(change_seq), 0) FROM conversations), (SELECT coalesce(string_agg(md5(title), ',' ORDER BY id), '') FROM conversations)`).
		Scan(&f.Conversations, &f.Messages, &f.ToolCalls, &f.Positions, &f.Changes, &f.Titles)
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("%+v", f)
}

// outcome is what a malformed request got: an HTTP status, and the GraphQL errors'
// codes, or the data.
type outcome struct {
	status int
	codes  []string
	data   map[string]any
	raw    []byte
}

func decodeOutcome(t *testing.T, status int, raw []byte) outcome {
	t.Helper()
	o := outcome{status: status, raw: raw}
	if !utf8.Valid(raw) {
		t.Errorf("response is not valid UTF-8: %q", raw)
	}
	if status == http.StatusRequestEntityTooLarge {
		return o
	}
	var out struct {
		Data   map[string]any
		Errors []testserver.Error
	}
	if err := json.Unmarshal(raw, &out); err != nil {
		t.Errorf("status %d, response not JSON: %v: %.300s", status, err, raw)
		return o
	}
	o.data = out.Data
	for _, e := range out.Errors {
		o.codes = append(o.codes, e.Code())
	}
	return o
}

// clearError says whether o is a clear refusal: a 4xx, or GraphQL errors that are all
// about the input.
func (o outcome) clearError() bool {
	if o.status >= 400 && o.status < 500 {
		return true
	}
	if len(o.codes) == 0 {
		return false
	}
	for _, c := range o.codes {
		switch c {
		case "BAD_USER_INPUT", "LIMIT_EXCEEDED", "GRAPHQL_PARSE_FAILED", "GRAPHQL_VALIDATION_FAILED", "NOT_FOUND",
			"MESSAGE_TOO_LARGE", "TOO_MANY_TOOL_CALLS", "TOOL_ARGUMENTS_TOO_LARGE":
		default:
			return false
		}
	}
	return true
}

// deep nests a value n arrays or objects deep, as JSON text.
func deep(n int, object bool) string {
	if object {
		return strings.Repeat(`{"a":`, n) + `1` + strings.Repeat(`}`, n)
	}
	return strings.Repeat(`[`, n) + `1` + strings.Repeat(`]`, n)
}

// TestMalformedInput sends invalid UTF-8, NUL bytes, megabyte strings, bodies near and
// over the size limit and deeply nested JSON through every kind of input: in variables,
// in the query text, in JSON arguments, in imported histories. Each gets a clear error
// (a 4xx status, or errors coded as the input's fault) or is stored as a safe value
// (valid UTF-8, no NUL); none gets a 5xx or an internal error, and a refused request
// leaves the database exactly as it was.
func TestMalformedInput(t *testing.T) {
	t.Parallel()
	const limit = 3 << 20 // a small body limit, to test near and over it cheaply
	srv := testserver.NewWith(t, testserver.Options{Configure: func(c *server.Config) { c.GraphQL.MaxBodyBytes = limit }})
	conv := srv.CreateConversation(t, "malformed")
	srv.AddMessage(t, conv, map[string]any{"toolRequest": map[string]any{"toolCalls": []any{
		map[string]any{"id": "call", "name": "f", "arguments": map[string]any{}}}}})

	addMessage := func(input string) string {
		return fmt.Sprintf(`{"query":"mutation($c: ID!, $i: MessageInput!) { addMessage(conversationId: $c, input: $i) { node { ... on MessageBase { id } ... on TextBearing { content text html } } } }","variables":{"c":%q,"i":%s}}`, conv, input)
	}
	inline := func(query string) string {
		b, _ := json.Marshal(map[string]any{"query": query})
		return string(b)
	}
	mega := strings.Repeat("é", 1<<19) // 1 MiB
	megaJSON, _ := json.Marshal(mega)
	// Near the body limit, within every message limit: three calls of almost 1 MiB of
	// arguments each.
	nearArgs, _ := json.Marshal(map[string]string{"a": strings.Repeat("x", (limit-4<<10)/3)})
	nearLimit := fmt.Sprintf(`{"toolRequest":{"toolCalls":[{"id":"n1","name":"f","arguments":%[1]s},{"id":"n2","name":"f","arguments":%[1]s},{"id":"n3","name":"f","arguments":%[1]s}]}}`, nearArgs)
	overLimit := strings.Repeat("x", limit+1)
	importData := func(data string) string {
		return `{"query":"mutation($d: String!) { importConversation(format: OPENAI_CHAT, data: $d) { added } }","variables":{"d":` + rawJSONString(data) + `}}`
	}

	tests := []struct {
		name   string
		body   string
		stored bool // must succeed (with a safe value); otherwise either way
		want   int  // a required status, when not 0
	}{
		// Invalid UTF-8: Go's JSON decoder turns it into U+FFFD, a safe value.
		{name: "invalid UTF-8 in content", body: addMessage(`{"text":{"role":"USER","content":"a` + "\xff\xfe" + `b"}}`), stored: true},
		{name: "invalid UTF-8 in a title, inline", body: `{"query":"mutation { createConversation(title: \"a` + "\xc3\x28" + `\") { title } }"}`, stored: true},
		{name: "invalid UTF-8 in an argument key", body: addMessage(`{"toolRequest":{"toolCalls":[{"id":"u1","name":"f","arguments":{"` + "\xff" + `":"` + "\xed\xa0\x80" + `"}}]}}`), stored: true},
		{name: "invalid UTF-8 in a tool call id", body: addMessage(`{"toolRequest":{"toolCalls":[{"id":"u` + "\xff" + `","name":"f","arguments":{}}]}}`)},
		{name: "invalid UTF-8 in import data", body: importData(`{"messages":[{"role":"user","content":"a` + "\xff" + `b"}]}`)},
		{name: "lone surrogate escape", body: addMessage(`{"text":{"role":"USER","content":"a\ud800b"}}`), stored: true},
		// NUL.
		{name: "NUL in content", body: addMessage(`{"text":{"role":"USER","content":"a\u0000b"}}`), stored: true},
		{name: "NUL in a title", body: inline("mutation { createConversation(title: \"a\\u0000b\") { title } }"), stored: true},
		{name: "NUL in an argument value", body: addMessage(`{"toolRequest":{"toolCalls":[{"id":"n1","name":"f","arguments":{"a":"x\u0000"}}]}}`)},
		{name: "NUL in an argument key", body: addMessage(`{"toolRequest":{"toolCalls":[{"id":"n2","name":"f","arguments":{"a\u0000":1}}]}}`)},
		{name: "NUL in an output", body: addMessage(`{"toolResult":{"toolCallId":"call","status":"SUCCESS","output":["\u0000"]}}`)},
		{name: "NUL in params", body: addMessage(`{"systemControl":{"kind":"MODE_CHANGE","params":{"\u0000":"\u0000"}}}`)},
		{name: "NUL in a tool call id", body: addMessage(`{"toolRequest":{"toolCalls":[{"id":"n\u0000","name":"f","arguments":{}}]}}`)},
		{name: "NUL in a path", body: addMessage(`{"fileReference":{"path":"a\u0000/b.go"}}`), stored: true},
		{name: "NUL in an MCP URI", body: addMessage(`{"mcpResource":{"serverName":"s","resourceUri":"file:///a\u0000","content":"x"}}`)},
		{name: "NUL in control from", body: addMessage(`{"systemControl":{"kind":"MODE_CHANGE","from":"\u0000","to":"b"}}`), stored: true},
		{name: "NUL in an id", body: inline(`{ conversation(id: "conv_\u0000") { title } }`)},
		{name: "NUL in a cursor", body: inline(`{ conversations(first: 1, after: "\u0000") { totalCount } }`)},
		{name: "NUL in import data", body: importData(`{"messages":[{"role":"user","content":"a\u0000b"}]}`), stored: true},
		{name: "raw NUL byte in the body", body: addMessage(`{"text":{"role":"USER","content":"a` + "\x00" + `b"}}`)},
		// Megabyte strings.
		{name: "1 MiB of content", body: addMessage(`{"text":{"role":"USER","content":` + string(megaJSON) + `}}`), stored: true},
		{name: "1 MiB in every text of a tool result", body: addMessage(`{"toolResult":{"toolCallId":"call","status":"ERROR","content":` + string(megaJSON) +
			`,"output":{"o":` + string(megaJSON) + `},"error":{"message":` + string(megaJSON) + `,"stackTrace":` + string(megaJSON) + `}}}`)},
		{name: "1 MiB title", body: inline(`mutation { createConversation(title: "` + mega + `") { id } }`)},
		{name: "1 MiB tool name", body: addMessage(`{"toolRequest":{"toolCalls":[{"id":"m1","name":` + string(megaJSON) + `,"arguments":{}}]}}`)},
		{name: "1 MiB tool call id", body: addMessage(`{"toolRequest":{"toolCalls":[{"id":` + string(megaJSON) + `,"name":"f","arguments":{}}]}}`)},
		{name: "1 MiB id", body: inline(`{ conversation(id: "` + mega + `") { title } }`)},
		{name: "1 MiB cursor", body: inline(`{ conversations(first: 1, after: "` + mega + `") { totalCount } }`)},
		{name: "body near the limit", body: addMessage(nearLimit), stored: true},
		{name: "text over the message limit", body: addMessage(`{"text":{"role":"USER","content":"` + strings.Repeat("x", 1<<20+1) + `"}}`)},
		{name: "body over the limit", body: addMessage(`{"text":{"role":"USER","content":"` + overLimit + `"}}`), want: http.StatusRequestEntityTooLarge},
		// Deep JSON.
		{name: "arguments 129 deep", body: addMessage(`{"toolRequest":{"toolCalls":[{"id":"d1","name":"f","arguments":{"a":` + deep(128, false) + `}}]}}`)},
		{name: "arguments 128 deep", body: addMessage(`{"toolRequest":{"toolCalls":[{"id":"d2","name":"f","arguments":{"a":` + deep(127, true) + `}}]}}`), stored: true},
		{name: "output 5,000 deep", body: addMessage(`{"toolResult":{"toolCallId":"call","status":"SUCCESS","output":` + deep(5000, false) + `}}`)},
		{name: "params 10,000 deep", body: addMessage(`{"systemControl":{"kind":"MODE_CHANGE","params":{"a":` + deep(9999, true) + `}}}`)},
		{name: "arguments 100,000 deep", body: addMessage(`{"toolRequest":{"toolCalls":[{"id":"d3","name":"f","arguments":{"a":` + deep(100000, false) + `}}]}}`)},
		{name: "inline arguments 200 deep", body: inline(`mutation { addMessage(conversationId: "` + conv + `", input: {toolRequest: {toolCalls: [{id: "d4", name: "f", arguments: {a: ` +
			strings.Repeat(`{a: `, 200) + `1` + strings.Repeat(`}`, 200) + `}}]}}) { cursor } }`)},
		{name: "inline arguments 10,000 deep", body: inline(`mutation { addMessage(conversationId: "` + conv + `", input: {toolRequest: {toolCalls: [{id: "d5", name: "f", arguments: {a: ` +
			strings.Repeat(`[`, 10000) + `1` + strings.Repeat(`]`, 10000) + `}}]}}) { cursor } }`)},
		{name: "variables 20,000 deep", body: `{"query":"{ __typename }","variables":{"x":` + deep(20000, false) + `}}`},
		{name: "imported arguments 200 deep", body: importData(`{"messages":[{"role":"assistant","tool_calls":[{"id":"c","type":"function","function":{"name":"f","arguments":` +
			mustQuote(`{"a":`+deep(200, false)+`}`) + `}}]}]}`)},
		{name: "imported data 20,000 deep", body: importData(`{"messages":` + deep(20000, false) + `}`)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := fingerprint(t, srv)
			status, raw := postRaw(t, srv, []byte(tt.body))
			o := decodeOutcome(t, status, raw)
			after := fingerprint(t, srv)
			if o.status >= 500 {
				t.Fatalf("status %d: %.300s", o.status, o.raw)
			}
			for _, c := range o.codes {
				if c == "INTERNAL_SERVER_ERROR" {
					t.Fatalf("internal error: %.300s", o.raw)
				}
			}
			if tt.want != 0 && o.status != tt.want {
				t.Errorf("status: got %d, want %d (%.200s)", o.status, tt.want, o.raw)
			}
			succeeded := o.status == http.StatusOK && len(o.codes) == 0
			switch {
			case succeeded:
				if bytes.Contains(o.raw, []byte(`\u0000`)) {
					t.Errorf("a NUL was stored: %.300s", o.raw)
				}
				if after == before {
					t.Errorf("succeeded, yet nothing was written: %.300s", o.raw)
				}
			case tt.stored:
				t.Errorf("got %d %v, want it stored: %.300s", o.status, o.codes, o.raw)
			case !o.clearError():
				t.Errorf("got %d %v, want a clear error: %.300s", o.status, o.codes, o.raw)
			default:
				if after != before {
					t.Errorf("refused (%d %v), yet the database changed:\nbefore %s\nafter  %s", o.status, o.codes, before, after)
				}
			}
		})
	}

	// Invalid UTF-8 and NUL in a GET's query string.
	for _, q := range []string{"{ conversation(id: \"conv_\xff\") { title } }", "{ conversation(id: \"\x00\") { title } }", "{ __typename \xff }"} {
		resp, err := http.Get(srv.URL + "/graphql?query=" + url.QueryEscape(q))
		if err != nil {
			t.Fatal(err)
		}
		raw, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if o := decodeOutcome(t, resp.StatusCode, raw); o.status >= 500 || !o.clearError() {
			t.Errorf("GET %q: got %d %v, want a clear error: %s", q, o.status, o.codes, raw)
		}
	}
}

// rawJSONString quotes s as a JSON string, escaping only quotes and backslashes, so
// that any invalid UTF-8 or control byte in it goes into the body as it is.
func rawJSONString(s string) string {
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(s) + `"`
}

func mustQuote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}
