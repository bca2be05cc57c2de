package graph

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/99designs/gqlgen/graphql/handler"
	"github.com/99designs/gqlgen/graphql/handler/lru"
	gqltransport "github.com/99designs/gqlgen/graphql/handler/transport"
	"github.com/vektah/gqlparser/v2/ast"

	"github.com/parley-dev/parley"
	"github.com/parley-dev/parley/graph/transport"
	"github.com/parley-dev/parley/internal/selection"
	"github.com/parley-dev/parley/render"
)

// fakeConversations serves one conversation holding msgs; fakeMessages pages it. Methods
// these tests do not call come from the nil embedded interfaces and would panic.
type fakeConversations struct {
	parley.ConversationService
	msgs []parley.Message
}

func (f fakeConversations) conversation(id string) *parley.Conversation {
	return &parley.Conversation{ID: id, Title: "t", CreatedAt: testTime, UpdatedAt: testTime,
		MessageCount: len(f.msgs), LastPosition: len(f.msgs)}
}

func (f fakeConversations) FindConversationByID(_ context.Context, id string) (*parley.Conversation, error) {
	return f.conversation(id), nil
}

func (f fakeConversations) FindConversations(context.Context, parley.PageRequest) (*parley.ConversationPage, error) {
	return &parley.ConversationPage{Conversations: []*parley.Conversation{f.conversation("conv_a"), f.conversation("conv_b")},
		Cursors: []string{"a", "b"}}, nil
}

type fakeMessages struct {
	parley.MessageService
	msgs []parley.Message
}

func (f fakeMessages) FindMessages(_ context.Context, conv *parley.Conversation, _ parley.PageRequest) (*parley.MessagePage, error) {
	return &parley.MessagePage{Messages: f.msgs, TotalCount: len(f.msgs)}, nil
}

var testTime = time.Date(2025, 3, 4, 5, 6, 7, 890123000, time.FixedZone("", 2*3600))

// pageHandlers returns gqlgen's handler for a conversation of msgs, and the same with the
// page writer.
func pageHandlers(msgs []parley.Message) (plain, direct http.Handler) {
	plain, direct, _ = pageHandlersFinal(msgs)
	return plain, direct
}

// pageHandlersFinal is pageHandlers, and the page writer behind Parley's HTTP transport
// (final), which writes pages in their final form (transport.Final).
//
// The renderer's budget is long: a rendering that outlasts it is escaped text instead,
// by design (render.Renderer.HTML), and a comparison of two paths must not depend on how
// loaded the machine is (a -race run on a busy machine outlasted the default 250 ms).
func pageHandlersFinal(msgs []parley.Message) (plain, direct, final http.Handler) {
	renderer := render.New(render.Config{Budget: time.Minute})
	mk := func(withWriter, parleys bool) http.Handler {
		r := &Resolver{ConversationService: fakeConversations{msgs: msgs}, MessageService: fakeMessages{msgs: msgs}, Renderer: renderer}
		srv := handler.New(NewExecutableSchema(Config{Resolvers: r}))
		srv.SetQueryCache(lru.New[*ast.QueryDocument](100)) // as NewHandler does: compiled selections are kept by document
		if withWriter {
			srv.AroundFields(writeMessagePages(renderer))
		}
		if parleys {
			return transport.New(srv, transport.Config{MaxBodyBytes: 1 << 20})
		}
		srv.AddTransport(gqltransport.POST{})
		return srv
	}
	return mk(false, false), mk(true, false), mk(true, true)
}

func post(t testing.TB, h http.Handler, query string, vars map[string]any) string {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"query": query, "variables": vars})
	req := httptest.NewRequest(http.MethodPost, "/graphql", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	b, _ := io.ReadAll(rec.Body)
	return rec.Result().Status + " " + string(b)
}

func intp(i int) *int { return &i }

