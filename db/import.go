package db

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/lib/pq"

	"github.com/parley-dev/parley"
)

var _ parley.ImportService = (*DB)(nil)

// ImportMessages implements parley.ImportService: one transaction for the whole import,
// so that a failure anywhere leaves the database as it was. What is a copy, what grows
// and what is refused are the domain's rules (parley.PrepareImport, StoredCopies,
// GrowReply); this reads the facts they need and writes what they decide. The messages
// are all in memory, so most bad imports are refused before the database is touched,
// and a transaction aborted by a concurrent one is run again.
func (db *DB) ImportMessages(ctx context.Context, target parley.ImportTarget, imp *parley.Import) (*parley.ImportReport, error) {
	if _, err := parley.PrepareImport(imp, db.limits); err != nil {
		return nil, err
	}
	restore := make([]func(), len(imp.Messages))
	for i, im := range imp.Messages {
		restore[i] = restorer(im.Message)
	}
	return db.importFrom(ctx, target, maxAttempts, true, func() parley.ImportSource {
		// Each run starts afresh: a run aborted by a conflict left nothing behind.
		for _, r := range restore {
			r()
		}
		return parley.SliceSource(imp)
	})
}

// ImportStream implements parley.ImportService. It runs once: src cannot be read again.
func (db *DB) ImportStream(ctx context.Context, target parley.ImportTarget, src parley.ImportSource) (*parley.ImportReport, error) {
	used := false
	return db.importFrom(ctx, target, 1, false, func() parley.ImportSource {
		if used {
			panic("db: a streamed import run twice")
		}
		used = true
		return src
	})
}

// importBatch and importBatchBytes bound a batch of messages read before they are
// stored (their text and tool arguments counted, as the bulk writer counts its rows):
// while one batch is stored the next is read, so two batches' messages are in memory at
// a time, and the bulk writer's rows (flushed at flushRows or flushBytes).
const (
	importBatch      = flushRows
	importBatchBytes = flushBytes
)

// batchReader reads an import's source in batches on a goroutine of its own, so that
// parsing the next batch (CPU in this process) overlaps storing the last one (a COPY
// that Postgres works on): an import of a long session took the sum of the two before.
type batchReader struct {
	batches chan readBatch
	ctx     context.Context
	cancel  context.CancelFunc
	done    chan struct{}
}

type readBatch struct {
	msgs []parley.ImportedMessage
	err  error
}

// readBatches starts reading src: each message checked by check (nil: the messages
// were prepared whole, parley.PrepareImport) and marked imported. The caller calls
// stop when it is done, whether or not it read to the end; src's Import is complete,
// and the goroutine done with src, once next has returned an empty batch.
func readBatches(ctx context.Context, src parley.ImportSource, check *parley.ImportChecker) *batchReader {
	ctx, cancel := context.WithCancel(ctx)
	r := &batchReader{batches: make(chan readBatch), ctx: ctx, cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(r.done)
		defer close(r.batches)
		for {
			b := readBatch{msgs: make([]parley.ImportedMessage, 0, importBatch)}
			size := 0
			for len(b.msgs) < importBatch && size < importBatchBytes {
				im, err := src.Next()
				if errors.Is(err, io.EOF) {
					break
				} else if err != nil {
					b.err = err
					break
				}
				if check != nil {
					if err := check.Check(im); err != nil {
						b.err = err
						break
					}
				}
				parley.MarkImported(im.Message) // history, not requests
				b.msgs = append(b.msgs, im)
				size += messageBytes(im.Message)
			}
			select {
			case r.batches <- b:
			case <-ctx.Done():
				return
			}
			if b.err != nil || len(b.msgs) == 0 {
				return
			}
		}
	}()
	return r
}

// next returns the next batch, an empty one after the last message, or the error that
// ended the reading (the source's, the checker's, or ctx's).
func (r *batchReader) next() ([]parley.ImportedMessage, error) {
	b, ok := <-r.batches
	if !ok {
		return nil, r.ctx.Err() // the import's context ended the reading
	}
	return b.msgs, b.err
}

