package db_test

import (
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/parley-dev/parley"
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
