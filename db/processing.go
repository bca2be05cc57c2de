package db

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"

	"github.com/parley-dev/parley"
)

// The outcomes of processing steps are stored on the message they concern, in a short
// transaction after the (slow) step itself ran outside any: the message row is locked,
// decoded, changed, written back, and announced to messageUpdated subscribers.

// updateMessage locks a stored message, lets change modify it at the transaction's
// time, writes it back and marks it changed, all in one transaction. change may return
// a *parley.Error to refuse.
func (db *DB) updateMessage(ctx context.Context, messageID string, change func(m parley.Message, now time.Time) error) (parley.Message, error) {
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
		if err := change(m, tx.now); err != nil {
			return err
		}
		if err := rewriteMessage(ctx, tx, convKey, key, m); err != nil {
			return err
		}
		out = m
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// lockMessage reads and locks the stored message key (whose public id is messageID) of
// the owner in ctx, and returns it with its conversation's key. The same statement
// reads the transaction's time into tx. ENOTFOUND when there is no such message.
func (db *DB) lockMessage(ctx context.Context, tx *txn, key, messageID string) (parley.Message, string, error) {
	owner, err := ownerOf(ctx)
	if err != nil {
		return nil, "", err
	}
	var row struct {
		messageRow
		Now time.Time `db:"tx_now"`
	}
	// A message a fork shares is changed in the fork's own copy, and before it changes
	// where it is stored, the forks sharing it get theirs (db/fork.go).
	if err := materializeShared(ctx, tx, key, owner); err != nil {
		return nil, "", err
	}
	err = tx.GetContext(ctx, &row, `SELECT `+messageColumns+`, transaction_timestamp() AS tx_now
		FROM messages WHERE id = $1 AND `+ownedMessage("2")+` FOR UPDATE`, key, owner)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, "", messageNotFound(messageID)
	} else if err != nil {
		return nil, "", err
	}
	if err := materializeForksOf(ctx, tx, row.ConversationID, row.Segment, row.Depth); err != nil {
		return nil, "", err
	}
	tx.setNow(row.Now)
	m, err := decodeMessage(&row.messageRow, db.log)
	if err != nil {
		return nil, "", err
	}
	return m, row.ConversationID, nil
}

// rewriteMessage writes m back over its stored row key in the conversation convKey, as
// the current schema version (which upgrades a version 1 record), sets its updatedAt,
// and marks it changed (markMessageChanged). The caller holds the message's lock. Every
// change to a stored message is written by this one statement.
func rewriteMessage(ctx context.Context, tx *txn, convKey, key string, m parley.Message) error {
	enc, err := encodeMessage(m)
	if err != nil {
		return err
	}
	err = tx.GetContext(ctx, &m.Meta().UpdatedAt, `UPDATE messages SET schema_version = $2, kind = $3, role = $4,
		content = $5, tool_calls = $6, tool_results = $7, payload = $8, updated_at = now()
		WHERE id = $1 RETURNING updated_at`,
		key, enc.SchemaVersion, enc.Kind, enc.Role, enc.Content, nullJSON(enc.ToolCalls), nullJSON(enc.ToolResults), enc.Payload)
	if err != nil {
		return fmt.Errorf("rewrite message %s: %w", parley.MessageID(key), err)
	}
	_, err = markMessageChanged(ctx, tx, convKey, key)
	return err
}

