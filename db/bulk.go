package db

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"

	"github.com/parley-dev/parley"
)

// bulkWriter stores an import's new messages and their tool-call index rows with COPY,
// a batch at a time, instead of three statements a message: the import of a long agent
// session was bound by round trips (300,000 of them for 100,000 messages). It numbers
// the messages itself (the import holds the conversation's row lock), gives them ids
// made here, so that results can name their calls' rows before anything is sent, and
// applies the tool-call rules (parley.CheckNewToolCalls, CheckResultCall) in memory,
// against the calls the conversation had (read once) and those of the import so far.
type bulkWriter struct {
	convKey string
	now     time.Time
	last    int // the number (position column) of the last message numbered
	// place decides where each message goes in the tree (importPlacer): the writer
	// writes rows where it is told.
	place *importPlacer
	calls map[string]*bulkCall
	dirty []string // calls whose row is to be copied in or given its result at the next flush

	rows [][]any // messages not yet sent
	// slab is what rows are cut from (newRow), and convKeyValue and nowValue the
	// conversation's key and the import's time as row values, made once: a row and
	// its boxed values were several allocations a message.
	slab                   []any
	convKeyValue, nowValue any
	convID                 string // every message's ConversationID, made once
	rowBytes               int
	// requests are the queued rows of tool requests, encoded when they are sent: a
	// result later in the batch may still approve their calls (ApproveAnsweredImport).
	requests []queuedRequest
	// answeredStored are stored calls, imported PENDING, that the import answered: their
	// requests are approved in the database after the flush.
	answeredStored []answeredCall
	added          int
	lastKey        string // the key of the last message numbered, for the notification
	// fresh says the import made the conversation: everything in it is the import's, so
	// what it holds is known here without asking the database (presentSourceIDs).
	fresh bool
	// staged says the transaction's staging table is made (stage).
	staged bool
	// batches counts the batches sent; from the second on, their vectors are computed
	// on vec (db/vectors.go), when the pool lends it.
	batches int
	vec     vectorConn
}

// bulkCall is a tool call of the conversation as the import sees it.
type bulkCall struct {
	name       string
	requestKey string
	requestAt  spot   // where the request is in the tree: a result goes on its branch
	resultKey  string // the message answering it, "" while unanswered
	// stored says its row is in tool_calls already (stored before the import, or added
	// by a reply that grew); a result for it then updates the row, else the row is
	// copied in with its result.
	stored    bool
	resultNew bool // the result is the import's
	// claimedBy and claimExpiresAt are a stored call's claim: an imported result names
	// no worker, so it cannot answer a call while another's claim lasts.
	claimedBy      *string
	claimExpiresAt *time.Time
	// call is the call in its request while the request's row is queued here, unsent.
	call *parley.ToolCall
	// pendingImported says a stored call is imported and PENDING: a result approves it
	// (ApproveAnsweredImport) in its stored request.
	pendingImported bool
}

// queuedRequest is a tool request's row in bulkWriter.rows, to encode when it is sent.
type queuedRequest struct {
	row int
	m   *parley.ToolRequestMessage
}

// answeredCall is a stored call answered by the import at the result's time.
type answeredCall struct {
	requestKey, callID string
	at                 time.Time
}

// A row's values are of the types database/sql passes on to the driver as they are
// (string, int64, bool, time.Time, nil): an int or an sql.NullString is converted for
// each row, by reflection or through its Value method.

// nullString is ns as a row's value: its string, or nil.
func nullString(ns sql.NullString) any {
	if !ns.Valid {
		return nil
	}
	return ns.String
}

// flushRows and flushBytes bound a batch: memory, not round trips, sets them.
const (
	flushRows  = 5000
	flushBytes = 16 << 20
)

var messageCopyColumns = []string{"id", "conversation_id", "position", "schema_version", "kind", "role", "content",
	"tool_calls", "tool_results", "payload", "source_id", "created_at", "updated_at", "provenance", "segment", "depth",
	"hidden", "deleted_at"}

// stageColumns are the staging table's: a batch's rows, and their search vectors when
// computed on the second connection (nil when the insert computes them).
var stageColumns = append(messageCopyColumns[:len(messageCopyColumns):len(messageCopyColumns)], "search_vector")

