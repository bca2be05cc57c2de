package db_test

import (
	"database/sql/driver"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"

	"github.com/parley-dev/parley"
	"github.com/parley-dev/parley/db"
)

// searchPlanConversations is the history of the search plan tests: 400 conversations of
// 50 messages each, half of them owner heavy's, the rest spread over 20 others. One
// message in five is a tool result (bash, grep or read_file; one in seven an error, a
// third of those a timeout, whatever the tool); the others are text where "error" is in one in three,
// "timeout" in one in ten and "zanzibar" in one in 50 ("deploy configuration" one in 40). The words fall on every
// conversation alike, so a query of the heavy owner has matches in most of them.
const searchPlanConversations = 400

// searchHistorySQL inserts the conversations numbered $1 to $2 and their messages (the
// trigger computes their vectors and owners).
const searchHistorySQL = `
WITH c AS (
	INSERT INTO conversations (owner, title, last_position, message_count, created_at, updated_at)
	SELECT CASE WHEN g % 2 = 0 THEN 'heavy' ELSE 'other' || (g % 20) END, 'c' || g, 50, 50,
		now() - make_interval(hours => 1000 - g), now() - make_interval(hours => 1000 - g) + interval '50 minutes'
	FROM generate_series($1::int, $2::int) g
	RETURNING id, created_at)
INSERT INTO messages (conversation_id, position, depth, kind, role, content, tool_results, created_at)
SELECT c.id, p, p, CASE WHEN p % 5 = 0 THEN 'tool_result' ELSE 'text' END, CASE WHEN p % 5 = 0 THEN 'result' ELSE 'user' END,
	CASE WHEN p % 5 = 0 THEN '' ELSE concat_ws(' ', 'word' || (h % 997), 'word' || (h / 997 % 991),
		CASE WHEN h % 3 = 0 THEN 'error' END, CASE WHEN h % 10 = 1 THEN 'timeout' END,
		CASE WHEN h % 50 = 3 THEN 'zanzibar' END, CASE WHEN h % 40 = 7 THEN 'deploy configuration' END) END,
	CASE WHEN p % 5 = 0 THEN jsonb_build_array(jsonb_build_object('toolCallId', 'call_' || p,
		'toolName', (ARRAY['bash', 'grep', 'read_file'])[1 + h % 3], 'status', CASE WHEN h % 7 = 0 THEN 'ERROR' ELSE 'SUCCESS' END,
		'output', 'word' || (h % 991)) || CASE WHEN h % 7 = 0 THEN jsonb_build_object('error', jsonb_build_object('message',
			CASE WHEN h / 3 % 3 = 0 THEN 'timeout after 30s' ELSE 'exit status 1' END)) ELSE '{}' END) END,
	c.created_at + make_interval(mins => p)
FROM c CROSS JOIN generate_series(1, 50) p
CROSS JOIN LATERAL (SELECT (hashtext(c.id::text || p) & 2147483647)::bigint AS h) x`

// searchPlanQueries are the benchmark's queries that migrations 000021's and 000022's indexes serve
// (bench/search), each with the most rows of messages its plan may read for the heavy
// owner beyond the page's own reads, as a fraction of the owner's matches of the words
// (before filters).
var searchPlanQueries = []struct {
	name  string
	req   parley.SearchRequest
	index string
	bound float64
	// custom: only the custom plan on statistics holds this. Before an ANALYZE, or in a
	// generic plan, Postgres cannot tell a common word from a rare one (it takes every
	// word as rare, a default selectivity), and reads the matches through the search
	// index and sorts them, which is what a rare word wants. Parley's statements are
	// lib/pq's unnamed ones, always planned for their arguments, and autovacuum
	// analyzes a table that grows.
	custom bool
}{
	// The filtered query reads the owner's bash errors that have "timeout", found in the
	// search index by their keys and words together (search_tool_keys, migration 000022):
	// not every match of "timeout" (a tenth of the text), nor every bash error, whose
	// words 000021's b-tree made it read to check (three times the hits).
	{"filtered", parley.SearchRequest{Query: "timeout", Filter: parley.SearchFilter{ToolNames: []string{"bash"}, ToolResultStatus: parley.ToolError}},
		"messages_search_idx", 0.06, false},
	// NEWEST of a common word reads the owner's messages newest first
	// (messages_search_newest_idx) until it has the page, about three for each hit of
	// "error": not every match.
	{"common word, newest first", parley.SearchRequest{Query: "error", Order: parley.SearchByNewest}, "messages_search_newest_idx", 0.1, true},
}