// SetFileResolution implements parley.ProcessingStore. The resolution's time is the
// database's.
func (db *DB) SetFileResolution(ctx context.Context, messageID string, r parley.FileResolution) (*parley.FileReferenceMessage, error) {
	m, err := db.updateMessage(ctx, messageID, func(m parley.Message, now time.Time) error {
		f, ok := m.(*parley.FileReferenceMessage)
		if !ok {
			return parley.Errorf(parley.EINVALID, "messageId: message %s is a %s, not a file reference", messageID, m.Kind())
		}
		r.ResolvedAt = now
		f.Resolution = &r
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("store resolution of %s: %w", messageID, err)
	}
	return m.(*parley.FileReferenceMessage), nil
}

// SetImageRecognition implements parley.ProcessingStore. The recognition's time is the
// database's.
func (db *DB) SetImageRecognition(ctx context.Context, messageID string, r parley.ImageRecognition) (*parley.ImageMessage, error) {
	m, err := db.updateMessage(ctx, messageID, func(m parley.Message, now time.Time) error {
		img, ok := m.(*parley.ImageMessage)
		if !ok {
			return parley.Errorf(parley.EINVALID, "messageId: message %s is a %s, not an image", messageID, m.Kind())
		}
		r.ProcessedAt = now
		img.Recognition = &r
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("store recognition of %s: %w", messageID, err)
	}
	return m.(*parley.ImageMessage), nil
}

// AddCachedMCPResource implements parley.ProcessingStore. The look-up and the insert
// share one transaction under the conversation's lock, so the copy is of the latest
// resource at that moment.
func (db *DB) AddCachedMCPResource(ctx context.Context, conversationID, server, uri string, maxAge time.Duration) (*parley.MCPResourceMessage, bool, error) {
	key, ok := parley.ParseConversationID(conversationID)
	if !ok {
		return nil, false, conversationNotFound(conversationID)
	}
	var out *parley.MCPResourceMessage
	err := db.transact(ctx, func(tx *txn) error {
		out = nil
		if err := lockConversation(ctx, tx, key); err != nil {
			return err
		}
		var row messageRow
		err := tx.GetContext(ctx, &row, cachedResourceSQL, key, server, uri)
		if errors.Is(err, sql.ErrNoRows) {
			return nil
		} else if err != nil {
			return err
		}
		m, err := decodeMessage(&row, db.log)
		if err != nil {
			return err
		}
		cached, ok := m.(*parley.MCPResourceMessage)
		if !ok || !parley.ResourceFresh(cached.RetrievedAt, tx.now, maxAge) {
			return nil
		}
		cp := parley.CachedResourceCopy(cached)
		if err := parley.Prepare(cp, db.limits); err != nil {
			return err
		}
		if err := db.insertMessage(ctx, tx, key, cp); err != nil {
			return err
		}
		out = cp
		return nil
	})
	if err != nil {
		return nil, false, fmt.Errorf("reuse MCP resource %s of %s in %s: %w", uri, server, conversationID, err)
	}
	return out, out != nil, nil
}

// cachedResourceSQL reads the latest copy of the resource $3 of the MCP server $2 in the
// conversation $1 (messages_mcp_resource_idx): its own, or when it has none and is a
// linked fork, the latest of those it shares (db/fork.go), as a fork that copied them
// would find it: per entry of its link, latest first, the same index's copies of the
// resource in the entry's conversation, those of the entry's part of the path kept.
var cachedResourceSQL = `(SELECT ` + messageColumns + ` FROM messages
		WHERE conversation_id = $1 AND kind = 'mcp_resource'
			AND payload->>'serverName' = $2 AND payload->>'resourceUri' = $3
		ORDER BY position DESC LIMIT 1)
	UNION ALL
	(SELECT ` + sharedMessageColumns + `
		FROM conversations c
		CROSS JOIN LATERAL fork_link_entries(c.id, c.base_depth) e
		CROSS JOIN LATERAL (SELECT * FROM messages m
			WHERE m.conversation_id = e.conv AND m.kind = 'mcp_resource'
				AND m.payload->>'serverName' = $2 AND m.payload->>'resourceUri' = $3
				AND m.segment = e.seg AND m.depth > e.lo AND m.depth <= e.hi
			ORDER BY m.position DESC LIMIT 1) m
		WHERE c.id = $1 AND c.base_depth > 0
		ORDER BY e.j DESC LIMIT 1)
	LIMIT 1`

// applyToolPolicies decides the calls of a tool request about to be stored, by the
// configured policies, at the transaction's time.
func (db *DB) applyToolPolicies(ctx context.Context, tx *txn, m parley.Message) error {
	req, ok := m.(*parley.ToolRequestMessage)
	if !ok || db.policies == nil {
		return nil
	}
	now, err := tx.Now(ctx)
	if err != nil {
		return err
	}
	db.policies.Apply(req.ToolCalls, now)
	return nil
}

// recordApprovals copies the approval status of calls (and whether they are imported)
// into the tool_calls index, which the awaiting-result queries read. Callers hold the
// conversation's lock already, so that every writer takes the conversation's row before
// tool_calls rows.
func recordApprovals(ctx context.Context, tx *txn, convKey string, calls []parley.ToolCall) error {
	for _, c := range calls {
		if c.ApprovalStatus == parley.ApprovalPending {
			continue // the column's default; recordToolCalls wrote whether it is imported
		}
		var decidedAt *time.Time
		if c.Decision != nil {
			decidedAt = &c.Decision.DecidedAt
		}
		if _, err := tx.ExecContext(ctx, `UPDATE tool_calls SET approval_status = $3, decided_at = $4, imported = $5
			WHERE conversation_id = $1 AND call_id = $2`, convKey, c.ID, string(c.ApprovalStatus), decidedAt, c.Imported); err != nil {
			return fmt.Errorf("record approval of %q: %w", c.ID, err)
		}
	}
	return nil
}

// awaitingRow is an approved call without a result: its index row only.
type awaitingRow struct {
	RequestID      string         `db:"request_id"`
	CallID         string         `db:"call_id"`
	ClaimedBy      sql.NullString `db:"claimed_by"`
	ClaimExpiresAt sql.NullTime   `db:"claim_expires_at"`
	ClaimLapsed    bool           `db:"claim_lapsed"`
}

// awaitingQuery selects awaiting calls from the index, without their messages: a tool
// request holds up to 128 calls, each with up to 1 MiB of arguments, and a row per
// call carrying its whole request made one page of 1,000 calls read and decode a
// request per call (see awaitingCalls).
const awaitingQuery = `SELECT t.request_id::text AS request_id, t.call_id, t.claimed_by, t.claim_expires_at,
		coalesce(t.claim_expires_at <= now(), false) AS claim_lapsed
	FROM tool_calls t
	WHERE t.approval_status = 'APPROVED' AND t.result_id IS NULL AND NOT t.imported`

// awaitingCalls reads the tool requests that rows name, each once, and pairs each
// row with its call; the calls of one request share its decoded message. A request
// deleted since the rows were read is left out, as a later read would.
func (db *DB) awaitingCalls(ctx context.Context, q sqlx.QueryerContext, rows []awaitingRow) ([]*parley.AwaitingToolCall, error) {
	if len(rows) == 0 {
		return nil, nil
	}
	ids := make([]string, 0, len(rows))
	seen := make(map[string]bool, len(rows))
	for _, r := range rows {
		if !seen[r.RequestID] {
			seen[r.RequestID] = true
			ids = append(ids, r.RequestID)
		}
	}
	res, err := q.QueryContext(ctx, `SELECT `+messageColumns+` FROM messages WHERE id = ANY($1::uuid[])`, pq.StringArray(ids))
	mrows, err := scanMessages(res, err, len(ids))
	if err != nil {
		return nil, fmt.Errorf("read tool requests: %w", err)
	}
	if len(mrows) < len(ids) {
		// The requests linked forks share, named by their derived ids (findAwaitingSQL).
		owner, err := ownerOf(ctx)
		if err != nil {
			return nil, err
		}
		shared, err := findSharedRows(ctx, q, ids, owner)
		if err != nil {
			return nil, err
		}
		for i := range shared {
			mrows = append(mrows, shared[i].messageRow)
		}
	}
	requests := make(map[string]*parley.ToolRequestMessage, len(mrows))
	for i := range mrows {
		m, err := decodeMessage(&mrows[i], db.log)
		if err != nil {
			return nil, err
		}
		if req, ok := m.(*parley.ToolRequestMessage); ok {
			requests[mrows[i].ID] = req
		}
	}
	out := make([]*parley.AwaitingToolCall, 0, len(rows))
	for _, r := range rows {
		req := requests[r.RequestID]
		if req == nil {
			continue
		}
		call := req.ToolCall(r.CallID)
		if call == nil {
			continue
		}
		a := &parley.AwaitingToolCall{ConversationID: req.ConversationID, Message: req, Call: *call, ClaimLapsed: r.ClaimLapsed}
		if r.ClaimedBy.Valid {
			a.ClaimedBy = &r.ClaimedBy.String
		}
		if r.ClaimExpiresAt.Valid {
			t := r.ClaimExpiresAt.Time
			a.ClaimExpiresAt = &t
		}
		out = append(out, a)
	}
	return out, nil
}

// maxAwaitingScans bounds the reads of awaiting calls running at once, across the
// query and every subscription of this process: each may read up to 1,000 calls and
// their requests, so many at once would multiply that, while more connections than
// this could not serve them faster anyway.
const maxAwaitingScans = 4

// FindAwaitingToolCalls implements parley.ToolWorkService. The calls are found
// through the owner's conversations (the tool_calls_awaiting_conv_idx index leads with the
// conversation), so one owner's read never walks another's calls.
func (db *DB) FindAwaitingToolCalls(ctx context.Context, f parley.AwaitingFilter) ([]*parley.AwaitingToolCall, error) {
	var err error
	if f.Limit, err = parley.CheckLimit("first", f.Limit); err != nil {
		return nil, err
	}
	convKey := ""
	if f.ConversationID != "" {
		var ok bool
		if convKey, ok = parley.ParseConversationID(f.ConversationID); !ok {
			return nil, conversationNotFound(f.ConversationID)
		}
	}
	var names []string
	if len(f.Names) > 0 {
		names = f.Names
	}
	owner, err := ownerOf(ctx)
	if err != nil {
		return nil, err
	}
	select {
	case db.awaitingScans <- struct{}{}:
		defer func() { <-db.awaitingScans }()
	case <-ctx.Done():
		return nil, classify(fmt.Errorf("find awaiting tool calls: %w", ctx.Err()))
	}
	var rows []awaitingRow
	err = db.db.SelectContext(ctx, &rows, findAwaitingSQL, convKey, stringArray(names), f.Unclaimed, f.Limit, owner)
	if err != nil {
		return nil, classify(fmt.Errorf("find awaiting tool calls: %w", err))
	}
	if len(rows) == 0 && convKey != "" {
		if err := db.checkConversation(ctx, convKey); err != nil {
			return nil, err
		}
	}
	if f.MaxBytes > 0 {
		if rows, err = db.fitAwaiting(ctx, rows, f.MaxBytes); err != nil {
			return nil, classify(fmt.Errorf("find awaiting tool calls: %w", err))
		}
	}
	out, err := db.awaitingCalls(ctx, db.db, rows)
	if err != nil {
		return nil, classify(fmt.Errorf("find awaiting tool calls: %w", err))
	}
	return out, nil
}

// findAwaitingSQL selects the awaiting calls of the owner's ($5) conversations (all, or
// $1's), of the tools $2 (all when empty), unclaimed ones only when $3, at most $4: those
// of the conversations' own requests, and those of the requests linked forks share
// (db/fork.go), under the forks' derived ids, as a fork that copied them would have them:
// unclaimed (a claim is the conversation's where it was made; claiming one in the fork
// makes the fork real, and one in the source the forks sharing it). The second arm reads
// the owner's linked forks (conversations_linked_idx), each one's few link entries, and
// their conversations' awaiting calls (tool_calls_awaiting_conv_idx), never a history.
// A call the source answered after the fork's point stays unanswered in a fork that
// copied it; it is listed once the fork is made real, not while it is linked.
const findAwaitingSQL = `SELECT request_id, call_id, claimed_by, claim_expires_at, claim_lapsed FROM (
	(SELECT t.request_id::text AS request_id, t.call_id, t.claimed_by, t.claim_expires_at,
			coalesce(t.claim_expires_at <= now(), false) AS claim_lapsed, t.decided_at, t.conversation_id AS conv
		FROM conversations own JOIN tool_calls t ON t.conversation_id = own.id
		WHERE own.owner = $5 AND ($1 = '' OR own.id = nullif($1, '')::uuid)
		AND t.approval_status = 'APPROVED' AND t.result_id IS NULL AND NOT t.imported
		AND (cardinality($2::text[]) = 0 OR t.name = ANY($2))
		AND (NOT $3 OR t.claim_expires_at IS NULL OR t.claim_expires_at <= now())
		ORDER BY t.decided_at, t.conversation_id, t.call_id LIMIT $4)
	UNION ALL
	(SELECT fork_message_id(own.fork_no, rq.depth)::text, t.call_id, NULL, NULL, false, t.decided_at, own.id
		FROM conversations own
		CROSS JOIN LATERAL fork_link_entries(own.id, own.base_depth) e
		JOIN tool_calls t ON t.conversation_id = e.conv
		JOIN messages rq ON rq.id = t.request_id AND rq.segment = e.seg AND rq.depth > e.lo AND rq.depth <= e.hi
		WHERE own.owner = $5 AND own.base_depth > 0 AND ($1 = '' OR own.id = nullif($1, '')::uuid)
		AND t.approval_status = 'APPROVED' AND t.result_id IS NULL AND NOT t.imported
		AND (cardinality($2::text[]) = 0 OR t.name = ANY($2))
		ORDER BY t.decided_at, own.id, t.call_id LIMIT $4)
	) a ORDER BY decided_at, conv, call_id LIMIT $4`

// ClaimToolCall implements parley.ToolWorkService.
func (db *DB) ClaimToolCall(ctx context.Context, c parley.ToolCallClaim) (*parley.AwaitingToolCall, error) {
	key, ok := parley.ParseMessageID(c.MessageID)
	if !ok {
		return nil, messageNotFound(c.MessageID)
	}
	c, err := parley.CleanToolCallClaim(c)
	if err != nil {
		return nil, err
	}
	owner, err := ownerOf(ctx)
	if err != nil {
		return nil, err
	}
	var out []*parley.AwaitingToolCall
	err = db.transact(ctx, func(tx *txn) error {
		// A claim is the call's state in the conversation where it is made: claiming a
		// call of a request a linked fork shares, by the fork's id, makes the fork real
		// first, and claiming one in its source makes the forks sharing it real, so that
		// each keeps its own (db/fork.go). One probe of fork_links when there are none.
		if _, _, derived := parley.ParseForkMessageKey(key); derived {
			if err := materializeShared(ctx, tx, key, owner); err != nil {
				return err
			}
		} else if err := materializeForksOfMessage(ctx, tx, key); err != nil {
			return err
		}
		var st struct {
			ConvKey        string         `db:"conversation_id"`
			Status         string         `db:"approval_status"`
			ResultID       sql.NullString `db:"result_id"`
			ClaimedBy      sql.NullString `db:"claimed_by"`
			ClaimExpiresAt sql.NullTime   `db:"claim_expires_at"`
			Imported       bool           `db:"imported"`
			Now            time.Time      `db:"tx_now"`
		}
		err := tx.GetContext(ctx, &st, `SELECT conversation_id, approval_status, result_id, claimed_by, claim_expires_at, imported,
			transaction_timestamp() AS tx_now
			FROM tool_calls WHERE request_id = $1 AND call_id = $2
				AND EXISTS (SELECT 1 FROM conversations own WHERE own.id = tool_calls.conversation_id AND own.owner = $3)
			FOR UPDATE`, key, c.ToolCallID, owner)
		if errors.Is(err, sql.ErrNoRows) {
			return parley.Errorf(parley.ENOTFOUND, "toolCallId: message %s has no tool call %q", c.MessageID, c.ToolCallID)
		} else if err != nil {
			return err
		}
		tx.setNow(st.Now)
		state := parley.ToolCallState{ApprovalStatus: parley.ApprovalStatus(st.Status), Answered: st.ResultID.Valid, Imported: st.Imported}
		if st.ClaimedBy.Valid {
			state.ClaimedBy = &st.ClaimedBy.String
		}
		if st.ClaimExpiresAt.Valid {
			state.ClaimExpiresAt = &st.ClaimExpiresAt.Time
		}
		if err := parley.CheckClaim(c.ToolCallID, state, c.Worker, tx.now); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `UPDATE tool_calls SET claimed_by = $3,
			claim_expires_at = now() + $4 * interval '1 millisecond' WHERE request_id = $1 AND call_id = $2`,
			key, c.ToolCallID, c.Worker, c.Lease.Milliseconds()); err != nil {
			return err
		}
		// Watchers of awaiting calls learn of the claim, so they can offer the call
		// again the moment it lapses (the lapse itself is no write: nothing would tell them).
		if err := notify(ctx, tx, eventPayload{Kind: parley.ToolCallClaimed, ConvKey: st.ConvKey}); err != nil {
			return err
		}
		var rows []awaitingRow
		if err := tx.SelectContext(ctx, &rows, awaitingQuery+` AND t.request_id = $1 AND t.call_id = $2`, key, c.ToolCallID); err != nil {
			return err
		}
		out, err = db.awaitingCalls(ctx, tx, rows)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("claim tool call %q of %s: %w", c.ToolCallID, c.MessageID, err)
	}
	if len(out) != 1 {
		return nil, fmt.Errorf("claim tool call %q of %s: claimed call not found", c.ToolCallID, c.MessageID)
	}
	return out[0], nil
}

// stringArray passes a list as a text[] parameter, empty (not NULL) when there is none.
func stringArray(s []string) any {
	if s == nil {
		s = []string{}
	}
	return pq.StringArray(s)
}
