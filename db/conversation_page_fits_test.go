package db_test

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/parley-dev/parley"
	"github.com/parley-dev/parley/db"
)

// chainShapes stores, for owner, the conversations whose pages follow a chain
// (conversationPageSQL, not linePageSQL), each named: a conversation whose active
// branch runs through three segments (1..7 of segment 0, 8..11 of segment 1, 12..25
// of segment 2); a linked fork of it at depth 20 (a link of three entries, then rows of
// its own, 21..28); a linked fork of a line at 20 (one entry, own rows 21..25); a
// linked fork that has a branch of its own (segments > 0 and a shared history); and
// the same three-segment conversation with a message of 900 KiB at depth 10, in its
// second segment, and a linked fork sharing it. Messages hold their depth in their
// text.
func chainShapes(t *testing.T, d *db.DB, owner string) map[string]string {
	t.Helper()
	ctx := parley.WithOwner(t.Context(), owner)
	text := func(depth int, large bool) string {
		if large {
			return strings.Repeat("x", 900<<10)
		}
		return fmt.Sprintf("depth %d", depth)
	}
	branched := func(title string, largeAt int) (string, []parley.Message) {
		c, err := d.CreateConversation(ctx, title)
		if err != nil {
			t.Fatal(err)
		}
		var path []parley.Message // the active branch, by depth - 1
		add := func(depth int, place parley.Placement) {
			m := addText(t, ctx, d, c.ID, text(depth, depth == largeAt), place)
			path = append(path[:depth-1], m)
		}
		for depth := 1; depth <= 12; depth++ {
			add(depth, parley.Placement{})
		}
		add(8, parley.Placement{SiblingOf: path[7].Meta().ID}) // segment 1 at depth 8
		for depth := 9; depth <= 15; depth++ {
			add(depth, parley.Placement{})
		}
		add(12, parley.Placement{SiblingOf: path[11].Meta().ID}) // segment 2 at depth 12
		for depth := 13; depth <= 25; depth++ {
			add(depth, parley.Placement{})
		}
		return c.ID, path
	}
	fork := func(title string, at parley.Message, own int) string {
		f, err := d.ForkConversation(ctx, at.Meta().ID, title)
		if err != nil {
			t.Fatal(err)
		}
		for i := range own {
			addText(t, ctx, d, f.ID, fmt.Sprintf("%s's own %d", title, i), parley.Placement{})
		}
		return f.ID
	}
	shapes := map[string]string{}
	var path []parley.Message
	shapes["branched"], path = branched("branched", 0)
	shapes["fork of branched"] = fork("fork of branched", path[19], 8)
	line, err := d.CreateConversation(ctx, "line")
	if err != nil {
		t.Fatal(err)
	}
	var lineMsgs []parley.Message
	for depth := 1; depth <= 30; depth++ {
		lineMsgs = append(lineMsgs, addText(t, ctx, d, line.ID, text(depth, false), parley.Placement{}))
	}
	shapes["fork of line"] = fork("fork of line", lineMsgs[19], 5)
	// A linked fork with a branch of its own, under its own rows.
	forked := fork("forked fork", lineMsgs[9], 5)
	fp, err := d.FindMessages(ctx, &parley.Conversation{ID: forked}, parley.PageRequest{First: ptr(100)})
	if err != nil {
		t.Fatal(err)
	}
	addText(t, ctx, d, forked, "a sibling of depth 13", parley.Placement{SiblingOf: fp.Messages[12].Meta().ID})
	for i := range 4 {
		addText(t, ctx, d, forked, fmt.Sprintf("on the sibling %d", i), parley.Placement{})
	}
	shapes["forked fork"] = forked
	shapes["large"], path = branched("large", 10)
	shapes["fork of large"] = fork("fork of large", path[19], 8)
	// Each shape is what its name says.
	for name, id := range shapes {
		key, _ := parley.ParseConversationID(id)
		var segments, baseDepth int
		if err := d.SQL().QueryRowContext(t.Context(), `SELECT segments, base_depth FROM conversations WHERE id = $1`, key).Scan(&segments, &baseDepth); err != nil {
			t.Fatal(err)
		}
		want := map[string][2]bool{"branched": {true, false}, "fork of branched": {false, true}, "fork of line": {false, true},
			"forked fork": {true, true}, "large": {true, false}, "fork of large": {false, true}}[name]
		if (segments > 0) != want[0] || (baseDepth > 0) != want[1] {
			t.Fatalf("%s: %d segments, base depth %d, want segments: %v, a shared history: %v", name, segments, baseDepth, want[0], want[1])
		}
	}
	return shapes
}