// newBulkWriter starts writing after the conversation's last message, continuing its
// active branch. The conversation's row must be the transaction's.
// The writer may borrow a second connection of pool (db/vectors.go): the caller
// releases it (release) when the import ends, however it ends.
func newBulkWriter(ctx context.Context, pool *sqlx.DB, tx *txn, convKey string, fresh bool) (*bulkWriter, error) {
	now, err := tx.Now(ctx)
	if err != nil {
		return nil, err
	}
	w := &bulkWriter{convKey: convKey, now: now, calls: make(map[string]*bulkCall), fresh: fresh, vec: vectorConn{pool: pool},
		convKeyValue: convKey, nowValue: now, convID: parley.ConversationID(convKey)}
	var head struct {
		Last     int `db:"last_position"`
		Segment  int `db:"active_segment"`
		Depth    int `db:"active_depth"`
		Segments int `db:"segments"`
	}
	if err := tx.GetContext(ctx, &head, `SELECT last_position, active_segment, `+leafDepth+` AS active_depth, segments
		FROM conversations WHERE id = $1`, convKey); err != nil {
		return nil, err
	}
	w.last = head.Last
	w.place = newImportPlacer(convKey, spot{Segment: head.Segment, Depth: head.Depth}, head.Segments)
	w.place.fresh = fresh
	return w, nil
}

// loadCalls reads the stored rows of those of callIDs the writer does not know yet:
// calls the conversation had before the import.
func (w *bulkWriter) loadCalls(ctx context.Context, tx *txn, callIDs []string) error {
	var unknown []string
	for _, id := range callIDs {
		if _, ok := w.calls[id]; !ok {
			unknown = append(unknown, id)
		}
	}
	if len(unknown) == 0 {
		return nil
	}
	// One index lookup per id (see recordToolCalls for why not call_id = ANY).
	var rows []struct {
		CallID         string     `db:"call_id"`
		Name           string     `db:"name"`
		Request        string     `db:"request_id"`
		Segment        int        `db:"segment"`
		Depth          int        `db:"depth"`
		ResultID       *string    `db:"result_id"`
		ClaimedBy      *string    `db:"claimed_by"`
		ClaimExpiresAt *time.Time `db:"claim_expires_at"`
		Status         string     `db:"approval_status"`
		Imported       bool       `db:"imported"`
	}
	if err := tx.SelectContext(ctx, &rows, `SELECT t.call_id, t.name, t.request_id, t.result_id, t.claimed_by, t.claim_expires_at,
			t.approval_status, t.imported, m.segment, m.depth
		FROM unnest($2::text[]) AS c(call_id)
		CROSS JOIN LATERAL (SELECT call_id, name, request_id, result_id, claimed_by, claim_expires_at,
			approval_status, imported FROM tool_calls
			WHERE conversation_id = $1 AND call_id = c.call_id LIMIT 1) t
		JOIN messages m ON m.id = t.request_id`, w.convKey, pq.Array(unknown)); err != nil {
		return fmt.Errorf("find stored tool calls: %w", err)
	}
	for _, r := range rows {
		c := &bulkCall{name: r.Name, requestKey: r.Request, requestAt: spot{Segment: r.Segment, Depth: r.Depth}, stored: true,
			claimedBy: r.ClaimedBy, claimExpiresAt: r.ClaimExpiresAt,
			pendingImported: r.Imported && r.Status == string(parley.ApprovalPending)}
		if r.ResultID != nil {
			c.resultKey = *r.ResultID
		}
		w.calls[r.CallID] = c
	}
	return nil
}

// noteStoredCalls records calls whose rows a statement of the import wrote (a reply
// that grew), so that results later in the import update them.
func (w *bulkWriter) noteStoredCalls(requestKey string, at spot, calls []parley.ToolCall) {
	for _, c := range calls {
		w.calls[c.ID] = &bulkCall{name: c.Name, requestKey: requestKey, requestAt: at, stored: true,
			pendingImported: c.Imported && c.ApprovalStatus == parley.ApprovalPending}
	}
}

