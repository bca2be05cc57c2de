package db

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/lib/pq"

	"github.com/parley-dev/parley"
)

// Group commit of appends. A streaming message's appends arrive from many writers at
// once (a chat product streams hundreds of replies at a time, each a few appends a
// second). Committing each alone costs a commit (a WAL flush when durability is on) and
// a round trip per append, and that, not the work of the append, bounded the rate
// appends could be taken at. So the appends that take the fast path (appendFast) are
// gathered: those that arrive while a commit is in flight wait for it to finish, and
// are then written together, by one statement in one transaction. Each caller is
// acknowledged only after that commit: an acknowledged append is as durable as it was
// alone. The sequence checks stay per append, in the statement (stream_seq = seq - 1):
// an append whose check fails writes nothing and its caller takes the locking path, as
// before, so retries and gaps are answered exactly as they were.
//
// There is no timer: a lone append is written at once, and batches grow only as much as
// the load makes them (by how many appends arrive during one commit).
//
// Once a batch has committed, each append is handed to this process's subscribers
// (DB.OnAppended: the realtime Hub's tail) before its writer is acknowledged, so they
// need not read the database to see it; the batch sends one notification (per
// conversationsPerNotification conversations), naming the conversations it appended to
// and this process, for the other replicas, whose subscribers read the database. Appends
// that take the locking path notify one by one, without naming the process, and every
// replica reads them, this one included.

// maxGroup bounds the appends written by one statement: a batch of a few hundred
// already makes the commit's cost negligible per append, and a bound keeps one
// statement's arrays, and its locks, small.
const maxGroup = 256

// groupTimeout bounds one batch's statement and commit. It runs for many callers, so
// no caller's context may cut it short; a caller that gives up just stops waiting.
const groupTimeout = 30 * time.Second

// pendingAppend is one fast-path append waiting to be written with others.
type pendingAppend struct {
	key    string // the message
	seq    int
	deltas string
	events sql.NullString
	prov   sql.NullString
	format sql.NullString
	owner  string
	// conv and batch are what the process's subscribers are given once it is
	// committed (DB.OnAppended).
	conv  string
	batch parley.DeltaBatch

	queued time.Time     // when it joined the queue
	done   chan struct{} // closed when the fields below are set
	lease  time.Time
	ok     bool // written; false: its check failed and nothing of it was
	err    error
}

// appendGroup gathers appends and writes them a batch at a time, one batch in flight.
type appendGroup struct {
	db      *DB
	mu      sync.Mutex
	queue   []*pendingAppend
	running bool // a goroutine is writing batches
}

