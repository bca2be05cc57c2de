package db_test

import (
	"testing"
	"time"

	"github.com/parley-dev/parley"
	"github.com/parley-dev/parley/db"
	"github.com/parley-dev/parley/internal/pgtest"
)

// TestSaveNotifiesInItsStatement: a save queues its notification in the insert's own
// statement (notifyInsertedSQL); a listener gets, for a message added at the end, one
// placed in the tree as a sibling or under a named parent (insertUnderSQL) and a tool
// result (insertPlacedSQL), the event notifyAdded would have sent: kind, conversation,
// message, position (its number in the conversation) and owner. A save that fails sends
// nothing.
func TestSaveNotifiesInItsStatement(t *testing.T) {
	t.Parallel()
	dsn := pgtest.NewDatabase(t)
	d, err := db.Open(t.Context(), dsn, db.Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	events := make(chan parley.MessageEvent, 16)
	added := func(ev parley.MessageEvent) {
		if ev.Kind == parley.MessageAdded { // a conversation's events of other kinds are not the save's
			events <- ev
		}
	}
	l, err := db.Listen(t.Context(), dsn, db.ListenerConfig{OnEvent: added, OnResync: func() {}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })

	ctx := parley.WithOwner(t.Context(), "notified")
	conv, err := d.CreateConversation(ctx, "n")
	if err != nil {
		t.Fatal(err)
	}
	text := func(s string, place parley.Placement) parley.Message {
		return &parley.TextMessage{MessageMeta: parley.MessageMeta{Role: parley.RoleUser, Place: place}, Body: parley.TextBody(s)}
	}
	first, err := d.AddMessage(ctx, conv.ID, text("first", parley.Placement{}))
	if err != nil {
		t.Fatal(err)
	}
	// A save that fails (no such conversation) notifies nothing.
	if _, err := d.AddMessage(ctx, "conv_00000000-0000-4000-8000-000000000000", text("lost", parley.Placement{})); parley.ErrorCode(err) != parley.ENOTFOUND {
		t.Fatalf("save into a missing conversation: got %v, want ENOTFOUND", err)
	}
	placed, err := d.AddMessage(ctx, conv.ID, text("edit", parley.Placement{SiblingOf: first.Meta().ID}))
	if err != nil {
		t.Fatal(err)
	}
	// Under a named parent: insertUnderSQL, as the sibling; a tool result is placed by
	// the steps (insertPlacedSQL).
	under, err := d.AddMessage(ctx, conv.ID, text("under", parley.Placement{ParentID: first.Meta().ID}))
	if err != nil {
		t.Fatal(err)
	}
	request, err := d.AddMessage(ctx, conv.ID, toolRequest("notified"))
	if err != nil {
		t.Fatal(err)
	}
	result, err := d.AddMessage(ctx, conv.ID, toolResult("notified"))
	if err != nil {
		t.Fatal(err)
	}
	key, _ := parley.ParseConversationID(conv.ID)
	for _, m := range []parley.Message{first, placed, under, request, result} {
		msgKey, _ := parley.ParseMessageID(m.Meta().ID)
		want := parley.MessageEvent{Kind: parley.MessageAdded, ConversationID: parley.ConversationID(key),
			MessageID: parley.MessageID(msgKey), Position: m.Meta().Seq, Owner: "notified"}
		select {
		case got := <-events:
			if got != want {
				t.Errorf("got event %+v, want %+v", got, want)
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("no event for %s within 30s", m.Meta().ID)
		}
	}
	select {
	case ev := <-events:
		t.Errorf("got an event more: %+v", ev)
	default:
	}
}
