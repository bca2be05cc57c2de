package server_test

import (
	"encoding/base64"
	"fmt"
	"strings"
	"testing"

	"github.com/parley-dev/parley/internal/testserver"
)

// TestValidationRejects sends one invalid message per rule: each must be refused with
// BAD_USER_INPUT, a message naming the field, and nothing written.
func TestValidationRejects(t *testing.T) {
	t.Parallel()
	srv := testserver.New(t)
	conv := srv.CreateConversation(t, "validation")
	// A tool call to answer, and one to collide with.
	srv.AddMessage(t, conv, map[string]any{"toolRequest": map[string]any{"toolCalls": []any{
		map[string]any{"id": "taken", "name": "ls", "arguments": map[string]any{}}}}})
	gif := base64.StdEncoding.EncodeToString([]byte("GIF89a\x01\x00\x01\x00\x00\x00\x00;"))
	call := func(id, name string, args any) map[string]any {
		return map[string]any{"id": id, "name": name, "arguments": args}
	}
	toolRequest := func(calls ...any) map[string]any {
		if calls == nil {
			calls = []any{}
		}
		return map[string]any{"toolRequest": map[string]any{"toolCalls": calls}}
	}

	tests := []struct {
		name    string
		input   map[string]any
		mention string // the error message must contain this
	}{
		{"no member", map[string]any{}, "exactly one"},
		{"two members", map[string]any{"text": map[string]any{"role": "USER", "content": "a"}, "fileReference": map[string]any{"path": "a"}}, "exactly one"},
		{"text: empty content", testserver.Text("USER", ""), "text: content is empty"},
		{"text: blank content", testserver.Text("USER", " \n\t "), "content is empty"},
		{"text: only thinking", map[string]any{"text": map[string]any{"role": "ASSISTANT", "parts": []any{map[string]any{"kind": "THINKING", "text": "hm"}}}}, "content is empty"},
		{"text: content and parts", map[string]any{"text": map[string]any{"role": "USER", "content": "a", "parts": []any{map[string]any{"kind": "TEXT", "text": "b"}}}}, "not both"},
		{"text: role INVOCATION", testserver.Text("INVOCATION", "x"), "text.role"},
		{"text: role RESULT", testserver.Text("RESULT", "x"), "text.role"},
		{"text: role DOCUMENT", testserver.Text("DOCUMENT", "x"), "text.role"},
		{"image: no source", map[string]any{"image": map[string]any{"role": "USER"}}, "exactly one source"},
		{"image: two sources", map[string]any{"image": map[string]any{"url": "https://a.b/c.png", "filePath": "c.png"}}, "exactly one source"},
		{"image: role SUPERVISOR", map[string]any{"image": map[string]any{"role": "SUPERVISOR", "url": "https://a.b/c.png"}}, "image.role"},
		{"image: not http", map[string]any{"image": map[string]any{"url": "file:///etc/passwd"}}, "image.url"},
		{"image: relative url", map[string]any{"image": map[string]any{"url": "/cat.png"}}, "image.url"},
		{"image: bad base64", map[string]any{"image": map[string]any{"base64": "%%%", "mediaType": "image/png"}}, "image.base64"},
		{"image: no media type", map[string]any{"image": map[string]any{"base64": gif}}, "image.mediaType"},
		{"image: unsupported media type", map[string]any{"image": map[string]any{"base64": gif, "mediaType": "image/tiff"}}, "image.mediaType"},
		{"image: content is not the media type", map[string]any{"image": map[string]any{"base64": gif, "mediaType": "image/png"}}, "image/gif"},
		{"image: path traversal", map[string]any{"image": map[string]any{"filePath": "../secret.png"}}, "image.filePath"},
		{"file: empty path", map[string]any{"fileReference": map[string]any{"path": ""}}, "fileReference.path"},
		{"file: traversal", map[string]any{"fileReference": map[string]any{"path": "src/../../etc/passwd"}}, "traversal"},
		{"file: windows traversal", map[string]any{"fileReference": map[string]any{"path": `src\..\..\secret`}}, "traversal"},
		{"file: end before start", map[string]any{"fileReference": map[string]any{"path": "a.go", "startLine": 5, "endLine": 4}}, "endLine"},
		{"file: line zero", map[string]any{"fileReference": map[string]any{"path": "a.go", "startLine": 0}}, "startLine"},
		{"file: negative end", map[string]any{"fileReference": map[string]any{"path": "a.go", "endLine": -1}}, "endLine"},
		{"tool request: no calls", toolRequest(), "at least one tool call"},
		{"tool request: empty id", toolRequest(call("", "ls", map[string]any{})), "toolCalls[0].id"},
		{"tool request: id with control characters", toolRequest(call("a\u0007b", "ls", map[string]any{})), "toolCalls[0].id"},
		{"tool request: duplicate ids", toolRequest(call("x", "ls", map[string]any{}), call("x", "ls", map[string]any{})), "toolCalls[1].id"},
		{"tool request: id used in the conversation", toolRequest(call("fresh", "ls", map[string]any{}), call("taken", "ls", map[string]any{})), `toolCalls[1].id: "taken" is already used`},
		{"tool request: bad name", toolRequest(call("y", "rm -rf", map[string]any{})), "toolCalls[0].name"},
		{"tool request: empty name", toolRequest(call("y", "", map[string]any{})), "toolCalls[0].name"},
		{"tool request: arguments not an object", toolRequest(call("y", "ls", []any{1})), "must be a JSON object"},
		{"tool request: arguments a string", toolRequest(call("y", "ls", "{}")), "must be a JSON object"},
		{"tool request: NUL in arguments", toolRequest(call("y", "ls", map[string]any{"a": "x\u0000y"})), "NUL"},
		{"tool result: unknown call", map[string]any{"toolResult": map[string]any{"toolCallId": "nope", "status": "SUCCESS"}}, `no tool call "nope"`},
		{"tool result: empty call id", map[string]any{"toolResult": map[string]any{"toolCallId": "", "status": "SUCCESS"}}, "toolResult.toolCallId"},
		{"tool result: error without details", map[string]any{"toolResult": map[string]any{"toolCallId": "taken", "status": "ERROR"}}, "error.message"},
		{"tool result: error on success", map[string]any{"toolResult": map[string]any{"toolCallId": "taken", "status": "SUCCESS", "error": map[string]any{"message": "x"}}}, "only a result with status ERROR"},
		{"tool result: negative duration", map[string]any{"toolResult": map[string]any{"toolCallId": "taken", "status": "SUCCESS", "durationMs": -5}}, "durationMs"},
		{"control: params not an object", map[string]any{"systemControl": map[string]any{"kind": "BRANCH_SWITCH", "params": []any{}}}, "systemControl.params"},
		{"mcp: empty server", map[string]any{"mcpResource": map[string]any{"serverName": " ", "resourceUri": "file:///a", "content": "x"}}, "mcpResource.serverName"},
		{"mcp: uri without scheme", map[string]any{"mcpResource": map[string]any{"serverName": "s", "resourceUri": "schema.sql", "content": "x"}}, "mcpResource.resourceUri"},
		{"mcp: bad mime type", map[string]any{"mcpResource": map[string]any{"serverName": "s", "resourceUri": "file:///a", "content": "x", "mimeType": "text"}}, "mcpResource.mimeType"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := srv.Do(t, addMessageMutation, map[string]any{"c": conv, "i": tt.input})
			if code := r.ErrorCode(t); code != "BAD_USER_INPUT" {
				t.Errorf("code: got %s, want BAD_USER_INPUT (%s)", code, r.Errors[0].Message)
			}
			if msg := r.Errors[0].Message; !strings.Contains(msg, tt.mention) {
				t.Errorf("message: got %q, want it to mention %q", msg, tt.mention)
			}
		})
	}
	assertStored(t, srv, 1, 1)

	// Enum and type errors are caught by GraphQL validation before any resolver runs.
	r := srv.Do(t, addMessageMutation, map[string]any{"c": conv, "i": map[string]any{"text": map[string]any{"content": "no role"}}})
	if code := r.ErrorCode(t); code != "GRAPHQL_VALIDATION_FAILED" || !strings.Contains(r.Errors[0].Message, "must be defined") {
		t.Errorf("no role: got %s %q, want GRAPHQL_VALIDATION_FAILED saying role must be defined", code, r.Errors[0].Message)
	}
	assertStored(t, srv, 1, 1)
}

