package db_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"

	"github.com/parley-dev/parley"
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
	// Each page is read by every page statement: pageSQL (pages of conversations already
	// read), conversationPageSQL (a conversation and its page, folded into one
	// statement, whose first row is the conversation's) and linePageSQL (the same for a
	// conversation that is one line), and the last two's statements for a page that fits
	// its byte budget.
	statements := []struct {
		name  string
		sql   map[bool]string
		args  string // EXECUTE's arguments after the conversation's: $2... as printf verbs
		extra int    // rows besides the page's
		// window: whether the plan may sum the byte budget (a WindowAgg); only the head
		// row comes when it is -1 (a page too large for fittingLinePageSQL).
		window bool
		only   int
	}{
		{"page", db.PageSQL, "'{%s}', %d, %d, %d, '%s', -1, 0, 0", 0, true, 0},
		{"conversation_page", db.ConversationPageSQL, "'%s', %d, %d, %d, '%s', 0, false", 1, true, 0},
		// With the tree fields: each row's parent, one more probe of the index per page.
		{"conversation_page", db.ConversationPageSQL, "'%s', %d, %d, %d, '%s', 0, true", 1, true, 0},
		// linePageSQL, conversationPageSQL for a conversation without branches or a
		// shared history, as both of these are.
		{"line_page", db.LinePageSQL, "'%s', %d, %d, %d, '%s', 0, false", 1, true, 0},
		{"line_page", db.LinePageSQL, "'%s', %d, %d, %d, '%s', 0, true", 1, true, 0},
		// fittingLinePageSQL: a page that fits its budget (none, or 16 MiB) is read
		// without the window; one that does not (a budget of a byte), not at all.
		{"line_page_fitting", db.FittingLinePageSQL, "'%s', %d, %d, %d, '%s', 0, false", 1, false, 0},
		{"line_page_fitting", db.FittingLinePageSQL, "'%s', %d, %d, %d, '%s', 16777216, true", 1, false, 0},
		{"line_page_fitting", db.FittingLinePageSQL, "'%s', %d, %d, %d, '%s', 1, false", 1, false, -1},
		// fittingConversationPageSQL, the same for any conversation's chain (here of
		// one range).
		{"conversation_page_fitting", db.FittingConversationPageSQL, "'%s', %d, %d, %d, '%s', 0, false", 1, false, 0},
		{"conversation_page_fitting", db.FittingConversationPageSQL, "'%s', %d, %d, %d, '%s', 16777216, true", 1, false, 0},
		{"conversation_page_fitting", db.FittingConversationPageSQL, "'%s', %d, %d, %d, '%s', 1, true", 1, false, -1},
		// Both without the tree fields' parents (treelessConversationPageSQL).
		{"conversation_page_treeless", db.TreelessConversationPageSQL, "'%s', %d, %d, %d, '%s', 0, false", 1, true, 0},
		{"conversation_page_treeless_fitting", db.TreelessFittingConversationPageSQL, "'%s', %d, %d, %d, '%s', 16777216, false", 1, false, 0},
		{"conversation_page_treeless_fitting", db.TreelessFittingConversationPageSQL, "'%s', %d, %d, %d, '%s', 1, false", 1, false, -1},
	}
	prepared := map[string]bool{}
	for _, st := range statements {
		if prepared[st.name] {
			continue
		}
		prepared[st.name] = true
		for backward, name := range map[bool]string{false: "forward", true: "backward"} {
			if _, err := conn.ExecContext(ctx, `PREPARE `+st.name+`_`+name+` AS `+st.sql[backward]); err != nil {
				t.Fatalf("prepare the %s %s: %v", name, st.name, err)
			}
		}
	}
	const limit = 101 // a page of 100 and the row that tells whether there are more (checkPagePlan's)
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
		for _, st := range statements {
			for _, tc := range tests {
				rows := tc.rows + st.extra
				if st.only < 0 {
					rows = st.extra
				}
				checkPagePlan(t, conn, mode+", "+st.name+"("+st.args[strings.LastIndex(st.args, "'")+3:]+"), "+tc.name, st.name, tc.backward,
					fmt.Sprintf(st.args, *tc.conv, tc.after, tc.before, limit, owner), rows, st.window)
			}
		}
	}
}

