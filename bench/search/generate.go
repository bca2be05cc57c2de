package main

import (
	"context"
	"database/sql"
	"fmt"
	"io"
	"time"

	"github.com/lib/pq"
)

// generate makes conversations conversations of perConv messages each: half of them the
// heavy owner's, the rest spread over owner0..owner98, all in SQL (generate_series,
// INSERT … SELECT, a batch of conversations a statement), nothing going through Go.
//
// Each message's search vector is computed in the same INSERT by the function the
// trigger calls (message_search_vector), with the session's triggers off
// (session_replication_role, the cluster is the benchmark's own and it runs as a
// superuser): no trigger call, no foreign-key check per row. checkVectors then asserts on
// a sample that the trigger computes the same vectors. The GIN index is dropped first;
// run builds it after the load (its definition, the migration's, is returned).
func generate(ctx context.Context, raw *sql.DB, conversations, perConv int, progress io.Writer) (indexDef string, err error) {
	if err := raw.QueryRowContext(ctx, `SELECT indexdef FROM pg_indexes WHERE indexname = 'messages_search_idx'`).Scan(&indexDef); err != nil {
		return "", fmt.Errorf("read the search index's definition: %w", err)
	}
	conn, err := raw.Conn(ctx)
	if err != nil {
		return "", err
	}
	defer conn.Close()
	for _, stmt := range []string{
		`DROP INDEX messages_search_idx`,
		// One seed for the session's random(): the same history every run.
		`SELECT setseed(0.42)`,
		`SET session_replication_role = replica`,
		// words(n) draws n words of the vocabulary, Zipf-like: the cube of a uniform draw
		// indexes it, most frequent first.
		`CREATE FUNCTION bench_words(vocab text[], n integer) RETURNS text LANGUAGE sql VOLATILE
			RETURN (SELECT string_agg(vocab[1 + floor(array_length(vocab, 1) * random() ^ 3)::integer], ' ') FROM generate_series(1, n))`,
		// A deterministic draw in [0, 1) for a conversation's position: a tool request and
		// its result (the next position) agree on the tool.
		`CREATE FUNCTION bench_draw(ci integer, p integer) RETURNS float8 LANGUAGE sql IMMUTABLE
			RETURN (hashint8(ci::bigint * 1000000 + p) & 2147483647)::float8 / 2147483648`,
	} {
		if _, err := conn.ExecContext(ctx, stmt); err != nil {
			return "", fmt.Errorf("%s: %w", stmt[:min(len(stmt), 40)], err)
		}
	}
	if _, err := conn.ExecContext(ctx, `INSERT INTO conversations (owner, title, created_at, updated_at, last_position, message_count)
		SELECT CASE WHEN i % 2 = 0 THEN 'heavy' ELSE 'owner' || (i % 99) END, 'Session ' || i,
			now() - make_interval(days => 200) + make_interval(mins => i * 20), now() - make_interval(days => 200) + make_interval(mins => i * 20 + 60),
			$2, $2
		FROM generate_series(1, $1) i`, conversations, perConv); err != nil {
		return "", err
	}
	const batch = 500 // conversations a statement
	for start := 0; start < conversations; start += batch {
		t0 := time.Now()
		if _, err := conn.ExecContext(ctx, generateSQL, pq.Array(vocabulary()), pq.Array(tools), pq.Array(paths), perConv, start, batch); err != nil {
			return "", fmt.Errorf("messages of conversations %d to %d: %w", start, start+batch, err)
		}
		fmt.Fprintf(progress, "generated conversations %d-%d in %s\n", start+1, min(start+batch, conversations), time.Since(t0).Round(time.Millisecond))
	}
	for _, stmt := range []string{
		`SET session_replication_role = origin`,
		`DROP FUNCTION bench_words(text[], integer)`,
		`DROP FUNCTION bench_draw(integer, integer)`,
	} {
		if _, err := conn.ExecContext(ctx, stmt); err != nil {
			return "", err
		}
	}
	return indexDef, nil
}