// TestEnumVariablesRejected: an enum value in the variables that is not one of the
// enum's names, to the letter, is refused as GraphQL validation refuses an unknown one
// (gqlparser alone would let "user" through as a Role, and gqlgen's enum_values binding
// would turn it into the zero value), naming the value, the enum and where it is. Nothing
// is written.
func TestEnumVariablesRejected(t *testing.T) {
	t.Parallel()
	srv := testserver.New(t)
	conv := srv.CreateConversation(t, "enums")
	req := srv.AddMessage(t, conv, map[string]any{"toolRequest": map[string]any{"toolCalls": []any{
		map[string]any{"id": "c1", "name": "ls", "arguments": map[string]any{}}}}})
	img := srv.AddMessage(t, conv, map[string]any{"image": map[string]any{"role": "USER", "url": "https://a.b/c.png"}})
	add := func(input map[string]any) map[string]any { return map[string]any{"c": conv, "i": input} }
	const (
		transcript = `query($c: ID!, $f: TranscriptFormat!) { conversation(id: $c) { transcript(format: $f) } }`
		importConv = `mutation($f: ImportFormat!) { importConversation(format: $f, data: "[]") { conversation { id } } }`
		approval   = `mutation($m: ID!, $s: ApprovalStatus!) { setToolCallApproval(messageId: $m, toolCallId: "c1", status: $s) { id } }`
		recognize  = `mutation($m: ID!, $mode: RecognitionMode, $a: AgentRole) { recognizeImage(messageId: $m, mode: $mode, agent: $a) { id } }`
	)
	tests := []struct {
		name, query string
		vars        map[string]any
		path, msg   string
	}{
		{"unknown role", addMessageMutation, add(testserver.Text("ROBOT", "x")), "variable.i.text.role", "ROBOT is not a valid Role"},
		{"role as stored", addMessageMutation, add(testserver.Text("user", "x")), "variable.i.text.role", "user is not a valid Role"},
		{"role mixed case", addMessageMutation, add(testserver.Text("User", "x")), "variable.i.text.role", "User is not a valid Role"},
		{"unknown status", addMessageMutation, add(map[string]any{"toolResult": map[string]any{"toolCallId": "c1", "status": "MAYBE"}}),
			"variable.i.toolResult.status", "MAYBE is not a valid ToolResultStatus"},
		{"status lower case", addMessageMutation, add(map[string]any{"toolResult": map[string]any{"toolCallId": "c1", "status": "success", "content": "ok"}}),
			"variable.i.toolResult.status", "success is not a valid ToolResultStatus"},
		{"part kind lower case", addMessageMutation, add(map[string]any{"text": map[string]any{"role": "USER", "parts": []any{
			map[string]any{"kind": "TEXT", "text": "a"}, map[string]any{"kind": "thinking", "text": "b"}}}}),
			"variable.i.text.parts.1.kind", "thinking is not a valid PartKind"},
		{"control kind lower case", addMessageMutation, add(map[string]any{"systemControl": map[string]any{"kind": "mode_change", "from": "a", "to": "b"}}),
			"variable.i.systemControl.kind", "mode_change is not a valid ControlKind"},
		{"recognition mode lower case", addMessageMutation, add(map[string]any{"image": map[string]any{"role": "USER", "url": "https://a.b/c.png", "recognitionMode": "ocr"}}),
			"variable.i.image.recognitionMode", "ocr is not a valid RecognitionMode"},
		{"transcript format lower case", transcript, map[string]any{"c": conv, "f": "markdown"}, "variable.f", "markdown is not a valid TranscriptFormat"},
		{"import format lower case", importConv, map[string]any{"f": "openai_chat"}, "variable.f", "openai_chat is not a valid ImportFormat"},
		{"approval lower case", approval, map[string]any{"m": req.ID, "s": "approved"}, "variable.s", "approved is not a valid ApprovalStatus"},
		{"mode lower case", recognize, map[string]any{"m": img.ID, "mode": "Vision"}, "variable.mode", "Vision is not a valid RecognitionMode"},
		{"agent lower case", recognize, map[string]any{"m": img.ID, "a": "planner"}, "variable.a", "planner is not a valid AgentRole"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := srv.Do(t, tt.query, tt.vars)
			if code := r.ErrorCode(t); code != "GRAPHQL_VALIDATION_FAILED" {
				t.Fatalf("code: got %s, want GRAPHQL_VALIDATION_FAILED (%s)", code, r.Errors[0].Message)
			}
			if r.Status != 400 || len(r.Data) != 0 && string(r.Data) != "null" {
				t.Errorf("got status %d, data %s; want 400 and no data", r.Status, r.Data)
			}
			if msg := r.Errors[0].Message; msg != tt.msg {
				t.Errorf("message: got %q, want %q", msg, tt.msg)
			}
			var path []string
			for _, p := range r.Errors[0].Path {
				path = append(path, fmt.Sprint(p))
			}
			if got := strings.Join(path, "."); got != tt.path {
				t.Errorf("path: got %s, want %s", got, tt.path)
			}
		})
	}
	assertStored(t, srv, 2, 1)
	// The same values spelled exactly are accepted.
	srv.AddMessage(t, conv, map[string]any{"text": map[string]any{"role": "USER", "parts": []any{
		map[string]any{"kind": "TEXT", "text": "a"}, map[string]any{"kind": "THINKING", "text": "b"}}}})
	srv.MustDo(t, approval, map[string]any{"m": req.ID, "s": "APPROVED"}, nil)
	assertStored(t, srv, 3, 1)
}