// checkPagePlan EXPLAINs (ANALYZE) the prepared page statement stmt (_forward or
// _backward) with args, and fails unless it reads messages by one index range scan
// bounded on both sides, reading at most a page, and returns rows rows; without window,
// also if it has a window (WindowAgg).
func checkPagePlan(t *testing.T, conn *sqlx.Conn, name, stmt string, backward bool, args string, rows int, window bool) {
	t.Helper()
	const limit = 101
	if backward {
		stmt += "_backward"
	} else {
		stmt += "_forward"
	}
	var out string
	if err := conn.GetContext(t.Context(), &out, `EXPLAIN (ANALYZE, FORMAT JSON) EXECUTE `+stmt+`(`+args+`)`); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	var plans []struct{ Plan planNode }
	if err := json.Unmarshal([]byte(out), &plans); err != nil || len(plans) != 1 {
		t.Fatalf("%s: EXPLAIN output %q: %v", name, out, err)
	}
	root := plans[0].Plan
	if root.Rows != rows {
		t.Errorf("%s: got %d rows, want %d", name, root.Rows, rows)
	}
	// One scan reads the page (its index condition bounds depth on both sides); the
	// parent of the page's first row is one probe.
	var scans, probes []*planNode
	for _, n := range root.find(func(n *planNode) bool { return n.Relation == "messages" }) {
		if strings.Contains(n.Cond, "depth = ") {
			probes = append(probes, n)
		} else {
			scans = append(scans, n)
		}
	}
	for _, p := range probes {
		if !strings.HasPrefix(p.Type, "Index") || p.Filter != "" || p.Loops > 1 {
			t.Errorf("%s: got a %s of messages run %d times (index cond %s, filter %q), want at most one probe of the index:\n%s",
				name, p.Type, p.Loops, p.Cond, p.Filter, out)
		}
	}
	if len(scans) != 1 {
		t.Errorf("%s: got %d scans of messages, want 1:\n%s", name, len(scans), out)
		return
	}
	s := scans[0]
	if !strings.HasPrefix(s.Type, "Index") || s.Index != "messages_branch_idx" ||
		s.Filter != "" || s.Removed != 0 || s.Rows > limit ||
		!strings.Contains(s.Cond, `depth >`) || !strings.Contains(s.Cond, `depth <`) {
		t.Errorf("%s: got %s on %s (index cond %s, filter %q removing %d, %d rows), want an index range scan on messages_branch_idx bounded on both sides, at most %d rows:\n%s",
			name, s.Type, s.Index, s.Cond, s.Filter, s.Removed, s.Rows, limit, out)
	}
	// The branch's chain of segments is sorted (a row per fork); never the messages,
	// not even for the byte budget's running sum.
	for _, sort := range root.find(func(n *planNode) bool { return strings.HasSuffix(n.Type, "Sort") }) {
		if len(sort.find(func(n *planNode) bool { return n.Relation == "messages" })) > 0 {
			t.Errorf("%s: the plan sorts messages (%s); the index gives the order:\n%s", name, sort.Type, out)
		}
	}
	// (A linked fork's entries, fork_link_entries, have a window of their own.)
	if w := root.find(func(n *planNode) bool {
		return n.Type == "WindowAgg" && len(n.find(func(n *planNode) bool { return n.Relation == "messages" })) > 0
	}); !window && len(w) > 0 {
		t.Errorf("%s: the plan sums the byte budget (WindowAgg), which a page that fits it skips:\n%s", name, out)
	}
	// The conversation is read once (here by a scan of the table's one page, which is
	// what Postgres does with a table this small).
	if cs := root.find(func(n *planNode) bool { return n.Relation == "conversations" }); len(cs) != 1 || cs[0].Loops != 1 {
		t.Errorf("%s: got %d reads of conversations, want one:\n%s", name, len(cs), out)
	}
}