// everyMessage has every variant with its optional fields both absent and present, and
// text that needs escaping in every way.
func everyMessage() []parley.Message {
	tricky := "quote \" backslash \\ tab \t nl \n cr \r ctl \x01\x1f del \x7f <b>&amp;</b> \u2028\u2029 é 😀 \xff\xfe invalid"
	meta := func(pos int, role parley.Role, source string) parley.MessageMeta {
		id := parley.MessageID("m" + string(rune('a'+pos)))
		// Where it sits in the tree, as read with a page: every other one has a sibling.
		tree := &parley.TreeInfo{SiblingIDs: []string{id}}
		if pos > 1 {
			tree.ParentID = parley.MessageID("m" + string(rune('a'+pos-1)))
		}
		if pos%2 == 0 {
			tree.SiblingIDs = append([]string{id + "-older"}, id)
		}
		return parley.MessageMeta{ID: id, ConversationID: "conv_x", Role: role,
			Position: pos, CreatedAt: testTime, UpdatedAt: testTime.Add(time.Second), SourceID: source, Tree: tree,
			Hidden: pos == 3}
	}
	conf, mode := 0.8125, parley.RecognitionOCR
	exec := testTime.Add(-time.Minute)
	var zero time.Time
	return []parley.Message{
		&parley.TextMessage{MessageMeta: meta(1, parley.RoleUser, ""), Body: parley.TextBody("Hello **world** " + tricky)},
		&parley.TextMessage{MessageMeta: meta(2, parley.RoleAssistant, "src-1"), Body: parley.Body{Parts: []parley.Part{
			{Kind: parley.PartThinking, Text: "hmm " + tricky, Signature: "sig=="},
			{Kind: parley.PartText, Text: "# Title\n\n- a\n- b\n\n```go\nx := 1\n```"},
			{Kind: parley.PartText, Text: "second <script>alert(1)</script>"}}}},
		&parley.TextMessage{MessageMeta: meta(3, parley.RoleSupervisor, "")},
		&parley.ImageMessage{MessageMeta: meta(4, parley.RoleUser, ""), Source: parley.ImageSource{Kind: parley.ImageURL, URL: "https://x/y.png?a=1&b=2"},
			RecognitionMode: parley.RecognitionAuto},
		&parley.ImageMessage{MessageMeta: meta(5, parley.RoleAssistant, ""), Source: parley.ImageSource{Kind: parley.ImageBase64, Data: "iVBORw0KGgo=", MediaType: "image/png"},
			RecognitionMode: parley.RecognitionOCR, Recognition: &parley.ImageRecognition{Status: parley.ProcessingStatus("COMPLETED"), ModeUsed: &mode,
				RecognizedText: tricky, VisionAnalysis: "a cat", Confidence: &conf, Language: "eng", Script: "Latin", Notice: "OCR used", ProcessedAt: testTime}},
		&parley.ImageMessage{MessageMeta: meta(6, parley.RoleUser, ""), Source: parley.ImageSource{Kind: parley.ImageFilePath, FilePath: "/tmp/a b.png"},
			RecognitionMode: parley.RecognitionVision, Recognition: &parley.ImageRecognition{Status: parley.ProcessingStatus("FAILED"),
				Error: &parley.ProcessingError{Message: "no model", Retryable: true}, ProcessedAt: testTime}},
		&parley.FileReferenceMessage{MessageMeta: meta(7, parley.RoleDocument, ""), Path: "src/main.go"},
		&parley.FileReferenceMessage{MessageMeta: meta(8, parley.RoleDocument, ""), Path: "a/b.go", StartLine: intp(1), EndLine: intp(40),
			Resolution: &parley.FileResolution{Status: parley.ProcessingStatus("COMPLETED"), Content: "1 package main\n" + tricky, Truncated: true, OriginalSize: intp(123456), ResolvedAt: testTime}},
		&parley.FileReferenceMessage{MessageMeta: meta(9, parley.RoleDocument, ""), Path: "gone.go",
			Resolution: &parley.FileResolution{Status: parley.ProcessingStatus("FAILED"), Error: &parley.ProcessingError{Message: "not found"}, ResolvedAt: testTime}},
		&parley.ToolRequestMessage{MessageMeta: meta(10, parley.RoleInvocation, ""), Body: parley.TextBody("Reading."), ToolCalls: []parley.ToolCall{
			{ID: "c1", Name: "read_file", Arguments: parley.JSON(`{"path": "main.go", "n": [1, 2.5e3, null, true], "s": "<&>\u2028"}`), ApprovalStatus: parley.ApprovalPending},
			{ID: "c2", Name: "rm", Arguments: parley.JSON(`{}`), ApprovalStatus: parley.ApprovalDenied,
				Decision: &parley.ApprovalDecision{Status: parley.ApprovalDenied, DecidedBy: "ops", Reason: tricky, DecidedAt: testTime}}}},
		&parley.ToolRequestMessage{MessageMeta: meta(11, parley.RoleInvocation, "")},
		&parley.ToolResultMessage{MessageMeta: meta(12, parley.RoleResult, ""), Body: parley.TextBody(strings.Repeat("line\n", 5)),
			ToolCallID: "c1", ToolName: "read_file", Status: parley.ToolSuccess, Output: parley.JSON(`{"ok": true, "lines": [1, 2]}`),
			DurationMs: intp(4), ExecutedAt: &exec, Truncated: true, OriginalSize: intp(2 << 20)},
		&parley.ToolResultMessage{MessageMeta: meta(13, parley.RoleResult, ""), ToolCallID: "c2", ToolName: "rm", Status: parley.ToolError,
			Error: &parley.ToolErrorDetail{Message: "denied", StackTrace: "at x\n\tat y", Recoverable: true}, ExecutedAt: &zero, Output: parley.JSON(`null`)},
		&parley.SystemControlMessage{MessageMeta: meta(14, parley.RoleSupervisor, ""), ControlKind: parley.ControlModeChange, From: "plan", To: "act"},
		&parley.SystemControlMessage{MessageMeta: meta(15, parley.RoleSupervisor, ""), ControlKind: parley.ControlBranchSwitch,
			Params: parley.JSON(`{"branch": "b2", "why": "user <asked>"}`)},
		&parley.MCPResourceMessage{MessageMeta: meta(16, parley.RoleDocument, ""), Body: parley.TextBody("CREATE TABLE t (a int);"),
			ServerName: "docs", ResourceURI: "file:///schema.sql", MimeType: "application/sql", RetrievedAt: testTime, Truncated: true},
		&parley.MCPResourceMessage{MessageMeta: meta(17, parley.RoleDocument, ""), ServerName: "s", ResourceURI: "u", RetrievedAt: testTime},
		&parley.UnknownMessage{MessageMeta: meta(18, parley.RoleUser, ""), TypeTag: "hologram", Raw: parley.JSON(`{"type": "hologram", "x": [1]}`)},
	}
}

