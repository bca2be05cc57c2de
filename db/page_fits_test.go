package db_test

import (
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/parley-dev/parley"
)

// TestLinePageFitsOrIsCut checks FindConversationPage's pages of a conversation that is
// one line against FindMessages' (pageSQL, which always sums the byte budget in
// Postgres), whether or not the conversation's bound of its message sizes says the page
// fits its budget (fittingLinePageSQL reads it without the window; otherwise
// FindConversationPage reads it again with the window, and remembers that): a
// conversation with one message of 900 KiB among small ones, read forward and backward,
// with and without the tree fields, across the large message, the budget cutting the
// page just before it and letting it alone through after; and a conversation of
// messages of one size, each read with budgets of exactly the page times that size
// (which fits) and a byte less (which does not). Each page is read twice (the second
// time as remembered) and must be the same, and not empty, every time.
func TestLinePageFitsOrIsCut(t *testing.T) {
	t.Parallel()
	d := openDB(t)
	ctx := parley.WithOwner(t.Context(), "fits")
	huge, err := d.CreateConversation(ctx, "huge")
	if err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= 40; i++ {
		text := fmt.Sprintf("message %d", i)
		if i == 15 {
			text = strings.Repeat("x", 900<<10)
		}
		addText(t, ctx, d, huge.ID, text, parley.Placement{})
	}
	even, err := d.CreateConversation(ctx, "even")
	if err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= 20; i++ {
		addText(t, ctx, d, even.ID, fmt.Sprintf("message %02d", i), parley.Placement{})
	}
	bound, size := boundOf(t, d.SQL(), even.ID) // the starting bound, and each message's size

	n := func(v int) *int { return &v }
	cur := func(p int) *string { c := parley.MessageCursor(p); return &c }
	const budget = 512 << 10
	tests := []struct {
		name  string
		conv  string
		page  parley.PageRequest
		count int // messages the page holds
	}{
		{"first page, cut before the large message", huge.ID, parley.PageRequest{First: n(30), MaxBytes: budget}, 14},
		{"the large message alone", huge.ID, parley.PageRequest{First: n(30), After: cur(14), MaxBytes: budget}, 1},
		{"after it", huge.ID, parley.PageRequest{First: n(30), After: cur(15), MaxBytes: budget}, 25},
		{"first page, tree", huge.ID, parley.PageRequest{First: n(30), MaxBytes: budget, Tree: true}, 14},
		{"after it, tree", huge.ID, parley.PageRequest{First: n(10), After: cur(20), MaxBytes: budget, Tree: true}, 10},
		{"last page, cut before the large message", huge.ID, parley.PageRequest{Last: n(30), MaxBytes: budget}, 25},
		{"last page, tree", huge.ID, parley.PageRequest{Last: n(30), MaxBytes: budget, Tree: true}, 25},
		{"the default budget", huge.ID, parley.PageRequest{First: n(30), MaxBytes: 16 << 20, Tree: true}, 30},
		{"no budget", huge.ID, parley.PageRequest{Last: n(30)}, 30},
		{"a page that fits before the large message", huge.ID, parley.PageRequest{First: n(10), MaxBytes: budget}, 10},
		{"exactly fits", even.ID, parley.PageRequest{First: n(10), MaxBytes: 11 * bound}, 10},
		{"exactly fits, tree", even.ID, parley.PageRequest{First: n(10), After: cur(4), MaxBytes: 11 * bound, Tree: true}, 10},
		{"exactly fits, backward", even.ID, parley.PageRequest{Last: n(10), MaxBytes: 11 * bound}, 10},
		{"exactly fits, backward, tree", even.ID, parley.PageRequest{Last: n(10), After: cur(4), Before: cur(12), MaxBytes: 11 * bound, Tree: true}, 7},
		{"a byte short, backward, tree", even.ID, parley.PageRequest{Last: n(10), After: cur(4), Before: cur(12), MaxBytes: 11*bound - 1, Tree: true}, 7},
		{"a byte short", even.ID, parley.PageRequest{First: n(10), MaxBytes: 11*bound - 1}, 10},
		{"a byte short, tree", even.ID, parley.PageRequest{First: n(10), After: cur(4), MaxBytes: 11*bound - 1, Tree: true}, 10},
		{"a byte short, backward", even.ID, parley.PageRequest{Last: n(10), MaxBytes: 11*bound - 1}, 10},
		{"a third of a page", even.ID, parley.PageRequest{Last: n(10), MaxBytes: 3 * size}, 3},
	}
	for _, tc := range tests {
		_, want := referencePage(t, ctx, d, tc.name, tc.conv, tc.page)
		if len(want.Messages) != tc.count {
			t.Fatalf("%s: FindMessages got %d messages, want %d", tc.name, len(want.Messages), tc.count)
		}
		for read := 1; read <= 2; read++ {
			_, got, err := d.FindConversationPage(ctx, tc.conv, tc.page)
			if err != nil {
				t.Fatalf("%s, read %d: %v", tc.name, read, err)
			}
			if len(got.Messages) != tc.count || !reflect.DeepEqual(got, want) {
				t.Errorf("%s, read %d: got %d messages (%d bytes, more: %v), want %d (%d bytes, more: %v), as FindMessages reads them",
					tc.name, read, len(got.Messages), got.Bytes, got.HasNextPage, len(want.Messages), want.Bytes, want.HasNextPage)
			}
		}
	}
}
