package db_test

import (
	"context"
	"fmt"
	"reflect"
	"testing"

	"github.com/parley-dev/parley"
	"github.com/parley-dev/parley/db"
)

// TestConversationPageIsBothReads checks FindConversationPage, the conversation and its
// page in one statement, against the two reads it replaces (FindConversationByID, then
// FindMessages): the same conversation and the same page, forward and backward, at the
// ends and in the middle, within a byte budget, of a conversation whose active branch
// runs through a fork, of an empty one, with the tree fields; ENOTFOUND for another
// owner's conversation and EINVALID for a bad page, as the two reads answer. Pages of a
// conversation that is one line come from linePageSQL, the others' from
// conversationPageSQL after it (TestLinePageOnlyForOneLine).
func TestConversationPageIsBothReads(t *testing.T) {
	t.Parallel()
	d := openDB(t)
	ctx := parley.WithOwner(t.Context(), "pages")
	add := func(conv string, text string, place parley.Placement) parley.Message {
		t.Helper()
		return addText(t, ctx, d, conv, text, place)
	}
	line, err := d.CreateConversation(ctx, "line")
	if err != nil {
		t.Fatal(err)
	}
	var forkAt parley.Message
	for i := range 30 {
		m := add(line.ID, fmt.Sprintf("line %d", i), parley.Placement{})
		if i == 19 {
			forkAt = m
		}
	}
	// A linked fork of line at 20 (db/fork.go): it shares line's 1..20, then its own.
	linked, err := d.ForkConversation(ctx, forkAt.Meta().ID, "linked")
	if err != nil {
		t.Fatal(err)
	}
	for i := range 5 {
		add(linked.ID, fmt.Sprintf("linked %d", i), parley.Placement{})
	}
	// A fork at 10: the active branch is 1..10 of the first segment, then its own.
	forked, err := d.CreateConversation(ctx, "forked")
	if err != nil {
		t.Fatal(err)
	}
	var at parley.Message
	for i := range 20 {
		m := add(forked.ID, fmt.Sprintf("trunk %d", i), parley.Placement{})
		if i == 10 {
			at = m
		}
	}
	add(forked.ID, "edit", parley.Placement{SiblingOf: at.Meta().ID})
	for i := range 5 {
		add(forked.ID, fmt.Sprintf("branch %d", i), parley.Placement{})
	}
	empty, err := d.CreateConversation(ctx, "empty")
	if err != nil {
		t.Fatal(err)
	}

	n := func(v int) *int { return &v }
	cur := func(p int) *string { c := parley.MessageCursor(p); return &c }
	tests := []struct {
		name string
		conv string
		page parley.PageRequest
	}{
		{"first page", line.ID, parley.PageRequest{First: n(10)}},
		{"after", line.ID, parley.PageRequest{First: n(10), After: cur(12)}},
		{"between", line.ID, parley.PageRequest{First: n(10), After: cur(3), Before: cur(8)}},
		{"last page", line.ID, parley.PageRequest{Last: n(10)}},
		{"before", line.ID, parley.PageRequest{Last: n(10), Before: cur(7)}},
		{"default size, tree", line.ID, parley.PageRequest{Tree: true}},
		{"after, tree", line.ID, parley.PageRequest{First: n(10), After: cur(12), Tree: true}},
		{"before, tree", line.ID, parley.PageRequest{Last: n(10), Before: cur(20), Tree: true}},
		// Backward, the range's last row read is the page's own (after: its parent is
		// not in the range).
		{"between, backward, tree", line.ID, parley.PageRequest{Last: n(10), After: cur(12), Before: cur(18), Tree: true}},
		{"last page, tree, budget", line.ID, parley.PageRequest{Last: n(10), Tree: true, MaxBytes: 30}},
		{"after, tree, budget", line.ID, parley.PageRequest{First: n(10), After: cur(5), Tree: true, MaxBytes: 200}},
		{"past the end", line.ID, parley.PageRequest{First: n(10), After: cur(30)}},
		{"budget", line.ID, parley.PageRequest{First: n(10), MaxBytes: 20}},
		{"fork, first page", forked.ID, parley.PageRequest{First: n(100), Tree: true}},
		{"fork, across it", forked.ID, parley.PageRequest{First: n(6), After: cur(8), Tree: true}},
		{"fork, last page", forked.ID, parley.PageRequest{Last: n(8)}},
		{"linked fork, first page", linked.ID, parley.PageRequest{First: n(100), Tree: true}},
		{"linked fork, across its link", linked.ID, parley.PageRequest{First: n(6), After: cur(17), Tree: true}},
		{"linked fork, last page", linked.ID, parley.PageRequest{Last: n(8), Tree: true}},
		{"linked fork, before its link's end, budget", linked.ID, parley.PageRequest{Last: n(10), Before: cur(22), MaxBytes: 60}},
		{"empty", empty.ID, parley.PageRequest{First: n(10)}},
		{"empty, last", empty.ID, parley.PageRequest{Last: n(10)}},
	}
	for _, tc := range tests {
		wantConv, want := referencePage(t, ctx, d, tc.name, tc.conv, tc.page)
		conv, got, err := d.FindConversationPage(ctx, tc.conv, tc.page)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if !reflect.DeepEqual(conv, wantConv) {
			t.Errorf("%s: got conversation %+v, want %+v", tc.name, conv, wantConv)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s: got page %+v, want %+v", tc.name, got, want)
		}
		if len(got.Messages) == 0 && tc.conv != empty.ID && tc.name != "past the end" {
			t.Errorf("%s: got an empty page", tc.name)
		}
	}

	errs := []struct {
		name string
		ctx  string // owner
		conv string
		page parley.PageRequest
		code string
	}{
		{"another owner's", "someone else", line.ID, parley.PageRequest{First: n(10)}, parley.ENOTFOUND},
		{"no such conversation", "pages", "conv_00000000-0000-4000-8000-000000000000", parley.PageRequest{First: n(10)}, parley.ENOTFOUND},
		{"not an id", "pages", "conv_x", parley.PageRequest{First: n(10)}, parley.ENOTFOUND},
		{"negative size", "pages", line.ID, parley.PageRequest{First: n(-1)}, parley.EINVALID},
		{"bad cursor", "pages", line.ID, parley.PageRequest{First: n(1), After: ptr("nope")}, parley.EINVALID},
	}
	for _, tc := range errs {
		_, _, err := d.FindConversationPage(parley.WithOwner(t.Context(), tc.ctx), tc.conv, tc.page)
		if got := parley.ErrorCode(err); got != tc.code {
			t.Errorf("%s: got %v (%s), want %s", tc.name, err, got, tc.code)
		}
	}
}

