package server_test

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"testing"

	"github.com/vektah/gqlparser/v2/ast"

	"github.com/parley-dev/parley/graph"
	"github.com/parley-dev/parley/internal/testserver"
)

// everyField selects every field of typ, recursively, with __typename in every object
// and each union or interface member spread, so that a walk of the answer knows the
// type of each object. Fields with arguments are left out (the connection is walked
// from the outside), and a type already on the path is not entered again.
func everyField(s *ast.Schema, typ string, path map[string]bool) string {
	def := s.Types[typ]
	if def == nil || path[typ] {
		return ""
	}
	path[typ] = true
	defer delete(path, typ)
	var b strings.Builder
	b.WriteString("__typename ")
	switch def.Kind {
	case ast.Union, ast.Interface:
		for _, m := range s.GetPossibleTypes(def) {
			if sel := everyField(s, m.Name, path); sel != "" {
				fmt.Fprintf(&b, "... on %s { %s } ", m.Name, sel)
			}
		}
		return b.String()
	}
	for _, f := range def.Fields {
		if strings.HasPrefix(f.Name, "__") || len(f.Arguments) > 0 {
			continue
		}
		switch s.Types[f.Type.Name()].Kind {
		case ast.Scalar, ast.Enum:
			b.WriteString(f.Name + " ")
		default:
			if sel := everyField(s, f.Type.Name(), path); sel != "" {
				fmt.Fprintf(&b, "%s { %s } ", f.Name, sel)
			}
		}
	}
	return b.String()
}

// emptyOptionalStrings walks v, an answer selected by everyField, and returns the path
// of every optional String field that is "" instead of null.
func emptyOptionalStrings(s *ast.Schema, path string, v any, seen map[string]int) []string {
	var bad []string
	switch v := v.(type) {
	case []any:
		for i, e := range v {
			bad = append(bad, emptyOptionalStrings(s, fmt.Sprintf("%s[%d]", path, i), e, seen)...)
		}
	case map[string]any:
		typ, _ := v["__typename"].(string)
		def := s.Types[typ]
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			p := path + "." + k
			if def != nil {
				if f := def.Fields.ForName(k); f != nil && f.Type.NamedType == "String" && !f.Type.NonNull {
					seen[typ+"."+k]++
					if v[k] == "" {
						bad = append(bad, p+" ("+typ+")")
					}
				}
			}
			bad = append(bad, emptyOptionalStrings(s, p, v[k], seen)...)
		}
	}
	return bad
}