// TestSearchPlansReadTheOwnersMatches EXPLAINs the benchmark's searches as Search runs
// them (db.SearchSQL), prepared, with the plan Postgres makes for the arguments (custom,
// what lib/pq's unnamed statements always get) and the one it makes once for all
// (generic), on tables never analyzed, on stale statistics (analyzed when they held one
// conversation in 20, then grown) and analyzed. A tool result filter must read the
// owner's results of that tool and status through their index, not every match of the
// words, in every plan; NEWEST of a common word must read the owner's messages newest
// first and stop at the page, not read and sort every match (1.6 s for 47,632 at
// 1,000,000 messages), in the custom plan on statistics (see searchPlanQueries).
func TestSearchPlansReadTheOwnersMatches(t *testing.T) {
	t.Parallel()
	for _, stats := range []string{"never analyzed", "stale then analyzed"} {
		t.Run(stats, func(t *testing.T) {
			t.Parallel()
			d := openDB(t)
			sql, ctx := d.SQL(), t.Context()
			exec := func(q string, args ...any) {
				t.Helper()
				if _, err := sql.ExecContext(ctx, q, args...); err != nil {
					t.Fatalf("%s: %v", q, err)
				}
			}
			exec(`ALTER TABLE messages SET (autovacuum_enabled = false)`)
			exec(`ALTER TABLE conversations SET (autovacuum_enabled = false)`)
			if stats == "never analyzed" {
				exec(searchHistorySQL, 1, searchPlanConversations)
				checkSearchPlans(t, d, stats)
				return
			}
			exec(searchHistorySQL, 1, searchPlanConversations/20)
			exec(`ANALYZE messages, conversations`)
			exec(searchHistorySQL, searchPlanConversations/20+1, searchPlanConversations)
			checkSearchPlans(t, d, "stale")
			exec(`ANALYZE messages, conversations`)
			checkSearchPlans(t, d, "analyzed")
		})
	}
}

func checkSearchPlans(t *testing.T, d *db.DB, stats string) {
	t.Helper()
	ctx := t.Context()
	conn, err := d.SQL().Connx(ctx) // PREPARE and SET hold for one session
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	defer conn.ExecContext(ctx, `DEALLOCATE ALL`) // the connection goes back to the pool
	for i, q := range searchPlanQueries {
		stmt, args, err := d.SearchSQL(ctx, "heavy", q.req)
		if err != nil {
			t.Fatalf("%s: %v", q.name, err)
		}
		name := fmt.Sprintf("search_%d", i)
		if _, err := conn.ExecContext(ctx, `PREPARE `+name+` AS `+stmt); err != nil {
			t.Fatalf("%s: prepare: %v", q.name, err)
		}
		matches := ownerMatches(t, conn, q.req)
		if matches < 100 {
			t.Fatalf("%s: the heavy owner has %d matches, want at least 100 for the test to tell", q.name, matches)
		}
		for _, mode := range []string{"force_custom_plan", "force_generic_plan"} {
			if _, err := conn.ExecContext(ctx, `SET plan_cache_mode = `+mode); err != nil {
				t.Fatal(err)
			}
			var out string
			if err := conn.GetContext(ctx, &out, `EXPLAIN (ANALYZE, FORMAT JSON) EXECUTE `+name+`(`+literals(t, args)+`)`); err != nil {
				t.Fatalf("%s, %s, %s: %v", stats, q.name, mode, err)
			}
			var plans []struct{ Plan planNode }
			if err := json.Unmarshal([]byte(out), &plans); err != nil || len(plans) != 1 {
				t.Fatalf("%s, %s, %s: EXPLAIN output %q: %v", stats, q.name, mode, out, err)
			}
			root := plans[0].Plan
			if root.Rows == 0 {
				t.Errorf("%s, %s, %s: no hits:\n%s", stats, q.name, mode, &root)
			}
			if q.custom && (stats == "never analyzed" || mode != "force_custom_plan") {
				continue
			}
			read := 0
			for _, s := range root.find(func(n *planNode) bool { return n.Relation == "messages" }) {
				read += (s.Rows + s.Removed) * max(s.Loops, 1)
			}
			// The page's rows are read again by id, and each hit's branch leaf found.
			const page = 3 * (parley.DefaultSearchPageSize + 1)
			if limit := int(q.bound*float64(matches)) + page; read > limit {
				t.Errorf("%s, %s, %s: read %d rows of messages, want at most %d (the heavy owner has %d matches):\n%s",
					stats, q.name, mode, read, limit, matches, &root)
			}
			if len(root.find(func(n *planNode) bool { return n.Index == q.index && n.Loops > 0 })) == 0 {
				t.Errorf("%s, %s, %s: %s not used:\n%s", stats, q.name, mode, q.index, &root)
			}
		}
	}
}