// pageQueries are selections the writer must write as gqlgen does.
var pageQueries = []struct {
	name  string
	query string
	vars  map[string]any
}{
	{"every field", `query($c: ID!) { conversation(id: $c) { messages(first: 100) { totalCount pageInfo { hasNextPage endCursor } edges { cursor node {` + selection.MessageFields + `} } } } }`, nil},
	{"typenames and aliases", `query($c: ID!) { conversation(id: $c) { messages { edges { __typename c: cursor cursor n: node { __typename t: __typename
		... on Node { nid: id } ... on MessageBase { id p: position } ... on TextBearing { text h: html } } } } } }`, nil},
	{"fragments merged", `query($c: ID!) { conversation(id: $c) { messages { edges { node { ...A ...B ... on TextMessage { parts { text } } } } } } }
		fragment A on Message { ... on TextMessage { parts { kind } position } ... on ToolRequestMessage { toolCalls { id } } }
		fragment B on MessageBase { position role ... on ToolRequestMessage { toolCalls { name id decision { reason } } } }`, nil},
	{"skip and include", `query($c: ID!, $yes: Boolean!, $no: Boolean!) { conversation(id: $c) { messages { edges {
		cursor @skip(if: $yes) node { __typename ... on MessageBase @include(if: $yes) { id label @skip(if: $no) createdAt @include(if: $no) }
		... on ToolResultMessage @skip(if: $yes) { output } } } } } }`, map[string]any{"yes": true, "no": false}},
	{"just ids", `query($c: ID!) { conversation(id: $c) { messages { edges { node { ... on MessageBase { id } } } } } }`, nil},
	{"conversations list", `{ conversations { edges { node { id messages(first: 3) { edges { cursor node { __typename ... on MessageBase { id position } } } } } } } }`, nil},
}

