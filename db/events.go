package db

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"math"

	"github.com/lib/pq"

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
// after, in ascending position, as many as fit maxBytes of stored bytes (the first
// always; withinBudget), and whether there may be more. Returns ENOTFOUND when the
// conversation does not exist (checked only when there is no message to return, the
// one case where it matters).
func (db *DB) MessagesAfter(ctx context.Context, conversationID string, after, limit, maxBytes int) ([]parley.Message, bool, error) {
	key, ok := parley.ParseConversationID(conversationID)
	if !ok {
		return nil, false, conversationNotFound(conversationID)
	}
	owner, err := ownerOf(ctx)
	if err != nil {
		return nil, false, err
	}
	var rows []budgetRow
	err = db.db.SelectContext(ctx, &rows, withinBudget(`SELECT `+messageColumns+`, `+storedBytes+` AS bytes FROM `+byPosition("$1", "$2", "$3")+`
		WHERE `+ownedConversation("1", "4")+`
		ORDER BY position LIMIT $3`, "position", "$5", ""), key, after, limit, owner, budgetArg(maxBytes))
	if err != nil {
		return nil, false, classify(fmt.Errorf("read messages of %s after %d: %w", conversationID, after, err))
	}
	if len(rows) == 0 {
		return nil, false, db.checkConversation(ctx, key)
	}
	out := make([]parley.Message, len(rows))
	for i := range rows {
		if out[i], err = decodeMessage(&rows[i].messageRow, db.log); err != nil {
			return nil, false, err
		}
	}
	// Subscribers follow one branch each, by parent: one read serves them all.
	if err := db.fillTree(ctx, db.db, out); err != nil {
		return nil, false, err
	}
	return out, rows[0].Read == limit || rows[0].Read > len(rows), db.foldLive(ctx, db.db, out)
}

// budgetRow is a row of a query wrapped by withinBudget.
type budgetRow struct {
	messageRow
	// Read is how many rows the wrapped query gave, kept or not.
	Read int `db:"read"`
}

// withinBudget wraps query, which selects messageColumns and their stored bytes (as
// "bytes") ordered by order, so that it keeps the rows, in that order, whose bytes fit
// the budget (the argument budget, in bytes) together, and always the first
// (parley.FitsBudget): a subscriber replaying a conversation of large messages holds
// one budget's worth of them at a time, never a page of them, and the database sends
// no more. It also selects how many rows query gave ("read"), so that the caller can
// tell a read cut by the budget from one that reached the end, and the columns extra
// (", name" each) that query selects besides.
func withinBudget(query, order, budget, extra string) string {
	return `SELECT ` + messageColumns + extra + `, read FROM (
		SELECT q.*, sum(q.bytes) OVER (ORDER BY q.` + order + `) AS upto, row_number() OVER (ORDER BY q.` + order + `) AS n,
			count(*) OVER () AS read
		FROM (` + query + `) q) b
		WHERE n = 1 OR upto <= ` + budget + `::bigint
		ORDER BY ` + order
}

// budgetArg is a byte budget as withinBudget takes it: 0 or less is no bound.
func budgetArg(maxBytes int) int64 {
	if maxBytes <= 0 {
		return math.MaxInt64
	}
	return int64(maxBytes)
}

// MessagesChangedAfter returns up to limit messages of a conversation whose latest
// change has a sequence number above after, in ascending number, as many as fit
// maxBytes of stored bytes (the first always; withinBudget), with the number of the
// last one (after itself when there are none) and whether there may be more. A message
// changed several times is returned once, as it is now. Returns ENOTFOUND when the
// conversation does not exist.
func (db *DB) MessagesChangedAfter(ctx context.Context, conversationID string, after int64, limit, maxBytes int) ([]parley.Message, int64, bool, error) {
	key, ok := parley.ParseConversationID(conversationID)
	if !ok {
		return nil, after, false, conversationNotFound(conversationID)
	}
	owner, err := ownerOf(ctx)
	if err != nil {
		return nil, after, false, err
	}
	var rows []struct {
		budgetRow
		ChangeSeq int64 `db:"change_seq"`
	}
	err = db.db.SelectContext(ctx, &rows, withinBudget(`SELECT `+messageColumns+`, change_seq, `+storedBytes+` AS bytes FROM messages
		WHERE conversation_id = $1 AND change_seq > $2 AND `+ownedConversation("1", "4")+`
		ORDER BY change_seq LIMIT $3`, "change_seq", "$5", ", change_seq"), key, after, limit, owner, budgetArg(maxBytes))
	if err != nil {
		return nil, after, false, classify(fmt.Errorf("read changes of %s after %d: %w", conversationID, after, err))
	}
	if len(rows) == 0 {
		return nil, after, false, db.checkConversation(ctx, key)
	}
	out := make([]parley.Message, len(rows))
	for i := range rows {
		if out[i], err = decodeMessage(&rows[i].messageRow, db.log); err != nil {
			return nil, after, false, err
		}
	}
	if err := db.foldLive(ctx, db.db, out); err != nil {
		return nil, after, false, err
	}
	return out, rows[len(rows)-1].ChangeSeq, rows[0].Read == limit || rows[0].Read > len(rows), nil
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

// StreamStart returns where a live subscriber without a cursor starts: before the
// oldest message of the conversation still streaming, else after the newest. Returns
// ENOTFOUND for a missing conversation.
func (db *DB) StreamStart(ctx context.Context, conversationID string) (int, error) {
	key, ok := parley.ParseConversationID(conversationID)
	if !ok {
		return 0, conversationNotFound(conversationID)
	}
	owner, err := ownerOf(ctx)
	if err != nil {
		return 0, err
	}
	var pos int
	err = db.db.GetContext(ctx, &pos, `SELECT coalesce((SELECT min(position) - 1 FROM messages
		WHERE conversation_id = c.id AND status = 'streaming'), c.last_position)
		FROM conversations c WHERE c.id = $1 AND c.owner = $2`, key, owner)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, conversationNotFound(conversationID)
	} else if err != nil {
		return 0, classify(fmt.Errorf("read start of %s: %w", conversationID, err))
	}
	return pos, nil
}

