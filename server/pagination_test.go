package server_test

import (
	"fmt"
	"slices"
	"testing"

	"github.com/parley-dev/parley/internal/testserver"
)

func positions(p page) []int {
	var out []int
	for _, e := range p.Conversation.Messages.Edges {
		out = append(out, int(e.Node["position"].(float64)))
	}
	return out
}

func span(from, to int) []int {
	var out []int
	for i := from; i <= to; i++ {
		out = append(out, i)
	}
	return out
}

// TestMessagePagination walks a conversation of 23 messages forwards and backwards in
// pages of 5 and checks every page's positions and page info.
func TestMessagePagination(t *testing.T) {
	t.Parallel()
	srv := testserver.New(t)
	conv := srv.CreateConversation(t, "pages")
	const total = 23
	for i := 1; i <= total; i++ {
		srv.AddMessage(t, conv, testserver.Text("USER", fmt.Sprintf("m%d", i)))
	}

	// Forwards.
	var got []int
	var after any
	for pageNo := 0; ; pageNo++ {
		p := readPage(t, srv, map[string]any{"c": conv, "first": 5, "after": after})
		info := p.Conversation.Messages.PageInfo
		pos := positions(p)
		got = append(got, pos...)
		if want := pageNo > 0; info.HasPreviousPage != want {
			t.Errorf("forward page %d: hasPreviousPage %v, want %v", pageNo, info.HasPreviousPage, want)
		}
		if p.Conversation.Messages.TotalCount != total {
			t.Errorf("totalCount: got %d, want %d", p.Conversation.Messages.TotalCount, total)
		}
		if !info.HasNextPage {
			break
		}
		if pageNo > 10 {
			t.Fatal("forward pagination does not end")
		}
		after = *info.EndCursor
	}
	if !slices.Equal(got, span(1, total)) {
		t.Errorf("forward: got %v, want 1..%d", got, total)
	}

	// Backwards: before always means older.
	got = nil
	var before any
	for pageNo := 0; ; pageNo++ {
		p := readPage(t, srv, map[string]any{"c": conv, "last": 5, "before": before})
		info := p.Conversation.Messages.PageInfo
		got = append(positions(p), got...)
		if want := pageNo > 0; info.HasNextPage != want {
			t.Errorf("backward page %d: hasNextPage %v, want %v", pageNo, info.HasNextPage, want)
		}
		if !info.HasPreviousPage {
			break
		}
		if pageNo > 10 {
			t.Fatal("backward pagination does not end")
		}
		before = *info.StartCursor
	}
	if !slices.Equal(got, span(1, total)) {
		t.Errorf("backward: got %v, want 1..%d", got, total)
	}

	// Ranges and edge cases.
	all := readPage(t, srv, map[string]any{"c": conv, "first": 100})
	cursorAt := func(pos int) string { return all.Conversation.Messages.Edges[pos-1].Cursor }
	for _, tt := range []struct {
		name                 string
		vars                 map[string]any
		want                 []int
		hasNext, hasPrevious bool
	}{
		{"default page", map[string]any{}, span(1, total), false, false},
		{"after and before", map[string]any{"after": cursorAt(3), "before": cursorAt(8), "first": 10}, span(4, 7), true, true},
		{"last within after", map[string]any{"after": cursorAt(20), "last": 10}, span(21, 23), false, true},
		{"first and last", map[string]any{"first": 10, "last": 3}, span(8, 10), true, true},
		{"after the end", map[string]any{"after": cursorAt(23), "first": 5}, nil, false, true},
		{"before the start", map[string]any{"before": cursorAt(1), "last": 5}, nil, true, false},
		{"first zero", map[string]any{"first": 0}, nil, true, false},
	} {
		tt.vars["c"] = conv
		p := readPage(t, srv, tt.vars)
		info := p.Conversation.Messages.PageInfo
		if got := positions(p); !slices.Equal(got, tt.want) {
			t.Errorf("%s: got %v, want %v", tt.name, got, tt.want)
		}
		if info.HasNextPage != tt.hasNext || info.HasPreviousPage != tt.hasPrevious {
			t.Errorf("%s: hasNext %v hasPrevious %v, want %v %v", tt.name, info.HasNextPage, info.HasPreviousPage, tt.hasNext, tt.hasPrevious)
		}
	}

	// Bad arguments. A page over the maximum is a limit, refused before anything runs.
	for _, tt := range []struct {
		name string
		vars map[string]any
		want string
	}{
		{"negative first", map[string]any{"first": -1}, "BAD_USER_INPUT"},
		{"huge last", map[string]any{"last": 1001}, "PAGE_TOO_LARGE"},
		{"garbage cursor", map[string]any{"after": "not-a-cursor", "first": 1}, "BAD_USER_INPUT"},
		{"conversation cursor for messages", map[string]any{"before": "YzoxOjI", "last": 1}, "BAD_USER_INPUT"},
	} {
		tt.vars["c"] = conv
		if code := srv.Do(t, messagesQuery, tt.vars).ErrorCode(t); code != tt.want {
			t.Errorf("%s: got %s, want %s", tt.name, code, tt.want)
		}
	}
}

// TestConversationPagination pages through conversations, newest first, both ways.
func TestConversationPagination(t *testing.T) {
	t.Parallel()
	srv := testserver.New(t)
	var ids []string
	for i := range 7 {
		ids = append(ids, srv.CreateConversation(t, fmt.Sprintf("c%d", i)))
	}
	slices.Reverse(ids) // newest first
	const q = `query($first: Int, $after: String, $last: Int, $before: String) {
		conversations(first: $first, after: $after, last: $last, before: $before) {
			totalCount pageInfo { hasNextPage hasPreviousPage startCursor endCursor }
			edges { cursor node { id } } } }`
	type conns struct {
		Conversations struct {
			TotalCount int
			PageInfo   struct {
				HasNextPage, HasPreviousPage bool
				StartCursor, EndCursor       *string
			}
			Edges []struct{ Node struct{ ID string } }
		}
	}
	var got []string
	vars := map[string]any{"first": 3}
	for range 5 {
		var c conns
		srv.MustDo(t, q, vars, &c)
		for _, e := range c.Conversations.Edges {
			got = append(got, e.Node.ID)
		}
		if c.Conversations.TotalCount != 7 {
			t.Errorf("totalCount: got %d, want 7", c.Conversations.TotalCount)
		}
		if !c.Conversations.PageInfo.HasNextPage {
			break
		}
		vars = map[string]any{"first": 3, "after": *c.Conversations.PageInfo.EndCursor}
	}
	if !slices.Equal(got, ids) {
		t.Errorf("forward: got %v, want %v", got, ids)
	}
	got = nil
	vars = map[string]any{"last": 3}
	for range 5 {
		var c conns
		srv.MustDo(t, q, vars, &c)
		var page []string
		for _, e := range c.Conversations.Edges {
			page = append(page, e.Node.ID)
		}
		got = append(page, got...)
		if !c.Conversations.PageInfo.HasPreviousPage {
			break
		}
		vars = map[string]any{"last": 3, "before": *c.Conversations.PageInfo.StartCursor}
	}
	if !slices.Equal(got, ids) {
		t.Errorf("backward: got %v, want %v", got, ids)
	}
	if code := srv.Do(t, q, map[string]any{"first": 2, "after": "bTox"}).ErrorCode(t); code != "BAD_USER_INPUT" {
		t.Errorf("message cursor for conversations: got %s, want BAD_USER_INPUT", code)
	}
}
