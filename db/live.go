package db

import (
	"cmp"
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"

	"github.com/parley-dev/parley"
)

// Live messages: a message stored while it streams. Each acknowledged append is one row
// of message_deltas (its deltas as JSON, and the provider's events when it brought
// them); reads fold a streaming message's rows into its content on the fly, and ending
// the message folds them into its row for good, in the same encoding as any other
// message, and deletes them.

var _ parley.LiveMessageService = (*DB)(nil)

// provenanceJSON is the provenance column's shape.
type provenanceJSON struct {
	Provider     string `json:"provider,omitempty"`
	Model        string `json:"model,omitempty"`
	ResponseID   string `json:"responseId,omitempty"`
	FinishReason string `json:"finishReason,omitempty"`
	Usage        struct {
		Input         int64 `json:"input,omitempty"`
		Output        int64 `json:"output,omitempty"`
		CachedInput   int64 `json:"cachedInput,omitempty"`
		CacheCreation int64 `json:"cacheCreation,omitempty"`
		Reasoning     int64 `json:"reasoning,omitempty"`
	} `json:"usage"`
	TimeToFirstTokenMs int64 `json:"ttftMs,omitempty"`
	DurationMs         int64 `json:"durationMs,omitempty"`
}

func (p provenanceJSON) provenance() *parley.Provenance {
	return &parley.Provenance{Provider: p.Provider, Model: p.Model, ResponseID: p.ResponseID, FinishReason: p.FinishReason,
		Usage: parley.Usage{InputTokens: p.Usage.Input, OutputTokens: p.Usage.Output, CachedInputTokens: p.Usage.CachedInput,
			CacheCreationInputTokens: p.Usage.CacheCreation, ReasoningTokens: p.Usage.Reasoning},
		TimeToFirstTokenMs: p.TimeToFirstTokenMs, DurationMs: p.DurationMs}
}

// encodeProvenance returns the provenance column's value: nil for none.
func encodeProvenance(p *parley.Provenance) any {
	if p == nil || p.IsZero() {
		return nil
	}
	var j provenanceJSON
	j.Provider, j.Model, j.ResponseID, j.FinishReason = p.Provider, p.Model, p.ResponseID, p.FinishReason
	j.Usage.Input, j.Usage.Output, j.Usage.CachedInput = p.Usage.InputTokens, p.Usage.OutputTokens, p.Usage.CachedInputTokens
	j.Usage.CacheCreation, j.Usage.Reasoning = p.Usage.CacheCreationInputTokens, p.Usage.ReasoningTokens
	j.TimeToFirstTokenMs, j.DurationMs = p.TimeToFirstTokenMs, p.DurationMs
	return string(appendProvenance(make([]byte, 0, 160), &j)) // json.Marshal(j), by hand
}

// deltaJSON is one delta as stored in message_deltas.deltas (and nowhere else).
type deltaJSON struct {
	Kind   parley.DeltaKind `json:"k"`
	Index  int              `json:"i"`
	Text   string           `json:"t,omitempty"`
	CallID string           `json:"c,omitempty"`
	Name   string           `json:"n,omitempty"`
	At     *int             `json:"p,omitempty"`
	Item   string           `json:"m,omitempty"`
}

func encodeDeltas(ds []parley.Delta) string {
	out := make([]deltaJSON, len(ds))
	for i, d := range ds {
		out[i] = deltaJSON{d.Kind, d.Index, d.Text, d.ToolCallID, d.ToolName, d.PartIndex, d.ItemID}
	}
	b, _ := json.Marshal(out) // strings and numbers: cannot fail
	return string(b)
}

func decodeDeltas(raw []byte) ([]parley.Delta, error) {
	var in []deltaJSON
	if err := unmarshal(raw, &in); err != nil {
		return nil, err
	}
	out := make([]parley.Delta, len(in))
	for i, d := range in {
		out[i] = parley.Delta{Kind: d.Kind, Index: d.Index, Text: d.Text, ToolCallID: d.CallID, ToolName: d.Name, PartIndex: d.At, ItemID: d.Item}
	}
	return out, nil
}

// digest is the SHA-256 of what identifies a message under a client id: its encoded
// row (as prepared) and provenance, or for a started message how it was started.
func digest(parts ...any) []byte {
	h := sha256.New()
	for _, p := range parts {
		fmt.Fprintf(h, "%v\x00", p)
	}
	return h.Sum(nil)
}

// rowDigest is digest of an encoded message.
func rowDigest(row messageRow, prov any) []byte {
	return digest("message", row.Kind.String, row.Role, row.Content, string(row.ToolCalls), string(row.ToolResults),
		string(row.Payload), row.SourceID.String, prov)
}

// findByClientID returns the message of the conversation (whose row tx has locked)
// stored under clientID, checking its digest: the same message is returned as stored,
// another is ECONFLICT. It returns nil when there is none.
func (db *DB) findByClientID(ctx context.Context, tx *txn, convKey, clientID string, want []byte) (parley.Message, error) {
	var row struct {
		messageRow
		Digest []byte `db:"body_digest"`
	}
	err := tx.GetContext(ctx, &row, byClientIDSQL, convKey, clientID)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	} else if err != nil {
		return nil, fmt.Errorf("find message %q of %s: %w", clientID, parley.ConversationID(convKey), err)
	}
	if string(row.Digest) != string(want) {
		return nil, parley.Errorf(parley.ECONFLICT, "clientMessageId: %q is message %s of the conversation, which is not this message",
			clientID, parley.MessageID(row.ID))
	}
	m, err := decodeMessage(&row.messageRow, db.log)
	if err != nil {
		return nil, err
	}
	return db.foldOne(ctx, tx, m)
}

