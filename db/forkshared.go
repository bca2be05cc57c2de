package db

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"

	"github.com/parley-dev/parley"
)

// The entry points that take a message id, for the rows a linked fork shares (db/fork.go):
// a derived id (parley.ForkMessageKey) of a fork still linked names no row of its own,
// so what only reads resolves it through the fork's link, without copying anything, and
// shows the shared row as the fork's message: the derived id, the fork's conversation,
// its depth as its position (what materialize_fork would give the copy). What changes
// the fork's view of a shared row makes the fork real first.

// sharedKeys splits the derived keys of keys (parley.ForkMessageKey) into their forks'
// numbers and depths, as parameters of sharedRowsSQL; none when no key is derived.
func sharedKeys(keys []string) (forkNos, depths []int64) {
	for _, k := range keys {
		if no, d, ok := parley.ParseForkMessageKey(k); ok {
			forkNos, depths = append(forkNos, no), append(depths, int64(d))
		}
	}
	return forkNos, depths
}

// sharedRowsSQL reads the shared rows that the derived keys ($1 the forks' numbers, $2
// the depths) of linked forks of the owner $3 name, as the forks' messages: the columns
// of messageColumns, each row's id the derived key, its conversation the fork, its
// position its depth and its segment 0, then its stored bytes. A key of no linked fork,
// or of a depth the fork does not share, reads nothing. Per key: a probe of the forks'
// numbers (conversations' unique key), the link's few entries, and one probe of
// messages_branch_idx.
var sharedRowsSQL = `SELECT ` + sharedMessageColumns + `, m.` + storedBytes + ` AS stored_bytes
	FROM unnest($1::bigint[], $2::int[]) AS k(fork_no, depth)
	JOIN conversations c ON c.fork_no = k.fork_no AND c.owner = $3 AND c.base_depth >= k.depth
	CROSS JOIN LATERAL fork_link_entries(c.id, c.base_depth) e
	JOIN messages m ON m.conversation_id = e.conv AND m.segment = e.seg AND m.depth = k.depth
	WHERE e.lo < k.depth AND e.hi >= k.depth`

// sharedMessageColumns are the columns of a row m the linked fork c shares, as the
// fork's message (sharedRowColumns).
var sharedMessageColumns = sharedRowColumns("c")

// sharedRow is a row of sharedRowsSQL.
type sharedRow struct {
	messageRow
	StoredBytes int64 `db:"stored_bytes"`
}

// findSharedRows reads the shared rows that the derived keys among keys name (linked
// forks of owner's), as their forks' messages (sharedRowsSQL); nothing, and no
// statement, when no key is derived.
func findSharedRows(ctx context.Context, q sqlx.QueryerContext, keys []string, owner string) ([]sharedRow, error) {
	forkNos, depths := sharedKeys(keys)
	if len(forkNos) == 0 {
		return nil, nil
	}
	var rows []sharedRow
	if err := sqlx.SelectContext(ctx, q, &rows, sharedRowsSQL, pq.Array(forkNos), pq.Array(depths), owner); err != nil {
		return nil, fmt.Errorf("read shared messages: %w", err)
	}
	return rows, nil
}

// sharedTreeInfo is where the message a derived key names sits in its linked fork's
// tree: under the shared message before it, the only child of that one (a message added
// under any shared message but the last makes the fork real first, and so does a second
// root, a sibling of its first shared message).
func sharedTreeInfo(key string) *parley.TreeInfo {
	forkNo, depth, _ := parley.ParseForkMessageKey(key)
	t := &parley.TreeInfo{SiblingIDs: []string{parley.MessageID(key)}}
	if depth > 1 {
		t.ParentID = parley.MessageID(parley.ForkMessageKey(forkNo, depth-1))
	}
	return t
}

