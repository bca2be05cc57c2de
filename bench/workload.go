package main

import (
	"context"
	"encoding/json"
	"fmt"
	"html"
	"strings"
	"sync/atomic"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/parley-dev/parley/internal/selection"
)

// The workloads. Each is done the same way against the three targets: Parley over HTTP,
// raw SQL from Go with sqlx (the floor: the database work alone), and PostGraphile over
// HTTP on the same tables.

// saveText is the message every save writes: a user's text with Markdown and a
// character that must be escaped, as LLM frontends send them.
const saveText = "Please look at **main.go** and tell me what <it> does."

// saveStored is how Parley keeps saveText (escaped at rest), and so what the raw SQL and
// PostGraphile saves write, so that the three store identical rows.
var (
	saveContent = html.EscapeString(saveText)
	savePayload = `{"parts":[{"kind":"TEXT","content":` + jsonString(saveContent) + `}]}`
)

func jsonString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// rawSaveSQL is the write Parley does for a message, as one statement: take the
// conversation's next position and bump it (under its row lock), insert the row.
const rawSaveSQL = `
	WITH conv AS (
		UPDATE conversations
		SET last_position = last_position + 1, message_count = message_count + 1, updated_at = now()
		WHERE id = $1
		RETURNING id, last_position
	)
	INSERT INTO messages (conversation_id, position, schema_version, kind, role, content, payload)
	SELECT conv.id, conv.last_position, 2, 'text', 'user', $2, $3 FROM conv
	RETURNING id, position, created_at, updated_at`

// rawSave is the raw SQL save: the statement above in a transaction, from Go with sqlx.
func rawSave(db *sqlx.DB, convKeys []string) op {
	return func(ctx context.Context, client int) error {
		tx, err := db.BeginTxx(ctx, nil)
		if err != nil {
			return err
		}
		defer tx.Rollback()
		var row struct {
			ID        string    `db:"id"`
			Position  int       `db:"position"`
			CreatedAt time.Time `db:"created_at"`
			UpdatedAt time.Time `db:"updated_at"`
		}
		if err := tx.GetContext(ctx, &row, rawSaveSQL, convKeys[client], saveContent, savePayload); err != nil {
			return err
		}
		return tx.Commit()
	}
}

// rawSaveNotify is rawSave plus what realtime adds to Parley's write: the NOTIFY that
// tells every replica's subscribers (Parley's channel and payload, sent after the insert
// as Parley sends it). It shows how much of the gap between Parley and raw SQL is the
// notification rather than Parley.
func rawSaveNotify(db *sqlx.DB, convKeys []string) op {
	return func(ctx context.Context, client int) error {
		tx, err := db.BeginTxx(ctx, nil)
		if err != nil {
			return err
		}
		defer tx.Rollback()
		var row struct {
			ID        string    `db:"id"`
			Position  int       `db:"position"`
			CreatedAt time.Time `db:"created_at"`
			UpdatedAt time.Time `db:"updated_at"`
		}
		key := convKeys[client]
		if err := tx.GetContext(ctx, &row, rawSaveSQL, key, saveContent, savePayload); err != nil {
			return err
		}
		payload := fmt.Sprintf(`{"k":"added","c":%q,"m":%q,"p":%d}`, key, row.ID, row.Position)
		if _, err := tx.ExecContext(ctx, `SELECT pg_notify($1, $2)`, notifyChannel, payload); err != nil {
			return err
		}
		return tx.Commit()
	}
}

// notifyChannel is Parley's notification channel (db.NotifyChannel).
const notifyChannel = "parley_messages"

// messageColumns are every column of a message row.
const messageColumns = `id, conversation_id, position, schema_version, kind, role, content,
	tool_calls, tool_results, payload, source_id, created_at, updated_at`

// rawHistorySQL selects the rows of the history page: every column of the
// conversation's first 100 messages.
const rawHistorySQL = `SELECT ` + messageColumns + ` FROM messages
	WHERE conversation_id = $1 ORDER BY position LIMIT 100`

type messageRow struct {
	ID             string    `db:"id"`
	ConversationID string    `db:"conversation_id"`
	Position       int       `db:"position"`
	SchemaVersion  int       `db:"schema_version"`
	Kind           *string   `db:"kind"`
	Role           string    `db:"role"`
	Content        string    `db:"content"`
	ToolCalls      []byte    `db:"tool_calls"`
	ToolResults    []byte    `db:"tool_results"`
	Payload        []byte    `db:"payload"`
	SourceID       *string   `db:"source_id"`
	CreatedAt      time.Time `db:"created_at"`
	UpdatedAt      time.Time `db:"updated_at"`
}

// rawHistory is the raw SQL read: the page's rows selected and scanned with sqlx.
func rawHistory(db *sqlx.DB, convKey string, want int) op {
	return func(ctx context.Context, client int) error {
		var rows []messageRow
		if err := db.SelectContext(ctx, &rows, rawHistorySQL, convKey); err != nil {
			return err
		}
		if len(rows) < want {
			return fmt.Errorf("raw select: %d rows, want %d", len(rows), want)
		}
		return nil
	}
}

// parleyHistoryQuery reads the first 100 messages of a conversation, every field.
const parleyHistoryQuery = selection.HistoryQuery

