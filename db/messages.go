package db

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"

	"github.com/parley-dev/parley"
)

func messageNotFound(id string) error {
	return parley.Errorf(parley.ENOTFOUND, "message %q not found", id)
}

// FindMessageByID implements parley.MessageService.
func (db *DB) FindMessageByID(ctx context.Context, id string) (parley.Message, error) {
	key, ok := parley.ParseMessageID(id)
	if !ok {
		return nil, messageNotFound(id)
	}
	owner, err := ownerOf(ctx)
	if err != nil {
		return nil, err
	}
	var row messageRow
	err = db.db.GetContext(ctx, &row, `SELECT `+messageColumns+` FROM messages WHERE id = $1 AND `+ownedMessage("2"), key, owner)
	if errors.Is(err, sql.ErrNoRows) {
		// A message a linked fork shares: the shared row, as the fork's (db/forkshared.go).
		return db.findSharedMessage(ctx, key, id, owner)
	} else if err != nil {
		return nil, classify(fmt.Errorf("find message %s: %w", id, err))
	}
	m, err := decodeMessage(&row, db.log)
	if err != nil {
		return nil, err
	}
	return db.foldOne(ctx, db.db, m)
}

// findSharedMessage is FindMessageByID for a derived key of a linked fork of owner's:
// the row it shares, read through the fork's link without copying it, as the fork's
// message (sharedRowsSQL), with its place in the fork's tree. ENOTFOUND for any other key.
func (db *DB) findSharedMessage(ctx context.Context, key, id, owner string) (parley.Message, error) {
	rows, err := findSharedRows(ctx, db.db, []string{key}, owner)
	if err != nil {
		return nil, classify(fmt.Errorf("find message %s: %w", id, err))
	}
	if len(rows) == 0 {
		return nil, messageNotFound(id)
	}
	m, err := decodeMessage(&rows[0].messageRow, db.log)
	if err != nil {
		return nil, err
	}
	// A shared row never streams (a fork is refused past a streaming message): nothing to fold.
	m.Meta().Tree = sharedTreeInfo(key)
	return m, nil
}

// FindMessages implements parley.MessageService.
func (db *DB) FindMessages(ctx context.Context, conv *parley.Conversation, page parley.PageRequest) (*parley.MessagePage, error) {
	pages, err := db.FindMessagePages(ctx, []*parley.Conversation{conv}, page)
	if err != nil {
		return nil, err
	}
	return pages[0], nil
}