// sharedBytes is the stored bytes of the shared rows the derived keys among keys name
// (MessageBytes), each key counted once.
func sharedBytes(ctx context.Context, q sqlx.QueryerContext, keys []string, owner string) (int64, error) {
	seen := make(map[string]bool, len(keys))
	var uniq []string
	for _, k := range keys {
		if !seen[k] {
			seen[k] = true
			uniq = append(uniq, k)
		}
	}
	rows, err := findSharedRows(ctx, q, uniq, owner)
	if err != nil {
		return 0, err
	}
	var n int64
	for _, r := range rows {
		n += r.StoredBytes
	}
	return n, nil
}

// sharedCallsSQL is the call ids among $2 that the rows the conversation $1 shares (a
// linked fork's, through its link) use: per entry of the link and id, one probe of
// tool_calls' key and one of messages' for the request's place. None, after one probe of
// conversations, for a conversation without a link.
const sharedCallsSQL = `SELECT t.call_id
	FROM conversations c
	CROSS JOIN LATERAL fork_link_entries(c.id, c.base_depth) e
	CROSS JOIN unnest($2::text[]) AS k(call_id)
	CROSS JOIN LATERAL (SELECT t.call_id, t.request_id FROM tool_calls t
		WHERE t.conversation_id = e.conv AND t.call_id = k.call_id LIMIT 1) t
	JOIN messages rq ON rq.id = t.request_id AND rq.segment = e.seg AND rq.depth > e.lo AND rq.depth <= e.hi
	WHERE c.id = $1 AND c.base_depth > 0`

// takenCallIDsSQL is the call ids among $2 already used in the conversation $1: by its
// own requests (one index lookup per id: see recordToolCalls) or by those it shares
// (sharedCallsSQL), as a fork that copied them would have them.
const takenCallIDsSQL = `SELECT t.call_id FROM unnest($2::text[]) AS c(call_id)
	CROSS JOIN LATERAL (SELECT call_id FROM tool_calls
		WHERE conversation_id = $1 AND call_id = c.call_id LIMIT 1) t
	UNION ALL ` + sharedCallsSQL

// takenCallIDs returns which of ids the conversation convKey uses already (takenCallIDsSQL).
func takenCallIDs(ctx context.Context, q sqlx.QueryerContext, convKey string, ids []string) ([]string, error) {
	var taken []string
	if err := sqlx.SelectContext(ctx, q, &taken, takenCallIDsSQL, convKey, pq.Array(ids)); err != nil {
		return nil, err
	}
	return taken, nil
}

// sharedCallUsed reports whether a request the linked fork convKey shares makes the
// call callID (sharedCallsSQL).
func sharedCallUsed(ctx context.Context, tx *txn, convKey, callID string) (bool, error) {
	var found []string
	if err := tx.SelectContext(ctx, &found, sharedCallsSQL, convKey, pq.Array([]string{callID})); err != nil {
		return false, err
	}
	return len(found) > 0, nil
}

// materializeForksOfMessage makes real every fork that shares the message key (before
// its tool calls' state changes where it is stored): materializeForksOf at its place.
func materializeForksOfMessage(ctx context.Context, tx *txn, key string) error {
	var at struct {
		Conv string `db:"conversation_id"`
		spot
	}
	err := tx.GetContext(ctx, &at, `SELECT conversation_id, segment, depth FROM messages WHERE id = $1`, key)
	if errors.Is(err, sql.ErrNoRows) {
		return nil
	} else if err != nil {
		return fmt.Errorf("find message %s: %w", parley.MessageID(key), err)
	}
	return materializeForksOf(ctx, tx, at.Conv, at.Segment, at.Depth)
}

// sharedSpot is the place of the message a derived key names in the linked fork
// convKey of owner's: segment 0 at its depth. ok is false when the key is not derived,
// or names no row the fork shares.
func sharedSpot(ctx context.Context, q rowQueryer, convKey, key, owner string) (spot, bool, error) {
	conv, depth, ok, err := findShared(ctx, q, key, owner)
	if err != nil || !ok || conv != convKey {
		return spot{}, false, err
	}
	return spot{Segment: 0, Depth: depth}, true, nil
}