// TestLinePageOnlyForOneLine checks what linePageSQL decides from the conversation's
// row: the page of a conversation without branches or a shared history (empty too),
// read forward and backward; for a conversation with a branch, a linked fork, and the
// fork once made real (materialize_fork: its rows its own, one line again), the row
// says whether it is one line, and only then do the page's rows follow it.
// FindConversationPage reads each right, and remembers those that are not one line
// until one is again.
func TestLinePageOnlyForOneLine(t *testing.T) {
	t.Parallel()
	d := openDB(t)
	const owner = "lines"
	ctx := parley.WithOwner(t.Context(), owner)
	add := func(conv string, text string, place parley.Placement) parley.Message {
		t.Helper()
		return addText(t, ctx, d, conv, text, place)
	}
	create := func(title string, n int) (*parley.Conversation, []parley.Message) {
		t.Helper()
		c, err := d.CreateConversation(ctx, title)
		if err != nil {
			t.Fatal(err)
		}
		var ms []parley.Message
		for i := range n {
			ms = append(ms, add(c.ID, fmt.Sprintf("%s %d", title, i), parley.Placement{}))
		}
		return c, ms
	}
	line, lineMsgs := create("line", 12)
	empty, _ := create("empty", 0)
	branched, branchedMsgs := create("branched", 12)
	add(branched.ID, "edit", parley.Placement{SiblingOf: branchedMsgs[5].Meta().ID})
	linked, err := d.ForkConversation(ctx, lineMsgs[7].Meta().ID, "linked")
	if err != nil {
		t.Fatal(err)
	}
	add(linked.ID, "linked's own", parley.Placement{})
	madeReal, err := d.ForkConversation(ctx, lineMsgs[9].Meta().ID, "made real")
	if err != nil {
		t.Fatal(err)
	}
	realKey, _ := parley.ParseConversationID(madeReal.ID)
	if _, err := d.SQL().ExecContext(t.Context(), `SELECT materialize_fork($1)`, realKey); err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		name     string
		conv     *parley.Conversation
		line     bool
		messages int // the page's rows, of 10 asked for (and the one that tells of more)
	}{
		{"one line", line, true, 11},
		{"empty", empty, true, 0},
		{"a branch", branched, false, 0},
		{"a linked fork", linked, false, 0},
		{"a fork made real", madeReal, true, 10},
	}
	for _, tc := range tests {
		key, _ := parley.ParseConversationID(tc.conv.ID)
		for backward, dir := range map[bool]string{false: "forward", true: "backward"} {
			rows, err := d.SQL().QueryxContext(t.Context(), db.LinePageSQL[backward], key, 0, 0, 11, owner, 0, true)
			if err != nil {
				t.Fatalf("%s, %s: %v", tc.name, dir, err)
			}
			var heads, messages int
			var line bool
			for rows.Next() {
				cols, err := rows.SliceScan()
				if err != nil {
					t.Fatal(err)
				}
				// The conversation's row (headRow) is the one without a schema version;
				// its line column is a message row's hidden.
				if cols[3] != nil {
					messages++
					continue
				}
				heads++
				line, _ = cols[20].(bool)
			}
			if err := rows.Err(); err != nil {
				t.Fatal(err)
			}
			rows.Close()
			if heads != 1 || line != tc.line || messages != tc.messages {
				t.Errorf("%s, %s: got %d conversation rows (one line: %v) and %d messages, want 1 (%v) and %d",
					tc.name, dir, heads, line, messages, tc.line, tc.messages)
			}
			// Whichever statement read it, the page is the two reads'.
			n := 10
			page := parley.PageRequest{First: &n, Tree: true}
			if backward {
				page = parley.PageRequest{Last: &n, Tree: true}
			}
			conv, err := d.FindConversationByID(ctx, tc.conv.ID)
			if err != nil {
				t.Fatal(err)
			}
			want, err := d.FindMessages(ctx, conv, page)
			if err != nil {
				t.Fatal(err)
			}
			_, got, err := d.FindConversationPage(ctx, tc.conv.ID, page)
			if err != nil {
				t.Fatalf("%s, %s: %v", tc.name, dir, err)
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("%s, %s: got page %+v, want %+v", tc.name, dir, got, want)
			}
			// Found not one line, it is read with conversationPageSQL from now on.
			if got := d.NotALine(tc.conv.ID); got == tc.line {
				t.Errorf("%s, %s: remembered as not one line: %v, want %v", tc.name, dir, got, !tc.line)
			}
		}
	}

	// The linked fork, remembered as not one line, is made real: read again, its page is
	// the two reads' and it is one line again.
	linkedKey, _ := parley.ParseConversationID(linked.ID)
	if _, err := d.SQL().ExecContext(t.Context(), `SELECT materialize_fork($1)`, linkedKey); err != nil {
		t.Fatal(err)
	}
	n := 10
	page := parley.PageRequest{First: &n, Tree: true}
	conv, err := d.FindConversationByID(ctx, linked.ID)
	if err != nil {
		t.Fatal(err)
	}
	want, err := d.FindMessages(ctx, conv, page)
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		_, got, err := d.FindConversationPage(ctx, linked.ID, page)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("the linked fork made real: got page %+v, want %+v", got, want)
		}
		if d.NotALine(linked.ID) {
			t.Errorf("the linked fork made real: remembered as not one line")
		}
	}
}

// addText adds a user's text message to conv at place.
// referencePage is what FindConversationPage must return for the page of conv that the
// test named name reads: the conversation as FindConversationByID reads it, and the page
// as FindMessages reads it (pageSQL, which sums the byte budget in Postgres).
func referencePage(t *testing.T, ctx context.Context, d *db.DB, name, conv string, page parley.PageRequest) (*parley.Conversation, *parley.MessagePage) {
	t.Helper()
	c, err := d.FindConversationByID(ctx, conv)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	p, err := d.FindMessages(ctx, c, page)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return c, p
}

func addText(t *testing.T, ctx context.Context, d *db.DB, conv, text string, place parley.Placement) parley.Message {
	t.Helper()
	m := &parley.TextMessage{MessageMeta: parley.MessageMeta{Role: parley.RoleUser, Place: place}, Body: parley.TextBody(text)}
	stored, err := d.AddMessage(ctx, conv, m)
	if err != nil {
		t.Fatal(err)
	}
	return stored
}

func ptr[T any](v T) *T { return &v }