// add numbers m as the conversation's next message, at the place in the tree the
// placer chose, checks its calls or the call it answers (on its branch), fills in its
// meta and queues its row; it flushes a full batch.
func (w *bulkWriter) add(ctx context.Context, tx *txn, m parley.Message, at spot) error {
	// Time-ordered ids (UUIDv7): each batch's ids go to the right edge of the primary
	// key's index instead of a random leaf each, which cost an import of 100,000
	// messages as many scattered index pages.
	id, err := uuid.NewV7()
	if err != nil {
		return err
	}
	key := id.String()
	switch m := m.(type) {
	case *parley.ToolRequestMessage:
		var taken []string
		for _, c := range m.ToolCalls {
			if _, ok := w.calls[c.ID]; ok {
				taken = append(taken, c.ID)
			}
		}
		if err := parley.CheckNewToolCalls(m.ToolCalls, taken); err != nil {
			return err
		}
		for i, c := range m.ToolCalls {
			w.calls[c.ID] = &bulkCall{name: c.Name, requestKey: key, requestAt: at, call: &m.ToolCalls[i]}
			w.dirty = append(w.dirty, c.ID)
		}
	case *parley.ToolResultMessage:
		c, found := w.calls[m.ToolCallID]
		answeredBy := ""
		if found && c.resultKey != "" {
			answeredBy = parley.MessageID(c.resultKey)
		}
		if err := parley.CheckResultCall(m.ToolCallID, found, answeredBy); err != nil {
			return err
		}
		if err := parley.CheckResultClaim(m.ToolCallID, c.claimedBy, c.claimExpiresAt, m.Worker, w.now); err != nil {
			return err
		}
		on, err := w.place.onPath(ctx, tx, c.requestAt, at)
		if err != nil {
			return err
		}
		if !on {
			return parley.Errorf(parley.EINVALID,
				"toolResult.toolCallId: the tool call %q is on another branch of the conversation; a result goes on its call's branch", m.ToolCallID)
		}
		if c.stored {
			w.dirty = append(w.dirty, m.ToolCallID)
		}
		c.resultKey, c.resultNew = key, true
		m.ToolName = c.name
		// The call ran where it came from: an imported call is not left PENDING.
		ranAt := w.now
		if !m.CreatedAt.IsZero() {
			ranAt = m.CreatedAt.Round(time.Microsecond)
		}
		switch {
		case c.call != nil: // its request's row is queued: encoded with the approval
			parley.ApproveAnsweredImport(c.call, ranAt)
		case c.pendingImported:
			w.answeredStored = append(w.answeredStored, answeredCall{requestKey: c.requestKey, callID: m.ToolCallID, at: ranAt})
			c.pendingImported = false
		}
	case *parley.MCPResourceMessage:
		if m.RetrievedAt.IsZero() {
			m.RetrievedAt = w.now // retrieved now: the transaction's time, also its createdAt
		}
	}
	meta := m.Meta()
	var deletedAt time.Time // a value: the message's copy is made only for a deleted one
	if meta.DeletedAt != nil {
		d := meta.DeletedAt.Round(time.Microsecond)
		meta.DeletedAt, deletedAt = &d, d
	}
	created := w.now
	if !meta.CreatedAt.IsZero() {
		created = meta.CreatedAt.Round(time.Microsecond) // what Postgres keeps
	}
	w.last++
	w.added++
	w.lastKey = key
	meta.ID = parley.MessageID(key)
	meta.ConversationID = w.convID
	meta.Position, meta.Seq = at.Depth, w.last
	meta.CreatedAt, meta.UpdatedAt = created, w.now
	if c, ok := m.(*parley.CompactionMessage); ok {
		if err := parley.CheckCompactionCovers(c); err != nil {
			return err
		}
	}
	if req, ok := m.(*parley.ToolRequestMessage); ok {
		// Encoded when sent (encodeRequests); counted by its text and arguments.
		w.requests = append(w.requests, queuedRequest{row: len(w.rows), m: req})
		w.rows = append(w.rows, w.newRow(key, w.convKeyValue, int64(w.last), nil, nil, nil, nil, nil, nil, nil, nil, created, w.nowValue,
			encodeProvenance(meta.Live.Provenance), int64(at.Segment), int64(at.Depth), meta.Hidden, nullTime(deletedAt), nil))
		w.rowBytes += 2 * len(req.Text())
		for _, c := range req.ToolCalls {
			w.rowBytes += len(c.Arguments)
		}
	} else {
		row, err := encodeMessage(m)
		if err != nil {
			return err
		}
		w.rows = append(w.rows, w.newRow(key, w.convKeyValue, int64(w.last), int64(row.SchemaVersion), nullString(row.Kind), row.Role, row.Content,
			nullJSON(row.ToolCalls), nullJSON(row.ToolResults), string(row.Payload), nullString(row.SourceID), created, w.nowValue,
			encodeProvenance(meta.Live.Provenance), int64(at.Segment), int64(at.Depth), meta.Hidden, nullTime(deletedAt), nil))
		w.rowBytes += len(row.Content) + len(row.ToolCalls) + len(row.ToolResults) + len(row.Payload)
	}
	if len(w.rows) >= flushRows || w.rowBytes >= flushBytes {
		return w.flush(ctx, tx)
	}
	return nil
}