// sharedBranchEnd is branchEnd for a derived key of a linked fork: the end of segment 0
// of the fork (segmentEndSQL).
func sharedBranchEnd(ctx context.Context, q interface {
	rowQueryer
	sqlx.QueryerContext
}, convKey, key, owner string) (spot, bool, error) {
	s, ok, err := sharedSpot(ctx, q, convKey, key, owner)
	if err != nil || !ok {
		return spot{}, false, err
	}
	if err := sqlx.GetContext(ctx, q, &s.Depth, segmentEndSQL, convKey, 0); err != nil {
		return spot{}, false, err
	}
	return s, true, nil
}

// sharedSpotOf is spotOf for a message the linked fork convKey of ctx's owner shares.
func sharedSpotOf(ctx context.Context, tx *txn, convKey, key string) (spot, bool, error) {
	if _, _, derived := parley.ParseForkMessageKey(key); !derived {
		return spot{}, false, nil
	}
	owner, err := ownerOf(ctx)
	if err != nil {
		return spot{}, false, err
	}
	return sharedSpot(ctx, tx, convKey, key, owner)
}

// sharedOnBranch is BranchContains for a message the linked fork convKey of owner's
// shares, at depth d of its segment 0: on the branch that ends at end when that is
// deeper and runs through segment 0 there (its chain, one probe, as onBranch reads it).
func sharedOnBranch(ctx context.Context, q interface {
	rowQueryer
	sqlx.QueryerContext
}, convKey, key, owner string, end spot) (bool, error) {
	at, ok, err := sharedSpot(ctx, q, convKey, key, owner)
	if err != nil || !ok || at.Depth > end.Depth {
		return false, err
	}
	if end.Segment == 0 {
		return true, nil
	}
	var on sql.NullBool
	if err := sqlx.GetContext(ctx, q, &on, onBranchSQL, convKey, end.Segment, 0, at.Depth); err != nil && !errors.Is(err, sql.ErrNoRows) {
		return false, err
	}
	return on.Valid && on.Bool, nil
}

// segmentEndSQL is the depth of the last message of segment $2 of conversation $1: for
// segment 0 of a linked fork without messages of its own there, the last it shares.
const segmentEndSQL = `SELECT coalesce((SELECT max(depth) FROM messages WHERE conversation_id = $1 AND segment = $2),
	(SELECT nullif(base_depth, 0) FROM conversations WHERE id = $1 AND $2::int = 0))`

// idAtSQL is the id, as text, of the message at depth of segment seg of conversation
// conv (SQL expressions), as an SQL expression: a row's, or the derived id of the
// message a linked fork shares there (segment 0, at most its base depth). Each is one
// probe of an index.
func idAtSQL(conv, seg, depth string) string {
	return `coalesce((SELECT x.id::text FROM messages x WHERE x.conversation_id = ` + conv + ` AND x.segment = ` + seg + ` AND x.depth = ` + depth + `),
		(SELECT fork_message_id(x.fork_no, ` + depth + `)::text FROM conversations x
			WHERE x.id = ` + conv + ` AND ` + seg + ` = 0 AND ` + depth + ` > 0 AND x.base_depth >= ` + depth + `))`
}

// byClientIDSQL finds the message of the conversation $1 stored under the client id $2,
// with its digest: its own (messages_client_id_idx), or one it shares when it is a
// linked fork, as a fork that copied it would have it (a probe of the same index per
// entry of the link). The second arm runs only when the first finds nothing.
var byClientIDSQL = `(SELECT ` + messageColumns + `, body_digest FROM messages
		WHERE conversation_id = $1 AND client_message_id = $2)
	UNION ALL
	(SELECT ` + sharedMessageColumns + `, m.body_digest
		FROM conversations c
		CROSS JOIN LATERAL fork_link_entries(c.id, c.base_depth) e
		JOIN messages m ON m.conversation_id = e.conv AND m.client_message_id = $2
			AND m.segment = e.seg AND m.depth > e.lo AND m.depth <= e.hi
		WHERE c.id = $1 AND c.base_depth > 0)
	LIMIT 1`