const parleySaveQuery = `mutation Save($c: ID!, $i: MessageInput!) {
	addMessage(conversationId: $c, input: $i) { cursor node { ... on MessageBase { id position } } } }`

// postgraphileHistoryQuery is the same read through PostGraphile: every column of the
// same rows, in position order. Neither read asks for pageInfo: PostGraphile works out
// hasNextPage by comparing every row of the conversation with the page's cursors, which
// would measure that rather than the read.
const postgraphileHistoryQuery = `query History($id: UUID!) { conversationById(id: $id) {
	messagesByConversationId(first: 100, orderBy: POSITION_ASC) {
		nodes { id conversationId position schemaVersion kind role content toolCalls toolResults payload sourceId createdAt updatedAt }
	} } }`

// postgraphileSaveQuery calls bench.add_message (see postgraphileSetupSQL), which
// PostGraphile exposes as a mutation.
const postgraphileSaveQuery = `mutation Save($c: UUID!, $content: String!, $payload: JSON!) {
	addMessage(input: {conversationId: $c, kind: "text", role: "user", content: $content, payload: $payload}) {
		message { id position } } }`

// postgraphileSetupSQL creates the function the PostGraphile save calls: Parley's write
// as one SQL function, so that it is atomic (PostGraphile's generated CRUD mutations
// cannot bump the conversation and insert in one transaction). It lives in a schema of
// the benchmark's own, never in Parley's migrations.
const postgraphileSetupSQL = `
	CREATE SCHEMA IF NOT EXISTS bench;
	CREATE OR REPLACE FUNCTION bench.add_message(conversation_id uuid, kind text, role text, content text, payload jsonb)
	RETURNS public.messages LANGUAGE sql VOLATILE STRICT AS $$
		WITH conv AS (
			UPDATE public.conversations
			SET last_position = last_position + 1, message_count = message_count + 1, updated_at = now()
			WHERE id = $1
			RETURNING id, last_position
		)
		INSERT INTO public.messages (conversation_id, position, schema_version, kind, role, content, payload)
		SELECT conv.id, conv.last_position, 2, $2, $3, $4, $5 FROM conv
		RETURNING *
	$$;`

// request encodes a GraphQL request body.
func request(query string, vars map[string]any) []byte {
	b, err := json.Marshal(map[string]any{"query": query, "variables": vars})
	if err != nil {
		panic(err)
	}
	return b
}

// parleySave adds saveText to each client's own conversation through Parley.
func parleySave(c *gqlClient, convIDs []string) op {
	bodies := make([][]byte, len(convIDs))
	for i, id := range convIDs {
		bodies[i] = request(parleySaveQuery, map[string]any{"c": id, "i": map[string]any{
			"text": map[string]any{"role": "USER", "content": saveText}}})
	}
	return func(ctx context.Context, client int) error {
		_, err := c.post(ctx, client, bodies[client])
		return err
	}
}

// parleySaveMixed adds the messages of a mixed history (text, tool call, its result,
// file reference, MCP resource, mode change, image) in turn, each client to its own
// conversation.
func parleySaveMixed(c *gqlClient, convIDs []string) op {
	next := make([]atomic.Int64, len(convIDs))
	return func(ctx context.Context, client int) error {
		i := int(next[client].Add(1) - 1)
		body := request(parleySaveQuery, map[string]any{"c": convIDs[client], "i": mixedInput(i)})
		_, err := c.post(ctx, client, body)
		return err
	}
}

// parleyTypename is the transport's floor: one HTTP round trip of { __typename }
// through Parley (its middleware, gqlgen, the response), no database.
func parleyTypename(c *gqlClient) op {
	body := request(`{ __typename }`, nil)
	return func(ctx context.Context, client int) error {
		_, err := c.post(ctx, client, body)
		return err
	}
}

func parleyHistory(c *gqlClient, convID string) op {
	body := request(parleyHistoryQuery, map[string]any{"c": convID})
	return func(ctx context.Context, client int) error {
		_, err := c.post(ctx, client, body)
		return err
	}
}

func postgraphileSave(c *gqlClient, convKeys []string) op {
	bodies := make([][]byte, len(convKeys))
	for i, key := range convKeys {
		bodies[i] = request(postgraphileSaveQuery, map[string]any{"c": key, "content": saveContent,
			"payload": json.RawMessage(savePayload)})
	}
	return func(ctx context.Context, client int) error {
		_, err := c.post(ctx, client, bodies[client])
		return err
	}
}

func postgraphileHistory(c *gqlClient, convKey string) op {
	body := request(postgraphileHistoryQuery, map[string]any{"id": convKey})
	return func(ctx context.Context, client int) error {
		_, err := c.post(ctx, client, body)
		return err
	}
}

// mixedInput returns the i-th message of a mixed history, as Parley's Go benchmarks
// write it: text, a tool call, its result, a file reference, an MCP resource, a mode
// change, an image.
func mixedInput(i int) map[string]any {
	switch i % 7 {
	case 0:
		return map[string]any{"text": map[string]any{"role": "USER",
			"content": fmt.Sprintf("Please look at **item %d** and tell me what <it> does.", i)}}
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