// startMessageSQL stores a streaming message as the next one of the active branch
// (insertMessageSQL).
const startMessageSQL = `
	WITH conv AS (
		UPDATE conversations
		SET last_position = last_position + 1, message_count = message_count + 1,
			active_depth = CASE WHEN segments = 0 THEN last_position ELSE active_depth END + 1, updated_at = now()
		WHERE id = $1 AND owner = $2
		RETURNING id, last_position, active_segment, active_depth
	)
	INSERT INTO messages (conversation_id, position, segment, depth, schema_version, kind, role, payload, status,
		client_message_id, body_digest, provenance, lease_seconds, lease_until, owner)
	SELECT conv.id, conv.last_position, conv.active_segment, conv.active_depth, 2, 'text', $3, '{}', 'streaming',
		$4, $5, $6::jsonb, $7::int, now() + make_interval(secs => $7::int), $2
	FROM conv
	RETURNING ` + messageColumns

// startPlacedSQL is startMessageSQL for a message placed in the tree ($8, $9), which
// becomes the active leaf when $10 (insertPlacedSQL).
const startPlacedSQL = `
	WITH conv AS (
		UPDATE conversations
		SET last_position = last_position + 1, message_count = message_count + 1, updated_at = now(),
			active_segment = CASE WHEN $10 THEN $8 ELSE active_segment END,
			active_depth = CASE WHEN $10 THEN $9 ELSE active_depth END
		WHERE id = $1 AND owner = $2
		RETURNING id, last_position
	)
	INSERT INTO messages (conversation_id, position, segment, depth, schema_version, kind, role, payload, status,
		client_message_id, body_digest, provenance, lease_seconds, lease_until, owner)
	SELECT conv.id, conv.last_position, $8, $9, 2, 'text', $3, '{}', 'streaming',
		$4, $5, $6::jsonb, $7::int, now() + make_interval(secs => $7::int), $2
	FROM conv
	RETURNING ` + messageColumns

// StartMessage implements parley.LiveMessageService.
func (db *DB) StartMessage(ctx context.Context, conversationID string, s parley.StartMessage) (parley.Message, error) {
	key, ok := parley.ParseConversationID(conversationID)
	if !ok {
		return nil, conversationNotFound(conversationID)
	}
	owner, err := ownerOf(ctx)
	if err != nil {
		return nil, err
	}
	if s, err = parley.CleanStart(s); err != nil {
		return nil, err
	}
	var prov *parley.Provenance
	if s.Provider != "" || s.Model != "" {
		prov = &parley.Provenance{Provider: s.Provider, Model: s.Model}
	}
	provCol := encodeProvenance(prov)
	want := digest("start", s.Role, s.Provider, s.Model)
	lease := int(s.Lease / time.Second)
	var out parley.Message
	err = db.transact(ctx, func(tx *txn) error {
		if s.ClientID != "" {
			if err := lockConversation(ctx, tx, key); err != nil {
				return err
			}
			m, err := db.findByClientID(ctx, tx, key, s.ClientID, want)
			if m != nil || err != nil {
				out = m
				return err
			}
		}
		query, args := startMessageSQL, []any{key, owner, s.Role, sql.NullString{String: s.ClientID, Valid: s.ClientID != ""}, want, provCol, lease}
		if !s.Place.IsZero() {
			at, _, err := db.place(ctx, tx, key, s.Place)
			if err != nil {
				return err
			}
			query, args = startPlacedSQL, append(args, at.Segment, at.Depth, at.activate)
		}
		var row messageRow
		err := tx.GetContext(ctx, &row, query, args...)
		if errors.Is(err, sql.ErrNoRows) {
			return conversationNotFound(conversationID)
		} else if err != nil {
			return fmt.Errorf("start message in %s: %w", conversationID, err)
		}
		if out, err = decodeMessage(&row, db.log); err != nil {
			return err
		}
		return db.notifyAdded(ctx, tx, key, row.ID, row.Position)
	})
	if err != nil {
		return nil, err
	}
	if meta := out.Meta(); meta.Live.Status == parley.StatusStreaming && meta.Live.Seq == 0 {
		// Its first append can take the fast path.
		msgKey, _ := parley.ParseMessageID(meta.ID)
		db.live.put(msgKey, &liveEntry{conv: key, position: meta.Seq, depth: meta.Position})
	}
	return out, nil
}

// liveRow is what an append reads of its message, under the message's row lock.
type liveRow struct {
	ConvKey  string         `db:"conversation_id"`
	Position int            `db:"position"`
	Depth    int            `db:"depth"`
	Status   string         `db:"status"`
	Seq      int            `db:"stream_seq"`
	Format   sql.NullString `db:"stream_format"`
	Lease    time.Time      `db:"lease_until"`
}