// maxBatchesPerRead bounds the appends one StreamAfter returns; a subscriber further
// behind reads again.
const maxBatchesPerRead = 1000

// StreamAfter reads a conversation for a live subscriber at c (parley.StreamRead): up
// to limit messages after c.Position, c's open messages as they are now, and the
// appends of those still streaming after c's numbers, as many as fit maxBytes (stored
// bytes of the messages, and of the appends, counted together; the first message
// always, with its first append: withinBudget). more says a read may find more.
// Returns ENOTFOUND when the conversation is gone.
func (db *DB) StreamAfter(ctx context.Context, conversationID string, c parley.StreamCursor, limit, maxBytes int) (r parley.StreamRead, more bool, err error) {
	key, ok := parley.ParseConversationID(conversationID)
	if !ok {
		return r, false, conversationNotFound(conversationID)
	}
	owner, err := ownerOf(ctx)
	if err != nil {
		return r, false, err
	}
	open, openSeqs := make([]int, len(c.Open)), make([]int, len(c.Open))
	for i, o := range c.Open {
		open[i], openSeqs[i] = o.Position, o.Seq
	}
	// One statement reads the messages and, for each open one still streaming, its
	// appends after the cursor's number (up to maxBatchesPerRead each, and the budget,
	// as one JSON array of [seq, deltas] pairs): a subscriber at a stream's tail reads
	// once per append, so one round trip rather than two is what a watched stream costs
	// the database.
	var rows []struct {
		budgetRow
		Appends []byte `db:"appends"`
	}
	err = db.db.SelectContext(ctx, &rows, withinBudget(`SELECT m.*, m.`+storedBytes+` + coalesce(octet_length(m.appends::text), 0) AS bytes FROM (
		SELECT `+messageColumns+`, `+storedBytes+`,
		CASE WHEN status = 'streaming' AND position = ANY($3::int[]) THEN (
			SELECT jsonb_agg(jsonb_build_array(a.seq, a.deltas) ORDER BY a.seq) FROM (
				SELECT w.seq, w.deltas FROM (
					SELECT d.seq, d.deltas, sum(octet_length(d.deltas::text)) OVER (ORDER BY d.seq) AS upto,
						row_number() OVER (ORDER BY d.seq) AS n
					FROM message_deltas d
					WHERE d.message_id = messages.id AND d.seq > (SELECT o.seq FROM unnest($3::int[], $6::int[]) AS o(pos, seq)
						WHERE o.pos = messages.position LIMIT 1)
					ORDER BY d.seq LIMIT $7) w
				WHERE w.n = 1 OR w.upto <= $8::bigint) a)
		END AS appends
		FROM messages
		WHERE conversation_id = $1 AND (position > $2 OR position = ANY($3::int[])) AND `+ownedConversation("1", "5")+`
		ORDER BY position LIMIT $4) m`, "position", "$8", ", appends"),
		key, c.Position, pq.Array(open), limit+len(open), owner, pq.Array(openSeqs), maxBatchesPerRead, budgetArg(maxBytes))
	if err != nil {
		return r, false, classify(fmt.Errorf("read stream of %s after %d: %w", conversationID, c.Position, err))
	}
	if len(rows) == 0 {
		return r, false, db.checkConversation(ctx, key)
	}
	// A message whose appends read stop short of its last (maxBatchesPerRead, or the
	// budget), or rows left out by the budget: there is more.
	full := rows[0].Read > len(rows)
	for i := range rows {
		m, err := decodeMessage(&rows[i].messageRow, db.log)
		if err != nil {
			return r, false, err
		}
		if m.Meta().Seq > c.Position {
			r.New = append(r.New, m)
			continue
		}
		r.Open = append(r.Open, m)
		if len(rows[i].Appends) == 0 {
			continue
		}
		var pairs [][2]json.RawMessage
		if err := unmarshal(rows[i].Appends, &pairs); err != nil {
			return r, false, err
		}
		last := 0
		for _, p := range pairs {
			b := parley.DeltaBatch{MessageID: m.Meta().ID, Position: m.Meta().Seq, Depth: m.Meta().Position}
			if err := unmarshal(p[0], &b.Seq); err != nil {
				return r, false, err
			}
			if b.Deltas, err = decodeDeltas(p[1]); err != nil {
				return r, false, err
			}
			r.Batches = append(r.Batches, b)
			last = b.Seq
		}
		full = full || last < rows[i].StreamSeq
	}
	more = len(r.New) == limit
	if err := db.foldLive(ctx, db.db, r.New); err != nil {
		return r, false, err
	}
	return r, more || full, nil
}
