package db

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/lib/pq"

	"github.com/parley-dev/parley"
)

// The tree (migration 11): a message is at (segment, depth) of its conversation. A
// segment is a run of messages without a fork; segment 0 starts at the root and has no
// row, every other one has a row in message_segments naming the message it forks after
// (parent_segment, fork_depth), or none for another root. The active branch is named by
// its leaf's place, conversations.(active_segment, active_depth): a leaf is always the
// last message of its segment, so continuing the active branch is the next depth of the
// active segment, one statement as before the tree.

// leafDepth is the depth of a conversation's active leaf, as an expression on its row:
// a conversation without segments is one line ending at its last message.
const leafDepth = `(CASE WHEN segments = 0 THEN last_position ELSE active_depth END)`

// spot is a message's place in its conversation's tree; depth 0 is "before the root".
type spot struct {
	Segment int `db:"segment"`
	Depth   int `db:"depth"`
}

// placed is where a new message goes: its spot, and whether it becomes the active
// branch's leaf.
type placed struct {
	spot
	activate bool
}

// chainSQL is a CTE, chain(seg, hi), of the segments of the branch that ends at
// ($leafSeg, $leafDepth) in conversation $conv: each segment with the depth its part of
// the branch ends at, read from the leaf segment's row (its chain and chain_from,
// migration 000020: one probe of the primary key, none for segment 0), as pages find
// theirs (chainQuery).
func chainSQL(conv, leafSeg, leafDepth string) string {
	return `WITH chain(seg, hi) AS (
		SELECT u.seg, COALESCE(sc.chain_from[u.i + 1], ` + leafDepth + `::int)
		FROM (SELECT CASE WHEN ` + leafSeg + `::int = 0 THEN '{0}' ELSE s.chain END AS chain,
				CASE WHEN ` + leafSeg + `::int = 0 THEN '{0}' ELSE s.chain_from END AS chain_from
			FROM (SELECT 1) one LEFT JOIN message_segments s
				ON s.conversation_id = ` + conv + ` AND s.segment = ` + leafSeg + `::int AND ` + leafSeg + `::int > 0) sc
		CROSS JOIN LATERAL unnest(sc.chain, sc.chain_from) WITH ORDINALITY AS u(seg, lo, i))`
}

// onBranch reports whether the message at m is on the branch that ends at leaf (m is
// leaf or one of its ancestors): at most one probe of message_segments' primary key, for
// the leaf's segment, whose chain (migration 000020) says which segment the branch runs
// through at m's depth.
func onBranch(ctx context.Context, tx *txn, convKey string, m, leaf spot) (bool, error) {
	switch {
	case m.Depth == 0:
		return true, nil
	case m.Depth > leaf.Depth:
		return false, nil
	case m.Segment == leaf.Segment:
		return true, nil
	case leaf.Segment == 0:
		return false, nil // segment 0's chain is itself
	}
	var on sql.NullBool
	err := tx.GetContext(ctx, &on, onBranchSQL, convKey, leaf.Segment, m.Segment, m.Depth)
	if errors.Is(err, sql.ErrNoRows) {
		return false, fmt.Errorf("segment %d has no row", leaf.Segment)
	}
	return on.Valid && on.Bool, err
}

// onBranchSQL is whether the message at depth $4 of segment $3 is on a branch through
// segment $2, other than $3: $3 is on $2's chain and the branch leaves it at or after $4
// (NULL when $3 is not on the chain).
// TestChainPlansProbeOnce holds its plan, and those of the other readers of chains, to
// one probe of the primary key (migration 000020 says why the fork index leads with
// the fork depth).
const onBranchSQL = `SELECT chain_from[array_position(chain, $3::int) + 1] >= $4::int
	FROM message_segments WHERE conversation_id = $1 AND segment = $2`

// spotOf returns the place of a message of the conversation; ENOTFOUND naming field
// when the conversation has no such message.
func spotOf(ctx context.Context, tx *txn, convKey, field, id string) (spot, error) {
	key, ok := parley.ParseMessageID(id)
	var s spot
	if ok {
		err := tx.GetContext(ctx, &s, `SELECT segment, depth FROM messages WHERE id = $1 AND conversation_id = $2`, key, convKey)
		if errors.Is(err, sql.ErrNoRows) {
			// A message the linked fork shares: at its depth of segment 0 (db/forkshared.go).
			if s, ok, err = sharedSpotOf(ctx, tx, convKey, key); err != nil {
				return s, err
			}
		} else if err != nil {
			return s, err
		}
	}
	if !ok {
		return s, messageNotInConversation(field, id, convKey)
	}
	return s, nil
}

