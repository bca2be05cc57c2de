package db_test

import (
	gosql "database/sql"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/lib/pq"

	"github.com/parley-dev/parley"
	"github.com/parley-dev/parley/db"
)

// TestLLMPageIsPageWithoutTimes checks a page read with PageRequest.ForLLM (llmPageSQL,
// which leaves out what no LLM export uses) against the same page read whole: the same
// messages of every kind an LLM export reads (text with provenance, tool calls and
// their results, hidden, deleted), forward and backward, within a byte budget, with
// only CreatedAt, UpdatedAt and SourceID zero. A column out of place would show here.
func TestLLMPageIsPageWithoutTimes(t *testing.T) {
	t.Parallel()
	d := openDB(t)
	ctx, conv, add := conversationOf(t, d, "llm")
	var err error
	for i := range 12 {
		call := fmt.Sprintf("call_%d", i)
		add(&parley.TextMessage{MessageMeta: parley.MessageMeta{Role: parley.RoleUser, SourceID: fmt.Sprintf("src-%d", i)},
			Body: parley.TextBody(fmt.Sprintf("step %d: é → 世界", i))})
		add(&parley.ToolRequestMessage{MessageMeta: parley.MessageMeta{Role: parley.RoleInvocation,
			Live: parley.Live{Provenance: &parley.Provenance{Provider: "anthropic", Model: "claude-opus-4-6", ResponseID: fmt.Sprintf("msg_%d", i)}}},
			Body: parley.TextBody("reading"), ToolCalls: []parley.ToolCall{{ID: call, Name: "Read", Arguments: parley.JSON(`{"path":"/a"}`)}}})
		add(&parley.ToolResultMessage{MessageMeta: parley.MessageMeta{Role: parley.RoleResult}, ToolCallID: call, ToolName: "Read",
			Status: parley.ToolSuccess, Body: parley.TextBody("package a")})
	}
	first, err := d.FindMessages(ctx, conv, parley.PageRequest{First: ptr(5)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.DeleteMessage(ctx, string(first.Messages[4].Meta().ID)); err != nil {
		t.Fatal(err)
	}
	if _, err := d.SetMessageHidden(ctx, string(first.Messages[3].Meta().ID), true); err != nil {
		t.Fatal(err)
	}
	if conv, err = d.FindConversationByID(ctx, conv.ID); err != nil {
		t.Fatal(err)
	}
	after := parley.MessageCursor(7)
	tests := []struct {
		name string
		page parley.PageRequest
	}{
		{"all forward", parley.PageRequest{First: ptr(100)}},
		{"after a cursor", parley.PageRequest{First: ptr(10), After: &after}},
		{"backward", parley.PageRequest{Last: ptr(9)}},
		{"within a byte budget", parley.PageRequest{First: ptr(100), MaxBytes: 600}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			want, err := d.FindMessages(ctx, conv, tt.page)
			if err != nil {
				t.Fatal(err)
			}
			llm := tt.page
			llm.ForLLM = true
			got, err := d.FindMessages(ctx, conv, llm)
			if err != nil {
				t.Fatal(err)
			}
			if len(want.Messages) == 0 {
				t.Fatal("the whole read found no messages")
			}
			for _, m := range want.Messages {
				meta := m.Meta()
				if meta.CreatedAt.IsZero() || meta.UpdatedAt.IsZero() {
					t.Fatalf("message %d read whole has no times", meta.Position)
				}
				meta.CreatedAt, meta.UpdatedAt, meta.SourceID = time.Time{}, time.Time{}, ""
			}
			if len(got.Messages) != len(want.Messages) || got.HasNextPage != want.HasNextPage {
				t.Fatalf("got %d messages (more: %v), want %d (more: %v)", len(got.Messages), got.HasNextPage, len(want.Messages), want.HasNextPage)
			}
			for i := range got.Messages {
				if !reflect.DeepEqual(got.Messages[i], want.Messages[i]) {
					t.Errorf("message %d: got %+v, want %+v", i, got.Messages[i], want.Messages[i])
				}
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("page: got %+v, want %+v", got, want)
			}
		})
	}
}

// TestFittingLLMPageIsWindowedPage checks fittingLLMOnePageSQL, an export's read of one
// conversation without the byte budget's window, against llmOnePageSQL, with it: the
// same rows, column for column, for export pages (1,001 rows) of a conversation with
// branches (several segments, and a branch named) and of one with a large message, with
// no budget, a large one, and one the large message's bound does not fit, where the
// fitting statement reads no row (and FindMessagePages falls back to the window).
func TestFittingLLMPageIsWindowedPage(t *testing.T) {
	t.Parallel()
	d := openDB(t)
	sql := d.SQL()
	const owner = "llmfit"
	branched := chainTree(t, sql, owner, 30) // depths up to 29·50+100 = 1550
	ctx, conv, add := conversationOf(t, d, owner)
	for i := range 1500 {
		body := fmt.Sprintf("message %d", i)
		if i == 700 {
			body = strings.Repeat("large ", 20000) // 120 KB: the bound grows past a page's share of the budget
		}
		add(&parley.TextMessage{MessageMeta: parley.MessageMeta{Role: parley.RoleUser}, Body: parley.TextBody(body)})
	}
	large, ok := parley.ParseConversationID(conv.ID)
	if !ok {
		t.Fatalf("conversation id %q", conv.ID)
	}
	rowsOf := func(q string, args ...any) [][]string {
		t.Helper()
		rows, err := sql.QueryContext(ctx, q, args...)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		cols, _ := rows.Columns()
		var out [][]string
		for rows.Next() {
			vals := make([]gosql.NullString, len(cols))
			ptrs := make([]any, len(cols))
			for i := range vals {
				ptrs[i] = &vals[i]
			}
			if err := rows.Scan(ptrs...); err != nil {
				t.Fatal(err)
			}
			row := make([]string, len(cols))
			for i, v := range vals {
				row[i] = fmt.Sprintf("%v:%q", v.Valid, v.String)
			}
			out = append(out, row)
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
		return out
	}
	type page struct{ after, before, seg, depth int }
	fitted, fellBack := 0, 0
	for _, key := range []string{branched, large} {
		var bound int64
		if err := sql.GetContext(ctx, &bound, `SELECT max_message_bytes FROM conversations WHERE id = $1`, key); err != nil {
			t.Fatal(err)
		}
		pages := []page{{0, 0, -1, 0}, {700, 0, -1, 0}, {1001, 0, -1, 0}, {0, 1400, -1, 0}}
		if key == branched {
			pages = append(pages, page{0, 0, 10, 600}, page{300, 0, 10, 600}) // the branch ending at depth 600 of segment 10
		}
		for _, budget := range []int64{0, 64 << 20, 1001 * bound, 1001*bound - 1, 200000} {
			for _, p := range pages {
				for _, backward := range []bool{false, true} {
					args := []any{pq.Array([]string{key}), p.after, p.before, 1001, owner, p.seg, p.depth, budget}
					want := rowsOf(db.LLMOnePageSQL[backward], args...)
					got := rowsOf(db.FittingLLMOnePageSQL[backward], args...)
					name := fmt.Sprintf("conversation %s (bound %d), page %+v, backward %v, budget %d", key, bound, p, backward, budget)
					if len(want) == 0 {
						t.Fatalf("%s: the windowed statement read no row", name)
					}
					if budget > 0 && 1001*bound > budget {
						if len(got) != 0 {
							t.Errorf("%s: the page may not fit, got %d rows, want none", name, len(got))
						}
						fellBack++
						continue
					}
					fitted++
					if !reflect.DeepEqual(got, want) {
						t.Errorf("%s: got %d rows, want %d (the windowed statement's); first difference at %d", name, len(got), len(want), firstDiff(got, want))
					}
				}
			}
		}
	}
	if fitted == 0 || fellBack == 0 {
		t.Fatalf("%d pages fitted and %d did not: want both", fitted, fellBack)
	}
	// And through FindMessages: an export's pages with a budget the large message's
	// bound does not fit (the fallback), then fits, read the same messages.
	conv, err := d.FindConversationByID(ctx, conv.ID)
	if err != nil {
		t.Fatal(err)
	}
	var got [2][]string
	for i, budget := range []int{200000, 0} {
		p, err := d.FindMessages(ctx, conv, parley.PageRequest{First: ptr(1000), ForLLM: true, MaxBytes: budget})
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range p.Messages {
			got[i] = append(got[i], string(m.Meta().ID))
		}
	}
	if len(got[0]) == 0 || len(got[0]) >= len(got[1]) || !reflect.DeepEqual(got[0], got[1][:len(got[0])]) {
		t.Errorf("within the budget: %d messages, without: %d; want a non-empty prefix", len(got[0]), len(got[1]))
	}
}

func firstDiff(a, b [][]string) int {
	for i := range min(len(a), len(b)) {
		if !reflect.DeepEqual(a[i], b[i]) {
			return i
		}
	}
	return min(len(a), len(b))
}

// TestLLMPageOfLinkedFork checks an export's read of a fork sharing its source's
// history (a linked fork, db/fork.go) against the whole read: the rows it shares come
// with the fork's derived ids and its depths as positions, as the whole read sends
// them, with the budget's window and without it. llmOnePageSQL sent the source's ids
// and positions: its columns escaped sharedColumns' rewrite.
func TestLLMPageOfLinkedFork(t *testing.T) {
	t.Parallel()
	d := openDB(t)
	ctx, conv, add := conversationOf(t, d, "llmfork")
	for i := range 6 {
		add(&parley.TextMessage{MessageMeta: parley.MessageMeta{Role: parley.RoleUser}, Body: parley.TextBody(fmt.Sprintf("m%d", i))})
	}
	whole, err := d.FindMessages(ctx, conv, parley.PageRequest{First: ptr(10)})
	if err != nil {
		t.Fatal(err)
	}
	// A branch in the source, so that its positions are not its depths.
	if _, err := d.ForkConversation(ctx, string(whole.Messages[1].Meta().ID), ""); err != nil {
		t.Fatal(err)
	}
	fork, err := d.ForkConversation(ctx, string(whole.Messages[3].Meta().ID), "fork")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.AddMessage(ctx, fork.ID, &parley.TextMessage{MessageMeta: parley.MessageMeta{Role: parley.RoleUser}, Body: parley.TextBody("own")}); err != nil {
		t.Fatal(err)
	}
	if fork, err = d.FindConversationByID(ctx, fork.ID); err != nil {
		t.Fatal(err)
	}
	want, err := d.FindMessages(ctx, fork, parley.PageRequest{First: ptr(10)})
	if err != nil {
		t.Fatal(err)
	}
	if len(want.Messages) != 5 {
		t.Fatalf("the fork's whole read: %d messages, want 5", len(want.Messages))
	}
	for _, budget := range []int{0, 1 << 20, 1} {
		got, err := d.FindMessages(ctx, fork, parley.PageRequest{First: ptr(10), ForLLM: true, MaxBytes: budget})
		if err != nil {
			t.Fatal(err)
		}
		n := len(want.Messages)
		if budget == 1 {
			n = 1 // the first row always comes
		}
		if len(got.Messages) != n {
			t.Fatalf("budget %d: %d messages, want %d", budget, len(got.Messages), n)
		}
		for i, m := range got.Messages {
			g, w := m.Meta(), want.Messages[i].Meta()
			if g.ID != w.ID || g.Position != w.Position {
				t.Errorf("budget %d, message %d: id %s at %d, want %s at %d", budget, i, g.ID, g.Position, w.ID, w.Position)
			}
		}
	}
}