// TestPageWriterWritesWhatGqlgenWrites compares the writer's pages with gqlgen's, byte for
// byte, and checks that the writer wrote them.
func TestPageWriterWritesWhatGqlgenWrites(t *testing.T) {
	plain, direct, final := pageHandlersFinal(everyMessage())
	for _, tc := range pageQueries {
		t.Run(tc.name, func(t *testing.T) {
			vars := map[string]any{"c": "conv_x"}
			for k, v := range tc.vars {
				vars[k] = v
			}
			before := pagesWritten.Load()
			want := post(t, plain, tc.query, vars)
			got := post(t, direct, tc.query, vars)
			if got != want {
				t.Errorf("the page writer wrote\n%s\nwant (gqlgen)\n%s\nfirst difference at byte %d", got, want, firstDiff(got, want))
			}
			// Behind Parley's transport, in the response's final form (transport.Final).
			if got := post(t, final, tc.query, vars); got != want {
				t.Errorf("the page writer behind Parley's transport wrote\n%s\nwant (gqlgen)\n%s\nfirst difference at byte %d", got, want, firstDiff(got, want))
			}
			if !strings.HasPrefix(want, "200 OK {\"data\"") || strings.Contains(want, `"errors"`) {
				t.Errorf("gqlgen's answer is not a clean page: %.300s", want)
			}
			if pagesWritten.Load() == before {
				t.Errorf("the page writer left this page to gqlgen")
			}
		})
	}
}

// TestPageWriterCompilesOnce sends each query several times, with different variables,
// to handlers with a query cache: a selection without directives is compiled by its first
// request only, one with @skip or @include by every request (the variables decide its
// fields), and every answer is gqlgen's.
func TestPageWriterCompilesOnce(t *testing.T) {
	tests := []struct {
		name     string
		query    string
		vars     []map[string]any
		compiles int // selections compiled for all of vars
	}{
		{"every field", `query($c: ID!) { conversation(id: $c) { messages(first: 100) { edges { cursor node {` + selection.MessageFields + `} } } } }`,
			[]map[string]any{{"c": "conv_x"}, {"c": "conv_x"}, {"c": "conv_x"}}, 1},
		{"skip and include", `query($c: ID!, $yes: Boolean!) { conversation(id: $c) { messages { edges {
			cursor @skip(if: $yes) node { ... on MessageBase @include(if: $yes) { id position } } } } } }`,
			[]map[string]any{{"c": "conv_x", "yes": true}, {"c": "conv_x", "yes": false}, {"c": "conv_x", "yes": true}}, 3},
		{"a directive elsewhere decides what is merged", `query($c: ID!, $yes: Boolean!) { conversation(id: $c) { messages {
			edges { cursor } edges @include(if: $yes) { node { ... on MessageBase { id } } } } } }`,
			[]map[string]any{{"c": "conv_x", "yes": true}, {"c": "conv_x", "yes": false}}, 2},
		// One edges field of a fragment, merged with another selection in one place only:
		// two selections, each compiled once.
		{"one fragment in two places", `query($c: ID!) { conversation(id: $c) { messages { ...E edges { cursor } } }
			conversations { edges { node { messages(first: 3) { ...E } } } } }
			fragment E on MessageConnection { edges { node { ... on MessageBase { id position } } } }`,
			[]map[string]any{{"c": "conv_x"}, {"c": "conv_x"}}, 2},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			plain, direct := pageHandlers(everyMessage())
			compiled, written := selectionsCompiled.Load(), pagesWritten.Load()
			for _, vars := range tc.vars {
				want := post(t, plain, tc.query, vars)
				got := post(t, direct, tc.query, vars)
				if got != want {
					t.Errorf("variables %v: the page writer wrote\n%s\nwant (gqlgen)\n%s\nfirst difference at byte %d", vars, got, want, firstDiff(got, want))
				}
				if strings.Contains(want, `"errors"`) {
					t.Errorf("gqlgen's answer is not a clean page: %.300s", want)
				}
			}
			if pagesWritten.Load() == written {
				t.Errorf("the page writer left every page to gqlgen")
			}
			// Parallel tests start only after this one ends: the counter is its own.
			if got := selectionsCompiled.Load() - compiled; got != int64(tc.compiles) {
				t.Errorf("compiled %d selections, want %d", got, tc.compiles)
			}
		})
	}
}