// stop ends the reading. With wait it also waits for the goroutine to return, so that
// nothing touches src's messages after (an import run again resets them); without, an
// import refused mid-way answers at once rather than when the source's current read
// returns (a client uploading slowly), and the goroutine ends at that read.
func (r *batchReader) stop(wait bool) {
	r.cancel()
	if wait {
		<-r.done
	}
}

// messageBytes is about how much of memory a message read for an import takes: its
// text and its tool calls' arguments.
func messageBytes(m parley.Message) int {
	n := 0
	if t, ok := m.(parley.TextBearing); ok {
		n += len(t.Text())
	}
	switch m := m.(type) {
	case *parley.ToolRequestMessage:
		for _, c := range m.ToolCalls {
			n += len(c.Arguments)
		}
	case *parley.ToolResultMessage:
		n += len(m.ResultText())
	}
	return n
}

// importFrom stores the messages of the source open returns, in one transaction run up
// to attempts times, reading and storing them a batch at a time; prepared says they
// went through parley.PrepareImport already.
func (db *DB) importFrom(ctx context.Context, target parley.ImportTarget, attempts int, prepared bool, open func() parley.ImportSource) (*parley.ImportReport, error) {
	var targetKey string
	if target.ConversationID != "" {
		key, ok := parley.ParseConversationID(target.ConversationID)
		if !ok {
			return nil, conversationNotFound(target.ConversationID)
		}
		targetKey = key
	}
	owner, err := ownerOf(ctx)
	if err != nil {
		return nil, err
	}
	// The title asked for is checked before anything is read; the source's is known
	// at its end.
	if _, err := parley.ImportTitle(target, &parley.Import{}); err != nil {
		return nil, err
	}
	var report *parley.ImportReport
	var src parley.ImportSource
	// A batch the writer sent behind (bulkWriter.flush) ends before the transaction
	// does, and its error is reported before any of a later batch (db.attempt), as when
	// the batches took turns.
	// On a connection held as a *sql.Conn: the batches' COPY writes its text itself
	// (rawCopyIn).
	err = db.transactOn(ctx, attempts, true, func(tx *txn) error {
		src = open()
		report = &parley.ImportReport{Created: targetKey == ""}
		convKey := targetKey
		if convKey == "" {
			if err := tx.GetContext(ctx, &convKey, `INSERT INTO conversations (title, owner) VALUES ('', $1) RETURNING id`, owner); err != nil {
				return fmt.Errorf("create conversation: %w", err)
			}
		} else if err := lockConversation(ctx, tx, convKey); err != nil {
			return err
		} else if err := materializeFork(ctx, tx, convKey); err != nil {
			// An import reads the conversation's messages by source id, its user turns
			// and its tool calls, and may grow a reply it finds: into a linked fork, it
			// works on the fork made real (db/fork.go), whatever it shares.
			return err
		}
		// The conversation's row is this transaction's (created or locked): the writer
		// numbers the messages and bumps the conversation once, at the end.
		w, err := newBulkWriter(ctx, db.db, tx, convKey, report.Created)
		if err != nil {
			return err
		}
		defer w.release(tx)
		var check *parley.ImportChecker
		if !prepared {
			check = parley.NewImportChecker(db.limits)
		}
		stored := parley.NewStoredCopies()
		userTurnsRead := report.Created // a new conversation has nothing
		counts := make(parley.VariantCounter)
		batches := readBatches(ctx, src, check)
		defer batches.stop(attempts > 1) // a streamed source is read once: no run after this one
		for {
			batch, err := batches.next()
			if err != nil {
				return err
			}
			if len(batch) == 0 {
				break
			}
			present, err := w.presentSourceIDs(ctx, tx, sourceIDs(batch))
			if err != nil {
				return err
			}
			if err := w.place.resolve(ctx, tx, batch); err != nil {
				return err
			}
			if !report.Created {
				if err := findCopies(ctx, tx, convKey, batch, stored, !userTurnsRead); err != nil {
					return err
				}
				userTurnsRead = userTurnsRead || needsUserTurns(batch)
				if err := w.loadCalls(ctx, tx, importCallIDs(batch)); err != nil {
					return err
				}
			}
			for _, im := range batch {
				if stored.Has(im.Message) {
					report.AlreadyPresent++
					continue
				}
				if at, ok := present[im.Message.Meta().SourceID]; ok {
					id := im.Message.Meta().SourceID
					w.place.found(id, at)
					grew, err := db.growReply(ctx, tx, convKey, id, at, im.Message, w)
					if err != nil {
						return parley.WithOrigin(im.Origin, err)
					}
					if grew {
						report.Warnings = append(report.Warnings, fmt.Sprintf(
							"%s: the reply %s was imported before it was complete; it is updated with what it has now", im.Origin, id))
					}
					report.AlreadyPresent++
					continue
				}
				// Where it goes in the tree is decided apart from how it is written.
				at, err := w.place.place(ctx, tx, im)
				if err != nil {
					return err
				}
				if err := w.add(ctx, tx, im.Message, at); err != nil {
					return parley.WithOrigin(im.Origin, err)
				}
				counts.Add(im.Message)
			}
		}
		if err := w.finish(ctx, db, tx, src.Import().Leaf); err != nil {
			return err
		}
		imp := src.Import()
		if report.Created {
			title, err := parley.ImportTitle(target, imp)
			if err != nil {
				return err
			}
			if _, err := tx.ExecContext(ctx, `UPDATE conversations SET title = $2 WHERE id = $1`, convKey, title); err != nil {
				return fmt.Errorf("title the conversation: %w", err)
			}
		}
		report.Skipped = imp.Skipped
		report.Warnings = append(append([]string(nil), imp.Warnings...), report.Warnings...)
		report.Added = w.added
		report.AddedByVariant = counts.Counts()
		var row conversationRow
		if err := tx.GetContext(ctx, &row, `SELECT `+conversationColumns+` FROM conversations WHERE id = $1`, convKey); err != nil {
			return err
		}
		report.Conversation = row.conversation()
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("import into %s: %w", describeTarget(target), err)
	}
	if sp := src.Import().SystemPrompt; strings.TrimSpace(sp) != "" {
		report.SystemPrompt = &sp
	}
	return report, nil
}

func sourceIDs(msgs []parley.ImportedMessage) []string {
	var ids []string
	for _, im := range msgs {
		if id := im.Message.Meta().SourceID; id != "" {
			ids = append(ids, id)
		}
	}
	return ids
}

func needsUserTurns(msgs []parley.ImportedMessage) bool {
	userTurns, _ := parley.CopyFacts(msgs)
	return userTurns
}

// importCallIDs lists the tool call ids msgs make or answer: those whose stored rows the
// import must know.
func importCallIDs(msgs []parley.ImportedMessage) []string {
	var ids []string
	for _, im := range msgs {
		switch m := im.Message.(type) {
		case *parley.ToolRequestMessage:
			for _, c := range m.ToolCalls {
				ids = append(ids, c.ID)
			}
		case *parley.ToolResultMessage:
			ids = append(ids, m.ToolCallID)
		}
	}
	return ids
}

// findCopies reads into c the stored messages that incoming messages could be copies of
// (parley.CopyFacts says which).
func findCopies(ctx context.Context, tx *txn, convKey string, msgs []parley.ImportedMessage, c *parley.StoredCopies, readUserTurns bool) error {
	userTurns, callIDs := parley.CopyFacts(msgs)
	if userTurns && readUserTurns { // once an import: they are the conversation's, not the batch's
		// Images are told apart by a digest of their bytes or URL, not the bytes: the
		// same as parley.ImageTurnContent.
		var rows []struct {
			CreatedAt time.Time `db:"created_at"`
			Content   string    `db:"content"`
		}
		if err := tx.SelectContext(ctx, &rows, `SELECT created_at, CASE WHEN kind = 'image'
				THEN 'image:' || md5(coalesce(payload->'source'->>'data', '') || coalesce(payload->'source'->>'url', ''))
				ELSE content END AS content
			FROM messages WHERE conversation_id = $1 AND kind IN ('text', 'image', 'compaction') AND role IN ('user', 'supervisor')`, convKey); err != nil {
			return fmt.Errorf("find stored user turns: %w", err)
		}
		for _, r := range rows {
			c.AddUserTurn(r.CreatedAt, r.Content)
		}
	}
	if len(callIDs) > 0 {
		var rows []struct {
			CallID  string `db:"call_id"`
			Content string `db:"content"`
		}
		if err := tx.SelectContext(ctx, &rows, `SELECT tc.call_id, m.content FROM tool_calls tc
			JOIN messages m ON m.id = tc.result_id
			WHERE tc.conversation_id = $1 AND tc.call_id = ANY($2)`, convKey, pq.Array(callIDs)); err != nil {
			return fmt.Errorf("find stored tool results: %w", err)
		}
		for _, r := range rows {
			c.AddResult(r.CallID, r.Content)
		}
	}
	return nil
}

// growReply reads the message imported before under sourceID and, when parley.GrowReply
// says the incoming one m is a longer copy of it, writes the longer one over it, keeping
// its id, position, time and the decisions on its calls. It reports whether it did.
func (db *DB) growReply(ctx context.Context, tx *txn, convKey, sourceID string, at spot, m parley.Message, w *bulkWriter) (bool, error) {
	switch m := m.(type) {
	case *parley.ToolRequestMessage:
	case *parley.TextMessage:
		if m.Role != parley.RoleAssistant {
			return false, nil
		}
	default:
		return false, nil // only a reply can grow: no need to read the stored one
	}
	var row messageRow
	err := tx.GetContext(ctx, &row, `SELECT `+messageColumns+` FROM messages
		WHERE conversation_id = $1 AND source_id = $2 FOR UPDATE`, convKey, sourceID)
	if err != nil {
		return false, fmt.Errorf("read imported reply %s: %w", sourceID, err)
	}
	stored, err := decodeMessage(&row, nil)
	if err != nil {
		return false, err
	}
	updated, added, ok := parley.GrowReply(stored, m)
	if !ok {
		return false, nil
	}
	if err := rewriteMessage(ctx, tx, convKey, row.ID, updated); err != nil {
		return false, fmt.Errorf("update imported reply %s: %w", sourceID, err)
	}
	if len(added) > 0 {
		if err := recordToolCalls(ctx, tx, convKey, row.ID, added); err != nil {
			return false, err
		}
		w.noteStoredCalls(row.ID, at, added)
	}
	return true, nil
}

// sourceSpotsSQL finds where messages of a conversation ($1) with the source ids $2 are
// in its tree: one index lookup per id, whatever the statistics say (with source_id =
// ANY, once the conversation had grown by a few batches, Postgres scanned its messages
// for each batch of an import).
const sourceSpotsSQL = `SELECT m.source_id, m.segment, m.depth FROM unnest($2::text[]) AS s(source_id)
	CROSS JOIN LATERAL (SELECT source_id, segment, depth FROM messages
		WHERE conversation_id = $1 AND source_id = s.source_id) m`

// presentSourceIDs returns which of ids the conversation's messages already have, and
// where they are in its tree. A conversation the import made has none of them: it holds
// only the import's messages, and no two of those share a source id (the import's
// checker, or parley.PrepareImport, refused it before the batch came here), so it is
// asked nothing, and no set of the source ids sent is kept to ask (100,000 inserts and
// lookups an import of 100,000 messages).
func (w *bulkWriter) presentSourceIDs(ctx context.Context, tx *txn, ids []string) (map[string]spot, error) {
	present := make(map[string]spot)
	if len(ids) == 0 || w.fresh {
		return present, nil
	}
	var found []struct {
		SourceID string `db:"source_id"`
		spot
	}
	if err := tx.SelectContext(ctx, &found, sourceSpotsSQL, w.convKey, pq.Array(ids)); err != nil {
		return nil, fmt.Errorf("find imported source ids: %w", err)
	}
	for _, f := range found {
		present[f.SourceID] = f.spot
	}
	return present, nil
}

func describeTarget(t parley.ImportTarget) string {
	if t.ConversationID != "" {
		return t.ConversationID
	}
	return "a new conversation"
}
