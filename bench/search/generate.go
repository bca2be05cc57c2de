package main

import (
	"context"
	"database/sql"
	"fmt"
	"io"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/lib/pq"
)

// generate makes conversations conversations of perConv messages each: half of them the
// heavy owner's, the rest spread over owner0..owner98, in SQL (generate_series,
// INSERT … SELECT, a batch of conversations a statement) from pieces of text made in Go
// and copied in once (copyPieces).
//
// Each message's search vector is computed in the same INSERT by the function the
// trigger calls (message_search_vector), with the session's triggers off
// (session_replication_role, the cluster is the benchmark's own and it runs as a
// superuser): no trigger call, no foreign-key check per row. checkVectors then asserts on
// a sample that the trigger computes the same vectors and owners. The search indexes
// are dropped first; run builds them after the load (their definitions, the
// migrations', are returned).
func generate(ctx context.Context, raw *sql.DB, conversations, perConv int, progress io.Writer) (indexes []searchIndex, err error) {
	rows, err := raw.QueryContext(ctx, `SELECT indexname, indexdef FROM pg_indexes
		WHERE tablename = 'messages' AND indexname LIKE 'messages\_search%' ORDER BY indexname`)
	if err != nil {
		return nil, fmt.Errorf("read the search indexes' definitions: %w", err)
	}
	for rows.Next() {
		var ix searchIndex
		if err := rows.Scan(&ix.name, &ix.def); err != nil {
			return nil, err
		}
		indexes = append(indexes, ix)
	}
	if err := rows.Err(); err != nil || len(indexes) == 0 {
		return nil, fmt.Errorf("read the search indexes' definitions: %d found: %v", len(indexes), err)
	}
	conn, err := raw.Conn(ctx)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	for _, ix := range indexes {
		if _, err := conn.ExecContext(ctx, `DROP INDEX `+ix.name); err != nil {
			return nil, err
		}
	}
	for _, stmt := range []string{
		// One seed for the session's random(): the same history every run.
		`SELECT setseed(0.42)`,
		`SET session_replication_role = replica`,
		`CREATE TABLE bench_text (i integer PRIMARY KEY, t text NOT NULL)`,
	} {
		if _, err := conn.ExecContext(ctx, stmt); err != nil {
			return nil, fmt.Errorf("%s: %w", stmt[:min(len(stmt), 40)], err)
		}
	}
	if err := copyPieces(ctx, conn); err != nil {
		return nil, fmt.Errorf("pieces of text: %w", err)
	}
	if _, err := conn.ExecContext(ctx, `INSERT INTO conversations (owner, title, created_at, updated_at, last_position, message_count)
		SELECT CASE WHEN i % 2 = 0 THEN 'heavy' ELSE 'owner' || (i % 99) END, 'Session ' || i,
			now() - make_interval(days => 200) + make_interval(mins => i * 20), now() - make_interval(days => 200) + make_interval(mins => i * 20 + 60),
			$2, $2
		FROM generate_series(1, $1) i`, conversations, perConv); err != nil {
		return nil, err
	}
	const batch = 500 // conversations a statement
	for start := 0; start < conversations; start += batch {
		t0 := time.Now()
		if _, err := conn.ExecContext(ctx, generateSQL, pq.Array(tools), pq.Array(paths), perConv, start, batch); err != nil {
			return nil, fmt.Errorf("messages of conversations %d to %d: %w", start, start+batch, err)
		}
		fmt.Fprintf(progress, "generated conversations %d-%d in %s\n", start+1, min(start+batch, conversations), time.Since(t0).Round(time.Millisecond))
	}
	for _, stmt := range []string{`SET session_replication_role = origin`, `DROP TABLE bench_text`} {
		if _, err := conn.ExecContext(ctx, stmt); err != nil {
			return nil, err
		}
	}
	return indexes, nil
}

// searchIndex is one of the search's indexes: its name and definition.
type searchIndex struct{ name, def string }

// pieces is how many pieces of text the messages are made of: each of 10 to 60 words
// drawn Zipf-like from the vocabulary (the cube of a uniform draw indexes it, most
// frequent first). Drawing every word of a million messages in SQL took far longer than
// the rest of the load; a message's text is one to three pieces chosen by a hash of its
// place, so that texts rarely repeat while words keep their frequencies.
const pieces = 50_000