// newRow is a row of the staging table's columns (stageColumns) holding values, cut
// from the writer's slab: one allocation for a batch's rows rather than one a row. Each
// batch has a slab of its own (flush), so that a batch's values are garbage once it is
// stored: a slab cut across batches of large messages kept up to four batches' text
// (TestImportLargeSessionBoundedMemory: the server's peak 449 MiB).
func (w *bulkWriter) newRow(values ...any) []any {
	n := len(stageColumns)
	if len(values) != n {
		panic(fmt.Sprintf("db: a row of %d values for %d columns", len(values), n))
	}
	if cap(w.slab)-len(w.slab) < n {
		w.slab = make([]any, 0, n*flushRows)
	}
	i := len(w.slab)
	w.slab = append(w.slab, values...)
	return w.slab[i : i+n : i+n]
}

// flush sends the queued messages with one COPY, then the tool-call rows whose request
// and (when answered) result are now stored: new calls copied in, stored calls that the
// import answered updated with one statement. The statements are sent behind
// (txn.sendBehind): the writer goes on queuing the next batch while Postgres stores
// this one, and the next use of the transaction waits for them.
func (w *bulkWriter) flush(ctx context.Context, tx *txn) error {
	for _, q := range w.requests {
		row, err := encodeMessage(q.m)
		if err != nil {
			return err
		}
		copy(w.rows[q.row][3:11], []any{int64(row.SchemaVersion), nullString(row.Kind), row.Role, row.Content,
			nullJSON(row.ToolCalls), nullJSON(row.ToolResults), string(row.Payload), nullString(row.SourceID)})
	}
	clear(w.requests)
	w.requests = w.requests[:0]
	var b sentBatch
	if len(w.rows) > 0 {
		if !w.staged {
			if err := w.stage(ctx, tx); err != nil {
				return err
			}
		}
		// The rows are the batch's now: the writer queues the next ones anew. Their
		// vectors are computed on the second connection while the batch before is
		// stored; the first batch's, with nothing before it, in the insert.
		b.rows = w.rows
		if w.batches > 0 && w.vec.reserve(ctx) {
			b.vectors = w.vec.compute(b.rows)
		}
		w.batches++
		// A slab of its own for the next batch's rows: one shared with this batch would
		// keep this batch's values (its text) for as long as the next batch's.
		w.rows, w.rowBytes, w.slab = make([][]any, 0, len(b.rows)), 0, nil
	}
	for _, id := range w.dirty {
		c := w.calls[id]
		switch {
		case !c.stored:
			var result, decidedAt any
			if c.resultKey != "" {
				result = c.resultKey
			}
			if d := c.call.Decision; d != nil {
				decidedAt = d.DecidedAt
			}
			b.calls = append(b.calls, []any{w.convKey, id, c.name, c.requestKey, result, string(c.call.ApprovalStatus), decidedAt, c.call.Imported})
			c.stored, c.resultNew = true, false
			c.pendingImported = c.call.Imported && c.call.ApprovalStatus == parley.ApprovalPending
			c.call = nil // sent: a result from now on approves it in the database
		case c.resultNew:
			b.storedIDs, b.storedResults = append(b.storedIDs, id), append(b.storedResults, c.resultKey)
			c.resultNew = false
		}
	}
	w.dirty = w.dirty[:0]
	if len(b.rows) > 0 || len(b.calls) > 0 || len(b.storedIDs) > 0 {
		convKey, conn := w.convKey, tx.conn
		if err := tx.sendBehind(func(q *sqlx.Tx) error { return b.store(ctx, q, conn, convKey) }); err != nil {
			return err
		}
	}
	return w.approveStored(ctx, tx)
}

// sentBatch is what a flush stores: messages' rows, new tool calls' rows, and the
// results of stored calls (their call ids and the results' message keys).
type sentBatch struct {
	rows, calls              [][]any
	storedIDs, storedResults []string
	// vectors are the rows' search vectors, being computed on the second connection;
	// nil when the insert computes them.
	vectors *batchVectors
}