// TestFinalStrIsAppendFinal: finalStr writes what the transport makes of str's string.
func TestFinalStrIsAppendFinal(t *testing.T) {
	for _, s := range []string{"", "plain", "<p>x & y</p>", "line\u2028para\u2029 other \u2027\u202a runes é 😀", "\xe2\x80", "\xe2",
		"quote \" backslash \\ tab \t nl \n cr \r nul \x00 esc \x1b del \x7f", "invalid \xff\xfe utf-8", strings.Repeat("long <text> & more, ", 9)} {
		var str, fin jsonWriter
		str.str(s)
		fin.final = true
		fin.str(s)
		want, ok := transport.AppendFinal(nil, str.b)
		if !ok || string(fin.b) != string(want) {
			t.Errorf("final str(%q) = %s, want %s", s, fin.b, want)
		}
	}
}

// TestUpperIsToUpper: jsonWriter.upper writes what str writes of strings.ToUpper.
func TestUpperIsToUpper(t *testing.T) {
	for _, s := range []string{"", "user", "assistant", "completed", "mixed_Case-1 z{a}", "straße", "é", "a\"b", "a\\b", "tab\t", "\x7f~"} {
		var got, want jsonWriter
		got.upper(s)
		want.str(strings.ToUpper(s))
		if string(got.b) != string(want.b) {
			t.Errorf("upper(%q) = %s, want %s", s, got.b, want.b)
		}
	}
}

// TestPageWriterLeavesToGqlgen covers values gqlgen answers with errors: the writer
// leaves those pages to it, so the answer (errors and nulls) is gqlgen's own.
func TestPageWriterLeavesToGqlgen(t *testing.T) {
	nan, inf := math.NaN(), math.Inf(1)
	tests := []struct {
		name  string
		query string
		msg   parley.Message
	}{
		{"zero non-null time", `... on MessageBase { createdAt }`, &parley.TextMessage{MessageMeta: parley.MessageMeta{ID: "msg_z", Role: parley.RoleUser, Position: 1}}},
		{"NaN confidence", `... on ImageMessage { recognition { confidence } }`, &parley.ImageMessage{MessageMeta: parley.MessageMeta{ID: "msg_n", Position: 1, CreatedAt: testTime},
			Recognition: &parley.ImageRecognition{Confidence: &nan, ProcessedAt: testTime}}},
		{"infinite confidence", `... on ImageMessage { recognition { confidence } }`, &parley.ImageMessage{MessageMeta: parley.MessageMeta{ID: "msg_i", Position: 1, CreatedAt: testTime},
			Recognition: &parley.ImageRecognition{Confidence: &inf, ProcessedAt: testTime}}},
		{"null arguments", `... on ToolRequestMessage { toolCalls { arguments } }`, &parley.ToolRequestMessage{MessageMeta: parley.MessageMeta{ID: "msg_a", Position: 1},
			ToolCalls: []parley.ToolCall{{ID: "x", Name: "y"}}}},
		{"null raw", `... on UnknownMessage { raw }`, &parley.UnknownMessage{MessageMeta: parley.MessageMeta{ID: "msg_r", Position: 1}, TypeTag: "x"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			plain, direct := pageHandlers([]parley.Message{tc.msg})
			q := `query($c: ID!) { conversation(id: $c) { messages { edges { cursor node { ... on MessageBase { id } ` + tc.query + ` } } } } }`
			vars := map[string]any{"c": "conv_x"}
			before := leftToGqlgen.Load()
			want := post(t, plain, q, vars)
			got := post(t, direct, q, vars)
			if got != want {
				t.Errorf("with the page writer:\n%s\nwant (gqlgen)\n%s", got, want)
			}
			if !strings.Contains(want, `"errors"`) {
				t.Errorf("gqlgen answered without an error, so this case tests nothing: %s", want)
			}
			if leftToGqlgen.Load() == before {
				t.Errorf("the page writer did not leave the page to gqlgen")
			}
		})
	}
}