// lockLive locks a message of the owner in ctx for an append.
func lockLive(ctx context.Context, tx *txn, key, messageID string) (liveRow, error) {
	var r liveRow
	owner, err := ownerOf(ctx)
	if err != nil {
		return r, err
	}
	err = tx.GetContext(ctx, &r, `SELECT conversation_id, position, depth, status, stream_seq, stream_format,
		coalesce(lease_until, now()) AS lease_until
		FROM messages WHERE id = $1 AND `+ownedMessage("2")+` FOR UPDATE`, key, owner)
	if errors.Is(err, sql.ErrNoRows) {
		// A message a linked fork shares (db/forkshared.go) never streams: what it says
		// refuses an append or a heartbeat, as the fork's copy would, without copying.
		shared, err := findSharedRows(ctx, tx, []string{key}, owner)
		if err != nil || len(shared) == 0 {
			return r, cmp.Or(err, messageNotFound(messageID))
		}
		now, err := tx.Now(ctx)
		s := shared[0]
		return liveRow{ConvKey: s.ConversationID, Position: s.Position, Depth: s.Depth, Status: s.Status, Seq: s.StreamSeq, Lease: now}, err
	}
	return r, err
}

// liveCache keeps, per streaming message this process appends to, what checking the
// next append needs: the shape of the draft so far (parley.Draft.Shape) and, for a
// message fed provider events, the SDK's accumulator, as of append seq. An entry is
// taken out while an append uses it and put back after its commit, so a failed append
// leaves nothing half-applied behind; a missing or stale entry (another replica
// appended, this process restarted) is rebuilt from the stored appends.
type liveCache struct {
	mu sync.Mutex
	m  map[string]*liveEntry
}

type liveEntry struct {
	seq   int
	shape parley.Draft
	asm   parley.StreamAssembler
	// conv, position and depth are the message's, for its notifications and for the
	// appends published from memory (parley.DeltaBatch).
	conv            string
	position, depth int
}

// maxLiveEntries bounds the cache; beyond it an arbitrary entry is dropped.
const maxLiveEntries = 10000

func (c *liveCache) take(key string, seq int) *liveEntry {
	c.mu.Lock()
	defer c.mu.Unlock()
	e := c.m[key]
	delete(c.m, key)
	if e == nil || e.seq != seq {
		return nil
	}
	return e
}

func (c *liveCache) put(key string, e *liveEntry) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = map[string]*liveEntry{}
	}
	if len(c.m) >= maxLiveEntries {
		for k := range c.m {
			delete(c.m, k)
			break
		}
	}
	c.m[key] = e
}

func (c *liveCache) drop(key string) {
	c.mu.Lock()
	delete(c.m, key)
	c.mu.Unlock()
}