// store sends b with q: the messages through the staging table (importInsertSQL, or
// importInsertVectorsSQL once their vectors are computed on the second connection), the
// calls copied in after them (their rows name the messages), the stored calls' results.
func (b *sentBatch) store(ctx context.Context, q *sqlx.Tx, conn *sqlx.Conn, convKey string) error {
	if len(b.rows) > 0 {
		insert := importInsertSQL
		if b.vectors != nil {
			vectors, err := b.vectors.wait()
			if err != nil {
				return fmt.Errorf("copy messages into %s: %w", parley.ConversationID(convKey), err)
			}
			for i, v := range vectors {
				b.rows[i][len(messageCopyColumns)] = v
			}
			insert = importInsertVectorsSQL
		}
		err := copyIn(ctx, q, conn, "import_stage", stageColumns, b.rows)
		if err == nil {
			_, err = q.ExecContext(ctx, insert, convKey)
		}
		if err == nil {
			_, err = q.ExecContext(ctx, `TRUNCATE import_stage`)
		}
		if err != nil {
			return fmt.Errorf("copy messages into %s: %w", parley.ConversationID(convKey), err)
		}
	}
	if len(b.calls) > 0 {
		if err := copyIn(ctx, q, conn, "tool_calls", []string{"conversation_id", "call_id", "name", "request_id", "result_id",
			"approval_status", "decided_at", "imported"}, b.calls); err != nil {
			return fmt.Errorf("copy tool calls into %s: %w", parley.ConversationID(convKey), err)
		}
	}
	if len(b.storedIDs) > 0 {
		if _, err := q.ExecContext(ctx, `UPDATE tool_calls t SET result_id = r.result_id::uuid
			FROM unnest($2::text[], $3::text[]) AS r(call_id, result_id)
			WHERE t.conversation_id = $1 AND t.call_id = r.call_id`, convKey, pq.Array(b.storedIDs), pq.Array(b.storedResults)); err != nil {
			return fmt.Errorf("record results of stored tool calls: %w", err)
		}
	}
	return nil
}

// importStageSQL makes the transaction's staging table, import_stage: messages'
// columns that an import copies, compressed as messages' are (migration 000014), so
// that a large value is compressed once, in the copy, and inserted as it is. It also
// turns JIT compilation off for the import's transaction: the insert's estimate (a
// table without statistics, four to_tsvector a row) is above jit_above_cost for every
// batch, and compiling it took 0.9 s a batch of 5,000 rows, more than the insert.
var importStageSQL = `SET LOCAL jit = off;
	CREATE TEMPORARY TABLE import_stage ON COMMIT DROP AS SELECT ` + strings.Join(stageColumns, ", ") + `
	FROM messages WITH NO DATA;
	ALTER TABLE import_stage ALTER COLUMN content SET COMPRESSION lz4, ALTER COLUMN payload SET COMPRESSION lz4,
		ALTER COLUMN tool_calls SET COMPRESSION lz4, ALTER COLUMN tool_results SET COMPRESSION lz4,
		ALTER COLUMN provenance SET COMPRESSION lz4`

// importInsertSQL moves the staged rows into messages with their owner ($1 is the
// conversation) and search vectors, computed for the batch by one query
// (message_search_vectors, migration 000024) rather than by the insert trigger's
// PL/pgSQL a row: a row that brings both is one the trigger skips (000023). A deleted
// message has no vector, as the trigger would give it; streaming ones are not imported.
var importInsertSQL = `INSERT INTO messages (` + strings.Join(messageCopyColumns, ", ") + `, owner, search_vector)
	SELECT s.` + strings.Join(messageCopyColumns, ", s.") + `, (SELECT owner FROM conversations WHERE id = $1),
		CASE WHEN s.deleted_at IS NULL THEN v END
	FROM import_stage s CROSS JOIN (SELECT config FROM search_config LIMIT 1) k
	CROSS JOIN LATERAL message_search_vectors(k.config, s.kind, s.content, s.payload, s.tool_calls, s.tool_results) v`

// importInsertVectorsSQL is importInsertSQL for rows staged with their vectors
// (db/vectors.go): a deleted message's is null.
var importInsertVectorsSQL = `INSERT INTO messages (` + strings.Join(messageCopyColumns, ", ") + `, owner, search_vector)
	SELECT s.` + strings.Join(messageCopyColumns, ", s.") + `, (SELECT owner FROM conversations WHERE id = $1), s.search_vector
	FROM import_stage s`

