package db_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/parley-dev/parley/db"
)

// TestPagePlansAreIndexRangeScans EXPLAINs the page statements as Parley runs them,
// prepared, with the plan Postgres makes for the arguments (custom) and the one it makes
// once for all (generic, which its plan cache switches to after five runs), on a table
// whose statistics are deliberately stale: analyzed when it held a few rows, then grown
// to thousands in one conversation with autovacuum off. Every page must read messages by
// an index range scan on (conversation_id, position) whose bounds are both index
// conditions, reading no more rows than the page asked for (plus the one that tells
// whether there are more): no filter, no sort, no bitmap scan of the conversation.
func TestPagePlansAreIndexRangeScans(t *testing.T) {
	t.Parallel()
	d := openDB(t)
	sql, ctx := d.SQL(), t.Context()
	const owner, big = "plans", 20000
	exec := func(q string, args ...any) {
		t.Helper()
		if _, err := sql.ExecContext(ctx, q, args...); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	exec(`ALTER TABLE messages SET (autovacuum_enabled = false)`)
	exec(`ALTER TABLE conversations SET (autovacuum_enabled = false)`)
	var small, large string
	if err := sql.GetContext(ctx, &small, `INSERT INTO conversations (owner, last_position, message_count) VALUES ($1, 10, 10) RETURNING id`, owner); err != nil {
		t.Fatal(err)
	}
	exec(`INSERT INTO messages (conversation_id, position, kind, role, content)
		SELECT $1, p, 'text', 'user', 'm' || p FROM generate_series(1, 10) p`, small)
	exec(`ANALYZE messages`)
	exec(`ANALYZE conversations`)
	// The statistics now say: one conversation of ten messages. Grow past them.
	if err := sql.GetContext(ctx, &large, `INSERT INTO conversations (owner, last_position, message_count) VALUES ($1, $2, $2) RETURNING id`, owner, big); err != nil {
		t.Fatal(err)
	}
	exec(`INSERT INTO messages (conversation_id, position, kind, role, content)
		SELECT $1, p, 'text', 'user', 'm' || p FROM generate_series(1, $2) p`, large, big)

	conn, err := sql.Connx(ctx) // PREPARE and SET hold for one session
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	for backward, name := range map[bool]string{false: "forward", true: "backward"} {
		if _, err := conn.ExecContext(ctx, `PREPARE page_`+name+` AS `+db.PageSQL[backward]); err != nil {
			t.Fatalf("prepare the %s page: %v", name, err)
		}
	}
	const limit = 101 // a page of 100 and the row that tells whether there are more
	tests := []struct {
		name          string
		backward      bool
		conv          *string
		after, before int
		rows          int
	}{
		{"first page", false, &large, 0, 0, limit},
		{"middle page after", false, &large, 9000, 0, limit},
		{"forward page between", false, &large, 9000, 9050, 49},
		{"last page", true, &large, 0, 0, limit},
		{"page before", true, &large, 0, 9000, limit},
		{"backward page between", true, &large, 8950, 9000, 49},
		{"small conversation, last page", true, &small, 0, 0, 10},
		{"small conversation, first page", false, &small, 0, 0, 10},
	}
	for _, mode := range []string{"force_custom_plan", "force_generic_plan"} {
		if _, err := conn.ExecContext(ctx, `SET plan_cache_mode = `+mode); err != nil {
			t.Fatal(err)
		}
		for _, tc := range tests {
			stmt := "page_forward"
			if tc.backward {
				stmt = "page_backward"
			}
			var out string
			if err := conn.GetContext(ctx, &out, fmt.Sprintf(`EXPLAIN (ANALYZE, FORMAT JSON) EXECUTE %s('{%s}', %d, %d, %d, '%s', -1, 0)`,
				stmt, *tc.conv, tc.after, tc.before, limit, owner)); err != nil {
				t.Fatalf("%s, %s: %v", mode, tc.name, err)
			}
			var plans []struct{ Plan planNode }
			if err := json.Unmarshal([]byte(out), &plans); err != nil || len(plans) != 1 {
				t.Fatalf("%s, %s: EXPLAIN output %q: %v", mode, tc.name, out, err)
			}
			root := plans[0].Plan
			if root.Rows != tc.rows {
				t.Errorf("%s, %s: got %d rows, want %d", mode, tc.name, root.Rows, tc.rows)
			}
			scans := root.find(func(n *planNode) bool { return n.Relation == "messages" })
			if len(scans) != 1 {
				t.Errorf("%s, %s: got %d scans of messages, want 1:\n%s", mode, tc.name, len(scans), out)
				continue
			}
			s := scans[0]
			if !strings.HasPrefix(s.Type, "Index") || s.Index != "messages_branch_idx" ||
				s.Filter != "" || s.Removed != 0 || s.Rows > limit ||
				!strings.Contains(s.Cond, `depth >`) || !strings.Contains(s.Cond, `depth <`) {
				t.Errorf("%s, %s: got %s on %s (index cond %s, filter %q removing %d, %d rows), want an index range scan on messages_branch_idx bounded on both sides, at most %d rows:\n%s",
					mode, tc.name, s.Type, s.Index, s.Cond, s.Filter, s.Removed, s.Rows, limit, out)
			}
			// The branch's chain of segments is sorted (a row per fork); never the messages.
			for _, sort := range root.find(func(n *planNode) bool { return n.Type == "Sort" }) {
				if len(sort.find(func(n *planNode) bool { return n.Relation == "messages" })) > 0 {
					t.Errorf("%s, %s: the plan sorts messages; the index gives the order:\n%s", mode, tc.name, out)
				}
			}
		}
	}
}

// planNode is what TestPagePlansAreIndexRangeScans reads of EXPLAIN (FORMAT JSON).
type planNode struct {
	Type     string     `json:"Node Type"`
	Relation string     `json:"Relation Name"`
	Index    string     `json:"Index Name"`
	Cond     string     `json:"Index Cond"`
	Filter   string     `json:"Filter"`
	Removed  int        `json:"Rows Removed by Filter"`
	Rows     int        `json:"Actual Rows"`
	Plans    []planNode `json:"Plans"`
}

func (n *planNode) find(match func(*planNode) bool) []*planNode {
	var out []*planNode
	if match(n) {
		out = append(out, n)
	}
	for i := range n.Plans {
		out = append(out, n.Plans[i].find(match)...)
	}
	return out
}
