package server_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/parley-dev/parley/internal/selection"
	"github.com/parley-dev/parley/internal/testserver"
)

// Benchmarks for seed 001's targets (save under 50 ms; 100 messages read under 100 ms),
// each beside a raw SQL reference doing the same database work in the same run, so the
// ratio holds on a noisy machine. Run: make bench-go.

// mixedInput returns the i-th message of a mixed history: text, a tool call, its result,
// a file reference, an MCP resource, a mode change, an image.
func mixedInput(i int) map[string]any {
	switch i % 7 {
	case 0:
		return testserver.Text("USER", fmt.Sprintf("Please look at **item %d** and tell me what <it> does.", i))
	case 1:
		return map[string]any{"toolRequest": map[string]any{"content": "Reading it.", "toolCalls": []any{
			map[string]any{"id": fmt.Sprintf("call_%d", i), "name": "read_file", "arguments": map[string]any{"path": "main.go", "n": i}}}}}
	case 2:
		return map[string]any{"toolResult": map[string]any{"toolCallId": fmt.Sprintf("call_%d", i-1), "status": "SUCCESS",
			"output": map[string]any{"lines": 120, "ok": true}, "content": strings.Repeat("package main\n", 20), "durationMs": 4}}
	case 3:
		return map[string]any{"fileReference": map[string]any{"path": "src/main.go", "startLine": 1, "endLine": 40}}
	case 4:
		return map[string]any{"mcpResource": map[string]any{"serverName": "docs", "resourceUri": "file:///schema.sql",
			"content": "CREATE TABLE t (a int);", "mimeType": "application/sql"}}
	case 5:
		return map[string]any{"systemControl": map[string]any{"kind": "MODE_CHANGE", "from": "plan", "to": "act"}}
	default:
		return map[string]any{"image": map[string]any{"url": "https://example.com/screenshot.png"}}
	}
}

// BenchmarkAddMessage is addMessage over HTTP, cycling through the variants.
func BenchmarkAddMessage(b *testing.B) {
	srv := testserver.New(b)
	conv := srv.CreateConversation(b, "bench")
	const q = `mutation($c: ID!, $i: MessageInput!) { addMessage(conversationId: $c, input: $i) { cursor node { ... on MessageBase { id position } } } }`
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		if r := srv.Do(b, q, map[string]any{"c": conv, "i": mixedInput(i)}); len(r.Errors) > 0 {
			b.Fatal(r.Errors)
		}
	}
}

// BenchmarkAddMessageRawSQL is the reference: the same insert and conversation bump, in
// one transaction, from Go with sqlx.
func BenchmarkAddMessageRawSQL(b *testing.B) {
	srv := testserver.New(b)
	conv := strings.TrimPrefix(srv.CreateConversation(b, "bench"), "conv_")
	db := srv.Store.SQL()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		tx, err := db.Beginx()
		if err != nil {
			b.Fatal(err)
		}
		var pos int
		if err := tx.Get(&pos, `UPDATE conversations SET last_position = last_position + 1,
			message_count = message_count + 1, updated_at = now() WHERE id = $1 RETURNING last_position`, conv); err != nil {
			b.Fatal(err)
		}
		if _, err := tx.Exec(`INSERT INTO messages (conversation_id, position, kind, role, content, payload)
			VALUES ($1, $2, 'text', 'user', $3, $4)`, conv, pos, "Please look at item", `{"parts":[{"kind":"TEXT","content":"Please look at item"}]}`); err != nil {
			b.Fatal(err)
		}
		if err := tx.Commit(); err != nil {
			b.Fatal(err)
		}
	}
}

// historyQuery reads 100 messages selecting every variant's fields.
const historyQuery = `query($c: ID!) { conversation(id: $c) { messages(first: 100) { edges { cursor node {` + selection.MessageFields + `} } } } }`

func seedHistory(b *testing.B, srv *testserver.Server, n int) string {
	conv := srv.CreateConversation(b, "history")
	for i := range n {
		srv.AddMessage(b, conv, mixedInput(i))
	}
	return conv
}

// BenchmarkReadHistory100 is conversation.messages(first: 100) over HTTP.
func BenchmarkReadHistory100(b *testing.B) {
	srv := testserver.New(b)
	conv := seedHistory(b, srv, 100)
	b.ResetTimer()
	for b.Loop() {
		if r := srv.Do(b, historyQuery, map[string]any{"c": conv}); len(r.Errors) > 0 {
			b.Fatal(r.Errors)
		}
	}
}

// BenchmarkReadHistory100RawSQL is the reference: the same 100 rows selected with sqlx.
func BenchmarkReadHistory100RawSQL(b *testing.B) {
	srv := testserver.New(b)
	conv := strings.TrimPrefix(seedHistory(b, srv, 100), "conv_")
	db := srv.Store.SQL()
	type row struct {
		ID, Kind, Role, Content string
		Position                int
		ToolCalls, ToolResults  []byte
		Payload                 []byte
	}
	b.ResetTimer()
	for b.Loop() {
		var rows []row
		if err := db.Select(&rows, `SELECT id, kind, role, content, position, tool_calls AS toolcalls,
			tool_results AS toolresults, payload FROM messages WHERE conversation_id = $1 ORDER BY position LIMIT 100`, conv); err != nil {
			b.Fatal(err)
		}
		if len(rows) != 100 {
			b.Fatalf("read %d rows", len(rows))
		}
	}
}