// TestOptionalStringsAreNull reads a page holding every message variant, with and
// without its optional values and after processing, selecting every field the schema
// has, and checks that no optional String is "": an absent value is null. The selection
// is made from the schema, so a field added later is checked too.
func TestOptionalStringsAreNull(t *testing.T) {
	t.Parallel()
	srv := testserver.New(t)
	type obj = map[string]any
	text := func(s string) []obj { return []obj{{"kind": "TEXT", "text": s}} }
	at := "2026-03-01T12:00:00Z"
	msgs := []obj{
		{"type": "text", "role": "USER", "parts": text("Look.")},
		{"type": "text", "role": "ASSISTANT", "sourceId": "src-1", "parts": []obj{{"kind": "THINKING", "text": "Hm.", "signature": "sig"}, {"kind": "TEXT", "text": "Yes."}}},
		{"type": "image", "role": "USER", "source": obj{"kind": "URL", "url": "https://example.com/a.png"}, "recognitionMode": "OCR",
			"recognition": obj{"status": "COMPLETED", "modeUsed": "OCR", "recognizedText": "hello", "processedAt": at}},
		{"type": "image", "role": "USER", "source": obj{"kind": "FILE_PATH", "filePath": "a.png"}, "recognitionMode": "VISION",
			"recognition": obj{"status": "FAILED", "error": obj{"message": "no model", "retryable": false}, "processedAt": at}},
		{"type": "file_reference", "role": "DOCUMENT", "path": "a.go",
			"resolution": obj{"status": "FAILED", "error": obj{"message": "gone", "retryable": false}, "resolvedAt": at}},
		{"type": "file_reference", "role": "DOCUMENT", "path": "b.go", "resolution": obj{"status": "COMPLETED", "content": "package b", "resolvedAt": at}},
		{"type": "tool_request", "role": "INVOCATION", "toolCalls": []obj{
			{"id": "c1", "name": "read", "arguments": obj{}, "approvalStatus": "APPROVED", "decision": obj{"status": "APPROVED", "decidedAt": at}},
			{"id": "c2", "name": "read", "arguments": obj{}, "approvalStatus": "PENDING"},
		}},
		{"type": "tool_result", "role": "RESULT", "toolCallId": "c1", "toolName": "read", "status": "ERROR", "error": obj{"message": "boom", "recoverable": false}},
		{"type": "system_control", "role": "SUPERVISOR", "kind": "MODE_CHANGE"},
		{"type": "mcp_resource", "role": "DOCUMENT", "serverName": "docs", "resourceUri": "docs://a", "retrievedAt": at, "parts": text("A")},
		{"type": "future_kind", "role": "USER"},
	}
	doc, err := json.Marshal(obj{"format": "parley.conversation", "version": 1, "messages": msgs})
	if err != nil {
		t.Fatal(err)
	}
	var imported struct {
		ImportConversation struct{ Conversation struct{ ID string } }
	}
	srv.MustDo(t, `mutation($d: String!) { importConversation(format: PARLEY_JSON, data: $d) { conversation { id } } }`,
		map[string]any{"d": string(doc)}, &imported)
	conv := imported.ImportConversation.Conversation.ID
	// And through addMessage, with every optional input left out.
	for _, in := range []obj{
		{"text": obj{"role": "USER", "content": "Hi."}},
		{"image": obj{"url": "https://example.com/b.png"}},
		{"toolRequest": obj{"toolCalls": []obj{{"id": "c3", "name": "read", "arguments": obj{}}}}},
		{"systemControl": obj{"kind": "BRANCH_SWITCH"}},
		{"mcpResource": obj{"serverName": "docs", "resourceUri": "docs://b", "content": "B"}},
	} {
		srv.MustDo(t, `mutation($c: ID!, $i: MessageInput!) { addMessage(conversationId: $c, input: $i) { cursor } }`,
			map[string]any{"c": conv, "i": in}, nil)
	}
	srv.MustDo(t, `mutation($m: ID!) { setToolCallApproval(messageId: $m, toolCallId: "c2", status: DENIED) { id } }`,
		map[string]any{"m": firstMessageOf(t, srv, conv, "ToolRequestMessage")}, nil)

	schema := graph.NewExecutableSchema(graph.Config{}).Schema()
	query := fmt.Sprintf(`query($c: ID!) { conversation(id: $c) { messages(first: 100) { edges { node { %s } } } } }`,
		everyField(schema, "Message", map[string]bool{}))
	var out struct {
		Conversation struct {
			Messages struct{ Edges []struct{ Node any } }
		}
	}
	srv.MustDo(t, query, map[string]any{"c": conv}, &out)
	if got, want := len(out.Conversation.Messages.Edges), len(msgs)+5; got != want {
		t.Fatalf("read %d messages, want %d", got, want)
	}
	seen := map[string]int{}
	for i, e := range out.Conversation.Messages.Edges {
		for _, p := range emptyOptionalStrings(schema, fmt.Sprintf("messages[%d]", i), e.Node, seen) {
			t.Errorf(`%s is "", want null`, p)
		}
	}
	// The walk must have met the optional strings it is about.
	for _, f := range []string{"TextMessage.sourceId", "Part.signature", "ImageSource.url", "ImageSource.mediaType",
		"ImageRecognition.script", "ImageRecognition.notice", "FileResolution.content", "ApprovalDecision.reason",
		"ToolError.stackTrace", "SystemControlMessage.from", "MCPResourceMessage.mimeType", "UnknownMessage.sourceId"} {
		if seen[f] == 0 {
			t.Errorf("the walk never met %s", f)
		}
	}
}

// firstMessageOf returns the id of the conversation's first message of typename.
func firstMessageOf(t *testing.T, srv *testserver.Server, conv, typename string) string {
	t.Helper()
	var out struct {
		Conversation struct {
			Messages struct {
				Edges []struct{ Node struct{ Typename, ID string } }
			}
		}
	}
	srv.MustDo(t, `query($c: ID!) { conversation(id: $c) { messages(first: 100) { edges { node { typename: __typename ... on MessageBase { id } } } } } }`,
		map[string]any{"c": conv}, &out)
	for _, e := range out.Conversation.Messages.Edges {
		if e.Node.Typename == typename {
			return e.Node.ID
		}
	}
	t.Fatalf("no %s in %s", typename, conv)
	return ""
}
