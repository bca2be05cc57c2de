package db

import (
	"context"
	"fmt"

	"github.com/parley-dev/parley"
)

// The reads below serve the live list of an owner's conversations (realtime.Hub's
// SubscribeConversations). A deferred trigger numbers every change of the list per owner
// in commit order (migration 000011_conversation_list): conversation_list keeps each
// conversation's latest change, a deletion included.

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
	err = db.db.SelectContext(ctx, &rows, `SELECT l.conversation_id AS id, COALESCE(c.title, '') AS title,
			COALESCE(c.created_at, l.changed_at) AS created_at, COALESCE(c.updated_at, l.changed_at) AS updated_at,
			COALESCE(c.message_count, 0) AS message_count, COALESCE(c.last_position, 0) AS last_position,
			l.list_seq, CASE WHEN c.id IS NULL THEN 'deleted' ELSE l.list_change END AS list_change
		FROM conversation_list l LEFT JOIN conversations c ON c.id = l.conversation_id AND c.owner = l.owner
		WHERE l.owner = $1 AND l.list_seq > $2 ORDER BY l.list_seq LIMIT $3`, owner, after, limit)
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