// TestFittingConversationPageIsWindowed checks fittingConversationPageSQL against
// conversationPageSQL, statement against statement, on conversations that are not one
// line (chainShapes): for every page of several sizes, forward and backward, from
// cursors at, before and after each range's bounds, with and without the tree fields,
// with no byte budget, a budget of exactly the page times the conversation's bound of
// its message sizes, and a byte less. Where the page fits, both must send the same rows
// with the same parents, as the reader resolves them (the window's ids and probes, the
// fitting statement's markers across the chain's ranges); where it may not, the fitting
// statement sends the conversation's row alone.
func TestFittingConversationPageIsWindowed(t *testing.T) {
	t.Parallel()
	d := openDB(t)
	const owner = "fitting"
	ctx := t.Context()
	shapes := chainShapes(t, d, owner)
	names := slices.Sorted(func(yield func(string) bool) {
		for n := range shapes {
			if !yield(n) {
				return
			}
		}
	})
	compared, cutOff := 0, 0
	for _, name := range names {
		key, _ := parley.ParseConversationID(shapes[name])
		bound, _ := boundOf(t, d.SQL(), key)
		for _, limit := range []int{1, 4, 9, 40} {
			for _, budget := range []int{0, limit * bound, limit*bound - 1} {
				for _, after := range []int{0, 6, 7, 8, 11, 12, 19, 20, 21, 27} {
					for _, before := range []int{0, 8, 9, 12, 13, 21, 22, 30} {
						if before != 0 && before <= after {
							continue
						}
						for _, backward := range []bool{false, true} {
							for _, tree := range []bool{false, true} {
								args := []any{key, after, before, limit, owner, budget, tree}
								at := fmt.Sprintf("%s, %d after %d before %d, budget %d, backward %v, tree %v", name, limit, after, before, budget, backward, tree)
								wantIDs, wantParents, found, err := d.HeadedPage(ctx, false, backward, args...)
								if err != nil || !found {
									t.Fatalf("%s, the window: %v (found: %v)", at, err, found)
								}
								ids, parents, found, err := d.HeadedPage(ctx, true, backward, args...)
								if err != nil || !found {
									t.Fatalf("%s, fitting: %v (found: %v)", at, err, found)
								}
								if budget != 0 && limit*bound > budget {
									if cutOff++; len(ids) != 0 {
										t.Errorf("%s: a page that may not fit: got %d rows, want the conversation's alone", at, len(ids))
									}
									continue
								}
								compared++
								if !slices.Equal(ids, wantIDs) || !slices.Equal(parents, wantParents) {
									t.Errorf("%s:\ngot  %v\n     parents %v\nwant %v\n     parents %v", at, ids, parents, wantIDs, wantParents)
								}
							}
						}
					}
				}
			}
		}
	}
	if compared == 0 || cutOff == 0 {
		t.Errorf("compared %d pages, %d cut off: want some of each", compared, cutOff)
	}
}

