package server_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/parley-dev/parley/internal/testserver"
)

// postBytes posts a query and returns the response's bytes.
func postBytes(t *testing.T, srv *testserver.Wired, query string, vars map[string]any) []byte {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"query": query, "variables": vars})
	resp, err := http.Post(srv.URL+"/graphql", "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

type bytesPage struct {
	PageInfo struct {
		HasNextPage, HasPreviousPage bool
		StartCursor, EndCursor       *string
	}
	Edges []struct {
		Node struct {
			Position int
			Text     string
		}
	}
}

// A response's message pages hold at most --max-page-bytes of stored messages: a page
// past it ends early with hasNextPage (or hasPreviousPage) and its cursors at what it
// holds, always with at least one message, and paging on with those cursors returns
// every message exactly once, forwards and backwards. The pages of several
// conversations in one response share the budget.
func TestPageBytesBounded(t *testing.T) {
	t.Parallel()
	const budget = 1 << 20
	srv := testserver.NewWired(t, fmt.Sprintf("limits:\n  max_page_bytes: %d\n", budget))
	conv := srv.CreateConversation(t, "big")
	const n = 40
	sizes := make([]int, n+1)
	for i := 1; i <= n; i++ {
		size := 100 << 10
		switch {
		case i == 17:
			size = 1 << 20 // a message whose stored bytes are over the budget alone
		case i%7 == 0:
			size = 300 << 10
		}
		sizes[i] = size
		srv.AddMessage(t, conv, testserver.Text("USER", fmt.Sprintf("%d:", i)+strings.Repeat("x", size-len(fmt.Sprint(i))-1)))
	}
	total := 0
	for _, s := range sizes {
		total += s
	}
	// What a page may write past the budget: the one message that crossed it (here
	// the 1 MiB one, its text selected once), plus the page's JSON around the texts.
	const slack = 1<<20 + 64<<10

	page := func(args string, vars map[string]any) (bytesPage, int) {
		t.Helper()
		raw := postBytes(t, srv, `query($c: ID!, $f: Int, $a: String, $l: Int, $b: String) { conversation(id: $c) { messages(first: $f, after: $a, last: $l, before: $b) {
			pageInfo { hasNextPage hasPreviousPage startCursor endCursor } edges { node { ... on MessageBase { position } ... on TextBearing { text } } } } } }`, vars)
		var out struct {
			Data   struct{ Conversation struct{ Messages bytesPage } }
			Errors []any
		}
		if err := json.Unmarshal(raw, &out); err != nil || len(out.Errors) > 0 {
			t.Fatalf("page %s: %v %v\n%.500s", args, err, out.Errors, raw)
		}
		return out.Data.Conversation.Messages, len(raw)
	}
	check := func(dir string, p bytesPage, size int, seen map[int]int) {
		t.Helper()
		if len(p.Edges) == 0 {
			t.Fatalf("%s: an empty page, want at least one message", dir)
		}
		if size > budget+slack {
			t.Errorf("%s: a response of %d bytes, want at most %d (the budget and one message)", dir, size, budget+slack)
		}
		for _, e := range p.Edges {
			seen[e.Node.Position]++
			if want := sizes[e.Node.Position]; len(e.Node.Text) != want {
				t.Errorf("%s: message %d has %d bytes of text, want %d", dir, e.Node.Position, len(e.Node.Text), want)
			}
		}
	}

	// Forwards.
	seen := map[int]int{}
	pages, largest := 0, 0
	var after any
	for {
		p, size := page("forwards", map[string]any{"c": conv, "f": 1000, "a": after})
		check("forwards", p, size, seen)
		pages, largest = pages+1, max(largest, size)
		for i := 1; i < len(p.Edges); i++ {
			if p.Edges[i].Node.Position != p.Edges[i-1].Node.Position+1 {
				t.Fatalf("forwards: positions %d then %d, want consecutive", p.Edges[i-1].Node.Position, p.Edges[i].Node.Position)
			}
		}
		if !p.PageInfo.HasNextPage {
			break
		}
		if *p.PageInfo.EndCursor == fmt.Sprint(after) || pages > n {
			t.Fatalf("forwards: paging does not move on (page %d, endCursor %v)", pages, *p.PageInfo.EndCursor)
		}
		after = *p.PageInfo.EndCursor
	}
	for i := 1; i <= n; i++ {
		if seen[i] != 1 {
			t.Errorf("forwards: message %d came %d times, want once", i, seen[i])
		}
	}
	if pages < 2*total/budget/2 {
		t.Errorf("forwards: %d pages for %d bytes of text, want the budget to cut pages", pages, total)
	}
	t.Logf("forwards: %d pages, the largest response %d bytes (budget %d; the whole history is %d bytes of text)", pages, largest, budget, total)

	// Backwards, from the end.
	seen = map[int]int{}
	var before any
	prevFirst := n + 1
	for pages = 0; ; pages++ {
		p, size := page("backwards", map[string]any{"c": conv, "l": 1000, "b": before})
		check("backwards", p, size, seen)
		if last := p.Edges[len(p.Edges)-1].Node.Position; last != prevFirst-1 {
			t.Fatalf("backwards: a page ending at %d after one starting at %d, want no gap", last, prevFirst)
		}
		prevFirst = p.Edges[0].Node.Position
		if !p.PageInfo.HasPreviousPage {
			break
		}
		if pages > n {
			t.Fatal("backwards: paging does not move on")
		}
		before = *p.PageInfo.StartCursor
	}
	for i := 1; i <= n; i++ {
		if seen[i] != 1 {
			t.Errorf("backwards: message %d came %d times, want once", i, seen[i])
		}
	}

	// The pages of several conversations share the response's budget.
	for c := 0; c < 3; c++ {
		other := srv.CreateConversation(t, fmt.Sprintf("other %d", c))
		for i := 0; i < 10; i++ {
			srv.AddMessage(t, other, testserver.Text("USER", strings.Repeat("y", 100<<10)))
		}
	}
	raw := postBytes(t, srv, `{ conversations(first: 4) { edges { node { messages(first: 1000) {
		pageInfo { hasNextPage } edges { node { ... on TextBearing { text } } } } } } } }`, nil)
	var list struct {
		Data struct {
			Conversations struct {
				Edges []struct{ Node struct{ Messages bytesPage } }
			}
		}
	}
	if err := json.Unmarshal(raw, &list); err != nil {
		t.Fatal(err)
	}
	if len(raw) > budget+slack {
		t.Errorf("a list of pages: %d bytes, want at most %d (unbounded, it would be about %d)", len(raw), budget+slack, total+3*10*(100<<10))
	}
	for i, e := range list.Data.Conversations.Edges {
		if len(e.Node.Messages.Edges) == 0 || !e.Node.Messages.PageInfo.HasNextPage {
			t.Errorf("conversation %d of the list: %d messages, hasNextPage %v; want at least one, and more to come", i, len(e.Node.Messages.Edges), e.Node.Messages.PageInfo.HasNextPage)
		}
	}
}
