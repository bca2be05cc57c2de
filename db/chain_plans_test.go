package db_test

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"

	"github.com/parley-dev/parley"
	"github.com/parley-dev/parley/db"
	"github.com/parley-dev/parley/internal/poll"
)

// chainTree stores, as the tree benchmark builds it, a conversation of branches
// segments each forking from the one before: segment 0 holds depths 1..100, segment i
// forks after depth 50·i of segment i-1 and holds depths 50·i+1..50·i+100. The deepest
// branch, ending in the last segment, is a chain of branches segments. It returns the
// conversation's key; the segments' chains are filled in by the trigger of migration
// 000020, parents first.
func chainTree(t *testing.T, sql *sqlx.DB, owner string, branches int) string {
	t.Helper()
	ctx := t.Context()
	var conv string
	if err := sql.GetContext(ctx, &conv, `INSERT INTO conversations (owner, last_position, message_count, segments, active_segment, active_depth)
		VALUES ($1, $2 * 100, $2 * 100, $2 - 1, $2 - 1, ($2 - 1) * 50 + 100) RETURNING id`, owner, branches); err != nil {
		t.Fatal(err)
	}
	for i := 1; i < branches; i++ {
		if _, err := sql.ExecContext(ctx, `INSERT INTO message_segments (conversation_id, segment, parent_segment, fork_depth)
			VALUES ($1, $2, $2 - 1, $2 * 50)`, conv, i); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := sql.ExecContext(ctx, `INSERT INTO messages (conversation_id, position, segment, depth, kind, role, content)
		SELECT $1, s * 100 + d, s, s * 50 + d, 'text', 'user', 's' || s || 'd' || d
		FROM generate_series(0, $2 - 1) s, generate_series(1, 100) d`, conv, branches); err != nil {
		t.Fatal(err)
	}
	return conv
}

// TestSegmentChains checks the chains the trigger of migration 000020 fills in against
// the parent links they summarize, for a chain of forks, a fork from segment 0 and a
// second root; and that a segment forking from one that does not exist is refused.
func TestSegmentChains(t *testing.T) {
	t.Parallel()
	d := openDB(t)
	sql, ctx := d.SQL(), t.Context()
	conv := chainTree(t, sql, "chains", 4)
	if _, err := sql.ExecContext(ctx, `INSERT INTO message_segments (conversation_id, segment, parent_segment, fork_depth)
		VALUES ($1, 4, 0, 7), ($1, 5, NULL, 0), ($1, 6, 5, 1)`, conv); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		segment   int
		chain     []int64
		chainFrom []int64
	}{
		{1, []int64{0, 1}, []int64{0, 50}},
		{3, []int64{0, 1, 2, 3}, []int64{0, 50, 100, 150}},
		{4, []int64{0, 4}, []int64{0, 7}},
		{5, []int64{5}, []int64{0}},
		{6, []int64{5, 6}, []int64{0, 1}},
	}
	for _, tc := range tests {
		var chain, from pq.Int64Array
		if err := sql.QueryRowContext(ctx, `SELECT chain, chain_from FROM message_segments WHERE conversation_id = $1 AND segment = $2`,
			conv, tc.segment).Scan(&chain, &from); err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(chain, tc.chain) || !slices.Equal(from, tc.chainFrom) {
			t.Errorf("segment %d: got chain %v from %v, want %v from %v", tc.segment, chain, from, tc.chain, tc.chainFrom)
		}
	}
	_, err := sql.ExecContext(ctx, `INSERT INTO message_segments (conversation_id, segment, parent_segment, fork_depth) VALUES ($1, 9, 8, 3)`, conv)
	if pe, ok := err.(*pq.Error); !ok || pe.Code != "23503" {
		t.Errorf("a segment forking from a missing one: got %v, want foreign_key_violation (23503)", err)
	}
}