// TestConversationPageFitsOrIsCut checks FindConversationPage's pages of conversations
// that are not one line (chainShapes) against FindMessages' (pageSQL, which always sums
// the byte budget in Postgres), as TestLinePageFitsOrIsCut does for one line: pages
// crossing the chain's ranges (segments, a linked fork's shared entries and its own
// rows), forward and backward, with and without the tree fields and cursors, at
// budgets of exactly the page times the conversation's bound (which fits:
// fittingConversationPageSQL) and a byte less (which does not: read again with the
// window, then remembered); and a conversation with a message of 900 KiB in its second
// segment, and a fork sharing it, whose bound no page of two fits within a budget of
// 1 MiB. Each page is read twice and must be the same, and not empty, every time.
func TestConversationPageFitsOrIsCut(t *testing.T) {
	t.Parallel()
	d := openDB(t)
	const owner = "cut"
	ctx := parley.WithOwner(t.Context(), owner)
	shapes := chainShapes(t, d, owner)
	n := func(v int) *int { return &v }
	cur := func(p int) *string { c := parley.MessageCursor(p); return &c }
	type test struct {
		name  string
		conv  string
		page  parley.PageRequest
		count int // messages the page holds; 0: as many as FindMessages', not none
	}
	var tests []test
	for _, name := range []string{"branched", "fork of branched", "fork of line", "forked fork"} {
		bound, _ := boundOf(t, d.SQL(), shapes[name])
		for _, budget := range []struct {
			name  string
			bytes int
		}{{"exactly fits", 11 * bound}, {"a byte short", 11*bound - 1}, {"no budget", 0}} {
			at := name + ", " + budget.name
			tests = append(tests,
				test{at + ", first page", shapes[name], parley.PageRequest{First: n(10), MaxBytes: budget.bytes}, 10},
				test{at + ", across the ranges, tree", shapes[name], parley.PageRequest{First: n(10), After: cur(5), MaxBytes: budget.bytes, Tree: true}, 10},
				test{at + ", across the ranges, forward", shapes[name], parley.PageRequest{First: n(10), After: cur(14), MaxBytes: budget.bytes}, 0},
				test{at + ", last page, tree", shapes[name], parley.PageRequest{Last: n(10), MaxBytes: budget.bytes, Tree: true}, 10},
				test{at + ", backward across the ranges, tree", shapes[name], parley.PageRequest{Last: n(10), Before: cur(22), MaxBytes: budget.bytes, Tree: true}, 0},
				test{at + ", backward between, tree", shapes[name], parley.PageRequest{Last: n(10), After: cur(6), Before: cur(13), MaxBytes: budget.bytes, Tree: true}, 6},
				test{at + ", backward before", shapes[name], parley.PageRequest{Last: n(10), Before: cur(12), MaxBytes: budget.bytes}, 10},
			)
		}
	}
	const budget = 512 << 10 // less than the large message
	for _, name := range []string{"large", "fork of large"} {
		bound, _ := boundOf(t, d.SQL(), shapes[name])
		if bound < 900<<10 {
			t.Fatalf("%s: a bound of %d bytes, want at least the large message's", name, bound)
		}
		leaf := map[string]int{"large": 25, "fork of large": 28}[name]
		tests = append(tests,
			test{name + ", first page, cut before the large message", shapes[name], parley.PageRequest{First: n(20), MaxBytes: budget}, 9},
			test{name + ", the large message alone", shapes[name], parley.PageRequest{First: n(20), After: cur(9), MaxBytes: budget, Tree: true}, 1},
			test{name + ", after it, across the ranges", shapes[name], parley.PageRequest{First: n(20), After: cur(10), MaxBytes: budget, Tree: true}, min(20, leaf-10)},
			test{name + ", last page, tree", shapes[name], parley.PageRequest{Last: n(20), MaxBytes: budget, Tree: true}, leaf - 10},
			test{name + ", backward to the large message, tree", shapes[name], parley.PageRequest{Last: n(20), Before: cur(14), MaxBytes: budget, Tree: true}, 3},
			// $4 = 4 rows of the bound: exactly fits, and a byte short.
			test{name + ", exactly a page of the bound", shapes[name], parley.PageRequest{First: n(3), After: cur(8), MaxBytes: 4 * bound, Tree: true}, 3},
			test{name + ", a byte short of a page of the bound", shapes[name], parley.PageRequest{First: n(3), After: cur(8), MaxBytes: 4*bound - 1, Tree: true}, 3},
			test{name + ", exactly a page of the bound, backward", shapes[name], parley.PageRequest{Last: n(3), Before: cur(12), MaxBytes: 4 * bound, Tree: true}, 3},
			test{name + ", a byte short, backward", shapes[name], parley.PageRequest{Last: n(3), Before: cur(12), MaxBytes: 4*bound - 1, Tree: true}, 3},
			test{name + ", no budget", shapes[name], parley.PageRequest{Last: n(30), Tree: true}, leaf},
			test{name + ", the default budget", shapes[name], parley.PageRequest{First: n(30), MaxBytes: 16 << 20}, leaf},
		)
	}
	for _, tc := range tests {
		wantConv, want := referencePage(t, ctx, d, tc.name, tc.conv, tc.page)
		if tc.count == 0 {
			tc.count = len(want.Messages) // the shape's: any but none
		}
		if len(want.Messages) != tc.count || tc.count == 0 {
			t.Fatalf("%s: FindMessages got %d messages, want %d", tc.name, len(want.Messages), tc.count)
		}
		for read := 1; read <= 2; read++ {
			conv, got, err := d.FindConversationPage(ctx, tc.conv, tc.page)
			if err != nil {
				t.Fatalf("%s, read %d: %v", tc.name, read, err)
			}
			if !reflect.DeepEqual(conv, wantConv) {
				t.Errorf("%s, read %d: got conversation %+v, want %+v", tc.name, read, conv, wantConv)
			}
			if len(got.Messages) != tc.count || !reflect.DeepEqual(got, want) {
				t.Errorf("%s, read %d: got %d messages (%d bytes, more: %v), want %d (%d bytes, more: %v), as FindMessages reads them",
					tc.name, read, len(got.Messages), got.Bytes, got.HasNextPage, len(want.Messages), want.Bytes, want.HasNextPage)
			}
			if !d.NotALine(tc.conv) {
				t.Errorf("%s, read %d: not remembered as not one line", tc.name, read)
			}
		}
	}
}