// place locks the conversation's row (reading the transaction's time into tx along, as
// lockConversation does), decides where a message placed by p goes, and makes the
// segment it starts when it forks. A message added under a message of the active
// branch (an edit, another reply) becomes the active branch's leaf; one added to
// another branch leaves the active branch as it is. One statement (lockPlaceSQL) when
// the message continues its parent's segment, two more when it starts a segment, one
// more when a concurrent writer changed the conversation while this one waited for its
// lock.
func (db *DB) place(ctx context.Context, tx *txn, convKey string, p parley.Placement) (placed, spot, error) {
	if err := parley.CheckPlacement(p); err != nil {
		return placed{}, spot{}, err
	}
	owner, err := ownerOf(ctx)
	if err != nil {
		return placed{}, spot{}, err
	}
	field, id, sibling := "parentId", p.ParentID, false
	if p.SiblingOf != "" {
		field, id, sibling = "siblingOf", p.SiblingOf, true
	}
	var target any // nil: the active leaf
	if id != "" {
		key, ok := parley.ParseMessageID(id)
		if !ok {
			return placed{}, spot{}, messageNotInConversation(field, id, convKey)
		}
		target = key
		if forkNo, depth, derived := parley.ParseForkMessageKey(key); derived {
			// Under a message a fork shares. Under its last one, while the fork has no
			// message of its own, the message continues the fork as one added without a
			// parent does (the row locked here, so none is added meanwhile); under any
			// other, the fork is made real first (db/fork.go).
			var continues bool
			if err := tx.GetContext(ctx, &continues, `SELECT EXISTS (SELECT 1 FROM conversations
				WHERE id = $1 AND owner = $2 AND fork_no = $3 AND base_depth = $4 AND last_position = $4 AND segments = 0
				FOR UPDATE)`, convKey, owner, forkNo, depth); err != nil {
				return placed{}, spot{}, fmt.Errorf("place a message: %w", err)
			}
			switch {
			case continues && !sibling:
				target = nil
			default:
				if err := materializeShared(ctx, tx, key, owner); err != nil {
					return placed{}, spot{}, err
				}
			}
		}
	}
	var at struct {
		Now      time.Time     `db:"now"`
		ASegment int           `db:"active_segment"`
		ADepth   int           `db:"active_depth"`
		Fresh    bool          `db:"fresh"`
		Segment  sql.NullInt64 `db:"segment"`
		Depth    sql.NullInt64 `db:"depth"`
		Taken    sql.NullBool  `db:"taken"`
		Activate sql.NullBool  `db:"activate"`
	}
	args := []any{convKey, target, sibling, owner}
	if s := db.stmt(lockPlaceSQL); s != nil {
		err = tx.StmtxContext(ctx, s).GetContext(ctx, &at, args...)
	} else {
		err = tx.GetContext(ctx, &at, lockPlaceSQL, args...)
	}
	if errors.Is(err, sql.ErrNoRows) {
		return placed{}, spot{}, conversationNotFound(parley.ConversationID(convKey))
	} else if err != nil {
		return placed{}, spot{}, fmt.Errorf("place a message: %w", err)
	}
	tx.setNow(at.Now)
	if !at.Fresh {
		// The placement was read from before the lock: read it again, under the lock.
		args = []any{convKey, target, sibling, at.ASegment, at.ADepth}
		if s := db.stmt(placeSQL); s != nil {
			err = tx.StmtxContext(ctx, s).GetContext(ctx, &at, args...)
		} else {
			err = tx.GetContext(ctx, &at, placeSQL, args...)
		}
		if errors.Is(err, sql.ErrNoRows) {
			at.Segment.Valid = false
		} else if err != nil {
			return placed{}, spot{}, fmt.Errorf("place a message: %w", err)
		}
	}
	if !at.Segment.Valid {
		return placed{}, spot{}, messageNotInConversation(field, id, convKey)
	}
	parent := spot{Segment: int(at.Segment.Int64), Depth: int(at.Depth.Int64)}
	next := spot{Segment: parent.Segment, Depth: parent.Depth + 1}
	if at.Taken.Bool {
		// The parent has a child: a new segment. The active depth is kept from the first
		// fork on (leafDepth).
		if err := tx.GetContext(ctx, &next.Segment, `UPDATE conversations SET segments = segments + 1,
			active_depth = `+leafDepth+` WHERE id = $1 RETURNING segments`, convKey); err != nil {
			return placed{}, spot{}, fmt.Errorf("number a segment: %w", err)
		}
		var forkSeg any
		if parent.Depth > 0 {
			forkSeg = parent.Segment
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO message_segments (conversation_id, segment, parent_segment, fork_depth)
			VALUES ($1, $2, $3, $4)`, convKey, next.Segment, forkSeg, parent.Depth); err != nil {
			return placed{}, spot{}, fmt.Errorf("start a segment: %w", err)
		}
	}
	return placed{spot: next, activate: at.Activate.Bool}, parent, nil
}

// placeSQL reads, under the conversation's lock, where a message placed under a parent
// goes: the parent's place (the message $2 of conversation $1, or its parent when $3
// says $2 is a sibling; the active leaf when $2 is NULL), whether the parent has a
// child already (taken: the message starts a segment), and whether the parent is on the
// active branch, which ends at depth $5 of segment $4 (activate). Each read is one probe
// of an index, whatever the tree's size and the number of forks on the branch: the
// message by its id, its segment's row (a sibling's parent), the parent's child on
// messages_branch_idx, and the active leaf segment's chain (migration 000020).
//
// The parent of a message at (segment, depth) is at depth - 1: in its segment, unless
// the message is the first of a segment that forks, whose parent is where it forks.
// p is MATERIALIZED: the parent's segment, a subquery for a sibling, is read once. It
// runs prepared (DB.prepare): it is the write's.
const placeSQL = `
	WITH t AS (
		SELECT segment, depth FROM messages WHERE id = $2::uuid AND conversation_id = $1
		UNION ALL
		SELECT $4::int, $5::int WHERE $2::uuid IS NULL
	), p AS MATERIALIZED (
		SELECT CASE WHEN NOT $3::boolean OR t.segment = 0 OR t.depth = 1 THEN t.segment
				ELSE (SELECT CASE WHEN t.depth > f.fork_depth + 1 THEN t.segment ELSE f.parent_segment END
					FROM message_segments f WHERE f.conversation_id = $1 AND f.segment = t.segment)
			END AS segment,
			CASE WHEN $3::boolean THEN t.depth - 1 ELSE t.depth END AS depth
		FROM t
	)
	SELECT p.segment, p.depth,
		EXISTS (SELECT 1 FROM messages x WHERE x.conversation_id = $1 AND x.segment = p.segment AND x.depth = p.depth + 1) AS taken,
		CASE WHEN p.depth = 0 OR (p.segment = $4 AND p.depth <= $5) THEN true
			WHEN p.depth > $5 OR $4 = 0 THEN false
			ELSE coalesce((SELECT s.chain_from[array_position(s.chain, p.segment) + 1] >= p.depth
				FROM message_segments s WHERE s.conversation_id = $1 AND s.segment = $4), false)
		END AS activate
	FROM p`

// lockPlaceSQL is lockSQL and placeSQL in one round trip: it locks the conversation $1
// of the owner $4 and reads its active leaf from the row locked, and where a message
// placed as placeSQL's $2 and $3 say goes. The placement is read from the statement's
// snapshot, taken before the lock was granted: when a concurrent writer changed the
// conversation meanwhile (the row locked is not the row of the snapshot: fresh is
// false), it may be out of date, and place reads it again under the lock (placeSQL).
// Every writer of a conversation's messages and segments changes its row (its count,
// its last position, its number of segments) in the same transaction. No row: no such
// conversation of the owner's; NULL placement: no such message in it. It runs prepared
// (DB.prepare): it is the write's.
var lockPlaceSQL = `
	WITH a AS MATERIALIZED (
		SELECT transaction_timestamp() AS now, active_segment AS aseg, ` + leafDepth + ` AS adepth, xmin::text AS version
		FROM conversations WHERE id = $1 AND owner = $4 FOR UPDATE
	), pl AS (` + strings.NewReplacer("$4::int", "(SELECT aseg FROM a)", "$5::int", "(SELECT adepth FROM a)",
	"$4", "(SELECT aseg FROM a)", "$5", "(SELECT adepth FROM a)").Replace(placeSQL) + `)
	SELECT a.now, a.aseg AS active_segment, a.adepth AS active_depth,
		a.version = (SELECT xmin::text FROM conversations WHERE id = $1) AS fresh,
		pl.segment, pl.depth, pl.taken, pl.activate
	FROM a LEFT JOIN pl ON true`

// messageNotInConversation is ENOTFOUND naming field, for a message the conversation
// does not have.
func messageNotInConversation(field, id, convKey string) error {
	return parley.Errorf(parley.ENOTFOUND, "%s: message %q not found in conversation %s", field, id, parley.ConversationID(convKey))
}

// branchEnd returns the end of the branch through the message id of the conversation:
// the last message of its segment (the branch continues along first children, which
// stay in their parent's segment). ENOTFOUND when the conversation has no such message.
func (db *DB) branchEnd(ctx context.Context, convKey, id string) (spot, error) {
	owner, err := ownerOf(ctx)
	if err != nil {
		return spot{}, err
	}
	key, ok := parley.ParseMessageID(id)
	var s spot
	if ok {
		if stmt := db.stmt(branchEndSQL); stmt != nil {
			err = stmt.GetContext(ctx, &s, key, convKey, owner)
		} else {
			err = db.db.GetContext(ctx, &s, branchEndSQL, key, convKey, owner)
		}
		if errors.Is(err, sql.ErrNoRows) {
			// A message the linked fork shares: its segment 0 (db/forkshared.go).
			s, ok, err = sharedBranchEnd(ctx, db.db, convKey, key, owner)
		}
		if err != nil {
			return s, classify(fmt.Errorf("find branch %s: %w", id, err))
		}
	}
	if !ok {
		return s, parley.Errorf(parley.ENOTFOUND, "branch: message %q not found in conversation %s", id, parley.ConversationID(convKey))
	}
	return s, nil
}

// branchEndSQL is the place of the last message of the segment of message $1 of
// conversation $2, the owner's ($3). It runs prepared (DB.prepare): a page of a named
// branch reads it first.
const branchEndSQL = `SELECT m.segment, (SELECT max(depth) FROM messages e
		WHERE e.conversation_id = m.conversation_id AND e.segment = m.segment) AS depth
	FROM messages m JOIN conversations own ON own.id = m.conversation_id AND own.owner = $3
	WHERE m.id = $1 AND m.conversation_id = $2`

// treeSQL reads where the messages $1 sit in their trees: each one's parent, and its
// parent's children (the roots, for a root) oldest first. A message's parent is the
// message before it in its segment, or for the first of a segment the message its
// segment forks after. The children of a message are the next in its segment and the
// first of each segment forking after it. A few index lookups per message, in one
// statement for a page. Each lookup must be one probe of messages_branch_idx on all
// three of its columns, whatever the statistics say: p is MATERIALIZED so that the
// parent's segment is a plain value (as an expression over the join Postgres estimated
// the lookups badly and, on a table analyzed small, scanned the whole conversation by
// its position index for each message: 8 ms for a 100-message page of a 100-message
// conversation, quadratic in its length), the children are looked up at the message's
// own depth rather than pdepth + 1, and the fork's child is read per fork (OFFSET 0
// keeps that subquery from being flattened into a join that probes by depth alone).
// TestTreePlansProbeEachMessage holds the plans to this.
var treeSQL = `
	WITH m AS (SELECT id, conversation_id AS conv, segment AS seg, depth FROM messages WHERE id = ANY($1::uuid[])),
	p AS MATERIALIZED (
		SELECT m.id, m.conv, m.depth, m.depth - 1 AS pdepth,
			CASE WHEN m.depth = 1 THEN 0 WHEN m.seg = 0 OR m.depth > s.fork_depth + 1 THEN m.seg ELSE s.parent_segment END AS pseg
		FROM m LEFT JOIN message_segments s ON s.conversation_id = m.conv AND s.segment = m.seg
	)
	SELECT p.id::text AS id,
		` + idAtSQL("p.conv", "p.pseg", "p.pdepth") + ` AS parent,
		ARRAY(SELECT c.id::text FROM (
			SELECT x.id, x.position FROM messages x
			WHERE x.conversation_id = p.conv AND x.segment = p.pseg AND x.depth = p.depth
			UNION ALL
			SELECT x.id, x.position FROM message_segments ss
			CROSS JOIN LATERAL (SELECT x.id, x.position FROM messages x
				WHERE x.conversation_id = ss.conversation_id AND x.segment = ss.segment AND x.depth = p.depth
				OFFSET 0) x
			WHERE ss.conversation_id = p.conv AND ss.fork_depth = p.pdepth
				AND ((p.pdepth = 0 AND ss.parent_segment IS NULL) OR (p.pdepth > 0 AND ss.parent_segment = p.pseg))
		) c ORDER BY c.position) AS siblings
	FROM p`

// findTree reads the TreeInfo of the messages with the given keys, by key.
func findTree(ctx context.Context, q queryer, keys []string) (map[string]*parley.TreeInfo, error) {
	rows, err := q.QueryContext(ctx, treeSQL, pq.Array(keys))
	if err != nil {
		return nil, classify(fmt.Errorf("read tree: %w", err))
	}
	defer rows.Close()
	out := make(map[string]*parley.TreeInfo, len(keys))
	for rows.Next() {
		var id string
		var parent sql.NullString
		var sibs []string
		if err := rows.Scan(&id, &parent, pq.Array(&sibs)); err != nil {
			return nil, err
		}
		t := &parley.TreeInfo{SiblingIDs: make([]string, len(sibs))}
		if parent.Valid {
			t.ParentID = parley.MessageID(parent.String)
		}
		for i, s := range sibs {
			t.SiblingIDs[i] = parley.MessageID(s)
		}
		out[id] = t
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	// A row a linked fork shares, named by its derived key (sharedTreeInfo).
	for _, k := range keys {
		if _, _, ok := parley.ParseForkMessageKey(k); ok && out[k] == nil {
			out[k] = sharedTreeInfo(k)
		}
	}
	return out, nil
}

// fillTree sets the Tree of each message read.
func (db *DB) fillTree(ctx context.Context, q queryer, msgs []parley.Message) error {
	if len(msgs) == 0 {
		return nil
	}
	keys := make([]string, len(msgs))
	for i, m := range msgs {
		keys[i], _ = parley.ParseMessageID(m.Meta().ID)
	}
	info, err := findTree(ctx, q, keys)
	if err != nil {
		return err
	}
	for i, m := range msgs {
		m.Meta().Tree = info[keys[i]]
	}
	return nil
}

// FindTreeInfo implements parley.TreeService.
func (db *DB) FindTreeInfo(ctx context.Context, messageIDs []string) (map[string]*parley.TreeInfo, error) {
	owner, err := ownerOf(ctx)
	if err != nil {
		return nil, err
	}
	keys := make([]string, 0, len(messageIDs))
	for _, id := range messageIDs {
		if k, ok := parley.ParseMessageID(id); ok {
			keys = append(keys, k)
		}
	}
	var owned []string
	var forkNos, depths []int64
	for _, k := range keys {
		if n, d, ok := parley.ParseForkMessageKey(k); ok {
			forkNos, depths = append(forkNos, n), append(depths, int64(d))
		}
	}
	if err := db.db.SelectContext(ctx, &owned, `SELECT m.id::text FROM messages m
		JOIN conversations own ON own.id = m.conversation_id AND own.owner = $2
		WHERE m.id = ANY($1::uuid[])
		UNION ALL
		SELECT fork_message_id(d.fno, d.depth)::text FROM unnest($3::bigint[], $4::int[]) AS d(fno, depth)
		JOIN conversations own ON own.fork_no = d.fno AND own.owner = $2 AND own.base_depth >= d.depth`,
		pq.Array(keys), owner, pq.Array(forkNos), pq.Array(depths)); err != nil {
		return nil, classify(fmt.Errorf("read tree: %w", err))
	}
	info, err := findTree(ctx, db.db, owned)
	if err != nil {
		return nil, err
	}
	out := make(map[string]*parley.TreeInfo, len(info))
	for k, t := range info {
		out[parley.MessageID(k)] = t
	}
	return out, nil
}

// SwitchBranch implements parley.TreeService.
func (db *DB) SwitchBranch(ctx context.Context, conversationID, messageID, by string) (*parley.SystemControlMessage, error) {
	key, ok := parley.ParseConversationID(conversationID)
	if !ok {
		return nil, conversationNotFound(conversationID)
	}
	owner, err := ownerOf(ctx)
	if err != nil {
		return nil, err
	}
	if by == "" {
		by = owner
	}
	var out *parley.SystemControlMessage
	err = db.transact(ctx, func(tx *txn) error {
		out = nil
		// Switching branches reads the tree's rows by their places: a linked fork is made
		// real first (db/fork.go); switching is rare and the copy happens once.
		if err := materializeFork(ctx, tx, key); err != nil {
			return err
		}
		old, err := db.lockActive(ctx, tx, key)
		if err != nil {
			return err
		}
		target, err := spotOf(ctx, tx, key, "messageId", messageID)
		if err != nil {
			return err
		}
		leaf := spot{Segment: target.Segment}
		if err := tx.GetContext(ctx, &leaf.Depth, segmentEndSQL, key, target.Segment); err != nil {
			return err
		}
		if leaf == old {
			return nil
		}
		// The fork point: the deepest message both branches share.
		var ends struct {
			Old  string         `db:"old"`
			New  string         `db:"new"`
			Fork sql.NullString `db:"fork"`
			At   int            `db:"at"`
		}
		if err := tx.GetContext(ctx, &ends, `WITH RECURSIVE
			a(seg, hi) AS (SELECT $2::int, $3::int UNION ALL SELECT s.parent_segment, s.fork_depth FROM a
				JOIN message_segments s ON s.conversation_id = $1 AND s.segment = a.seg WHERE s.parent_segment IS NOT NULL),
			b(seg, hi) AS (SELECT $4::int, $5::int UNION ALL SELECT s.parent_segment, s.fork_depth FROM b
				JOIN message_segments s ON s.conversation_id = $1 AND s.segment = b.seg WHERE s.parent_segment IS NOT NULL),
			f AS (SELECT a.seg, least(a.hi, b.hi) AS depth FROM a JOIN b ON a.seg = b.seg ORDER BY 2 DESC LIMIT 1)
			SELECT `+idAtSQL("$1", "$2", "$3")+` AS old, `+idAtSQL("$1", "$4", "$5")+` AS new,
				(SELECT `+idAtSQL("$1", "f.seg", "f.depth")+` FROM f) AS fork,
				coalesce((SELECT depth FROM f), 0) AS at`,
			key, old.Segment, old.Depth, leaf.Segment, leaf.Depth); err != nil {
			return fmt.Errorf("read the branches: %w", err)
		}
		params := map[string]any{"switchedBy": by, "forkPosition": ends.At, "forkPoint": nil}
		if ends.Fork.Valid {
			params["forkPoint"] = parley.MessageID(ends.Fork.String)
		}
		raw, err := json.Marshal(params)
		if err != nil {
			return err
		}
		m := &parley.SystemControlMessage{
			MessageMeta: parley.MessageMeta{Role: parley.RoleSupervisor},
			ControlKind: parley.ControlBranchSwitch,
			From:        parley.MessageID(ends.Old),
			To:          parley.MessageID(ends.New),
			Params:      parley.JSON(raw),
		}
		if err := parley.Prepare(m, db.limits); err != nil {
			return err
		}
		// The switch is recorded at the end of the branch switched to, which it then
		// ends: the transition is where the history on that branch resumes.
		if _, err := tx.ExecContext(ctx, `UPDATE conversations SET active_segment = $2, active_depth = $3 WHERE id = $1`,
			key, leaf.Segment, leaf.Depth); err != nil {
			return err
		}
		m.Place = parley.Placement{ParentID: parley.MessageID(ends.New)}
		if err := db.insertMessageAt(ctx, tx, key, m, nil); err != nil {
			return err
		}
		out = m
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("switch branch of %s: %w", conversationID, err)
	}
	return out, nil
}

// FindBranches implements parley.TreeService: one row per segment, whose last message
// is a leaf (a segment's last message has no child: a child would continue the segment).
func (db *DB) FindBranches(ctx context.Context, conversationID string, limit int) ([]*parley.Branch, error) {
	key, ok := parley.ParseConversationID(conversationID)
	if !ok {
		return nil, conversationNotFound(conversationID)
	}
	owner, err := ownerOf(ctx)
	if err != nil {
		return nil, err
	}
	type branchRow struct {
		messageRow
		Fork   sql.NullString `db:"fork"`
		ForkAt int            `db:"fork_depth"`
		Active bool           `db:"active"`
	}
	result, err := db.db.QueryxContext(ctx, `
		SELECT leaf.*, `+idAtSQL("own.id", "seg.parent_segment", "seg.fork_depth")+` AS fork, seg.fork_depth,
			(seg.segment = own.active_segment OR own.segments = 0) AS active
		FROM conversations own
		CROSS JOIN LATERAL (SELECT 0 AS segment, NULL::int AS parent_segment, 0 AS fork_depth
			UNION ALL
			SELECT segment, parent_segment, fork_depth FROM message_segments WHERE conversation_id = own.id) seg
		CROSS JOIN LATERAL ((SELECT `+messageColumns+` FROM messages
				WHERE conversation_id = own.id AND segment = seg.segment ORDER BY depth DESC LIMIT 1)
			UNION ALL
			(`+sharedAt("own", "own.base_depth")+` AND seg.segment = 0)
			LIMIT 1) leaf
		WHERE own.id = $1 AND own.owner = $2
		ORDER BY leaf.position DESC LIMIT $3`, key, owner, limit)
	if err != nil {
		return nil, classify(fmt.Errorf("find branches of %s: %w", conversationID, err))
	}
	defer result.Close()
	var out []*parley.Branch
	for result.Next() {
		var r branchRow
		if err := result.StructScan(&r); err != nil {
			return nil, classify(fmt.Errorf("find branches of %s: %w", conversationID, err))
		}
		m, err := decodeMessage(&r.messageRow, db.log)
		if err != nil {
			return nil, err
		}
		b := &parley.Branch{Leaf: m, Length: r.Depth, Active: r.Active}
		if r.Fork.Valid {
			b.ForkID, b.ForkPosition = parley.MessageID(r.Fork.String), r.ForkAt
		}
		out = append(out, b)
	}
	if err := result.Err(); err != nil {
		return nil, classify(fmt.Errorf("find branches of %s: %w", conversationID, err))
	}
	if out == nil {
		// Nothing read: an empty conversation, or none of the owner's.
		if _, err := db.FindConversationByID(ctx, conversationID); err != nil {
			return nil, err
		}
	}
	ls := make([]parley.Message, len(out))
	for i, b := range out {
		ls[i] = b.Leaf
	}
	if err := db.foldLive(ctx, db.db, ls); err != nil {
		return nil, err
	}
	for i, b := range out {
		b.Leaf = ls[i]
	}
	return out, nil
}

// BranchHead implements parley.TreeService.
func (db *DB) BranchHead(ctx context.Context, conversationID, branch string) (int, parley.Message, error) {
	key, ok := parley.ParseConversationID(conversationID)
	if !ok {
		return 0, nil, conversationNotFound(conversationID)
	}
	owner, err := ownerOf(ctx)
	if err != nil {
		return 0, nil, err
	}
	var seq int
	var leaf parley.Message
	// Repeatable read: the head and the branch from one snapshot.
	err = db.transact(ctx, func(tx *txn) error {
		if _, err := tx.ExecContext(ctx, `SET TRANSACTION ISOLATION LEVEL REPEATABLE READ READ ONLY`); err != nil {
			return err
		}
		var head struct {
			Seq     int `db:"last_position"`
			Segment int `db:"segment"`
			Depth   int `db:"depth"`
		}
		err := tx.GetContext(ctx, &head, `SELECT last_position, active_segment AS segment, `+leafDepth+` AS depth
			FROM conversations WHERE id = $1 AND owner = $2`, key, owner)
		if errors.Is(err, sql.ErrNoRows) {
			return conversationNotFound(conversationID)
		} else if err != nil {
			return err
		}
		seq = head.Seq
		at := spot{Segment: head.Segment, Depth: head.Depth}
		if branch != "" {
			if at, err = spotOf(ctx, tx, key, "branch", branch); err != nil {
				return err
			}
			if err := tx.GetContext(ctx, &at.Depth, segmentEndSQL, key, at.Segment); err != nil {
				return err
			}
		}
		if at.Depth == 0 {
			return nil
		}
		var row messageRow
		if err := tx.GetContext(ctx, &row, `SELECT `+messageColumns+` FROM messages
			WHERE conversation_id = $1 AND segment = $2 AND depth = $3
			UNION ALL
			SELECT s.* FROM conversations own, LATERAL (`+sharedAt("own", "$3")+`) s WHERE own.id = $1 AND $2 = 0
			LIMIT 1`, key, at.Segment, at.Depth); err != nil {
			return fmt.Errorf("read the leaf: %w", err)
		}
		leaf, err = decodeMessage(&row, db.log)
		return err
	})
	if err != nil {
		return 0, nil, classify(fmt.Errorf("read the head of %s: %w", conversationID, err))
	}
	return seq, leaf, nil
}

// SetMessageHidden implements parley.TreeService.
func (db *DB) SetMessageHidden(ctx context.Context, messageID string, hidden bool) (parley.Message, error) {
	return db.markMessage(ctx, messageID, func(ctx context.Context, tx *txn, key string, m parley.Message) error {
		m.Meta().Hidden = hidden
		_, err := tx.ExecContext(ctx, `UPDATE messages SET hidden = $2 WHERE id = $1`, key, hidden)
		return err
	})
}

// DeleteMessage implements parley.TreeService.
func (db *DB) DeleteMessage(ctx context.Context, messageID string) (parley.Message, error) {
	return db.markMessage(ctx, messageID, func(ctx context.Context, tx *txn, key string, m parley.Message) error {
		if m.Meta().DeletedAt != nil {
			return nil
		}
		if m.Meta().Live.Status == parley.StatusStreaming {
			return parley.Errorf(parley.ECONFLICT, "messageId: message %s is streaming; end it before deleting it", messageID)
		}
		parley.Erase(m)
		enc, err := encodeMessage(m)
		if err != nil {
			return err
		}
		var at time.Time
		if err := tx.GetContext(ctx, &at, `UPDATE messages SET content = $2, tool_calls = $3, tool_results = $4,
			payload = $5, provenance = NULL, deleted_at = now() WHERE id = $1 RETURNING deleted_at`,
			key, enc.Content, nullJSON(enc.ToolCalls), nullJSON(enc.ToolResults), enc.Payload); err != nil {
			return err
		}
		m.Meta().DeletedAt, m.Meta().Live.Provenance = &at, nil
		return nil
	})
}

// markMessage changes a stored message of the owner's with change, under its lock, and
// announces the change to messageUpdated subscribers.
func (db *DB) markMessage(ctx context.Context, messageID string,
	change func(ctx context.Context, tx *txn, key string, m parley.Message) error) (parley.Message, error) {
	key, ok := parley.ParseMessageID(messageID)
	if !ok {
		return nil, messageNotFound(messageID)
	}
	var out parley.Message
	err := db.transact(ctx, func(tx *txn) error {
		m, convKey, err := db.lockMessage(ctx, tx, key, messageID)
		if err != nil {
			return err
		}
		if err := change(ctx, tx, key, m); err != nil {
			return err
		}
		if err := tx.GetContext(ctx, &m.Meta().UpdatedAt, `UPDATE messages SET updated_at = now() WHERE id = $1 RETURNING updated_at`, key); err != nil {
			return err
		}
		if _, err := markMessageChanged(ctx, tx, convKey, key); err != nil {
			return err
		}
		out = m
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("change message %s: %w", messageID, err)
	}
	return out, nil
}

// ForkConversation implements parley.TreeService: the fork's row with a link to the
// path it shares (db/fork.go), whatever the path's length: the source message and its
// conversation's row, the chain of its segment (one probe), a probe of the path's
// conversations for a streaming message, and three inserts. A fork at a message another
// fork shares links to what that fork links to, cut at the message.
func (db *DB) ForkConversation(ctx context.Context, messageID, title string) (*parley.Conversation, error) {
	owner, err := ownerOf(ctx)
	if err != nil {
		return nil, err
	}
	key, ok := parley.ParseMessageID(messageID)
	if !ok {
		return nil, messageNotFound(messageID)
	}
	forkNo, depth, _ := parley.ParseForkMessageKey(key)
	var out *parley.Conversation
	err = db.transact(ctx, func(tx *txn) error {
		var src struct {
			Conv    string `db:"conversation_id"`
			Title   string `db:"title"`
			Segment int    `db:"segment"`
			Depth   int    `db:"depth"`
			forkLink
		}
		// The source message: a row, or a row a linked fork shares, at its depth of the
		// fork's segment 0.
		err := tx.GetContext(ctx, &src, `SELECT s.conversation_id, own.title, s.segment, s.depth,
				own.base_depth, p.convs AS link_convs, p.segs AS link_segs, p.froms AS link_from
			FROM (SELECT m.conversation_id, m.segment, m.depth FROM messages m WHERE m.id = $1
				UNION ALL
				SELECT c.id, 0, $4::int FROM conversations c WHERE c.fork_no = $3 AND c.base_depth >= $4::int) s
			JOIN conversations own ON own.id = s.conversation_id AND own.owner = $2
			LEFT JOIN fork_paths p ON p.conversation_id = own.id
			LIMIT 1 FOR SHARE OF own`, key, owner, forkNo, depth)
		if errors.Is(err, sql.ErrNoRows) {
			return messageNotFound(messageID)
		} else if err != nil {
			return err
		}
		if title == "" {
			title = src.Title
		}
		if title, err = parley.CleanTitle(title); err != nil {
			return err
		}
		chain, from := pq.Int64Array{0}, pq.Int64Array{0}
		if src.Segment > 0 {
			if err := tx.QueryRowContext(ctx, `SELECT chain, chain_from FROM message_segments WHERE conversation_id = $1 AND segment = $2`,
				src.Conv, src.Segment).Scan(&chain, &from); err != nil {
				return fmt.Errorf("read the path's segments: %w", err)
			}
		}
		entries := forkEntries(src.Conv, src.forkLink, chain, from, src.Depth)
		convs, segs, froms := make([]string, len(entries)), make([]int64, len(entries)), make([]int64, len(entries))
		for i, e := range entries {
			convs[i], segs[i], froms[i] = e.conv, int64(e.seg), int64(e.from)
		}
		// A streaming message cannot be shared: its content is still coming.
		var streaming bool
		if err := tx.GetContext(ctx, &streaming, `SELECT EXISTS (SELECT 1
			FROM link_entries($1::uuid[], $2::int[], $3::int[], $4) e
			JOIN messages m ON m.conversation_id = e.conv AND m.segment = e.seg AND m.depth > e.lo AND m.depth <= e.hi
				AND m.status = 'streaming')`, pq.Array(convs), pq.Array(segs), pq.Array(froms), src.Depth); err != nil {
			return fmt.Errorf("check the path: %w", err)
		}
		if streaming {
			return parley.Errorf(parley.ECONFLICT, "messageId: a message on the path to %s is still streaming; fork once it has ended", messageID)
		}
		var row conversationRow
		// The bound of its messages' size (migration 000026) covers the rows it shares:
		// theirs covers them, and they do not change while shared.
		if err := tx.GetContext(ctx, &row, `INSERT INTO conversations (title, owner, forked_from, fork_no, base_depth,
				last_position, message_count, active_depth, max_message_bytes)
			VALUES ($1, $2, $3, nextval('conversations_fork_no_seq'), $4, $4, $4, $4,
				(SELECT max(max_message_bytes) FROM conversations WHERE id = ANY ($5::uuid[])))
			RETURNING `+conversationColumns, title, owner, key, src.Depth, pq.Array(convs)); err != nil {
			return fmt.Errorf("create the fork: %w", err)
		}
		if _, err := tx.ExecContext(ctx, `WITH path AS (
				INSERT INTO fork_paths (conversation_id, convs, segs, froms) VALUES ($2, $1, $3, $4))
			INSERT INTO fork_links (base, fork) SELECT DISTINCT b, $2::uuid FROM unnest($1::uuid[]) AS b`,
			pq.Array(convs), row.ID, pq.Array(segs), pq.Array(froms)); err != nil {
			return fmt.Errorf("link the fork: %w", err)
		}
		out = row.conversation()
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("fork at %s: %w", messageID, err)
	}
	return out, nil
}

// FindTreeMessages implements parley.MessageService: the conversation's messages in the
// order of their store numbers (position), which every parent precedes, read through
// the (conversation_id, position) key, and their parents in one statement more.
func (db *DB) FindTreeMessages(ctx context.Context, conv *parley.Conversation, afterSeq, first, maxBytes int) (*parley.TreePage, error) {
	key, ok := parley.ParseConversationID(conv.ID)
	if !ok {
		return nil, conversationNotFound(conv.ID)
	}
	owner, err := ownerOf(ctx)
	if err != nil {
		return nil, err
	}
	if first <= 0 || first > parley.MaxPageSize {
		return nil, parley.Errorf(parley.EINVALID, "first: %d is not between 1 and %d", first, parley.MaxPageSize)
	}
	out := &parley.TreePage{}
	var head struct {
		Leaf sql.NullString `db:"leaf"`
	}
	err = db.db.GetContext(ctx, &head, `SELECT `+activeLeafOf("own")+` AS leaf
		FROM conversations own WHERE own.id = $1 AND own.owner = $2`, key, owner)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, conversationNotFound(conv.ID)
	} else if err != nil {
		return nil, classify(fmt.Errorf("read the tree of %s: %w", conv.ID, err))
	}
	if head.Leaf.Valid {
		out.ActiveLeafID = parley.MessageID(head.Leaf.String)
	}
	result, err := db.db.QueryContext(ctx, `SELECT `+pageColumns+` FROM `+byPosition("$1", "$2", "$3")+`
		ORDER BY position LIMIT $3`, key, afterSeq, first+1)
	rows, cut, err := db.scanPage(result, err, first+1, maxBytes, "", false)
	if err != nil {
		return nil, classify(fmt.Errorf("read the tree of %s: %w", conv.ID, err))
	}
	out.HasNextPage = len(rows) > first || cut[key]
	if len(rows) > first {
		rows = rows[:first]
	}
	keys := make([]string, len(rows))
	for i := range rows {
		m, err := rows[i].message()
		if err != nil {
			return nil, err
		}
		out.Messages = append(out.Messages, m)
		out.Bytes += rows[i].bytes
		keys[i], _ = parley.ParseMessageID(rows[i].id) // a page row's id is public
	}
	info, err := findTree(ctx, db.db, keys)
	if err != nil {
		return nil, err
	}
	for i, m := range out.Messages {
		m.Meta().Tree = info[keys[i]]
		if m.Meta().Tree == nil {
			m.Meta().Tree = &parley.TreeInfo{}
		}
	}
	if err := db.foldLive(ctx, db.db, out.Messages); err != nil {
		return nil, err
	}
	return out, nil
}

// BranchContains implements parley.TreeService: the branch's end, then the message and
// the end's chain of segments (migration 000020), a probe each.
func (db *DB) BranchContains(ctx context.Context, conversationID, branch, messageID string) (bool, error) {
	key, ok := parley.ParseConversationID(conversationID)
	if !ok {
		return false, conversationNotFound(conversationID)
	}
	owner, err := ownerOf(ctx)
	if err != nil {
		return false, err
	}
	var end spot
	if branch != "" {
		if end, err = db.branchEnd(ctx, key, branch); err != nil {
			return false, err
		}
	} else {
		err := db.db.GetContext(ctx, &end, `SELECT active_segment AS segment, `+leafDepth+` AS depth FROM conversations
			WHERE id = $1 AND owner = $2`, key, owner)
		if errors.Is(err, sql.ErrNoRows) {
			return false, conversationNotFound(conversationID)
		} else if err != nil {
			return false, classify(fmt.Errorf("read the active branch of %s: %w", conversationID, err))
		}
	}
	mkey, ok := parley.ParseMessageID(messageID)
	if !ok {
		return false, nil
	}
	var on bool
	err = db.db.GetContext(ctx, &on, `SELECT EXISTS (SELECT 1 FROM messages m
		WHERE m.id = $4 AND m.conversation_id = $1 AND m.depth <= $3 AND (m.segment = $2
			OR (SELECT s.chain_from[array_position(s.chain, m.segment) + 1] >= m.depth FROM message_segments s
				WHERE s.conversation_id = $1 AND s.segment = $2)))`, key, end.Segment, end.Depth, mkey)
	if err == nil && !on {
		// A message the linked fork shares (db/forkshared.go).
		on, err = sharedOnBranch(ctx, db.db, key, mkey, owner, end)
	}
	if err != nil {
		return false, classify(fmt.Errorf("find message %s on a branch: %w", messageID, err))
	}
	return on, nil
}