// copyPieces fills bench_text with the pieces, by COPY.
func copyPieces(ctx context.Context, conn *sql.Conn) error {
	tx, err := conn.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	stmt, err := tx.PrepareContext(ctx, pq.CopyIn("bench_text", "i", "t"))
	if err != nil {
		return err
	}
	rng := rand.New(rand.NewPCG(7, 11))
	vocab := vocabulary()
	for i := range pieces {
		w := make([]string, 10+rng.IntN(51))
		for j := range w {
			w[j] = vocab[int(float64(len(vocab))*pow3(rng.Float64()))]
		}
		if _, err := stmt.ExecContext(ctx, i, strings.Join(w, " ")); err != nil {
			return err
		}
	}
	if _, err := stmt.ExecContext(ctx); err != nil {
		return err
	}
	if err := stmt.Close(); err != nil {
		return err
	}
	return tx.Commit()
}

// piece is a piece of text for slot n of the message at position p of the conversation
// numbered ci (the generateSQL's names): a hash, not random(), so that the scalar
// subquery is evaluated per row.
func piece(n int) string {
	return fmt.Sprintf(`(SELECT t FROM bench_text WHERE i = ((hashint8(c.ci * 1000000 + p * 16 + %d) & 2147483647) %% %d))`, n, pieces)
}

// generateSQL inserts the messages of conversations $4+1 to $4+$5 (in order of
// creation), $3 each, with tools $1 and paths $2: a cycle of ten, a user prompt, an
// assistant reply (thinking first), a tool call and its result (one in seven an error, a
// third of those a timeout), a file reference. A request and its result (the next
// position) agree on the tool by a hash of the request's place.
var generateSQL = strings.NewReplacer("PIECE0", piece(0), "PIECE1", piece(1), "PIECE2", piece(2), "PIECE3", piece(3)).Replace(`
WITH c AS (
	SELECT id, owner, created_at, ci FROM (SELECT id, owner, created_at, row_number() OVER (ORDER BY created_at) AS ci FROM conversations) c
	WHERE ci > $4 AND ci <= $4 + $5),
m AS (
	SELECT c.id AS conversation_id, c.owner, p, c.created_at + make_interval(secs => p * 30) AS at, x.*
	FROM c CROSS JOIN generate_series(1, $3) p
	CROSS JOIN LATERAL (
		SELECT 'text' AS kind, 'user' AS role, PIECE0 AS content, NULL::jsonb AS tool_calls, NULL::jsonb AS tool_results, NULL::jsonb AS provenance,
			NULL::text AS thinking
		WHERE p % 10 IN (1, 6)
		UNION ALL
		SELECT 'text', 'assistant', concat_ws(' ', PIECE0, PIECE1), NULL, NULL,
			CASE WHEN random() + 0 * p < 1.0 / 3 THEN '{"provider": "openai", "model": "gpt-5"}' ELSE '{"provider": "anthropic", "model": "claude-sonnet-4-5"}' END::jsonb,
			PIECE2
		WHERE p % 10 IN (2, 7, 0)
		UNION ALL
		SELECT 'tool_request', 'invocation', '', jsonb_build_array(jsonb_build_object('id', 'call_' || p,
				'name', ($1::text[])[1 + floor(array_length($1, 1) * ((hashint8(c.ci * 1000000 + p) & 2147483647)::float8 / 2147483648) ^ 3)::integer],
				'arguments', jsonb_build_object('path', ($2::text[])[1 + floor(random() * array_length($2, 1))::integer + 0 * p],
					'command', array_to_string((string_to_array(PIECE0, ' '))[1:6], ' ')),
				'approvalStatus', 'APPROVED')),
			NULL, NULL, NULL
		WHERE p % 10 IN (3, 8)
		UNION ALL
		SELECT 'tool_result', 'result', '', NULL,
			jsonb_build_array(jsonb_build_object('toolCallId', 'call_' || (p - 1),
				'toolName', ($1::text[])[1 + floor(array_length($1, 1) * ((hashint8(c.ci * 1000000 + p - 1) & 2147483647)::float8 / 2147483648) ^ 3)::integer],
				'status', CASE WHEN e.err THEN 'ERROR' ELSE 'SUCCESS' END,
				'output', concat_ws(' ', PIECE0, CASE WHEN e.n > 1 THEN PIECE1 END, CASE WHEN e.n > 2 THEN PIECE2 END))
				|| CASE WHEN e.err THEN jsonb_build_object('error', jsonb_build_object('message',
					CASE WHEN e.timeout THEN 'timeout after 30s: ' ELSE 'exit status 1: ' END
						|| array_to_string((string_to_array(PIECE3, ' '))[1:8], ' '), 'recoverable', true))
					ELSE '{}' END),
			NULL, NULL
		FROM (SELECT random() + 0 * p < 1.0 / 7 AS err, random() + 0 * p < 1.0 / 3 AS timeout, 1 + floor(3 * random() + 0 * p) AS n) e
		WHERE p % 10 IN (4, 9)
		UNION ALL
		SELECT 'file_reference', 'document', '', NULL, NULL, NULL, concat_ws(' ', PIECE0, PIECE1)
		WHERE p % 10 = 5) x),
r AS (
	SELECT m.*, CASE
		WHEN kind = 'text' AND thinking IS NULL THEN jsonb_build_object('parts', jsonb_build_array(jsonb_build_object('kind', 'TEXT', 'content', content)))
		WHEN kind = 'text' THEN jsonb_build_object('parts', jsonb_build_array(jsonb_build_object('kind', 'THINKING', 'content', thinking),
			jsonb_build_object('kind', 'TEXT', 'content', content)))
		WHEN kind = 'file_reference' THEN jsonb_build_object('path', ($2::text[])[1 + floor(random() * array_length($2, 1))::integer + 0 * p],
			'resolution', jsonb_build_object('Status', 'COMPLETED', 'Content', thinking, 'ResolvedAt', now()))
		ELSE '{}' END AS payload
	FROM m)
INSERT INTO messages (conversation_id, owner, position, segment, depth, kind, role, content, payload, tool_calls, tool_results, provenance,
	created_at, updated_at, search_vector)
SELECT conversation_id, owner, p, 0, p, kind, role, content, payload, tool_calls, tool_results, provenance, at, at,
	message_search_vector((SELECT config FROM search_config), kind, content, payload, tool_calls, tool_results)
FROM r`)