// ownerMatches counts the heavy owner's messages matching req's words, filters left out.
func ownerMatches(t *testing.T, conn *sqlx.Conn, req parley.SearchRequest) int {
	t.Helper()
	sq, err := parley.ParseSearchQuery(req.Query, req.Prefix)
	if err != nil {
		t.Fatal(err)
	}
	var n int
	if err := conn.GetContext(t.Context(), &n, `SELECT count(*) FROM messages m JOIN conversations c ON c.id = m.conversation_id AND c.owner = 'heavy'
		WHERE m.search_vector @@ (CASE WHEN $2 = '' THEN websearch_to_tsquery('simple', $1)
			ELSE websearch_to_tsquery('simple', $1) && to_tsquery('simple', '''' || $2 || ''':*') END)`, sq.Web, sq.Prefix); err != nil {
		t.Fatal(err)
	}
	return n
}

// literals spells args as SQL literals, for EXECUTE.
func literals(t *testing.T, args []any) string {
	t.Helper()
	out := make([]string, len(args))
	for i, a := range args {
		if v, ok := a.(driver.Valuer); ok {
			var err error
			if a, err = v.Value(); err != nil {
				t.Fatal(err)
			}
		}
		switch v := a.(type) {
		case string:
			out[i] = pq.QuoteLiteral(v)
		case []byte:
			out[i] = pq.QuoteLiteral(string(v))
		case int, int64, float32, float64, bool:
			out[i] = fmt.Sprint(v)
		case time.Time:
			out[i] = pq.QuoteLiteral(v.Format(time.RFC3339Nano))
		default:
			t.Fatalf("argument %d: %T has no literal here", i+1, a)
		}
	}
	return strings.Join(out, ", ")
}

// String is the plan as an indented tree, one node a line.
func (n *planNode) String() string {
	var b strings.Builder
	var walk func(n *planNode, depth int)
	walk = func(n *planNode, depth int) {
		fmt.Fprintf(&b, "%s%s", strings.Repeat("  ", depth), n.Type)
		if n.Relation != "" {
			fmt.Fprintf(&b, " on %s", n.Relation)
		}
		if n.Index != "" {
			fmt.Fprintf(&b, " using %s", n.Index)
		}
		fmt.Fprintf(&b, " (rows %d, removed %d, loops %d)", n.Rows, n.Removed, n.Loops)
		for _, c := range []struct{ k, v string }{{"cond", n.Cond}, {"recheck", n.Recheck}, {"filter", n.Filter}} {
			if c.v != "" {
				fmt.Fprintf(&b, " %s: %.160s", c.k, c.v)
			}
		}
		b.WriteByte('\n')
		for i := range n.Plans {
			walk(&n.Plans[i], depth+1)
		}
	}
	walk(n, 0)
	return b.String()
}
