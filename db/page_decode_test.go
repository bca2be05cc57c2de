package db_test

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/parley-dev/parley"
	"github.com/parley-dev/parley/db"
)

// TestPageDecodesEachRowAlone checks that a page, whose rows are decoded one after the
// other into slices the decoder reuses and whose messages, parts and calls are cut from
// shared slices (db's rowDecoder), holds each message as it is read alone
// (FindMessageByID), even after something appended to every message's parts and calls:
// tool calls, parts with citations and results with output, each followed by messages
// with fewer or none of them, so that anything one row left in the reused slices, or
// wrote into its neighbour's, would show in the next. It also checks that the row a
// page reads past its end, only to tell that there are more, does not fail the page
// when it cannot be decoded, and fails the page that holds it.
func TestPageDecodesEachRowAlone(t *testing.T) {
	t.Parallel()
	d := openDB(t)
	ctx, conv, add := conversationOf(t, d, "decode")
	var err error
	for i := range 6 {
		calls := []parley.ToolCall{{ID: fmt.Sprintf("a%d", i), Name: "Read", Arguments: parley.JSON(fmt.Sprintf(`{"path":"/a/%d"}`, i))}}
		if i%2 == 0 { // every other request has a second call; the next has one only
			calls = append(calls, parley.ToolCall{ID: fmt.Sprintf("b%d", i), Name: "Grep", Arguments: parley.JSON(`{"pattern": "x", "n": 1.50}`)})
		}
		add(&parley.ToolRequestMessage{MessageMeta: parley.MessageMeta{Role: parley.RoleInvocation},
			Body: parley.TextBody(fmt.Sprintf("call %d", i)), ToolCalls: calls})
		for _, c := range calls {
			r := &parley.ToolResultMessage{MessageMeta: parley.MessageMeta{Role: parley.RoleResult}, ToolCallID: c.ID, ToolName: c.Name,
				Status: parley.ToolSuccess, Body: parley.TextBody("out " + c.ID)}
			if c.Name == "Grep" {
				r.Output = parley.JSON(`{"matches":[1,2]}`)
			}
			add(r)
		}
		body := parley.Body{Parts: []parley.Part{{Kind: parley.PartText, Text: fmt.Sprintf("<answer> %d & more", i)}}}
		if i%3 == 0 { // with citations and a second part; the next text has neither
			body.Parts[0].Citations = parley.JSON(fmt.Sprintf(`[{"type":"char_location","cited_text":"c%d"}]`, i))
			body.Parts = append(body.Parts, parley.Part{Kind: parley.PartText, Text: "second"})
		}
		add(&parley.TextMessage{MessageMeta: parley.MessageMeta{Role: parley.RoleAssistant}, Body: body})
	}
	if conv, err = d.FindConversationByID(ctx, conv.ID); err != nil {
		t.Fatal(err)
	}
	for _, forLLM := range []bool{false, true} {
		page, err := d.FindMessages(ctx, conv, parley.PageRequest{First: ptr(100), ForLLM: forLLM})
		if err != nil {
			t.Fatal(err)
		}
		if got, want := len(page.Messages), conv.LastPosition; got != want || want < 20 {
			t.Fatalf("forLLM %v: got %d messages, want %d (at least 20)", forLLM, got, want)
		}
		// Appending to one message's parts or calls must not write into another's
		// (the decoder cuts them from shared slices).
		for _, m := range page.Messages {
			switch m := m.(type) {
			case *parley.TextMessage:
				_ = append(m.Parts, parley.Part{Kind: parley.PartText, Text: "appended"})
			case *parley.ToolRequestMessage:
				_ = append(m.Parts, parley.Part{Kind: parley.PartText, Text: "appended"})
				_ = append(m.ToolCalls, parley.ToolCall{ID: "appended"})
			case *parley.ToolResultMessage:
				_ = append(m.Parts, parley.Part{Kind: parley.PartText, Text: "appended"})
			}
		}
		for _, m := range page.Messages {
			alone, err := d.FindMessageByID(ctx, string(m.Meta().ID))
			if err != nil {
				t.Fatal(err)
			}
			if forLLM { // what an LLM read leaves out
				meta := alone.Meta()
				meta.CreatedAt, meta.UpdatedAt, meta.SourceID = m.Meta().CreatedAt, m.Meta().UpdatedAt, m.Meta().SourceID
			}
			if !reflect.DeepEqual(m, alone) {
				t.Errorf("forLLM %v: message %d in a page:\n%#v\nread alone:\n%#v", forLLM, m.Meta().Position, m, alone)
			}
		}
	}

	// The last message's payload is made undecodable: the page before it still reads
	// (the row is read past its end, and decoded, to tell that there are more), and the
	// page holding it fails.
	key, _ := parley.ParseConversationID(conv.ID)
	if _, err := d.SQL().ExecContext(ctx, `UPDATE messages SET payload = '{"parts": 7}' WHERE conversation_id = $1 AND position = $2`,
		key, conv.LastPosition); err != nil {
		t.Fatal(err)
	}
	before, err := d.FindMessages(ctx, conv, parley.PageRequest{First: ptr(conv.LastPosition - 1)})
	if err != nil {
		t.Fatalf("the page before the undecodable message: %v", err)
	}
	if !before.HasNextPage || len(before.Messages) != conv.LastPosition-1 {
		t.Errorf("the page before the undecodable message: got %d messages, more %v; want %d and more", len(before.Messages), before.HasNextPage, conv.LastPosition-1)
	}
	if _, err := d.FindMessages(ctx, conv, parley.PageRequest{First: ptr(conv.LastPosition)}); err == nil || !strings.Contains(err.Error(), "decode") {
		t.Errorf("the page holding the undecodable message: got error %v, want one decoding it", err)
	}
}

// conversationOf creates a conversation of owner, titled as owner, and returns the
// owner's context, the conversation and a function adding a message to it.
func conversationOf(t *testing.T, d *db.DB, owner string) (context.Context, *parley.Conversation, func(parley.Message)) {
	t.Helper()
	ctx := parley.WithOwner(t.Context(), owner)
	conv, err := d.CreateConversation(ctx, owner)
	if err != nil {
		t.Fatal(err)
	}
	return ctx, conv, func(m parley.Message) {
		t.Helper()
		if _, err := d.AddMessage(ctx, conv.ID, m); err != nil {
			t.Fatal(err)
		}
	}
}
