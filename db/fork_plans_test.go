package db_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/parley-dev/parley"
	"github.com/parley-dev/parley/db"
)

// TestForkPagePlans EXPLAINs, prepared, custom and generic, pages of a fork that shares
// the deepest branch of a chain of 100 segments (its link has an entry per segment):
// each must read only the link entries it touches, each by an index range of
// messages_branch_idx without a filter, at most a page of rows, and the link itself by
// one probe of fork_paths' primary key; on tables never analyzed and analyzed. The
// statement for a conversation that is one line (linePageSQL) reads neither the fork's
// messages nor the tree's.
func TestForkPagePlans(t *testing.T) {
	t.Parallel()
	d := openDB(t)
	sql, ctx := d.SQL(), t.Context()
	const owner, branches = "forkplans", 100
	conn, err := sql.Connx(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	for name, q := range map[string]string{"page_forward": pageSQLFor(false), "page_backward": pageSQLFor(true),
		"conversation_page_forward": convPageSQLFor(false), "conversation_page_backward": convPageSQLFor(true),
		"line_page_forward": db.LinePageSQL[false], "line_page_backward": db.LinePageSQL[true],
		"fitting_conversation_page_forward": db.FittingConversationPageSQL[false], "fitting_conversation_page_backward": db.FittingConversationPageSQL[true],
		"treeless_conversation_page_forward": db.TreelessConversationPageSQL[false], "treeless_conversation_page_backward": db.TreelessConversationPageSQL[true],
		"treeless_fitting_conversation_page_forward":  db.TreelessFittingConversationPageSQL[false],
		"treeless_fitting_conversation_page_backward": db.TreelessFittingConversationPageSQL[true]} {
		if _, err := conn.ExecContext(ctx, `PREPARE `+name+` AS `+q); err != nil {
			t.Fatalf("prepare %s: %v", name, err)
		}
	}
	check := func(stats string) {
		t.Helper()
		src := chainTree(t, sql, owner, branches)
		// The fork at depth 5000 of the deepest branch: a link of 100 entries.
		var leaf string
		if err := sql.GetContext(ctx, &leaf, `SELECT id::text FROM messages WHERE conversation_id = $1 AND segment = $2 AND depth = 5000`,
			src, branches-1); err != nil {
			t.Fatal(err)
		}
		fork, err := d.ForkConversation(parley.WithOwner(ctx, owner), parley.MessageID(leaf), "fork")
		if err != nil {
			t.Fatal(err)
		}
		conv, _ := parley.ParseConversationID(fork.ID)
		tests := []struct {
			name, stmt, args string
			rows, segments   int
		}{
			{"forward page in the middle", "page_forward", fmt.Sprintf(`'{%s}', 2475, 0, 101, '%s', -1, 0, 0`, conv, owner), 101, 3},
			{"last page", "page_backward", fmt.Sprintf(`'{%s}', 0, 0, 101, '%s', -1, 0, 0`, conv, owner), 101, 3},
			{"backward page before 2500", "page_backward", fmt.Sprintf(`'{%s}', 0, 2500, 101, '%s', -1, 0, 0`, conv, owner), 101, 3},
			{"first page", "page_forward", fmt.Sprintf(`'{%s}', 0, 0, 101, '%s', -1, 0, 0`, conv, owner), 101, 3},
			{"conversation and a forward page in the middle", "conversation_page_forward", fmt.Sprintf(`'%s', 2475, 0, 101, '%s', 0, true`, conv, owner), 102, 3},
			{"conversation and its last page", "conversation_page_backward", fmt.Sprintf(`'%s', 0, 0, 101, '%s', 0, true`, conv, owner), 102, 3},
			// The same pages when they fit the byte budget, without the window (checked
			// below), across the link's entries and into the fork's own rows; when they may
			// not (a byte less than 101 messages of the bound), the fork's row alone.
			{"fitting: conversation and a forward page in the middle", "fitting_conversation_page_forward", fmt.Sprintf(`'%s', 2475, 0, 101, '%s', 0, true`, conv, owner), 102, 3},
			{"fitting: conversation and its last page", "fitting_conversation_page_backward", fmt.Sprintf(`'%s', 0, 0, 101, '%s', %d, true`, conv, owner, 101*16384), 102, 3},
			{"fitting: conversation and a backward page before 2500", "fitting_conversation_page_backward", fmt.Sprintf(`'%s', 0, 2500, 101, '%s', 16777216, false`, conv, owner), 102, 3},
			{"fitting: the fork's row alone", "fitting_conversation_page_forward", fmt.Sprintf(`'%s', 2475, 0, 101, '%s', %d, true`, conv, owner, 101*16384-1), 1, 0},
			{"fitting: the fork's row alone, backward", "fitting_conversation_page_backward", fmt.Sprintf(`'%s', 0, 0, 101, '%s', %d, true`, conv, owner, 101*16384-1), 1, 0},
			// The same without the tree fields.
			{"treeless: conversation and a forward page in the middle", "treeless_conversation_page_forward", fmt.Sprintf(`'%s', 2475, 0, 101, '%s', 0, false`, conv, owner), 102, 3},
			{"treeless fitting: conversation and a forward page in the middle", "treeless_fitting_conversation_page_forward", fmt.Sprintf(`'%s', 2475, 0, 101, '%s', 0, false`, conv, owner), 102, 3},
			{"treeless fitting: conversation and its last page", "treeless_fitting_conversation_page_backward", fmt.Sprintf(`'%s', 0, 0, 101, '%s', 16777216, false`, conv, owner), 102, 3},
			{"treeless fitting: the fork's row alone", "treeless_fitting_conversation_page_forward", fmt.Sprintf(`'%s', 2475, 0, 101, '%s', %d, false`, conv, owner, 101*16384-1), 1, 0},
			// Neither the fork nor the tree it shares is one line: linePageSQL reads
			// their rows alone, no message.
			{"the fork's row alone, forward", "line_page_forward", fmt.Sprintf(`'%s', 2475, 0, 101, '%s', 0, true`, conv, owner), 1, 0},
			{"the fork's row alone, backward", "line_page_backward", fmt.Sprintf(`'%s', 0, 0, 101, '%s', 0, true`, conv, owner), 1, 0},
			{"the tree's row alone, forward", "line_page_forward", fmt.Sprintf(`'%s', 0, 0, 101, '%s', 0, true`, src, owner), 1, 0},
			{"the tree's row alone, backward", "line_page_backward", fmt.Sprintf(`'%s', 0, 0, 101, '%s', 0, true`, src, owner), 1, 0},
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
				for _, s := range root.find(func(n *planNode) bool { return n.Relation == "fork_paths" }) {
					if s.Index != "fork_paths_pkey" || s.Loops > 1 || s.Removed != 0 {
						t.Errorf("%s, %s, %s: got %s on %s (%d loops), want one probe of fork_paths_pkey:\n%s",
							stats, mode, tc.name, s.Type, s.Index, s.Loops, out)
					}
				}
				loops, read := 0, 0
				for _, s := range root.find(func(n *planNode) bool { return n.Relation == "messages" }) {
					if s.Index != "messages_branch_idx" || s.Removed != 0 || !strings.Contains(s.Cond, "segment =") {
						t.Errorf("%s, %s, %s: got %s on %s (index cond %s, filter %q removing %d), want index ranges of messages_branch_idx:\n%s",
							stats, mode, tc.name, s.Type, s.Index, s.Cond, s.Filter, s.Removed, out)
					}
					if s.Loops == 0 {
						continue
					}
					loops += s.Loops
					read += (s.Rows + s.Removed) * s.Loops
				}
				if loops > tc.segments || read > 101+loops {
					t.Errorf("%s, %s, %s: read messages %d times (%d rows), want at most %d times, 101 rows:\n%s",
						stats, mode, tc.name, loops, read, tc.segments, out)
				}
			}
		}
	}
	check("never analyzed")
	// Forks of their own for the statistics to count (each writes a link, whatever the
	// history's length): with one row, a sequential scan of fork_paths is the cheapest.
	src := chainTree(t, sql, owner, 3)
	var at string
	if err := sql.GetContext(ctx, &at, `SELECT id::text FROM messages WHERE conversation_id = $1 AND segment = 2 AND depth = 150`, src); err != nil {
		t.Fatal(err)
	}
	for range 300 {
		if _, err := d.ForkConversation(parley.WithOwner(ctx, owner), parley.MessageID(at), "another"); err != nil {
			t.Fatal(err)
		}
	}
	for _, table := range []string{"messages", "message_segments", "conversations", "fork_paths"} {
		if _, err := sql.ExecContext(ctx, `ANALYZE `+table); err != nil {
			t.Fatal(err)
		}
	}
	check("analyzed")
}

func pageSQLFor(backward bool) string     { return db.PageSQL[backward] }
func convPageSQLFor(backward bool) string { return db.ConversationPageSQL[backward] }