// rebuild reads a message's stored appends and rebuilds its cache entry, feeding the
// stored events to a new assembler for format when it has one.
func (db *DB) rebuild(ctx context.Context, tx *txn, key string, seq int, format string) (*liveEntry, error) {
	e := &liveEntry{seq: seq}
	if format != "" {
		asm, err := db.assembler(parley.StreamFormat(format))
		if err != nil {
			return nil, err
		}
		e.asm = asm
	}
	rows, err := tx.QueryContext(ctx, `SELECT deltas, events FROM message_deltas WHERE message_id = $1 ORDER BY seq`, key)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var dr parley.Draft
	for rows.Next() {
		var deltas, events []byte
		if err := rows.Scan(&deltas, &events); err != nil {
			return nil, err
		}
		ds, err := decodeDeltas(deltas)
		if err != nil {
			return nil, err
		}
		if err := dr.ApplyAll(ds); err != nil {
			return nil, fmt.Errorf("rebuild message %s: %w", parley.MessageID(key), err)
		}
		if e.asm != nil && len(events) > 0 {
			var evs []json.RawMessage
			if err := unmarshal(events, &evs); err != nil {
				return nil, err
			}
			for _, ev := range evs {
				if _, err := e.asm.AddJSON(ev); err != nil {
					return nil, fmt.Errorf("rebuild message %s: %w", parley.MessageID(key), err)
				}
			}
		}
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	e.shape = dr.Shape()
	return e, nil
}

func (db *DB) assembler(f parley.StreamFormat) (parley.StreamAssembler, error) {
	newAsm := db.assemblers[f]
	if newAsm == nil {
		return nil, parley.Errorf(parley.EINVALID, "format: %s streams are not read by this server", f)
	}
	return newAsm(), nil
}

// appendSQL writes one append: its row, the message's number, lease, first delta time
// and provenance, and the notification, in one statement.
const appendSQL = `
	WITH ins AS (
		INSERT INTO message_deltas (message_id, seq, deltas, events) VALUES ($1, $2, $3, $4)
	), upd AS (
		UPDATE messages SET stream_seq = $2, lease_until = now() + make_interval(secs => lease_seconds),
			first_delta_at = coalesce(first_delta_at, now()), provenance = coalesce($5, provenance),
			stream_format = coalesce($8, stream_format)
		WHERE id = $1
		RETURNING lease_until
	)
	SELECT upd.lease_until FROM upd, pg_notify($6, $7)`

// AppendDeltas implements parley.LiveMessageService.
func (db *DB) AppendDeltas(ctx context.Context, messageID string, seq int, deltas []parley.Delta) (parley.Ack, error) {
	if err := parley.CheckDeltas(deltas); err != nil {
		return parley.Ack{}, err
	}
	return db.appendLive(ctx, messageID, seq, "", func(e *liveEntry) ([]parley.Delta, []json.RawMessage, error) {
		return deltas, nil, nil
	})
}

// AppendProviderEvents implements parley.LiveMessageService.
func (db *DB) AppendProviderEvents(ctx context.Context, messageID string, format parley.StreamFormat, seq int, events []parley.JSON) (parley.Ack, error) {
	if len(events) == 0 {
		return parley.Ack{}, parley.Errorf(parley.EINVALID, "events: empty; an append brings at least one event")
	}
	if len(events) > parley.MaxDeltasPerAppend {
		return parley.Ack{}, parley.Errorf(parley.EINVALID, "events: %d, at most %d per append", len(events), parley.MaxDeltasPerAppend)
	}
	n := 0
	for _, ev := range events {
		n += len(ev)
	}
	if n > parley.MaxAppendBytes {
		return parley.Ack{}, parley.Errorf(parley.EINVALID, "events: %d bytes, at most %d per append", n, parley.MaxAppendBytes)
	}
	if _, err := db.assembler(format); err != nil {
		return parley.Ack{}, err
	}
	return db.appendLive(ctx, messageID, seq, format, func(e *liveEntry) ([]parley.Delta, []json.RawMessage, error) {
		var deltas []parley.Delta
		raw := make([]json.RawMessage, len(events))
		for i, ev := range events {
			d, err := e.asm.AddJSON(ev)
			if err != nil {
				if pe, ok := err.(*parley.Error); ok {
					return nil, nil, parley.Errorf(pe.Code, "events[%d]: %s", i, pe.Message)
				}
				return nil, nil, err
			}
			deltas = append(deltas, d...)
			raw[i] = json.RawMessage(ev)
		}
		return deltas, raw, nil
	})
}

// appendLive runs one append: brings gives its deltas (and events to keep), from the
// message's cache entry.
func (db *DB) appendLive(ctx context.Context, messageID string, seq int, format parley.StreamFormat,
	brings func(e *liveEntry) ([]parley.Delta, []json.RawMessage, error)) (parley.Ack, error) {
	key, ok := parley.ParseMessageID(messageID)
	if !ok {
		return parley.Ack{}, messageNotFound(messageID)
	}
	if ack, ok, err := db.appendFast(ctx, key, messageID, seq, format, brings); ok || err != nil {
		return ack, err
	}
	var entry *liveEntry
	var acked parley.Ack
	err := db.transact(ctx, func(tx *txn) error {
		entry = nil
		r, err := lockLive(ctx, tx, key, messageID)
		if err != nil {
			return err
		}
		acked = parley.Ack{Seq: r.Seq, LeaseUntil: r.Lease}
		dup, err := parley.CheckAppend(messageID, parley.MessageStatus(r.Status), r.Seq, seq)
		if dup || err != nil {
			return err
		}
		if r.Format.Valid && string(format) != r.Format.String {
			if format == "" {
				return parley.Errorf(parley.EINVALID, "message %s is fed %s events: append events (appendProviderEvents), not deltas", messageID, r.Format.String)
			}
			return parley.Errorf(parley.EINVALID, "format: %s, but message %s is fed %s events", format, messageID, r.Format.String)
		}
		if !r.Format.Valid && format != "" && r.Seq > 0 {
			return parley.Errorf(parley.EINVALID, "message %s grows by deltas: one message takes one way of appending", messageID)
		}
		e := db.live.take(key, r.Seq)
		if e == nil || (format != "" && e.asm == nil) {
			if e, err = db.rebuild(ctx, tx, key, r.Seq, string(format)); err != nil {
				return err
			}
		}
		deltas, events, err := brings(e)
		if err != nil {
			return err // e is dropped: an assembler may hold part of the append
		}
		shape := e.shape.Shape()
		if err := shape.ApplyAll(deltas); err != nil {
			return err
		}
		if err := shape.CheckLimits(db.limits); err != nil {
			return err
		}
		if err := checkCallIDsFree(ctx, tx, r.ConvKey, &e.shape, &shape); err != nil {
			return err
		}
		var eventsCol, provCol, formatCol any
		if format != "" {
			b, err := json.Marshal(events)
			if err != nil {
				return err
			}
			eventsCol, formatCol = string(b), string(format)
			p := e.asm.Provenance()
			provCol = encodeProvenance(&p)
		}
		payload, err := json.Marshal(eventPayload{Kind: parley.MessageDelta, ConvKey: r.ConvKey, MsgKey: key, Position: r.Position, Seq: int64(seq)})
		if err != nil {
			return err
		}
		var lease time.Time
		if err := tx.GetContext(ctx, &lease, appendSQL, key, seq, encodeDeltas(deltas), eventsCol, provCol,
			NotifyChannel, string(payload), formatCol); err != nil {
			return fmt.Errorf("append %d to %s: %w", seq, messageID, err)
		}
		e.seq, e.shape, e.conv, e.position, e.depth = seq, shape, r.ConvKey, r.Position, r.Depth
		entry, acked = e, parley.Ack{Seq: seq, LeaseUntil: lease}
		return nil
	})
	if err != nil {
		db.live.drop(key)
		return parley.Ack{}, err
	}
	if entry != nil {
		db.live.put(key, entry)
	}
	return acked, nil
}

// appendFast writes an append without locking when this process appended the one
// before it (its cache entry is current): the common case of a writer streaming to one
// replica. It is written with the other appends of the moment (group commit: see
// appendGroup), by appendGroupSQL. ok is false
// when it wrote nothing and the append must take the locking path.
func (db *DB) appendFast(ctx context.Context, key, messageID string, seq int, format parley.StreamFormat,
	brings func(e *liveEntry) ([]parley.Delta, []json.RawMessage, error)) (ack parley.Ack, ok bool, err error) {
	owner, err := ownerOf(ctx)
	if err != nil {
		return ack, false, err
	}
	e := db.live.take(key, seq-1)
	if e == nil || seq < 1 || (format != "") != (e.asm != nil) {
		return ack, false, nil
	}
	deltas, events, err := brings(e)
	if err != nil {
		return ack, false, err // e is dropped: an assembler may hold part of the append
	}
	shape := e.shape.Shape()
	if err := shape.ApplyAll(deltas); err != nil {
		return ack, false, err
	}
	if err := shape.CheckLimits(db.limits); err != nil {
		return ack, false, err
	}
	if err := checkCallIDsFree(ctx, db.db, e.conv, &e.shape, &shape); err != nil {
		return ack, false, err
	}
	p := &pendingAppend{key: key, seq: seq, deltas: encodeDeltas(deltas), owner: owner}
	if format != "" {
		b, err := json.Marshal(events)
		if err != nil {
			return ack, false, err
		}
		p.events = sql.NullString{String: string(b), Valid: true}
		p.format = sql.NullString{String: string(format), Valid: true}
		if prov, ok := encodeProvenance(ptr(e.asm.Provenance())).(string); ok {
			p.prov = sql.NullString{String: prov, Valid: true}
		}
	}
	p.conv, p.batch = e.conv, parley.DeltaBatch{MessageID: parley.MessageID(key), Position: e.position, Depth: e.depth, Seq: seq, Deltas: deltas}
	if err := db.group.write(ctx, p); err != nil {
		return ack, false, err
	}
	if p.err != nil {
		return ack, false, classify(fmt.Errorf("append %d to %s: %w", seq, messageID, p.err))
	}
	if !p.ok {
		return ack, false, nil
	}
	e.seq, e.shape = seq, shape
	db.live.put(key, e)
	return parley.Ack{Seq: seq, LeaseUntil: p.lease}, true, nil
}

func ptr[T any](v T) *T { return &v }

// Heartbeat implements parley.LiveMessageService.
func (db *DB) Heartbeat(ctx context.Context, messageID string) (parley.Ack, error) {
	key, ok := parley.ParseMessageID(messageID)
	if !ok {
		return parley.Ack{}, messageNotFound(messageID)
	}
	var ack parley.Ack
	err := db.transact(ctx, func(tx *txn) error {
		r, err := lockLive(ctx, tx, key, messageID)
		if err != nil {
			return err
		}
		if parley.MessageStatus(r.Status) != parley.StatusStreaming {
			return parley.Errorf(parley.ECONFLICT, "message %s is %s, no longer streaming", messageID, parley.MessageStatus(r.Status))
		}
		ack.Seq = r.Seq
		return tx.GetContext(ctx, &ack.LeaseUntil, `UPDATE messages SET lease_until = now() + make_interval(secs => lease_seconds)
			WHERE id = $1 RETURNING lease_until`, key)
	})
	return ack, err
}

// EndMessage implements parley.LiveMessageService.
func (db *DB) EndMessage(ctx context.Context, messageID string, e parley.End) (parley.Message, error) {
	key, ok := parley.ParseMessageID(messageID)
	if !ok {
		return nil, messageNotFound(messageID)
	}
	if err := parley.CheckEnd(e); err != nil {
		return nil, err
	}
	if err := parley.CheckProvenance(e.Provenance); err != nil {
		return nil, err
	}
	owner, err := ownerOf(ctx)
	if err != nil {
		return nil, err
	}
	var out parley.Message
	err = db.transact(ctx, func(tx *txn) error {
		out, err = db.endLocked(ctx, tx, key, messageID, owner, e, false)
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// endRow is what ending a message reads of it.
type endRow struct {
	messageRow
	FirstDelta sql.NullTime `db:"first_delta_at"`
	Now        time.Time    `db:"tx_now"`
	Expired    bool         `db:"expired"`
}

// endLocked ends a message: owner "" is any owner (the sweeper), which also skips a
// message another transaction holds or whose lease has not run out (it returns nil).
func (db *DB) endLocked(ctx context.Context, tx *txn, key, messageID, owner string, e parley.End, sweep bool) (parley.Message, error) {
	var row endRow
	query := `SELECT ` + messageColumns + `, first_delta_at, transaction_timestamp() AS tx_now,
		coalesce(lease_until < transaction_timestamp(), false) AS expired FROM messages WHERE id = $1 AND `
	args := []any{key}
	if sweep {
		query += `status = 'streaming' FOR UPDATE SKIP LOCKED`
	} else {
		query += ownedMessage("2") + ` FOR UPDATE`
		args = append(args, owner)
	}
	err := tx.GetContext(ctx, &row, query, args...)
	if errors.Is(err, sql.ErrNoRows) {
		if sweep {
			return nil, nil
		}
		return db.endShared(ctx, tx, key, messageID, owner, e)
	} else if err != nil {
		return nil, err
	}
	tx.setNow(row.Now)
	if sweep && !row.Expired {
		return nil, nil
	}
	stored, err := decodeMessage(&row.messageRow, db.log)
	if err != nil {
		return nil, err
	}
	again, err := parley.CheckEnding(messageID, stored.Meta().Live.Status, e)
	if err != nil {
		return nil, err
	}
	if again {
		return stored, nil
	}
	dr, err := foldRows(ctx, tx, key)
	if err != nil {
		return nil, err
	}
	m := dr.Final()
	meta := m.Meta()
	*meta = *stored.Meta()
	if _, ok := m.(*parley.ToolRequestMessage); !ok {
		meta.Role = stored.Meta().Role
	}
	prov := parley.Provenance{}
	if p := stored.Meta().Live.Provenance; p != nil {
		prov = *p
	}
	prov = prov.Merge(e.Provenance)
	if prov.TimeToFirstTokenMs == 0 && row.FirstDelta.Valid {
		prov.TimeToFirstTokenMs = row.FirstDelta.Time.Sub(row.CreatedAt).Milliseconds()
	}
	if prov.DurationMs == 0 {
		prov.DurationMs = row.Now.Sub(row.CreatedAt).Milliseconds()
	}
	meta.Live = parley.Live{Status: e.Status, Reason: e.Reason, ClientID: stored.Meta().Live.ClientID, Seq: stored.Meta().Live.Seq, Provenance: &prov}
	if err := parley.Prepare(m, db.limits); err != nil {
		if e.Status == parley.StatusCompleted {
			return nil, fmt.Errorf("complete message %s: %w", messageID, err)
		}
		// A message cut short keeps what it had even where a finished one could not
		// be so (arguments that stop mid-JSON, no content at all): see keepPartial.
		keepPartial(m)
		if err := parley.Prepare(m, db.limits); err != nil {
			db.log.DebugContext(ctx, "a message cut short is kept as it is", "message", messageID, "err", err)
		}
	}
	if req, ok := m.(*parley.ToolRequestMessage); ok {
		if err := db.applyToolPolicies(ctx, tx, m); err != nil {
			return nil, err
		}
		calls := req.ToolCalls
		if e.Status != parley.StatusCompleted {
			if calls, err = db.indexable(ctx, tx, row.ConversationID, messageID, calls); err != nil {
				return nil, err
			}
		}
		if err := recordToolCalls(ctx, tx, row.ConversationID, key, calls); err != nil {
			return nil, err
		}
		if err := recordApprovals(ctx, tx, row.ConversationID, calls); err != nil {
			return nil, err
		}
	}
	enc, err := encodeMessage(m)
	if err != nil {
		return nil, err
	}
	err = tx.GetContext(ctx, &meta.UpdatedAt, `UPDATE messages SET kind = $2, role = $3, content = $4, tool_calls = $5,
		payload = $6, status = $7, status_reason = $8, provenance = $9, lease_until = NULL, updated_at = now()
		WHERE id = $1 RETURNING updated_at`,
		key, enc.Kind, enc.Role, enc.Content, nullJSON(enc.ToolCalls), enc.Payload, e.Status,
		sql.NullString{String: e.Reason, Valid: e.Reason != ""}, encodeProvenance(&prov))
	if err != nil {
		return nil, fmt.Errorf("end message %s: %w", messageID, err)
	}
	if _, err := tx.ExecContext(ctx, `DELETE FROM message_deltas WHERE message_id = $1`, key); err != nil {
		return nil, err
	}
	if _, err := markMessageChanged(ctx, tx, row.ConversationID, key); err != nil {
		return nil, err
	}
	db.live.drop(key)
	return m, nil
}

// endShared is endLocked for a message a linked fork of owner's shares (db/forkshared.go),
// which never streams: ending it as it ended returns it, as the fork's, and anything else
// is refused, as for the fork's copy, without copying. ENOTFOUND for any other key.
func (db *DB) endShared(ctx context.Context, tx *txn, key, messageID, owner string, e parley.End) (parley.Message, error) {
	shared, err := findSharedRows(ctx, tx, []string{key}, owner)
	if err != nil {
		return nil, err
	}
	if len(shared) == 0 {
		return nil, messageNotFound(messageID)
	}
	stored, err := decodeMessage(&shared[0].messageRow, db.log)
	if err != nil {
		return nil, err
	}
	again, err := parley.CheckEnding(messageID, stored.Meta().Live.Status, e)
	if err != nil {
		return nil, err
	}
	if !again {
		return nil, parley.Errorf(parley.ECONFLICT, "message %s is %s; it cannot become %s", messageID, stored.Meta().Live.Status, e.Status)
	}
	return stored, nil
}

// checkCallIDsFree refuses an append that opens a tool call (shape has calls that before
// had not) under an id already used in the conversation convKey: a tool request
// completed with it could not be stored, and its writer should hear so now.
func checkCallIDsFree(ctx context.Context, q sqlx.QueryerContext, convKey string, before, shape *parley.Draft) error {
	if len(shape.ToolCalls) == len(before.ToolCalls) {
		return nil
	}
	opened := shape.ToolCalls[len(before.ToolCalls):]
	ids := make([]string, len(opened))
	for i, c := range opened {
		ids[i] = c.ID
	}
	// The ids of the requests a linked fork shares are taken too (takenCallIDsSQL).
	taken, err := takenCallIDs(ctx, q, convKey, ids)
	if err != nil {
		return classify(fmt.Errorf("read tool call ids of %s: %w", parley.ConversationID(convKey), err))
	}
	for i, c := range opened {
		if slices.Contains(taken, c.ID) {
			return parley.Errorf(parley.EINVALID, "deltas: tool call %d opens with id %q, already used in this conversation",
				len(before.ToolCalls)+i, c.ID)
		}
	}
	return nil
}

// indexable returns the calls of a tool request cut short (aborted, failed,
// interrupted) that can be indexed: those whose id is not already used in the
// conversation, nor by an earlier call of the request. An append that opens a call
// under a used id is refused (checkCallIDsFree), but the id can be taken after it (by
// addMessage, or by another message streaming at the same time), and a message cut
// short must end whatever it holds: a sweeper that failed on it would try again for
// ever. Its other calls are left out of the index, so no result or approval can reach
// them (one cut short was never run), and they stay in the message as they arrived.
func (db *DB) indexable(ctx context.Context, tx *txn, convKey, messageID string, calls []parley.ToolCall) ([]parley.ToolCall, error) {
	ids := make([]string, len(calls))
	for i, c := range calls {
		ids[i] = c.ID
	}
	taken, err := takenCallIDs(ctx, tx, convKey, ids)
	if err != nil {
		return nil, err
	}
	out := make([]parley.ToolCall, 0, len(calls))
	for _, c := range calls {
		if slices.Contains(taken, c.ID) {
			db.log.WarnContext(ctx, "a tool call of a message cut short reuses an id of its conversation; it is kept in the message, not indexed",
				"message", messageID, "callId", c.ID)
			continue
		}
		taken = append(taken, c.ID)
		out = append(out, c)
	}
	return out, nil
}

// keepPartial makes a message cut short storable: a server tool's block that is not
// (yet) JSON is dropped, the calls keeping their places among the other parts, and tool
// call arguments that are not (yet) JSON are kept as a JSON string of what arrived.
func keepPartial(m parley.Message) {
	// A server tool's block cut short is not a block: the provider would refuse it back.
	cut := func(p parley.Part) bool { return p.Kind == parley.PartServerTool && !json.Valid(p.Raw) }
	switch m := m.(type) {
	case *parley.TextMessage:
		m.Parts = slices.DeleteFunc(m.Parts, cut)
	}
	req, ok := m.(*parley.ToolRequestMessage)
	if !ok {
		return
	}
	// The calls keep their places among the parts that stay.
	kept := make([]int, len(req.Parts)+1) // parts kept before each part
	for i, p := range req.Parts {
		kept[i+1] = kept[i]
		if !cut(p) {
			kept[i+1]++
		}
	}
	req.Parts = slices.DeleteFunc(req.Parts, cut)
	at := make([]int, len(req.ToolCalls))
	for i := range req.ToolCalls {
		c := &req.ToolCalls[i]
		at[i] = len(req.Parts)
		if c.PartIndex != nil {
			at[i] = kept[*c.PartIndex]
		}
		c.PartIndex = nil
	}
	parley.AnchorCalls(req.ToolCalls, at, len(req.Parts))
	for i, c := range req.ToolCalls {
		if c.ArgumentsRaw == nil && !json.Valid(c.Arguments) {
			req.ToolCalls[i].Arguments = parley.JSON(strconv.Quote(string(c.Arguments)))
		}
		if c.ApprovalStatus == "" {
			req.ToolCalls[i].ApprovalStatus = parley.ApprovalPending
		}
	}
}

// foldRows reads a message's stored appends into a draft.
func foldRows(ctx context.Context, tx *txn, key string) (*parley.Draft, error) {
	var rows [][]byte
	if err := tx.SelectContext(ctx, &rows, `SELECT deltas FROM message_deltas WHERE message_id = $1 ORDER BY seq`, key); err != nil {
		return nil, err
	}
	var dr parley.Draft
	for _, raw := range rows {
		ds, err := decodeDeltas(raw)
		if err != nil {
			return nil, err
		}
		if err := dr.ApplyAll(ds); err != nil {
			return nil, fmt.Errorf("fold message %s: %w", parley.MessageID(key), err)
		}
	}
	return &dr, nil
}

// InterruptExpired closes the streaming messages whose lease ran out as INTERRUPTED,
// keeping what they had, and returns how many it closed. Any replica may run it at any
// time: a message another transaction holds is skipped, to be seen next time.
func (db *DB) InterruptExpired(ctx context.Context) (int, error) {
	var keys []string
	if err := db.db.SelectContext(ctx, &keys, `SELECT id::text FROM messages
		WHERE status = 'streaming' AND lease_until < now() ORDER BY lease_until LIMIT 100`); err != nil {
		return 0, classify(fmt.Errorf("find expired messages: %w", err))
	}
	n := 0
	for _, key := range keys {
		var m parley.Message
		err := db.transact(ctx, func(tx *txn) error {
			var err error
			m, err = db.endLocked(ctx, tx, key, parley.MessageID(key), "", parley.End{Status: parley.StatusInterrupted,
				Reason: "the writer went away: no append or heartbeat within the lease"}, true)
			return err
		})
		if err != nil {
			db.log.ErrorContext(ctx, "cannot close an interrupted message", "message", parley.MessageID(key), "err", err)
			continue
		}
		if m != nil {
			n++
		}
	}
	return n, nil
}

// foldOne is foldLive for one message.
func (db *DB) foldOne(ctx context.Context, q queryer, m parley.Message) (parley.Message, error) {
	ms := []parley.Message{m}
	if err := db.foldLive(ctx, q, ms); err != nil {
		return nil, err
	}
	return ms[0], nil
}

// queryer is a pool or a transaction.
type queryer interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

// foldLive replaces each STREAMING message of msgs by its content so far: its stored
// appends folded, its Seq the number of the last one folded (read in the same
// statement, so the content and the number agree). Messages that do not stream cost
// nothing.
func (db *DB) foldLive(ctx context.Context, q queryer, msgs []parley.Message) error {
	var keys []string
	at := map[string]int{}
	for i, m := range msgs {
		if m.Meta().Live.Status == parley.StatusStreaming {
			key, _ := parley.ParseMessageID(m.Meta().ID)
			keys = append(keys, key)
			at[key] = i
		}
	}
	if len(keys) == 0 {
		return nil
	}
	rows, err := q.QueryContext(ctx, `SELECT message_id::text, seq, deltas FROM message_deltas
		WHERE message_id = ANY($1::uuid[]) ORDER BY message_id, seq`, pq.Array(keys))
	if err != nil {
		return classify(fmt.Errorf("read streaming messages: %w", err))
	}
	defer rows.Close()
	drafts := map[string]*parley.Draft{}
	seqs := map[string]int{}
	for rows.Next() {
		var key string
		var seq int
		var raw []byte
		if err := rows.Scan(&key, &seq, &raw); err != nil {
			return err
		}
		ds, err := decodeDeltas(raw)
		if err != nil {
			return err
		}
		dr := drafts[key]
		if dr == nil {
			dr = &parley.Draft{}
			drafts[key] = dr
		}
		if err := dr.ApplyAll(ds); err != nil {
			return fmt.Errorf("fold message %s: %w", parley.MessageID(key), err)
		}
		seqs[key] = seq
	}
	if err := rows.Err(); err != nil {
		return err
	}
	for _, key := range keys {
		i := at[key]
		dr := drafts[key]
		if dr == nil {
			dr = &parley.Draft{}
		}
		m := dr.Message()
		meta := *msgs[i].Meta()
		if _, ok := m.(*parley.ToolRequestMessage); ok {
			meta.Role = parley.RoleInvocation
		}
		meta.Live.Seq = seqs[key]
		*m.Meta() = meta
		msgs[i] = m
	}
	return nil
}

// ConversationUsage implements parley.LiveMessageService.
func (db *DB) ConversationUsage(ctx context.Context, conversationID string) (parley.Usage, error) {
	var u parley.Usage
	key, ok := parley.ParseConversationID(conversationID)
	if !ok {
		return u, conversationNotFound(conversationID)
	}
	owner, err := ownerOf(ctx)
	if err != nil {
		return u, err
	}
	// A linked fork's messages are its own and those it shares (db/fork.go), whose
	// usage is the fork's as it would be in a copy: read through its link, as the
	// conversation's own messages are read, all of them.
	err = db.db.QueryRowContext(ctx, `SELECT
		coalesce(sum((provenance->'usage'->>'input')::bigint), 0),
		coalesce(sum((provenance->'usage'->>'output')::bigint), 0),
		coalesce(sum((provenance->'usage'->>'cachedInput')::bigint), 0),
		coalesce(sum((provenance->'usage'->>'cacheCreation')::bigint), 0),
		coalesce(sum((provenance->'usage'->>'reasoning')::bigint), 0)
		FROM (SELECT provenance FROM messages WHERE conversation_id = $1 AND provenance IS NOT NULL AND `+ownedConversation("1", "2")+`
			UNION ALL
			SELECT m.provenance FROM conversations c
			CROSS JOIN LATERAL fork_link_entries(c.id, c.base_depth) e
			JOIN messages m ON m.conversation_id = e.conv AND m.segment = e.seg AND m.depth > e.lo AND m.depth <= e.hi
			WHERE c.id = $1 AND c.owner = $2 AND c.base_depth > 0 AND m.provenance IS NOT NULL) p`, key, owner).
		Scan(&u.InputTokens, &u.OutputTokens, &u.CachedInputTokens, &u.CacheCreationInputTokens, &u.ReasoningTokens)
	if err != nil {
		return u, classify(fmt.Errorf("sum usage of %s: %w", conversationID, err))
	}
	return u, nil
}
