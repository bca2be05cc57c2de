package db

import (
	"context"
	"fmt"

	"github.com/parley-dev/parley"
)

// The reads below serve the live list of an owner's conversations (realtime.Hub's
// SubscribeConversations). Triggers number every change of the list per owner in commit
// order (migration 000010_conversation_list): a conversation keeps the number of its
// latest change, a deleted one leaves a tombstone.

// ConversationListHead returns the number of the owner's latest list change, 0 when
// there is none.
func (db *DB) ConversationListHead(ctx context.Context) (int64, error) {
	owner, err := ownerOf(ctx)
	if err != nil {
		return 0, err
	}
	var seq int64
	err = db.db.GetContext(ctx, &seq, `SELECT COALESCE((SELECT list_seq FROM conversation_counts WHERE owner = $1), 0)`, owner)
	if err != nil {
		return 0, classify(fmt.Errorf("read the head of the conversation list: %w", err))
	}
	return seq, nil
}

// ConversationChangesAfter returns up to limit of the owner's list changes numbered
// above after, in ascending number: each conversation changed since as it is now, and
// each one deleted since.
func (db *DB) ConversationChangesAfter(ctx context.Context, after int64, limit int) ([]parley.ConversationChange, error) {
	owner, err := ownerOf(ctx)
	if err != nil {
		return nil, err
	}
	var rows []struct {
		conversationRow
		ListSeq    int64  `db:"list_seq"`
		ListChange string `db:"list_change"`
	}
	err = db.db.SelectContext(ctx, &rows, `SELECT * FROM (
			SELECT `+conversationColumns+`, list_seq, list_change FROM conversations WHERE owner = $1 AND list_seq > $2
			UNION ALL
			SELECT id, '', deleted_at, deleted_at, 0, 0, list_seq, 'deleted' FROM conversation_tombstones WHERE owner = $1 AND list_seq > $2
		) changes ORDER BY list_seq LIMIT $3`, owner, after, limit)
	if err != nil {
		return nil, classify(fmt.Errorf("read the conversation list after %d: %w", after, err))
	}
	out := make([]parley.ConversationChange, len(rows))
	for i := range rows {
		r := &rows[i]
		out[i] = parley.ConversationChange{Seq: r.ListSeq, Kind: parley.ConversationChangeKind(r.ListChange), ConversationID: parley.ConversationID(r.ID)}
		if out[i].Kind != parley.ConversationGone {
			out[i].Conversation = r.conversation()
		}
	}
	return out, nil
}