// TestPageWriterKnowsEveryField fails when a field is added to a type of a message page
// without being added to pagewriter.go: pages selecting it would silently be left to
// gqlgen's slower execution.
func TestPageWriterKnowsEveryField(t *testing.T) {
	schema := NewExecutableSchema(Config{Resolvers: &Resolver{}}).Schema()
	known := map[string]map[string]bool{}
	add := func(name string, fields []string) {
		known[name] = map[string]bool{}
		for _, f := range fields {
			known[name][f] = true
		}
	}
	add("MessageEdge", []string{"cursor", "node"})
	add(textMessageType.name, keys(textMessageType.fields))
	add(imageMessageType.name, keys(imageMessageType.fields))
	add(fileReferenceMessageType.name, keys(fileReferenceMessageType.fields))
	add(toolRequestMessageType.name, keys(toolRequestMessageType.fields))
	add(toolResultMessageType.name, keys(toolResultMessageType.fields))
	add(systemControlMessageType.name, keys(systemControlMessageType.fields))
	add(mcpResourceMessageType.name, keys(mcpResourceMessageType.fields))
	add(compactionMessageType.name, keys(compactionMessageType.fields))
	add(unknownMessageType.name, keys(unknownMessageType.fields))
	add(partType.name, keys(partType.fields))
	add(imageSourceType.name, keys(imageSourceType.fields))
	add(imageRecognitionType.name, keys(imageRecognitionType.fields))
	add(processingErrorType.name, keys(processingErrorType.fields))
	add(fileResolutionType.name, keys(fileResolutionType.fields))
	add(toolCallType.name, keys(toolCallType.fields))
	add(approvalDecisionType.name, keys(approvalDecisionType.fields))
	add(toolErrorType.name, keys(toolErrorType.fields))
	add(provenanceType.name, keys(provenanceType.fields))
	add(usageType.name, keys(usageType.fields))
	add(siblingsType.name, keys(siblingsType.fields))
	// Fields a page may ask for that pagewriter.go leaves to gqlgen, which then writes
	// the page: MessageEdge.conversation is for addMessage's answer, not for pages.
	leftToGqlgen := map[string]bool{"MessageEdge.conversation": true}
	// Every type a page can reach must be known, with every field.
	seen := map[string]bool{}
	var walk func(name string)
	walk = func(name string) {
		def := schema.Types[name]
		if def == nil || seen[name] || !def.IsCompositeType() {
			return
		}
		seen[name] = true
		if def.Kind == "UNION" || def.Kind == "INTERFACE" {
			for _, p := range schema.GetPossibleTypes(def) {
				walk(p.Name)
			}
			return
		}
		if known[name] == nil {
			t.Errorf("pagewriter.go has no writer for type %s, which a message page can hold: add one", name)
			return
		}
		for _, f := range def.Fields {
			if strings.HasPrefix(f.Name, "__") || leftToGqlgen[name+"."+f.Name] {
				continue
			}
			if !known[name][f.Name] {
				t.Errorf("pagewriter.go cannot write %s.%s: add it to the type's fields there", name, f.Name)
			}
			walk(f.Type.Name())
		}
	}
	walk("MessageEdge")
}

func keys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

func firstDiff(a, b string) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}