// TestAddMessageToMissingConversation: NOT_FOUND, and nothing written.
func TestAddMessageToMissingConversation(t *testing.T) {
	t.Parallel()
	srv := testserver.New(t)
	for _, id := range []string{"conv_00000000-0000-0000-0000-000000000000", "conv_nope", "msg_00000000-0000-0000-0000-000000000000", ""} {
		r := srv.Do(t, addMessageMutation, map[string]any{"c": id, "i": testserver.Text("USER", "hi")})
		if code := r.ErrorCode(t); code != "NOT_FOUND" {
			t.Errorf("conversation %q: got %s, want NOT_FOUND", id, code)
		}
	}
	assertStored(t, srv, 0, 0)
}

// TestToolResultConflict: a second result for one call is a CONFLICT, not stored.
func TestToolResultConflict(t *testing.T) {
	t.Parallel()
	srv := testserver.New(t)
	conv := srv.CreateConversation(t, "")
	srv.AddMessage(t, conv, map[string]any{"toolRequest": map[string]any{"toolCalls": []any{
		map[string]any{"id": "once", "name": "ls", "arguments": map[string]any{}}}}})
	result := map[string]any{"toolResult": map[string]any{"toolCallId": "once", "status": "SUCCESS", "content": "ok"}}
	srv.AddMessage(t, conv, result)
	if code := srv.Do(t, addMessageMutation, map[string]any{"c": conv, "i": result}).ErrorCode(t); code != "CONFLICT" {
		t.Errorf("second result: got %s, want CONFLICT", code)
	}
	assertStored(t, srv, 2, 1)
}

// assertStored checks how many messages and tool call rows the database holds.
func assertStored(t *testing.T, srv *testserver.Server, messages, toolCalls int) {
	t.Helper()
	var got struct {
		Messages  int `db:"messages"`
		ToolCalls int `db:"tool_calls"`
		Positions int `db:"positions"`
	}
	err := srv.Store.SQL().Get(&got, `SELECT (SELECT count(*) FROM messages) AS messages,
		(SELECT count(*) FROM tool_calls) AS tool_calls,
		(SELECT coalesce(sum(last_position), 0) FROM conversations) AS positions`)
	if err != nil {
		t.Fatal(err)
	}
	if got.Messages != messages || got.ToolCalls != toolCalls || got.Positions != messages {
		t.Errorf("stored: got %d messages, %d tool calls, %d positions taken; want %d, %d, %d",
			got.Messages, got.ToolCalls, got.Positions, messages, toolCalls, messages)
	}
}