// AddMessage implements parley.MessageService.
func (db *DB) AddMessage(ctx context.Context, conversationID string, m parley.Message) (parley.Message, error) {
	key, ok := parley.ParseConversationID(conversationID)
	if !ok {
		return nil, conversationNotFound(conversationID)
	}
	if _, err := ownerOf(ctx); err != nil {
		return nil, err
	}
	live := m.Meta().Live
	if err := parley.CheckClientMessageID(live.ClientID); err != nil {
		return nil, err
	}
	if err := parley.CheckProvenance(live.Provenance); err != nil {
		return nil, err
	}
	if err := parley.Prepare(m, db.limits); err != nil {
		return nil, err
	}
	var want []byte
	if live.ClientID != "" {
		// A retry is the same message as prepared: compare digests, not inputs.
		row, err := encodeMessage(m)
		if err != nil {
			return nil, err
		}
		want = rowDigest(row, encodeProvenance(live.Provenance))
	}
	if want == nil && oneStatement(m) {
		if done, err := db.insertAlone(ctx, key, m); err != nil {
			return nil, err
		} else if done {
			return m, nil
		}
	}
	restore := restorer(m)
	var stored parley.Message
	err := db.transact(ctx, func(tx *txn) error {
		restore()
		stored = nil
		if want != nil {
			// Under the conversation's lock, a concurrent retry waits for this one and
			// then finds what it stored.
			if err := lockConversation(ctx, tx, key); err != nil {
				return err
			}
			var err error
			if stored, err = db.findByClientID(ctx, tx, key, live.ClientID, want); stored != nil || err != nil {
				return err
			}
			m.Meta().Live.ClientID = live.ClientID
		}
		if err := db.applyToolPolicies(ctx, tx, m); err != nil {
			return err
		}
		if err := db.insertMessageAt(ctx, tx, key, m, want); err != nil {
			return err
		}
		if req, ok := m.(*parley.ToolRequestMessage); ok {
			return recordApprovals(ctx, tx, key, req.ToolCalls)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if stored != nil {
		return stored, nil
	}
	return m, nil
}

// oneStatement reports whether saving m, a message without a client message id, can
// be one statement and nothing else: insertMessageSQL continuing the active branch, or
// insertUnderSQL placing it where its Place says (which may find that it cannot:
// insertAlone), for a kind for which inserted only fills in the meta fields. Not a
// tool request (its policies, its calls' rows, their approvals), a tool result (its
// call, read before and answered after), a compaction (its check after the insert must
// be able to roll it back), nor a resource retrieved now (its time is the
// transaction's, read first). A kind added later is saved in a transaction until it is
// listed here.
func oneStatement(m parley.Message) bool {
	switch m := m.(type) {
	case *parley.TextMessage, *parley.ImageMessage, *parley.FileReferenceMessage, *parley.SystemControlMessage,
		*parley.UnknownMessage:
		return true
	case *parley.MCPResourceMessage:
		return !m.RetrievedAt.IsZero()
	}
	return false
}

// insertAlone is insertMessage for a message that oneStatement says needs nothing
// else: its statement runs on its own, in autocommit (autocommit), without the BEGIN
// and COMMIT a transaction adds, two round trips and two statements more for Postgres.
// One statement is atomic all the same, and its notification is delivered at its
// commit as the transaction's was. A message with a Place is insertUnderSQL's, which
// may find that it cannot place it (a concurrent writer, no such parent): then
// nothing was written and insertAlone reports that it did not save m, for the steps
// in a transaction to.
func (db *DB) insertAlone(ctx context.Context, convKey string, m parley.Message) (bool, error) {
	args, err := insertArgs(ctx, convKey, m, nil)
	if err != nil {
		return false, err
	}
	query, placed := insertMessageSQL, !m.Meta().Place.IsZero()
	if placed {
		target, sibling, ok, err := underTarget(m.Meta().Place)
		if err != nil || !ok {
			return false, err
		}
		query, args = insertUnderSQL, append(args, target, sibling)
	}
	var created createdRow
	done := true
	err = db.autocommit(ctx, func(ctx context.Context) error {
		err := db.get(ctx, &created, query, args...)
		if placed && errors.Is(err, sql.ErrNoRows) {
			done = false
			return nil
		}
		return insertError(convKey, err)
	})
	if err != nil || !done {
		return false, err
	}
	fillInserted(convKey, m, created)
	return true, nil
}

// insertError is the error of an insert of a message into a conversation of ctx's
// owner: no row returned says there is none.
func insertError(convKey string, err error) error {
	if errors.Is(err, sql.ErrNoRows) {
		return conversationNotFound(parley.ConversationID(convKey))
	} else if err != nil {
		return fmt.Errorf("insert message into %s: %w", parley.ConversationID(convKey), err)
	}
	return nil
}

// insertArgs are the arguments of insertMessageSQL for m, prepared, into a
// conversation of ctx's owner ($1 to $14); insertPlacedSQL and insertUnderSQL take
// theirs after these.
func insertArgs(ctx context.Context, convKey string, m parley.Message, digest []byte) ([]any, error) {
	owner, err := ownerOf(ctx)
	if err != nil {
		return nil, err
	}
	row, err := encodeMessage(m)
	if err != nil {
		return nil, err
	}
	meta := m.Meta()
	return []any{convKey, row.SchemaVersion, row.Kind, row.Role, row.Content,
		nullJSON(row.ToolCalls), nullJSON(row.ToolResults), row.Payload, row.SourceID, nullTime(meta.CreatedAt), owner,
		sql.NullString{String: meta.Live.ClientID, Valid: meta.Live.ClientID != ""}, digest, encodeProvenance(meta.Live.Provenance)}, nil
}

// restorer returns a func that puts back what saving m fills in (its meta fields, its
// calls' policy decisions, its retrieval time, its tool name), so that a transaction run
// again (transact) saves m as it was given, not as the aborted run left it.
func restorer(m parley.Message) func() {
	meta := *m.Meta()
	switch m := m.(type) {
	case *parley.ToolRequestMessage:
		calls := slices.Clone(m.ToolCalls)
		return func() { *m.Meta() = meta; copy(m.ToolCalls, calls) }
	case *parley.MCPResourceMessage:
		retrieved := m.RetrievedAt
		return func() { *m.Meta() = meta; m.RetrievedAt = retrieved }
	case *parley.ToolResultMessage:
		name := m.ToolName
		return func() { *m.Meta() = meta; m.ToolName = name }
	}
	return func() { *m.Meta() = meta }
}

// insertMessage stores a prepared message as the next one of the conversation's active
// branch and fills in its meta fields. Taking the next number locks the conversation's
// row until the transaction ends, so concurrent writers get consecutive numbers in
// commit order.
func (db *DB) insertMessage(ctx context.Context, tx *txn, convKey string, m parley.Message) error {
	return db.insertMessageAt(ctx, tx, convKey, m, nil)
}

// insertMessageAt stores a prepared message where its meta's Place says (by default,
// continuing the active branch) and fills in its meta fields. digest, with a client id,
// is the message's as given (rowDigest, before the store fills anything in).
func (db *DB) insertMessageAt(ctx context.Context, tx *txn, convKey string, m parley.Message, digest []byte) error {
	if _, err := ownerOf(ctx); err != nil {
		return err
	}
	meta := m.Meta()
	res, isResult := m.(*parley.ToolResultMessage)
	var at *placed
	if !isResult && !meta.Place.IsZero() {
		// Most often one statement places and inserts the message (insertUnderSQL);
		// when it cannot, the statements below do, one step at a time.
		done, err := db.insertUnder(ctx, tx, convKey, m, digest)
		if done || err != nil {
			return err
		}
	}
	if isResult || !meta.Place.IsZero() {
		// Placing a message reads the tree, which must not change meanwhile: place locks
		// the conversation first.
		p, parent, err := db.place(ctx, tx, convKey, meta.Place)
		if err != nil {
			return err
		}
		at = &p
		if isResult {
			// Fill in the tool's name before encoding, once the call is known to exist
			// on this branch.
			name, err := toolCallForResult(ctx, tx, convKey, res.ToolCallID, res.Worker, parent)
			if err != nil {
				return err
			}
			res.ToolName = name
		}
	}
	if res, ok := m.(*parley.MCPResourceMessage); ok && res.RetrievedAt.IsZero() {
		// Retrieved now: the transaction's time, which is also the message's createdAt.
		var err error
		if res.RetrievedAt, err = tx.Now(ctx); err != nil {
			return err
		}
	}
	args, err := insertArgs(ctx, convKey, m, digest)
	if err != nil {
		return err
	}
	var created createdRow
	query := insertMessageSQL
	if at != nil {
		query, args = insertPlacedSQL, append(args, at.Segment, at.Depth, at.activate)
	}
	if s := db.stmt(query); s != nil {
		err = tx.StmtxContext(ctx, s).GetContext(ctx, &created, args...)
	} else {
		err = tx.GetContext(ctx, &created, query, args...)
	}
	if err := insertError(convKey, err); err != nil {
		return err
	}
	return db.inserted(ctx, tx, convKey, m, created)
}

// inserted fills in the meta fields of m, just stored as created, and records what
// goes with it: its notification, its tool calls, its result's call.
func (db *DB) inserted(ctx context.Context, tx *txn, convKey string, m parley.Message, created createdRow) error {
	fillInserted(convKey, m, created)
	if c, ok := m.(*parley.CompactionMessage); ok {
		if err := parley.CheckCompactionCovers(c); err != nil {
			return err
		}
	}
	// Subscribers on every replica hear of it at commit, and never if this rolls back:
	// the insert queued its notification (notifyInsertedSQL).
	switch m := m.(type) {
	case *parley.ToolRequestMessage:
		return recordToolCalls(ctx, tx, convKey, created.ID, m.ToolCalls)
	case *parley.ToolResultMessage:
		_, err := tx.ExecContext(ctx, `UPDATE tool_calls SET result_id = $3 WHERE conversation_id = $1 AND call_id = $2`,
			convKey, m.ToolCallID, created.ID)
		return err
	}
	return nil
}

// fillInserted fills in the meta fields of m, just stored as created.
func fillInserted(convKey string, m parley.Message, created createdRow) {
	meta := m.Meta()
	meta.ID = parley.MessageID(created.ID)
	meta.ConversationID = parley.ConversationID(convKey)
	meta.Position, meta.Seq = created.Depth, created.Position
	meta.Place = parley.Placement{}
	meta.CreatedAt, meta.UpdatedAt = created.CreatedAt, created.UpdatedAt
}

// insertMessageSQL takes the conversation's next number, continues its active branch
// (the next depth of the active leaf's segment: a leaf ends its segment), bumps the
// conversation, inserts the row with its owner ($11: the search trigger then need not
// read it, migration 000022) and queues its notification (notifyInsertedSQL), in one
// statement. It runs prepared (DB.prepare): it is the write.
const insertMessageSQL = `
	WITH conv AS (
		UPDATE conversations
		SET last_position = last_position + 1, message_count = message_count + 1,
			active_depth = CASE WHEN segments = 0 THEN last_position ELSE active_depth END + 1, updated_at = now()
		WHERE id = $1 AND owner = $11
		RETURNING id, last_position, active_segment, active_depth
	), ins AS (
	INSERT INTO messages (conversation_id, position, segment, depth, schema_version, kind, role, content,
		tool_calls, tool_results, payload, source_id, created_at, client_message_id, body_digest, provenance, owner)
	SELECT conv.id, conv.last_position, conv.active_segment, conv.active_depth, $2, $3, $4, $5, $6, $7, $8, $9,
		coalesce($10, now()), $12, $13, $14, $11
	FROM conv
	RETURNING id, conversation_id, position, depth, created_at, updated_at)
	` + notifyInsertedSQL

// insertPlacedSQL is insertMessageSQL for a message placed in the tree ($15, $16), which
// becomes the active leaf when $17: the conversation's row is locked and the place
// decided (place).
const insertPlacedSQL = `
	WITH conv AS (
		UPDATE conversations
		SET last_position = last_position + 1, message_count = message_count + 1, updated_at = now(),
			active_segment = CASE WHEN $17 THEN $15 ELSE active_segment END,
			active_depth = CASE WHEN $17 THEN $16 ELSE active_depth END
		WHERE id = $1 AND owner = $11
		RETURNING id, last_position
	), ins AS (
	INSERT INTO messages (conversation_id, position, segment, depth, schema_version, kind, role, content,
		tool_calls, tool_results, payload, source_id, created_at, client_message_id, body_digest, provenance, owner)
	SELECT conv.id, conv.last_position, $15, $16, $2, $3, $4, $5, $6, $7, $8, $9, coalesce($10, now()), $12, $13, $14, $11
	FROM conv
	RETURNING id, conversation_id, position, depth, created_at, updated_at)
	` + notifyInsertedSQL

// notifyInsertedSQL ends insertMessageSQL, insertPlacedSQL and insertUnderSQL: it returns the row
// inserted (ins) and queues the notification that announces it, as notifyAdded would
// (eventPayload's keys; the owner is $11, ctx's), in the same statement rather than one
// round trip more. Postgres delivers it when the transaction commits, never when it
// rolls back.
const notifyInsertedSQL = `SELECT id, position, depth, created_at, updated_at,
		pg_notify('` + NotifyChannel + `', json_build_object('k', '` + string(parley.MessageAdded) + `', 'c', conversation_id,
			'm', id, 'p', position, 'o', $11::text)::text) AS notified
	FROM ins`

// insertUnderSQL is insertPlacedSQL and lockPlaceSQL in one statement, for a message
// placed under a named parent ($15, a sibling's parent when $16): the placement (placeSQL,
// on the active leaf of the conversation's row as the statement's snapshot has it), the
// lock and bump of the conversation, the segment the message starts when its parent has
// a child (whose number it takes), and the insert. The conversation is updated only if
// its row is still the snapshot's (xmin) once the lock is granted: when a concurrent
// writer changed it meanwhile, the placement may be out of date, and nothing is written.
// No row: nothing written (that, no such message or no such conversation), and
// insertMessageAt goes step by step. Like insertMessageSQL, it queues the message's
// notification (notifyInsertedSQL). It runs prepared (DB.prepare): it is the write.
var insertUnderSQL = `
	WITH own AS MATERIALIZED (
		SELECT xmin AS version, active_segment AS aseg, ` + leafDepth + ` AS adepth FROM conversations WHERE id = $1 AND owner = $11
	), pl AS MATERIALIZED (` + strings.NewReplacer("$2::uuid", "$15::uuid", "$3::boolean", "$16::boolean",
	"$4::int", "(SELECT aseg FROM own)", "$5::int", "(SELECT adepth FROM own)",
	"$4", "(SELECT aseg FROM own)", "$5", "(SELECT adepth FROM own)").Replace(placeSQL) + `
	), conv AS (
		UPDATE conversations c
		SET last_position = c.last_position + 1, message_count = c.message_count + 1, updated_at = now(),
			segments = c.segments + CASE WHEN pl.taken THEN 1 ELSE 0 END,
			active_segment = CASE WHEN pl.activate THEN CASE WHEN pl.taken THEN c.segments + 1 ELSE pl.segment END
				ELSE c.active_segment END,
			active_depth = CASE WHEN pl.activate THEN pl.depth + 1 WHEN c.segments = 0 THEN c.last_position ELSE c.active_depth END
		FROM own, pl
		WHERE c.id = $1 AND c.owner = $11 AND c.xmin = own.version
		RETURNING c.id, c.last_position, c.segments, pl.segment AS pseg, pl.depth AS pdepth, pl.taken
	), seg AS (
		INSERT INTO message_segments (conversation_id, segment, parent_segment, fork_depth)
		SELECT conv.id, conv.segments, CASE WHEN conv.pdepth > 0 THEN conv.pseg END, conv.pdepth FROM conv WHERE conv.taken
	), ins AS (
	INSERT INTO messages (conversation_id, position, segment, depth, schema_version, kind, role, content,
		tool_calls, tool_results, payload, source_id, created_at, client_message_id, body_digest, provenance, owner)
	SELECT conv.id, conv.last_position, CASE WHEN conv.taken THEN conv.segments ELSE conv.pseg END, conv.pdepth + 1,
		$2, $3, $4, $5, $6, $7, $8, $9, coalesce($10, now()), $12, $13, $14, $11
	FROM conv
	RETURNING id, conversation_id, position, depth, created_at, updated_at)
	` + notifyInsertedSQL

// underTarget returns the message a placement names for insertUnderSQL ($15) and
// whether it is the new message's sibling rather than its parent ($16); not ok when
// the id does not parse, for the steps to say what is wrong.
func underTarget(place parley.Placement) (target string, sibling, ok bool, err error) {
	if err := parley.CheckPlacement(place); err != nil {
		return "", false, false, err
	}
	id := place.ParentID
	if place.SiblingOf != "" {
		id, sibling = place.SiblingOf, true
	}
	target, ok = parley.ParseMessageID(id)
	return target, sibling, ok, nil
}

// insertUnder stores m under the parent its Place names in one statement
// (insertUnderSQL) and fills in its meta fields, reporting whether it did; when it did
// not, nothing was written.
func (db *DB) insertUnder(ctx context.Context, tx *txn, convKey string, m parley.Message, digest []byte) (bool, error) {
	target, sibling, ok, err := underTarget(m.Meta().Place)
	if err != nil || !ok {
		return false, err
	}
	if res, ok := m.(*parley.MCPResourceMessage); ok && res.RetrievedAt.IsZero() {
		return false, nil // its time is the transaction's, read first by the steps
	}
	args, err := insertArgs(ctx, convKey, m, digest)
	if err != nil {
		return false, err
	}
	args = append(args, target, sibling)
	var created createdRow
	if s := db.stmt(insertUnderSQL); s != nil {
		err = tx.StmtxContext(ctx, s).GetContext(ctx, &created, args...)
	} else {
		err = tx.GetContext(ctx, &created, insertUnderSQL, args...)
	}
	if errors.Is(err, sql.ErrNoRows) {
		return false, nil
	} else if err != nil {
		return false, fmt.Errorf("insert message into %s: %w", parley.ConversationID(convKey), err)
	}
	return true, db.inserted(ctx, tx, convKey, m, created)
}

type createdRow struct {
	ID        string    `db:"id"`
	Position  int       `db:"position"`
	Depth     int       `db:"depth"`
	CreatedAt time.Time `db:"created_at"`
	UpdatedAt time.Time `db:"updated_at"`
	Notified  string    `db:"notified"` // pg_notify's void
}

// lockConversation locks the row of a conversation of the owner in ctx, reading the
// transaction's time into tx along; ENOTFOUND when there is none.
func lockConversation(ctx context.Context, tx *txn, convKey string) error {
	_, err := lockActiveWith(ctx, tx, nil, convKey)
	return err
}

// lockActive is lockConversation that also returns the conversation's active leaf,
// read from the row it locks, in the same round trip.
func (db *DB) lockActive(ctx context.Context, tx *txn, convKey string) (spot, error) {
	return lockActiveWith(ctx, tx, db.stmt(lockSQL), convKey)
}

// lockSQL locks a conversation of an owner's and reads the transaction's time and its
// active leaf.
const lockSQL = `SELECT transaction_timestamp() AS now, active_segment AS segment, ` + leafDepth + ` AS depth
	FROM conversations WHERE id = $1 AND owner = $2 FOR UPDATE`

func lockActiveWith(ctx context.Context, tx *txn, stmt *sqlx.Stmt, convKey string) (spot, error) {
	owner, err := ownerOf(ctx)
	if err != nil {
		return spot{}, err
	}
	var row struct {
		Now time.Time `db:"now"`
		spot
	}
	if stmt != nil {
		err = tx.StmtxContext(ctx, stmt).GetContext(ctx, &row, convKey, owner)
	} else {
		err = tx.GetContext(ctx, &row, lockSQL, convKey, owner)
	}
	if errors.Is(err, sql.ErrNoRows) {
		return spot{}, conversationNotFound(parley.ConversationID(convKey))
	} else if err != nil {
		return spot{}, err
	}
	tx.setNow(row.Now)
	return row.spot, nil
}

// toolCallForResult checks that a result sent by worker, to be added under parent,
// answers a call of the conversation on parent's branch that has no result yet, and
// that no other worker's claim on it lasts; it returns the call's tool name.
func toolCallForResult(ctx context.Context, tx *txn, convKey, callID, worker string, parent spot) (string, error) {
	var call struct {
		Name           string         `db:"name"`
		ResultID       sql.NullString `db:"result_id"`
		ClaimedBy      *string        `db:"claimed_by"`
		ClaimExpiresAt *time.Time     `db:"claim_expires_at"`
		Now            time.Time      `db:"tx_now"`
		Segment        int            `db:"segment"`
		Depth          int            `db:"depth"`
		Forked         bool           `db:"forked"`
		Queued         bool           `db:"queued"`
	}
	read := func() error {
		return tx.GetContext(ctx, &call, `SELECT t.name, t.result_id, t.claimed_by, t.claim_expires_at,
			transaction_timestamp() AS tx_now, m.segment, m.depth,
			EXISTS (SELECT 1 FROM fork_links fl WHERE fl.base = $1) AS forked,
			t.approval_status = 'APPROVED' AND NOT t.imported AS queued
		FROM tool_calls t JOIN messages m ON m.id = t.request_id
		WHERE t.conversation_id = $1 AND t.call_id = $2 FOR UPDATE OF t`, convKey, callID)
	}
	err := read()
	if errors.Is(err, sql.ErrNoRows) {
		// A call a request of the shared part of a linked fork makes: answering it in
		// the fork changes the fork's view of it, so the fork is made real (its copy of
		// the call then answered) first (db/fork.go).
		shared, serr := sharedCallUsed(ctx, tx, convKey, callID)
		if serr != nil {
			return "", serr
		}
		if shared {
			if serr := materializeFork(ctx, tx, convKey); serr != nil {
				return "", serr
			}
			err = read()
		}
	}
	found := !errors.Is(err, sql.ErrNoRows)
	if found && err != nil {
		return "", err
	}
	answeredBy := ""
	if call.ResultID.Valid {
		answeredBy = parley.MessageID(call.ResultID.String)
	}
	if err := parley.CheckResultCall(callID, found, answeredBy); err != nil {
		return "", err
	}
	if err := parley.CheckResultClaim(callID, call.ClaimedBy, call.ClaimExpiresAt, worker, call.Now); err != nil {
		return "", err
	}
	on, err := onBranch(ctx, tx, convKey, spot{Segment: call.Segment, Depth: call.Depth}, parent)
	if err != nil {
		return "", err
	}
	if !on {
		return "", parley.Errorf(parley.EINVALID,
			"toolResult.toolCallId: the tool call %q is on another branch of the conversation; a result goes on its call's branch", callID)
	}
	if call.Forked && call.Queued {
		// The forks sharing the request keep the call unanswered, as copies would: a call
		// in the work queue (approved, awaiting its result: FindAwaitingToolCalls lists it
		// in each fork sharing it, from this row) leaves the queue when its row says it is
		// answered, so those forks are made real first (db/fork.go). Any other call's row
		// is not read for the forks: answering it here copies nothing. This takes
		// their rows' locks after the call's, where deciding or claiming the call takes
		// them before: the rare deadlock of the two at once is retried (transact).
		if err := materializeForksOf(ctx, tx, convKey, call.Segment, call.Depth); err != nil {
			return "", err
		}
	}
	return call.Name, nil
}

// recordToolCalls indexes a request's call ids, with each call's approval status and
// whether it is imported; an id already used in the conversation is refused, naming it.
func recordToolCalls(ctx context.Context, tx *txn, convKey, messageKey string, calls []parley.ToolCall) error {
	ids := make([]string, len(calls))
	names := make([]string, len(calls))
	statuses := make([]string, len(calls))
	decided := make([]*time.Time, len(calls))
	imported := make([]bool, len(calls))
	for i, c := range calls {
		ids[i], names[i], statuses[i], imported[i] = c.ID, c.Name, string(c.ApprovalStatus), c.Imported
		if c.Decision != nil {
			decided[i] = &c.Decision.DecidedAt
		}
	}
	// One index lookup per id, on both columns. With call_id = ANY($2), or a plain join,
	// Postgres looks the conversation up by its id alone and filters its calls one by one
	// once the statistics say a conversation has few: for one with thousands of calls
	// (a second large import into a database, after ANALYZE) every tool request read
	// them all, and the import was quadratic. The LIMIT keeps the lookup from being
	// flattened into such a join. The ids a linked fork's shared requests use are taken
	// too, as in a fork that copied them (takenCallIDsSQL).
	taken, err := takenCallIDs(ctx, tx, convKey, ids)
	if err != nil {
		return err
	}
	if err := parley.CheckNewToolCalls(calls, taken); err != nil {
		return err
	}
	_, err = tx.ExecContext(ctx, `INSERT INTO tool_calls (conversation_id, call_id, name, request_id, approval_status, decided_at, imported)
		SELECT $1, c.id, c.name, $4, c.status, c.decided_at, c.imported
		FROM unnest($2::text[], $3::text[], $5::text[], $6::timestamptz[], $7::boolean[]) AS c(id, name, status, decided_at, imported)`,
		convKey, pq.Array(ids), pq.Array(names), messageKey, pq.Array(statuses), pq.Array(timeArray(decided)), pq.Array(imported))
	return err
}

func nullJSON(b []byte) any {
	if len(b) == 0 {
		return nil
	}
	return string(b)
}

func nullTime(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return t
}

// SetToolCallApproval implements parley.MessageService.
func (db *DB) SetToolCallApproval(ctx context.Context, messageID, toolCallID string, d parley.ApprovalDecision) (*parley.ToolRequestMessage, error) {
	key, ok := parley.ParseMessageID(messageID)
	if !ok {
		return nil, messageNotFound(messageID)
	}
	d, err := parley.CleanApprovalDecision(d)
	if err != nil {
		return nil, err
	}
	var out *parley.ToolRequestMessage
	err = db.transact(ctx, func(tx *txn) error {
		m, convKey, err := db.lockMessage(ctx, tx, key, messageID)
		if err != nil {
			return err
		}
		req, call, err := parley.DecideToolCall(m, messageID, toolCallID, d, tx.now, db.policies)
		if err != nil {
			return err
		}
		if err := rewriteMessage(ctx, tx, convKey, key, req); err != nil {
			return err
		}
		// After the conversation's lock, as adding a result takes them: one lock order.
		if err := recordApprovals(ctx, tx, convKey, []parley.ToolCall{*call}); err != nil {
			return err
		}
		out = req
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("decide tool call %q of %s: %w", toolCallID, messageID, err)
	}
	return out, nil
}

// timeArray passes nullable times as a timestamptz[] parameter (NULL for nil).
func timeArray(ts []*time.Time) []sql.NullString {
	out := make([]sql.NullString, len(ts))
	for i, t := range ts {
		if t != nil {
			out[i] = sql.NullString{String: t.UTC().Format(time.RFC3339Nano), Valid: true}
		}
	}
	return out
}