// stage makes the transaction's staging table (importStageSQL), before the first batch
// is sent.
func (w *bulkWriter) stage(ctx context.Context, tx *txn) error {
	if _, err := tx.ExecContext(ctx, importStageSQL); err != nil {
		return fmt.Errorf("make the staging table: %w", err)
	}
	w.staged = true
	return nil
}

// approveStored approves, in their stored requests and in the index, the imported calls
// still PENDING that results of the import answered (ApproveAnsweredImport): calls
// stored before the import, or sent in an earlier batch of it.
func (w *bulkWriter) approveStored(ctx context.Context, tx *txn) error {
	if len(w.answeredStored) == 0 {
		return nil
	}
	byRequest := make(map[string][]answeredCall)
	var order []string
	for _, a := range w.answeredStored {
		if byRequest[a.requestKey] == nil {
			order = append(order, a.requestKey)
		}
		byRequest[a.requestKey] = append(byRequest[a.requestKey], a)
	}
	w.answeredStored = w.answeredStored[:0]
	for _, key := range order {
		var row messageRow
		if err := tx.GetContext(ctx, &row, `SELECT `+messageColumns+` FROM messages WHERE id = $1 FOR UPDATE`, key); err != nil {
			return fmt.Errorf("read tool request %s: %w", parley.MessageID(key), err)
		}
		m, err := decodeMessage(&row, nil)
		if err != nil {
			return err
		}
		req, ok := m.(*parley.ToolRequestMessage)
		if !ok {
			continue
		}
		var changed []parley.ToolCall
		for _, a := range byRequest[key] {
			if c := req.ToolCall(a.callID); c != nil && parley.ApproveAnsweredImport(c, a.at) {
				changed = append(changed, *c)
			}
		}
		if len(changed) == 0 {
			continue
		}
		if err := rewriteMessage(ctx, tx, w.convKey, key, req); err != nil {
			return err
		}
		if err := recordApprovals(ctx, tx, w.convKey, changed); err != nil {
			return err
		}
	}
	return nil
}

// finish flushes what is queued and, when the import added messages, moves the
// conversation's head past them, makes the branch of the import's last message (or of
// leaf, when given: the source's active one) active, and announces the last one: a
// subscriber woken by it reads everything after what it has, so one notification
// serves them all.
func (w *bulkWriter) finish(ctx context.Context, db *DB, tx *txn, leaf string) error {
	if err := w.flush(ctx, tx); err != nil {
		return err
	}
	if w.added == 0 {
		return nil
	}
	if at, ok := w.place.bySource[leaf]; ok && leaf != "" {
		w.place.last, w.place.lastSet = at, true
	}
	active, ok, err := w.place.finish(ctx, tx)
	if err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("an import added %d messages and placed none", w.added)
	}
	if _, err := tx.ExecContext(ctx, `UPDATE conversations SET last_position = $2, active_segment = $4, active_depth = $5,
		segments = $6, message_count = message_count + $3, updated_at = now() WHERE id = $1`,
		w.convKey, w.last, w.added, active.Segment, active.Depth, w.place.segments); err != nil {
		return fmt.Errorf("bump conversation: %w", err)
	}
	return db.notifyAdded(ctx, tx, w.convKey, w.lastKey, w.last)
}

// release waits for what the writer sent behind and gives back the connection it
// borrowed, if any.
func (w *bulkWriter) release(tx *txn) {
	_ = tx.settle()
	w.vec.release()
}

// copyIn copies rows into table's columns with COPY FROM STDIN (lib/pq's CopyIn): on
// conn, the connection q runs on, writing the rows' text itself (rawCopyIn), when the
// transaction holds it (txn.conn); else a row at a time through database/sql.
func copyIn(ctx context.Context, q *sqlx.Tx, conn *sqlx.Conn, table string, columns []string, rows [][]any) error {
	if conn != nil {
		return rawCopyIn(ctx, conn, table, columns, rows)
	}
	stmt, err := q.PrepareContext(ctx, pq.CopyIn(table, columns...))
	if err != nil {
		return err
	}
	defer stmt.Close()
	for _, r := range rows {
		if _, err := stmt.ExecContext(ctx, r...); err != nil {
			return err
		}
	}
	_, err = stmt.ExecContext(ctx)
	return err
}
