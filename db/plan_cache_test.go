package db_test

import (
	"fmt"
	"testing"

	"github.com/parley-dev/parley"
	"github.com/parley-dev/parley/db"
)

// TestPageStatementsKeepGenericPlans checks that every statement FindConversationPage
// reads with, and FindMessages' (pageSQL, llmOnePageSQL), is planned once and then run with
// its generic plan, as preparing it is for: Postgres plans a prepared statement for its arguments five times, then keeps
// the generic plan only when its estimated cost is no more than theirs. The forward
// statements of a conversation with branches read without the tree fields had, in
// their generic plan's cost, a probe that their custom plans left out, and were
// planned anew on every read. Each statement here is run at least ten times, for a
// conversation that is one line and one with branches, forward and backward, with and
// without the tree fields, with a budget the page fits and one it may not, on a pool
// of one connection, whose prepared statements Postgres lists.
func TestPageStatementsKeepGenericPlans(t *testing.T) {
	t.Parallel()
	d := openDB(t)
	ctx := parley.WithOwner(t.Context(), "plan cache")
	line, err := d.CreateConversation(ctx, "line")
	if err != nil {
		t.Fatal(err)
	}
	branched, err := d.CreateConversation(ctx, "branched")
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for i := 1; i <= 120; i++ {
		addText(t, ctx, d, line.ID, fmt.Sprintf("message %d", i), parley.Placement{})
		ids = append(ids, addText(t, ctx, d, branched.ID, fmt.Sprintf("message %d", i), parley.Placement{}).Meta().ID)
	}
	for _, at := range []int{29, 59, 89} { // three branches, each 61 messages long
		addText(t, ctx, d, branched.ID, "an edit", parley.Placement{SiblingOf: ids[at]})
		for i := range 60 {
			addText(t, ctx, d, branched.ID, fmt.Sprintf("reply %d", i), parley.Placement{})
		}
	}
	d.SQL().SetMaxOpenConns(1)
	n, after := 100, parley.MessageCursor(50)
	for _, conv := range []string{line.ID, branched.ID} {
		for _, tree := range []bool{false, true} {
			// 16 MiB: the page fits (101 rows of at most 16 KiB); 100 KiB: it may not.
			for _, budget := range []int{16 << 20, 100 << 10} {
				for range 10 {
					for _, p := range []parley.PageRequest{{First: &n, After: &after}, {Last: &n}} {
						p.Tree, p.MaxBytes = tree, budget
						if _, _, err := d.FindConversationPage(ctx, conv, p); err != nil {
							t.Fatal(err)
						}
					}
				}
			}
		}
	}

	for _, id := range []string{line.ID, branched.ID} {
		conv, err := d.FindConversationByID(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		for range 10 {
			for _, p := range []parley.PageRequest{{First: &n, After: &after}, {Last: &n}, {First: &n, ForLLM: true}, {First: &n, ForLLM: true, MaxBytes: 1}} {
				if _, err := d.FindMessages(ctx, conv, p); err != nil {
					t.Fatal(err)
				}
			}
		}
	}

	plans := map[string][2]int{} // statement: generic plans, custom plans
	rows, err := d.SQL().QueryContext(t.Context(), `SELECT statement, generic_plans, custom_plans FROM pg_prepared_statements`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var q string
		var generic, custom int
		if err := rows.Scan(&q, &generic, &custom); err != nil {
			t.Fatal(err)
		}
		// A statement may be prepared twice on the connection: by database/sql (the hot
		// statements) and by the page's raw read (queryRaw), which runs it.
		p := plans[q]
		plans[q] = [2]int{p[0] + generic, p[1] + custom}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	for name, q := range map[string]string{"pageSQL forward": db.PageSQL[false], "pageSQL backward": db.PageSQL[true], "llmOnePageSQL forward": db.LLMOnePageSQL[false],
		"fittingLLMOnePageSQL forward": db.FittingLLMOnePageSQL[false]} {
		switch p, ok := plans[q]; {
		case !ok || p[0]+p[1] < 10:
			t.Errorf("%s: run %d times on the connection, want 10 at least", name, p[0]+p[1])
		case p[0] == 0:
			t.Errorf("%s: planned anew on each of its %d runs: no generic plan kept", name, p[1])
		}
	}
	for _, line := range []bool{false, true} {
		for _, fits := range []bool{false, true} {
			for _, backward := range []bool{false, true} {
				for _, tree := range []bool{false, true} {
					if line && !tree {
						continue // a line's statements serve both
					}
					p, ok := plans[db.HeadedPageSQL(line, fits, backward, tree)]
					switch {
					case !ok || p[0]+p[1] < 10:
						t.Errorf("one line: %v, fits: %v, backward: %v, tree: %v: run %d times on the connection, want 10 at least", line, fits, backward, tree, p[0]+p[1])
					case p[0] == 0:
						t.Errorf("one line: %v, fits: %v, backward: %v, tree: %v: planned anew on each of its %d runs: no generic plan kept", line, fits, backward, tree, p[1])
					}
				}
			}
		}
	}
}
