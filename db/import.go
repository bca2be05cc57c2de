package db

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/lib/pq"

	"github.com/parley-dev/parley"
)

var _ parley.ImportService = (*DB)(nil)

// ImportMessages implements parley.ImportService: one transaction for the whole import,
// so that a failure anywhere leaves the database as it was. What is a copy, what grows
// and what is refused are the domain's rules (parley.PrepareImport, StoredCopies,
// GrowReply); this reads the facts they need and writes what they decide.
func (db *DB) ImportMessages(ctx context.Context, target parley.ImportTarget, imp *parley.Import) (*parley.ImportReport, error) {
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
	title, err := parley.ImportTitle(target, imp)
	if err != nil {
		return nil, err
	}
	ids, err := parley.PrepareImport(imp, db.limits)
	if err != nil {
		return nil, err
	}
	restore := make([]func(), len(imp.Messages))
	for i, im := range imp.Messages {
		restore[i] = restorer(im.Message)
	}
	var report *parley.ImportReport
	var added []parley.Message
	err = db.transact(ctx, func(tx *txn) error {
		// Each run starts afresh: a run aborted by a conflict left nothing behind.
		for _, r := range restore {
			r()
		}
		report = &parley.ImportReport{Created: targetKey == "", Skipped: imp.Skipped,
			Warnings: append([]string(nil), imp.Warnings...)}
		added = added[:0]
		convKey := targetKey
		if convKey == "" {
			if err := tx.GetContext(ctx, &convKey, `INSERT INTO conversations (title, owner) VALUES ($1, $2) RETURNING id`, title, owner); err != nil {
				return fmt.Errorf("create conversation: %w", err)
			}
		} else if err := lockConversation(ctx, tx, convKey); err != nil {
			return err
		}
		present, err := presentSourceIDs(ctx, tx, convKey, ids)
		if err != nil {
			return err
		}
		stored := parley.NewStoredCopies()
		if !report.Created { // a new conversation has nothing
			if err := findCopies(ctx, tx, convKey, imp.Messages, stored); err != nil {
				return err
			}
		}
		// The conversation's row is this transaction's (created or locked): the messages
		// are numbered here and the conversation bumped once, at the end (see
		// insertMessageAt).
		var last int
		if err := tx.GetContext(ctx, &last, `SELECT last_position FROM conversations WHERE id = $1`, convKey); err != nil {
			return err
		}
		for _, im := range imp.Messages {
			if stored.Has(im.Message) {
				report.AlreadyPresent++
				continue
			}
			if id := im.Message.Meta().SourceID; id != "" && present[id] {
				grew, err := db.growReply(ctx, tx, convKey, id, im.Message)
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
			if err := db.insertMessageAt(ctx, tx, convKey, im.Message, last+1, nil); err != nil {
				return parley.WithOrigin(im.Origin, err)
			}
			last++
			added = append(added, im.Message)
		}
		if len(added) > 0 {
			if _, err := tx.ExecContext(ctx, `UPDATE conversations SET last_position = $2,
				message_count = message_count + $3, updated_at = now() WHERE id = $1`, convKey, last, len(added)); err != nil {
				return fmt.Errorf("bump conversation: %w", err)
			}
		}
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
	if strings.TrimSpace(imp.SystemPrompt) != "" {
		sp := imp.SystemPrompt
		report.SystemPrompt = &sp
	}
	report.Added = len(added)
	report.AddedByVariant = parley.CountVariants(added)
	return report, nil
}

// findCopies reads into c the stored messages that incoming messages could be copies of
// (parley.CopyFacts says which).
func findCopies(ctx context.Context, tx *txn, convKey string, msgs []parley.ImportedMessage, c *parley.StoredCopies) error {
	userTurns, callIDs := parley.CopyFacts(msgs)
	if userTurns {
		// Images are told apart by a digest of their bytes or URL, not the bytes: the
		// same as parley.ImageTurnContent.
		var rows []struct {
			CreatedAt time.Time `db:"created_at"`
			Content   string    `db:"content"`
		}
		if err := tx.SelectContext(ctx, &rows, `SELECT created_at, CASE WHEN kind = 'image'
				THEN 'image:' || md5(coalesce(payload->'source'->>'data', '') || coalesce(payload->'source'->>'url', ''))
				ELSE content END AS content
			FROM messages WHERE conversation_id = $1 AND kind IN ('text', 'image') AND role IN ('user', 'supervisor')`, convKey); err != nil {
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
func (db *DB) growReply(ctx context.Context, tx *txn, convKey, sourceID string, m parley.Message) (bool, error) {
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
	}
	return true, nil
}

// presentSourceIDs returns which of ids the conversation's messages already have.
func presentSourceIDs(ctx context.Context, tx *txn, convKey string, ids []string) (map[string]bool, error) {
	present := make(map[string]bool)
	if len(ids) == 0 {
		return present, nil
	}
	var found []string
	if err := tx.SelectContext(ctx, &found, `SELECT source_id FROM messages
		WHERE conversation_id = $1 AND source_id = ANY($2)`, convKey, pq.Array(ids)); err != nil {
		return nil, fmt.Errorf("find imported source ids: %w", err)
	}
	for _, id := range found {
		present[id] = true
	}
	return present, nil
}

func describeTarget(t parley.ImportTarget) string {
	if t.ConversationID != "" {
		return t.ConversationID
	}
	return "a new conversation"
}