// write writes p with whatever other appends it can be batched with, and returns once
// the batch has committed (or failed), or ctx ended (when p may yet be written: its
// writer, not knowing, sends it again, and a repeated append is acknowledged as such).
func (g *appendGroup) write(ctx context.Context, p *pendingAppend) error {
	p.done = make(chan struct{})
	p.queued = time.Now()
	g.mu.Lock()
	g.queue = append(g.queue, p)
	if !g.running {
		g.running = true
		go g.run()
	}
	g.mu.Unlock()
	select {
	case <-p.done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// run writes batches until the queue is empty.
func (g *appendGroup) run() {
	for {
		g.mu.Lock()
		batch := g.queue
		if len(batch) > maxGroup {
			batch = batch[:maxGroup:maxGroup]
			g.queue = g.queue[maxGroup:]
		} else {
			g.queue = nil
		}
		if len(batch) == 0 {
			g.running = false
			g.mu.Unlock()
			return
		}
		g.mu.Unlock()
		g.flush(batch)
	}
}

// flush writes a batch in one transaction and tells each of its appends how it went.
// A batch that fails as a whole for a reason one of its appends may have caused (a
// value Postgres refuses) is written again one append at a time, so that an append
// fails only for itself.
func (g *appendGroup) flush(batch []*pendingAppend) {
	defer func() {
		for _, p := range batch {
			close(p.done)
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), groupTimeout)
	defer cancel()
	began := time.Now()
	err := g.db.writeAppends(ctx, batch)
	switch {
	case err == nil:
	case len(batch) > 1 && !unavailable(err):
		for _, p := range batch {
			if err := g.db.writeAppends(ctx, []*pendingAppend{p}); err != nil {
				p.err = err
			}
		}
	default:
		for _, p := range batch {
			p.err = err
		}
	}
	if f := g.db.timed; f != nil {
		written := time.Since(began)
		for _, p := range batch {
			f(began.Sub(p.queued), written)
		}
	}
	g.db.delivered(batch)
}

// delivered hands the appends of a batch that were written to the process's
// subscribers (OnAppended), in order. An append whose write failed may yet have
// committed (the connection was lost after the commit, before the answer): its
// conversation's subscribers are told to read the database.
func (db *DB) delivered(batch []*pendingAppend) {
	f := db.appended
	if f == nil {
		return
	}
	for _, p := range batch {
		switch {
		case p.err != nil:
			f(parley.ConversationID(p.conv), nil)
		case p.ok:
			f(parley.ConversationID(p.conv), &p.batch)
		}
	}
}

// conversationsPerNotification bounds the conversations one notification of a batch
// names: 150 ids of 39 bytes stay well under Postgres's 8000-byte payload limit.
const conversationsPerNotification = 150

// unavailable reports whether err says the database could not be reached or is shutting
// down: then trying the appends one at a time would fail the same way, more slowly.
func unavailable(err error) bool {
	var pe *pq.Error
	if errors.As(err, &pe) {
		c := pe.Code.Class()
		return c == "08" || c == "57" || c == "53"
	}
	return errors.Is(err, context.DeadlineExceeded) || errors.Is(err, sql.ErrConnDone) || errors.Is(err, errUnavailable)
}

// appendGroupSQL writes appends: the arrays ($1 to $7) hold one append each at the
// same index. Each is written only if its message is still streaming, at the number
// before it, and its owner's. The conversations written to are notified on channel $8,
// up to conversationsPerNotification ($10) to a notification, with kind "delta", the
// writing process $9 and the conversations' keys. Anything else (a retry, a gap, an end,
// another replica's append) writes nothing of it, and its caller takes the locking path
// to find out which. No two appends of one batch are to the same message (a message's
// fast-path appends are one at a time: see appendFast). One statement is one
// transaction: one commit for the batch.
const appendGroupSQL = `
	WITH input AS (
		SELECT * FROM unnest($1::uuid[], $2::int[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[])
			AS i(id, seq, deltas, events, prov, format, owner)
	), upd AS (
		UPDATE messages m SET stream_seq = i.seq, lease_until = now() + make_interval(secs => m.lease_seconds),
			first_delta_at = coalesce(m.first_delta_at, now()), provenance = coalesce(i.prov::jsonb, m.provenance),
			stream_format = coalesce(i.format, m.stream_format)
		FROM input i
		WHERE m.id = i.id AND m.status = 'streaming' AND m.stream_seq = i.seq - 1
			AND EXISTS (SELECT 1 FROM conversations own WHERE own.id = m.conversation_id AND own.owner = i.owner)
		RETURNING m.id, m.conversation_id, i.seq, i.deltas, i.events, m.lease_until
	), ins AS (
		INSERT INTO message_deltas (message_id, seq, deltas, events)
		SELECT id, seq, deltas::jsonb, events::jsonb FROM upd
	), note AS (
		SELECT pg_notify($8, json_build_object('k', 'delta', 'r', $9::text, 'cs', array_agg(c))::text)
		FROM (SELECT c, (row_number() OVER () - 1) / $10::int AS chunk
			FROM (SELECT DISTINCT conversation_id::text AS c FROM upd) d) n
		GROUP BY chunk
	)
	SELECT upd.id::text, upd.lease_until, (SELECT count(*) FROM note) AS notes FROM upd`

// writeAppends writes appends by one statement, setting each one's ok and lease.
func (db *DB) writeAppends(ctx context.Context, batch []*pendingAppend) error {
	n := len(batch)
	ids, seqs := make([]string, n), make([]int64, n)
	deltas, owners := make([]string, n), make([]string, n)
	events, provs, formats := make([]sql.NullString, n), make([]sql.NullString, n), make([]sql.NullString, n)
	byKey := make(map[string]*pendingAppend, n)
	for i, p := range batch {
		ids[i], seqs[i], deltas[i], owners[i] = p.key, int64(p.seq), p.deltas, p.owner
		events[i], provs[i], formats[i] = p.events, p.prov, p.format
		byKey[p.key] = p
	}
	args := []any{pq.Array(ids), pq.Array(seqs), pq.Array(deltas), pq.Array(events), pq.Array(provs),
		pq.Array(formats), pq.Array(owners), NotifyChannel, db.origin, conversationsPerNotification}
	rows, err := db.query(ctx, appendGroupSQL, args...)
	if err != nil {
		return fmt.Errorf("append to %d messages: %w", n, err)
	}
	defer rows.Close()
	type written struct {
		p     *pendingAppend
		lease time.Time
	}
	var done []written
	for rows.Next() {
		var key string
		var lease time.Time
		var notes int
		if err := rows.Scan(&key, &lease, &notes); err != nil {
			return err
		}
		if p := byKey[key]; p != nil {
			done = append(done, written{p, lease})
		}
	}
	// The statement has committed only once its rows are all read without error.
	if err := rows.Err(); err != nil {
		return fmt.Errorf("append to %d messages: %w", n, err)
	}
	for _, w := range done {
		w.p.ok, w.p.lease = true, w.lease
	}
	return nil
}
