package db

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/jmoiron/sqlx"

	"github.com/parley-dev/parley"
)

// NotifyChannel is the Postgres notification channel of message events. Notifications
// are scoped to one database, so servers on different databases never see each
// other's events.
const NotifyChannel = "parley_messages"

// eventPayload is a notification's payload: what changed, never the message itself
// (payloads are limited to 8000 bytes, and readers re-read from the database anyway).
type eventPayload struct {
	Kind     parley.MessageEventKind `json:"k"`
	ConvKey  string                  `json:"c"`
	MsgKey   string                  `json:"m,omitempty"`
	Position int                     `json:"p,omitempty"`
	Seq      int64                   `json:"s,omitempty"`
	// Owner is the conversation's owner (at most 200 bytes), so that a watcher of all
	// of one owner's conversations wakes for that owner's changes only.
	Owner string `json:"o,omitempty"`
	// ConvKeys and Origin are a group commit's (appendGroupSQL): the conversations
	// appended to, and the process that wrote them (DB.Origin).
	ConvKeys []string `json:"cs,omitempty"`
	Origin   string   `json:"r,omitempty"`
}

// notify queues a message event in tx. Postgres delivers it when tx commits, to every
// listening replica, and never when tx rolls back. Every write that adds, changes or
// removes messages calls it (through the helpers below), inside its transaction. The
// owner is ctx's: every write is scoped by it, so it is the conversation's.
func notify(ctx context.Context, tx *txn, p eventPayload) error {
	return notifyWith(ctx, tx, nil, p)
}

// notifySQL queues a notification of the payload $2 on the channel $1.
const notifySQL = `SELECT pg_notify($1, $2)`

// notifyWith is notify running stmt, notifySQL prepared on the pool, when it is not nil.
func notifyWith(ctx context.Context, tx *txn, stmt *sqlx.Stmt, p eventPayload) error {
	p.Owner, _ = parley.OwnerFrom(ctx)
	b, err := json.Marshal(p)
	if err != nil {
		return err
	}
	if stmt != nil {
		_, err = tx.StmtxContext(ctx, stmt).ExecContext(ctx, NotifyChannel, string(b))
	} else {
		_, err = tx.ExecContext(ctx, notifySQL, NotifyChannel, string(b))
	}
	if err != nil {
		return fmt.Errorf("notify %s of %s: %w", p.Kind, parley.ConversationID(p.ConvKey), err)
	}
	return nil
}

// notifyAdded announces a message just inserted at position. Every save does, so it runs
// prepared (DB.prepare).
func (db *DB) notifyAdded(ctx context.Context, tx *txn, convKey, msgKey string, position int) error {
	return notifyWith(ctx, tx, db.stmt(notifySQL), eventPayload{Kind: parley.MessageAdded, ConvKey: convKey, MsgKey: msgKey, Position: position})
}

// notifyDeleted announces that a conversation is gone, so its subscribers end.
func notifyDeleted(ctx context.Context, tx *txn, convKey string) error {
	return notify(ctx, tx, eventPayload{Kind: parley.ConversationDeleted, ConvKey: convKey})
}

// markMessageChanged records that a stored message changed: it gives the message the
// conversation's next change sequence number, touches the conversation's updated_at,
// and announces the update. Call it in every transaction that changes a stored message
// (decisions, file resolution, image recognition...), after the change. It takes the
// conversation's row lock, so numbers are assigned in commit order; lock the message
// row first, as the callers here do, to keep one lock order.
func markMessageChanged(ctx context.Context, tx *txn, convKey, msgKey string) (seq int64, err error) {
	var position int
	err = tx.QueryRowxContext(ctx, `
		WITH conv AS (
			UPDATE conversations SET change_seq = change_seq + 1, updated_at = now()
			WHERE id = $1
			RETURNING change_seq
		)
		UPDATE messages SET change_seq = conv.change_seq FROM conv
		WHERE messages.id = $2 AND messages.conversation_id = $1
		RETURNING conv.change_seq, messages.position`, convKey, msgKey).Scan(&seq, &position)
	if err != nil {
		return 0, fmt.Errorf("mark message %s changed: %w", parley.MessageID(msgKey), err)
	}
	return seq, notify(ctx, tx, eventPayload{Kind: parley.MessageUpdated, ConvKey: convKey, MsgKey: msgKey, Position: position, Seq: seq})
}

// decodeEvents reads a notification payload made by notify, or by a group commit of
// appends (one event per conversation it names), and the process that sent it when it
// says (a group commit's Origin).
func decodeEvents(payload string) (evs []parley.MessageEvent, origin string, err error) {
	var p eventPayload
	if err := json.Unmarshal([]byte(payload), &p); err != nil {
		return nil, "", fmt.Errorf("decode notification %q: %w", payload, err)
	}
	if p.ConvKeys != nil {
		evs = make([]parley.MessageEvent, len(p.ConvKeys))
		for i, c := range p.ConvKeys {
			key, ok := parley.ParseConversationID(parley.ConversationID(c))
			if !ok {
				return nil, "", fmt.Errorf("decode notification %q: bad conversation key", payload)
			}
			evs[i] = parley.MessageEvent{Kind: p.Kind, ConversationID: parley.ConversationID(key)}
		}
		return evs, p.Origin, nil
	}
	convKey, ok := parley.ParseConversationID(parley.ConversationID(p.ConvKey))
	if !ok {
		return nil, "", fmt.Errorf("decode notification %q: bad conversation key", payload)
	}
	ev := parley.MessageEvent{
		Kind:           p.Kind,
		ConversationID: parley.ConversationID(convKey),
		Position:       p.Position,
		Seq:            p.Seq,
		Owner:          p.Owner,
	}
	if p.MsgKey != "" {
		ev.MessageID = parley.MessageID(p.MsgKey)
	}
	return []parley.MessageEvent{ev}, p.Origin, nil
}