// checkVectors asserts that the generated vectors are the trigger's: it makes the
// trigger recompute a sample of n messages' (in a transaction rolled back) and counts
// those that differ, or whose owner is not their conversation's.
func checkVectors(ctx context.Context, raw *sql.DB, n int) error {
	tx, err := raw.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	var sampled, differ int
	if err := tx.QueryRowContext(ctx, `WITH sample AS (
			SELECT id, search_vector FROM messages TABLESAMPLE SYSTEM (1) REPEATABLE (7) LIMIT $1),
		redone AS (
			UPDATE messages m SET kind = m.kind FROM sample s WHERE m.id = s.id RETURNING m.id, m.search_vector),
		reinserted AS (
			SELECT s.id, (SELECT owner FROM conversations c WHERE c.id = m.conversation_id) AS want, m.owner
			FROM sample s JOIN messages m ON m.id = s.id)
		SELECT count(*), count(*) FILTER (WHERE r.search_vector IS DISTINCT FROM s.search_vector
			OR (SELECT owner IS DISTINCT FROM want FROM reinserted o WHERE o.id = s.id))
		FROM sample s JOIN redone r USING (id)`, n).Scan(&sampled, &differ); err != nil {
		return fmt.Errorf("check vectors: %w", err)
	}
	if sampled == 0 || differ > 0 {
		return fmt.Errorf("check vectors: %d of %d sampled messages have a vector other than the trigger's", differ, sampled)
	}
	return nil
}

var tools = []string{"bash", "read_file", "write_file", "edit_file", "grep", "glob", "mcp__github__search_issues", "mcp__linear__get_issue", "web_fetch", "list_dir"}

var paths = []string{"internal/pgtest/pgtest.go", "db/search.go", "graph/schema/search.graphqls", "cmd/parley/main.go", "README.md",
	"server/server.go", "config/settings.go", "web/src/App.tsx", "deploy/k8s/deployment.yaml", "scripts/bench.sh"}
