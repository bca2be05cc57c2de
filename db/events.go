package db

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/parley-dev/parley"
)

// The reads below serve realtime subscribers, which follow a conversation by position
// (added messages) and by change sequence (updated ones) and re-read after every
// wake-up. Both orders are commit orders: a reader that has seen number n has seen
// every number below it.

// ConversationHead returns the position of a conversation's newest message and the
// number of its latest message change. Returns ENOTFOUND for a missing conversation.
func (db *DB) ConversationHead(ctx context.Context, conversationID string) (lastPosition int, changeSeq int64, err error) {
	key, ok := parley.ParseConversationID(conversationID)
	if !ok {
		return 0, 0, conversationNotFound(conversationID)
	}
	owner, err := ownerOf(ctx)
	if err != nil {
		return 0, 0, err
	}
	err = db.db.QueryRowxContext(ctx, `SELECT last_position, change_seq FROM conversations WHERE id = $1 AND owner = $2`, key, owner).
		Scan(&lastPosition, &changeSeq)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, 0, conversationNotFound(conversationID)
	} else if err != nil {
		return 0, 0, classify(fmt.Errorf("read head of %s: %w", conversationID, err))
	}
	return lastPosition, changeSeq, nil
}

// MessagesAfter returns up to limit messages of a conversation with a position above
// after, in ascending position. Returns ENOTFOUND when the conversation does not exist
// (checked only when there is no message to return, the one case where it matters).
func (db *DB) MessagesAfter(ctx context.Context, conversationID string, after, limit int) ([]parley.Message, error) {
	key, ok := parley.ParseConversationID(conversationID)
	if !ok {
		return nil, conversationNotFound(conversationID)
	}
	owner, err := ownerOf(ctx)
	if err != nil {
		return nil, err
	}
	var rows []messageRow
	err = db.db.SelectContext(ctx, &rows, `SELECT `+messageColumns+` FROM messages
		WHERE conversation_id = $1 AND position > $2 AND `+ownedConversation("1", "4")+`
		ORDER BY position LIMIT $3`, key, after, limit, owner)
	if err != nil {
		return nil, classify(fmt.Errorf("read messages of %s after %d: %w", conversationID, after, err))
	}
	if len(rows) == 0 {
		return nil, db.checkConversation(ctx, key)
	}
	out := make([]parley.Message, len(rows))
	for i := range rows {
		if out[i], err = decodeMessage(&rows[i], db.log); err != nil {
			return nil, err
		}
	}
	return out, db.foldLive(ctx, db.db, out)
}

// MessagesChangedAfter returns up to limit messages of a conversation whose latest
// change has a sequence number above after, in ascending number, with the number of
// the last one (after itself when there are none). A message changed several times is
// returned once, as it is now. Returns ENOTFOUND when the conversation does not exist.
func (db *DB) MessagesChangedAfter(ctx context.Context, conversationID string, after int64, limit int) ([]parley.Message, int64, error) {
	key, ok := parley.ParseConversationID(conversationID)
	if !ok {
		return nil, after, conversationNotFound(conversationID)
	}
	owner, err := ownerOf(ctx)
	if err != nil {
		return nil, after, err
	}
	var rows []struct {
		messageRow
		ChangeSeq int64 `db:"change_seq"`
	}
	err = db.db.SelectContext(ctx, &rows, `SELECT `+messageColumns+`, change_seq FROM messages
		WHERE conversation_id = $1 AND change_seq > $2 AND `+ownedConversation("1", "4")+`
		ORDER BY change_seq LIMIT $3`, key, after, limit, owner)
	if err != nil {
		return nil, after, classify(fmt.Errorf("read changes of %s after %d: %w", conversationID, after, err))
	}
	if len(rows) == 0 {
		return nil, after, db.checkConversation(ctx, key)
	}
	out := make([]parley.Message, len(rows))
	for i := range rows {
		if out[i], err = decodeMessage(&rows[i].messageRow, db.log); err != nil {
			return nil, after, err
		}
	}
	if err := db.foldLive(ctx, db.db, out); err != nil {
		return nil, after, err
	}
	return out, rows[len(rows)-1].ChangeSeq, nil
}

// checkConversation returns ENOTFOUND when the conversation stored under key is gone,
// or is not the owner's.
func (db *DB) checkConversation(ctx context.Context, key string) error {
	owner, err := ownerOf(ctx)
	if err != nil {
		return err
	}
	var exists bool
	err = db.db.GetContext(ctx, &exists, `SELECT EXISTS (SELECT 1 FROM conversations WHERE id = $1 AND owner = $2)`, key, owner)
	if err != nil {
		return classify(fmt.Errorf("check conversation %s: %w", parley.ConversationID(key), err))
	}
	if !exists {
		return conversationNotFound(parley.ConversationID(key))
	}
	return nil
}