// TestChainPlansProbeOnce EXPLAINs, prepared, custom and generic, the statements that
// follow a branch of the tree: the page statements (pageSQL, and conversationPageSQL with
// the conversation folded in) along the deepest branch of a chain of 100 segments, the placement of a message under a named parent and the on-branch
// check of a tool result; on tables never analyzed, analyzed small and then grown
// (stale), and analyzed. Each must find the branch's segments with at most one probe of
// message_segments' primary key (the leaf segment's chain) whatever the number of forks
// on it, and a page must read messages only in the segments it touches, by index ranges
// without a filter.
func TestChainPlansProbeOnce(t *testing.T) {
	t.Parallel()
	d := openDB(t)
	sql, ctx := d.SQL(), t.Context()
	const owner, branches = "chains", 100
	exec := func(q string, args ...any) {
		t.Helper()
		if _, err := sql.ExecContext(ctx, q, args...); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	for _, table := range []string{"messages", "message_segments", "conversations"} {
		exec(`ALTER TABLE ` + table + ` SET (autovacuum_enabled = false)`)
	}
	conn, err := sql.Connx(ctx) // PREPARE and SET hold for one session
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	for name, q := range map[string]string{"page_forward": db.PageSQL[false], "page_backward": db.PageSQL[true],
		"place": db.PlaceSQL, "lock_place": db.LockPlaceSQL, "on_branch": db.OnBranchSQL, "tree": db.TreeSQL,
		"conversation_page_forward": db.ConversationPageSQL[false], "conversation_page_backward": db.ConversationPageSQL[true],
		"llm_page_forward":                  db.LLMPageSQL[false],
		"llm_one_page_forward":              db.LLMOnePageSQL[false],
		"fitting_llm_one_page_forward":      db.FittingLLMOnePageSQL[false],
		"fitting_llm_one_page_backward":     db.FittingLLMOnePageSQL[true],
		"fitting_conversation_page_forward": db.FittingConversationPageSQL[false], "fitting_conversation_page_backward": db.FittingConversationPageSQL[true],
		"treeless_conversation_page_forward": db.TreelessConversationPageSQL[false], "treeless_conversation_page_backward": db.TreelessConversationPageSQL[true],
		"treeless_fitting_conversation_page_forward":  db.TreelessFittingConversationPageSQL[false],
		"treeless_fitting_conversation_page_backward": db.TreelessFittingConversationPageSQL[true]} {
		if _, err := conn.ExecContext(ctx, `PREPARE `+name+` AS `+q); err != nil {
			t.Fatalf("prepare %s: %v", name, err)
		}
	}
	check := func(stats, conv string) {
		t.Helper()
		var parent, leafSeg, leafDepth = "", branches - 1, (branches-1)*50 + 100
		// The parent named: the last message of segment 50, another branch than the deep one.
		if err := conn.GetContext(ctx, &parent, `SELECT id::text FROM messages WHERE conversation_id = $1 AND segment = 50 AND depth = 2600`, conv); err != nil {
			t.Fatal(err)
		}
		// A page's ids across three forks, for the tree fields: the forks below each
		// message's parent are probes of the fork index (migration 000020 reorders it),
		// one per message. (Reading the page's own segments' rows once, with the
		// messages asked for, is the planner's choice by the tables' sizes, as in
		// TestTreePlansProbeEachMessage.)
		var ids []string
		if err := conn.SelectContext(ctx, &ids, `SELECT id::text FROM messages WHERE conversation_id = $1
			AND ((segment = 49 AND depth > 2475) OR segment = 50 OR (segment = 51 AND depth <= 2576))`, conv); err != nil {
			t.Fatal(err)
		}
		for _, mode := range []string{"force_custom_plan", "force_generic_plan"} {
			if _, err := conn.ExecContext(ctx, `SET plan_cache_mode = `+mode); err != nil {
				t.Fatal(err)
			}
			var out string
			if err := conn.GetContext(ctx, &out, fmt.Sprintf(`EXPLAIN (ANALYZE, FORMAT JSON) EXECUTE tree('{%s}')`, strings.Join(ids, ","))); err != nil {
				t.Fatalf("%s, %s, tree: %v", stats, mode, err)
			}
			var plans []struct{ Plan planNode }
			if err := json.Unmarshal([]byte(out), &plans); err != nil || len(plans) != 1 {
				t.Fatalf("%s, %s, tree: EXPLAIN output %q: %v", stats, mode, out, err)
			}
			for _, s := range plans[0].Plan.find(func(n *planNode) bool { return n.Relation == "message_segments" && n.Loops > 1 }) {
				if !strings.HasPrefix(s.Type, "Index") || s.Removed > 1 {
					t.Errorf("%s, %s, tree: got %s on %s of message_segments (index cond %s, filter %q removing %d), want probes:\n%s",
						stats, mode, s.Type, s.Index, s.Cond, s.Filter, s.Removed, out)
				}
			}
		}
		tests := []struct {
			name, stmt, args string
			rows             int
			segments         int // the segments whose messages the statement reads
		}{
			// After 2475: depths 2476..2576, in segments 49, 50 and 51 of the deep branch.
			{"forward page in the middle", "page_forward", fmt.Sprintf(`'{%s}', 2475, 0, 101, '%s', -1, 0, 0`, conv, owner), 101, 3},
			{"forward page, the branch named", "page_forward", fmt.Sprintf(`'{%s}', 2475, 0, 101, '%s', %d, %d, 0`, conv, owner, leafSeg, leafDepth), 101, 3},
			{"last page", "page_backward", fmt.Sprintf(`'{%s}', 0, 0, 101, '%s', -1, 0, 0`, conv, owner), 101, 2},
			{"backward page before 2500", "page_backward", fmt.Sprintf(`'{%s}', 0, 2500, 101, '%s', -1, 0, 0`, conv, owner), 101, 3},
			{"first page", "page_forward", fmt.Sprintf(`'{%s}', 0, 0, 101, '%s', -1, 0, 0`, conv, owner), 101, 3},
			// An LLM export's read (PageRequest.ForLLM): the same page, fewer columns.
			{"forward page in the middle, for an LLM", "llm_page_forward", fmt.Sprintf(`'{%s}', 2475, 0, 101, '%s', -1, 0, 0`, conv, owner), 101, 3},
			// An export's read of one conversation (FindMessagePages), with the window, and
			// without it when the page fits the byte budget (none, or 101 messages of the
			// bound exactly); when it may not (a byte less), no row, and its scan of
			// messages, never run, counts once.
			{"forward page in the middle, for an LLM, one conversation", "llm_one_page_forward", fmt.Sprintf(`'{%s}', 2475, 0, 101, '%s', -1, 0, 0`, conv, owner), 101, 3},
			{"fitting: forward page in the middle, for an LLM", "fitting_llm_one_page_forward", fmt.Sprintf(`'{%s}', 2475, 0, 101, '%s', -1, 0, 0`, conv, owner), 101, 3},
			{"fitting: forward page, the branch named, for an LLM", "fitting_llm_one_page_forward", fmt.Sprintf(`'{%s}', 2475, 0, 101, '%s', %d, %d, %d`, conv, owner, leafSeg, leafDepth, 101*16384), 101, 3},
			{"fitting: first page, for an LLM", "fitting_llm_one_page_forward", fmt.Sprintf(`'{%s}', 0, 0, 101, '%s', -1, 0, 16777216`, conv, owner), 101, 3},
			{"fitting: backward page before 2500, for an LLM", "fitting_llm_one_page_backward", fmt.Sprintf(`'{%s}', 0, 2500, 101, '%s', -1, 0, %d`, conv, owner, 101*16384), 101, 3},
			{"fitting: no row for an LLM when the page may not fit", "fitting_llm_one_page_forward", fmt.Sprintf(`'{%s}', 2475, 0, 101, '%s', -1, 0, %d`, conv, owner, 101*16384-1), 0, 1},
			// The conversation and its page in one statement (its row first: one row
			// more), the tree fields asked for: a conversation with forks reads them apart.
			{"conversation and a forward page in the middle", "conversation_page_forward", fmt.Sprintf(`'%s', 2475, 0, 101, '%s', 0, true`, conv, owner), 102, 3},
			{"conversation and its last page", "conversation_page_backward", fmt.Sprintf(`'%s', 0, 0, 101, '%s', 0, true`, conv, owner), 102, 2},
			{"conversation and a backward page before 2500", "conversation_page_backward", fmt.Sprintf(`'%s', 0, 2500, 101, '%s', 0, true`, conv, owner), 102, 3},
			{"conversation and its first page", "conversation_page_forward", fmt.Sprintf(`'%s', 0, 0, 101, '%s', 0, false`, conv, owner), 102, 3},
			// The same pages when they fit the byte budget (none, the default, or 101
			// messages of the bound exactly): without the window (checked below); when
			// they may not (a byte less), the conversation's row alone (its scan of
			// messages, never run, counts once below).
			{"fitting: conversation and a forward page in the middle", "fitting_conversation_page_forward", fmt.Sprintf(`'%s', 2475, 0, 101, '%s', 0, true`, conv, owner), 102, 3},
			{"fitting: conversation and its last page", "fitting_conversation_page_backward", fmt.Sprintf(`'%s', 0, 0, 101, '%s', 16777216, true`, conv, owner), 102, 2},
			{"fitting: conversation and a backward page before 2500", "fitting_conversation_page_backward", fmt.Sprintf(`'%s', 0, 2500, 101, '%s', %d, true`, conv, owner, 101*16384), 102, 3},
			{"fitting: conversation and its first page", "fitting_conversation_page_forward", fmt.Sprintf(`'%s', 0, 0, 101, '%s', 0, false`, conv, owner), 102, 3},
			{"fitting: the conversation alone, forward", "fitting_conversation_page_forward", fmt.Sprintf(`'%s', 2475, 0, 101, '%s', %d, true`, conv, owner, 101*16384-1), 1, 1},
			{"fitting: the conversation alone, backward", "fitting_conversation_page_backward", fmt.Sprintf(`'%s', 0, 2500, 101, '%s', %d, false`, conv, owner, 101*16384-1), 1, 1},
			// The same without the tree fields: no probe of a parent in the plan (below).
			{"treeless: conversation and a forward page in the middle", "treeless_conversation_page_forward", fmt.Sprintf(`'%s', 2475, 0, 101, '%s', 0, false`, conv, owner), 102, 3},
			{"treeless: conversation and its last page", "treeless_conversation_page_backward", fmt.Sprintf(`'%s', 0, 0, 101, '%s', 0, false`, conv, owner), 102, 2},
			{"treeless fitting: conversation and a forward page in the middle", "treeless_fitting_conversation_page_forward", fmt.Sprintf(`'%s', 2475, 0, 101, '%s', 0, false`, conv, owner), 102, 3},
			{"treeless fitting: conversation and a backward page before 2500", "treeless_fitting_conversation_page_backward", fmt.Sprintf(`'%s', 0, 2500, 101, '%s', %d, false`, conv, owner, 101*16384), 102, 3},
			{"treeless fitting: the conversation alone, forward", "treeless_fitting_conversation_page_forward", fmt.Sprintf(`'%s', 2475, 0, 101, '%s', %d, false`, conv, owner, 101*16384-1), 1, 1},
			{"place under a parent on another branch", "place", fmt.Sprintf(`'%s', '%s', false, %d, %d`, conv, parent, leafSeg, leafDepth), 1, 2},
			{"place as a sibling", "place", fmt.Sprintf(`'%s', '%s', true, %d, %d`, conv, parent, leafSeg, leafDepth), 1, 2},
			{"lock and place under a parent on another branch", "lock_place", fmt.Sprintf(`'%s', '%s', false, '%s'`, conv, parent, owner), 1, 2},
			{"lock and place as a sibling", "lock_place", fmt.Sprintf(`'%s', '%s', true, '%s'`, conv, parent, owner), 1, 2},
			{"on branch", "on_branch", fmt.Sprintf(`'%s', %d, 3, 120`, conv, leafSeg), 1, 0},
		}
		for _, mode := range []string{"force_custom_plan", "force_generic_plan"} {
			if _, err := conn.ExecContext(ctx, `SET plan_cache_mode = `+mode); err != nil {
				t.Fatal(err)
			}
			for _, tc := range tests {
				var out string
				if err := conn.GetContext(ctx, &out, fmt.Sprintf(`EXPLAIN (ANALYZE, FORMAT JSON) EXECUTE %s(%s)`, tc.stmt, tc.args)); err != nil {
					t.Fatalf("%s, %s, %s: %v", stats, mode, tc.name, err)
				}
				var plans []struct{ Plan planNode }
				if err := json.Unmarshal([]byte(out), &plans); err != nil || len(plans) != 1 {
					t.Fatalf("%s, %s, %s: EXPLAIN output %q: %v", stats, mode, tc.name, out, err)
				}
				root := plans[0].Plan
				if root.Rows != tc.rows {
					t.Errorf("%s, %s, %s: got %d rows, want %d", stats, mode, tc.name, root.Rows, tc.rows)
				}
				// (The link's entries, fork_link_entries, have a window of their own.)
				if w := root.find(func(n *planNode) bool {
					return n.Type == "WindowAgg" && len(n.find(func(n *planNode) bool { return n.Relation == "messages" })) > 0
				}); strings.Contains(tc.stmt, "fitting_") && len(w) > 0 {
					t.Errorf("%s, %s, %s: the plan sums the byte budget (WindowAgg), which a page that fits it skips:\n%s", stats, mode, tc.name, out)
				}
				// Without the tree fields, no probe of a parent: in a generic plan its
				// cost, once a row, would keep Postgres planning the statement anew
				// (TestPageStatementsKeepGenericPlans).
				if sub := root.find(func(n *planNode) bool { return n.Parent == "SubPlan" }); strings.HasPrefix(tc.stmt, "treeless_") && len(sub) > 0 {
					t.Errorf("%s, %s, %s: the plan has a subplan (the parent's probe), which a page without the tree fields leaves out:\n%s", stats, mode, tc.name, out)
				}
				probes := 0
				for _, s := range root.find(func(n *planNode) bool { return n.Relation == "message_segments" }) {
					probes += max(s.Loops, 1)
					if s.Index != "message_segments_pkey" || s.Removed != 0 || !strings.Contains(s.Cond, "segment =") || s.Rows > 1 {
						t.Errorf("%s, %s, %s: got %s on %s (index cond %s, filter %q removing %d, %d rows), want a probe of message_segments_pkey:\n%s",
							stats, mode, tc.name, s.Type, s.Index, s.Cond, s.Filter, s.Removed, s.Rows, out)
					}
				}
				if probes > 2 {
					t.Errorf("%s, %s, %s: %d probes of message_segments, want at most 2 whatever the branch's forks:\n%s", stats, mode, tc.name, probes, out)
				}
				loops, read := 0, 0
				for _, s := range root.find(func(n *planNode) bool { return n.Relation == "messages" }) {
					if strings.Contains(s.Cond, "id = ") && !strings.Contains(s.Cond, "segment") {
						continue // the named message, by its primary key
					}
					if s.Index != "messages_branch_idx" || s.Removed != 0 || !strings.Contains(s.Cond, "segment =") {
						t.Errorf("%s, %s, %s: got %s on %s (index cond %s, filter %q removing %d), want index scans of messages_branch_idx on all its columns:\n%s",
							stats, mode, tc.name, s.Type, s.Index, s.Cond, s.Filter, s.Removed, out)
					}
					if s.Loops == 0 && s.Parent == "SubPlan" {
						continue // never run: conversationPageSQL's parent probe, only for a conversation without forks
					}
					loops += max(s.Loops, 1)
					read += (s.Rows + s.Removed) * max(s.Loops, 1) // EXPLAIN's rows are per loop
				}
				if loops > tc.segments || read > 101+loops { // +loops: EXPLAIN rounds the rows per loop
					t.Errorf("%s, %s, %s: read messages %d times (%d rows), want at most %d (the segments it touches), at most 101 rows:\n%s",
						stats, mode, tc.name, loops, read, tc.segments, out)
				}
			}
		}
	}
	// Never analyzed: a new installation.
	check("never analyzed", chainTree(t, sql, owner, branches))
	// Analyzed with one small conversation, then grown.
	for _, table := range []string{"messages", "message_segments", "conversations"} {
		exec(`ANALYZE ` + table)
	}
	conv := chainTree(t, sql, owner, branches)
	for range 20 {
		chainTree(t, sql, owner, branches)
	}
	check("stale", conv)
	for _, table := range []string{"messages", "message_segments", "conversations"} {
		exec(`ANALYZE ` + table)
	}
	check("analyzed", conv)
}

// TestSegmentChainsMigration checks that migration 000020 fills in the chains of the
// segments stored before it (parents before children, whatever their numbers), and
// that migrating down and up again gives the same chains.
func TestSegmentChainsMigration(t *testing.T) {
	t.Parallel()
	_, conn, m := newMigrator(t)
	if err := m.Migrate(chainsMigration - 1); err != nil {
		t.Fatalf("migrate down to before the chains: %v", err)
	}
	var conv string
	if err := conn.QueryRow(`INSERT INTO conversations (owner, title) VALUES ('local', 'old') RETURNING id`).Scan(&conv); err != nil {
		t.Fatal(err)
	}
	// Segment 3 forks from 0, 1 from 3, 2 from 1; 4 is a second root, 5 forks from it.
	if _, err := conn.Exec(`INSERT INTO message_segments (conversation_id, segment, parent_segment, fork_depth)
		VALUES ($1, 3, 0, 2), ($1, 1, 3, 5), ($1, 2, 1, 9), ($1, 4, NULL, 0), ($1, 5, 4, 1)`, conv); err != nil {
		t.Fatal(err)
	}
	want := map[int]string{1: "{0,3,1} {0,2,5}", 2: "{0,3,1,2} {0,2,5,9}", 3: "{0,3} {0,2}", 4: "{4} {0}", 5: "{4,5} {0,1}"}
	check := func(when string) {
		t.Helper()
		rows, err := conn.Query(`SELECT segment, chain::text || ' ' || chain_from::text FROM message_segments WHERE conversation_id = $1`, conv)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		n := 0
		for rows.Next() {
			var seg int
			var got string
			if err := rows.Scan(&seg, &got); err != nil {
				t.Fatal(err)
			}
			if n++; got != want[seg] {
				t.Errorf("%s: segment %d: got chain and chain_from %s, want %s", when, seg, got, want[seg])
			}
		}
		if err := rows.Err(); err != nil || n != len(want) {
			t.Errorf("%s: %d segments (%v), want %d", when, n, err, len(want))
		}
	}
	if err := m.Up(); err != nil {
		t.Fatalf("migrate up: %v", err)
	}
	check("migrated up")
	if err := m.Migrate(chainsMigration - 1); err != nil {
		t.Fatalf("migrate down: %v", err)
	}
	if err := m.Up(); err != nil {
		t.Fatalf("migrate up again: %v", err)
	}
	check("migrated down and up")
}

// chainsMigration is the number of the segment chains' migration (000020_segment_chains).
const chainsMigration = 20

// TestPlaceAfterWaitingForTheLock adds a message under a named parent while another
// transaction holds the conversation's lock and, before letting go, gives that parent a
// child: the placement read before the lock was granted is out of date (the parent's
// next place is taken), and the message must start a branch of its own rather than
// collide with the child (insertUnderSQL writes nothing when the conversation's row
// changed while it waited, and the steps place the message again under the lock).
func TestPlaceAfterWaitingForTheLock(t *testing.T) {
	t.Parallel()
	d := openDB(t)
	ctx := parley.WithOwner(t.Context(), "waiter")
	conv, err := d.CreateConversation(ctx, "wait")
	if err != nil {
		t.Fatal(err)
	}
	text := func(s string) *parley.TextMessage {
		return &parley.TextMessage{MessageMeta: parley.MessageMeta{Role: parley.RoleUser}, Body: parley.TextBody(s)}
	}
	parent, err := d.AddMessage(ctx, conv.ID, text("the parent"))
	if err != nil {
		t.Fatal(err)
	}
	convKey, _ := parley.ParseConversationID(conv.ID)
	holder, err := d.SQL().BeginTxx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Rollback()
	if _, err := holder.ExecContext(ctx, `SELECT 1 FROM conversations WHERE id = $1 FOR UPDATE`, convKey); err != nil {
		t.Fatal(err)
	}
	type result struct {
		m   parley.Message
		err error
	}
	done := make(chan result, 1)
	go func() {
		m := text("under the parent")
		m.Place = parley.Placement{ParentID: parent.Meta().ID}
		stored, err := d.AddMessage(ctx, conv.ID, m)
		done <- result{stored, err}
	}()
	// Wait until the writer waits for the lock.
	poll.For(t, "the writer to wait for the conversation's lock", 30*time.Second, func() bool {
		var waiting bool
		if err := d.SQL().GetContext(ctx, &waiting, `SELECT EXISTS (SELECT 1 FROM pg_stat_activity
			WHERE datname = current_database() AND wait_event_type = 'Lock')`); err != nil {
			t.Fatal(err)
		}
		return waiting
	})
	// The parent's first child, as a writer holding the lock stores it.
	if _, err := holder.ExecContext(ctx, `WITH c AS (UPDATE conversations SET last_position = last_position + 1,
			message_count = message_count + 1, active_depth = 2 WHERE id = $1 RETURNING last_position)
		INSERT INTO messages (conversation_id, position, segment, depth, kind, role, content)
		SELECT $1, c.last_position, 0, 2, 'text', 'user', 'the first child' FROM c`, convKey); err != nil {
		t.Fatal(err)
	}
	if err := holder.Commit(); err != nil {
		t.Fatal(err)
	}
	var r result
	select {
	case r = <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("the writer did not finish once the lock was let go")
	}
	if r.err != nil {
		t.Fatalf("add under the parent after waiting: %v", r.err)
	}
	info, err := d.FindTreeInfo(ctx, []string{r.m.Meta().ID})
	if err != nil {
		t.Fatal(err)
	}
	tree := info[r.m.Meta().ID]
	if tree == nil || tree.ParentID != parent.Meta().ID || len(tree.SiblingIDs) != 2 || r.m.Meta().Position != 2 {
		t.Errorf("got position %d, tree %+v, want position 2 under %s beside the first child", r.m.Meta().Position, tree, parent.Meta().ID)
	}
}