// planNode is what TestPagePlansAreIndexRangeScans reads of EXPLAIN (FORMAT JSON).
type planNode struct {
	Type     string     `json:"Node Type"`
	Relation string     `json:"Relation Name"`
	Index    string     `json:"Index Name"`
	Cond     string     `json:"Index Cond"`
	Filter   string     `json:"Filter"`
	Recheck  string     `json:"Recheck Cond"`
	Removed  int        `json:"Rows Removed by Filter"`
	Rows     int        `json:"Actual Rows"`
	Loops    int        `json:"Actual Loops"`
	Parent   string     `json:"Parent Relationship"`
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

// TestPageStopsAtByteBudgetInPostgres checks that a page read with a byte budget gets
// from Postgres only the rows that fit (the first always comes), not the whole page
// for Parley to drop: EXPLAIN ANALYZE counts the rows the statement returns, forward
// and backward, on a conversation of 40 messages of 64 KiB each with a budget of
// three and a half of them. FindMessages then pages through the conversation, each
// page ending at the budget, and the pages together hold every message once.
func TestPageStopsAtByteBudgetInPostgres(t *testing.T) {
	t.Parallel()
	d := openDB(t)
	sql, ctx := d.SQL(), t.Context()
	const owner, n, size = "budget", 40, 64 << 10
	var conv string
	if err := sql.GetContext(ctx, &conv, `INSERT INTO conversations (owner, last_position, message_count) VALUES ($1, $2, $2) RETURNING id`, owner, n); err != nil {
		t.Fatal(err)
	}
	// md5 chains: text that does not compress, so that it is stored out of line as a
	// large message would be.
	if _, err := sql.ExecContext(ctx, `INSERT INTO messages (conversation_id, position, kind, role, content)
		SELECT $1, p, 'text', 'user', left((SELECT string_agg(md5(p::text || i::text), '') FROM generate_series(1, $3 / 32 + 1) i), $3)
		FROM generate_series(1, $2) p`, conv, n, size); err != nil {
		t.Fatal(err)
	}
	budget := 3*size + size/2
	conn, err := sql.Connx(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	for backward, name := range map[bool]string{false: "forward", true: "backward"} {
		for _, tc := range []struct {
			budget, want int
		}{{0, n + 1}, {budget, 3}, {size / 2, 1}} {
			var out string
			if err := conn.GetContext(ctx, &out, `EXPLAIN (ANALYZE, FORMAT JSON) `+db.PageSQL[backward],
				pq.Array([]string{conv}), 0, 0, n+1, owner, -1, 0, tc.budget); err != nil {
				t.Fatalf("%s, budget %d: %v", name, tc.budget, err)
			}
			var plans []struct{ Plan planNode }
			if err := json.Unmarshal([]byte(out), &plans); err != nil || len(plans) != 1 {
				t.Fatalf("%s: EXPLAIN output %q: %v", name, out, err)
			}
			want := min(tc.want, n) // the page holds all n: no row tells of more
			if got := plans[0].Plan.Rows; got != want {
				t.Errorf("%s page, budget %d: Postgres returned %d rows, want %d", name, tc.budget, got, want)
			}
		}
	}

	// Through the service: the pages stop at the budget and, read on from each end
	// cursor, cover the conversation exactly.
	actx := parley.WithOwner(ctx, owner)
	c, err := d.FindConversationByID(actx, parley.ConversationID(conv))
	if err != nil {
		t.Fatal(err)
	}
	first, seen, pages := 10, 0, 0
	var after *string
	for {
		p, err := d.FindMessages(actx, c, parley.PageRequest{First: &first, After: after, MaxBytes: budget})
		if err != nil {
			t.Fatal(err)
		}
		pages++
		if len(p.Messages) == 0 || len(p.Messages) > 3 {
			t.Fatalf("page %d: got %d messages, want 1 to 3 (the budget holds 3)", pages, len(p.Messages))
		}
		for _, m := range p.Messages {
			seen++
			if got := m.Meta().Position; got != seen {
				t.Fatalf("page %d: got position %d, want %d", pages, got, seen)
			}
		}
		if !p.HasNextPage {
			break
		}
		end := parley.MessageCursor(p.Messages[len(p.Messages)-1].Meta().Position)
		after = &end
	}
	if seen != n {
		t.Errorf("got %d messages over %d pages, want %d", seen, pages, n)
	}
}
