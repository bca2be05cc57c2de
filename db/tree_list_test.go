package db_test

import (
	"testing"

	"github.com/parley-dev/parley"
)

// The live conversation list counts a conversation's messages as its other reads do:
// its active branch's, not every message stored.
func TestConversationListCountsTheActiveBranch(t *testing.T) {
	t.Parallel()
	d := openDB(t)
	ctx := parley.WithOwner(t.Context(), parley.LocalOwner)
	c, err := d.CreateConversation(ctx, "tree")
	if err != nil {
		t.Fatal(err)
	}
	var last parley.Message
	for _, text := range []string{"a", "b", "c"} {
		if last, err = d.AddMessage(ctx, c.ID, &parley.TextMessage{MessageMeta: parley.MessageMeta{Role: parley.RoleUser},
			Body: parley.TextBody(text)}); err != nil {
			t.Fatal(err)
		}
	}
	// A sibling of the last message: the active branch is a, b, c' (3 messages of 4 stored).
	if _, err := d.AddMessage(ctx, c.ID, &parley.TextMessage{MessageMeta: parley.MessageMeta{Role: parley.RoleUser,
		Place: parley.Placement{SiblingOf: last.Meta().ID}}, Body: parley.TextBody("c again")}); err != nil {
		t.Fatal(err)
	}
	want, err := d.FindConversationByID(ctx, c.ID)
	if err != nil {
		t.Fatal(err)
	}
	changes, err := d.ConversationChangesAfter(ctx, 0, 100)
	if err != nil {
		t.Fatal(err)
	}
	for _, ch := range changes {
		if ch.ConversationID == c.ID {
			if ch.Conversation == nil || ch.Conversation.MessageCount != want.MessageCount || want.MessageCount != 3 {
				t.Errorf("listed messageCount %+v, want the conversation's %d (3)", ch.Conversation, want.MessageCount)
			}
			return
		}
	}
	t.Fatalf("conversation %s not listed in %+v", c.ID, changes)
}