// TestHeadedPagesArePrepared checks that every statement FindConversationPage reads a
// page with is prepared with the hot statements when the pool opens: unprepared, each
// read is parsed and planned again (a first build of fittingLinePageSQL's round, not
// prepared, read in 2.24 ms what main read in 1.62).
func TestHeadedPagesArePrepared(t *testing.T) {
	t.Parallel()
	d := openDB(t)
	for _, line := range []bool{false, true} {
		for _, fits := range []bool{false, true} {
			for _, backward := range []bool{false, true} {
				for _, tree := range []bool{false, true} {
					if !d.Prepared(db.HeadedPageSQL(line, fits, backward, tree)) {
						t.Errorf("one line: %v, fits: %v, backward: %v, tree: %v: not prepared", line, fits, backward, tree)
					}
				}
			}
		}
	}
}

// TestTreeMessagesCrossBranches checks that FindTreeMessages, whose rows come in the
// order of their positions across the branches (their depths going back at each
// branch), reads a branched conversation's every message, with and without a budget:
// only a page along one branch ends where its depths leave a gap (scanRows).
func TestTreeMessagesCrossBranches(t *testing.T) {
	t.Parallel()
	d := openDB(t)
	const owner = "tree pages"
	ctx := parley.WithOwner(t.Context(), owner)
	shapes := chainShapes(t, d, owner)
	for _, budget := range []int{0, 16 << 20} {
		p, err := d.FindTreeMessages(ctx, &parley.Conversation{ID: shapes["branched"]}, 0, 100, budget)
		if err != nil {
			t.Fatal(err)
		}
		// Segment 0 holds depths 1..12, segment 1 8..15, segment 2 12..25.
		if len(p.Messages) != 12+8+14 || p.HasNextPage {
			t.Errorf("budget %d: got %d messages (more: %v), want 34 and no more", budget, len(p.Messages), p.HasNextPage)
		}
	}
}