// generateSQL inserts the messages of conversations $5+1 to $5+$6 (in order of
// creation), $4 each, from the vocabulary $1, tools $2 and paths $3: a cycle of ten, a
// user prompt, an assistant reply (thinking first), a tool call and its result (one in
// seven an error, a third of those a timeout), a file reference.
const generateSQL = `
WITH c AS (
	SELECT id, created_at, ci FROM (SELECT id, created_at, row_number() OVER (ORDER BY created_at) AS ci FROM conversations) c
	WHERE ci > $5 AND ci <= $5 + $6),
m AS (
	SELECT c.id AS conversation_id, p, c.created_at + make_interval(secs => p * 30) AS at, x.*
	FROM c CROSS JOIN generate_series(1, $4) p
	CROSS JOIN LATERAL (
		SELECT 'text' AS kind, 'user' AS role, w.t AS content,
			jsonb_build_object('parts', jsonb_build_array(jsonb_build_object('kind', 'TEXT', 'content', w.t))) AS payload,
			NULL::jsonb AS tool_calls, NULL::jsonb AS tool_results, NULL::jsonb AS provenance
		FROM (SELECT bench_words($1, 20 + floor(random() * 40)::integer + 0 * p) AS t) w WHERE p % 10 IN (1, 6)
		UNION ALL
		SELECT 'text', 'assistant', w.t,
			jsonb_build_object('parts', jsonb_build_array(jsonb_build_object('kind', 'THINKING', 'content', w.th), jsonb_build_object('kind', 'TEXT', 'content', w.t))),
			NULL, NULL,
			CASE WHEN w.r < 1.0 / 3 THEN '{"provider": "openai", "model": "gpt-5"}' ELSE '{"provider": "anthropic", "model": "claude-sonnet-4-5"}' END::jsonb
		FROM (SELECT bench_words($1, 30 + floor(random() * 60)::integer + 0 * p) AS t, bench_words($1, 20 + floor(random() * 30)::integer + 0 * p) AS th,
			random() + 0 * p AS r) w WHERE p % 10 IN (2, 7, 0)
		UNION ALL
		SELECT 'tool_request', 'invocation', '', '{}', jsonb_build_array(jsonb_build_object('id', 'call_' || p,
				'name', ($2::text[])[1 + floor(array_length($2, 1) * bench_draw(c.ci::integer, p) ^ 3)::integer],
				'arguments', jsonb_build_object('path', ($3::text[])[1 + floor(random() * array_length($3, 1))::integer + 0 * p], 'command', bench_words($1, 6 + 0 * p)),
				'approvalStatus', 'APPROVED')),
			NULL, NULL
		WHERE p % 10 IN (3, 8)
		UNION ALL
		SELECT 'tool_result', 'result', '', '{}', NULL,
			jsonb_build_array(jsonb_build_object('toolCallId', 'call_' || (p - 1),
				'toolName', ($2::text[])[1 + floor(array_length($2, 1) * bench_draw(c.ci::integer, p - 1) ^ 3)::integer],
				'status', CASE WHEN e.err THEN 'ERROR' ELSE 'SUCCESS' END,
				'output', bench_words($1, 30 + floor(random() * 120)::integer + 0 * p))
				|| CASE WHEN e.err THEN jsonb_build_object('error', jsonb_build_object('message',
					CASE WHEN e.timeout THEN 'timeout after 30s: ' ELSE 'exit status 1: ' END || bench_words($1, 8 + 0 * p), 'recoverable', true))
					ELSE '{}' END),
			NULL
		FROM (SELECT random() + 0 * p < 1.0 / 7 AS err, random() + 0 * p < 1.0 / 3 AS timeout) e WHERE p % 10 IN (4, 9)
		UNION ALL
		SELECT 'file_reference', 'document', '', jsonb_build_object('path', ($3::text[])[1 + floor(random() * array_length($3, 1))::integer + 0 * p],
				'resolution', jsonb_build_object('Status', 'COMPLETED', 'Content', bench_words($1, 80 + 0 * p), 'ResolvedAt', now())),
			NULL, NULL, NULL
		WHERE p % 10 = 5) x)
INSERT INTO messages (conversation_id, position, segment, depth, kind, role, content, payload, tool_calls, tool_results, provenance,
	created_at, updated_at, search_vector)
SELECT conversation_id, p, 0, p, kind, role, content, payload, tool_calls, tool_results, provenance, at, at,
	message_search_vector((SELECT config FROM search_config), kind, content, payload, tool_calls, tool_results)
FROM m`

// checkVectors asserts that the generated vectors are the trigger's: it makes the
// trigger recompute a sample of n messages' (in a transaction rolled back) and counts
// those that differ.
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
			UPDATE messages m SET kind = m.kind FROM sample s WHERE m.id = s.id RETURNING m.id, m.search_vector)
		SELECT count(*), count(*) FILTER (WHERE r.search_vector IS DISTINCT FROM s.search_vector)
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
