package db

import (
	"context"
	"crypto/md5"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/lib/pq"

	"github.com/parley-dev/parley"
)

var _ parley.ImportService = (*DB)(nil)

// ImportMessages implements parley.ImportService: one transaction for the whole import,
// so that a failure anywhere leaves the database as it was.
func (db *DB) ImportMessages(ctx context.Context, target parley.ImportTarget, imp *parley.Import) (*parley.ImportReport, error) {
	var convKey string
	if target.ConversationID != "" {
		key, ok := parley.ParseConversationID(target.ConversationID)
		if !ok {
			return nil, conversationNotFound(target.ConversationID)
		}
		convKey = key
	}
	owner, err := ownerOf(ctx)
	if err != nil {
		return nil, err
	}
	title, err := importTitle(target, imp)
	if err != nil {
		return nil, err
	}
	// Validate everything before touching the database: most bad imports fail here.
	seen := make(map[string]string, len(imp.Messages))
	ids := make([]string, 0, len(imp.Messages))
	for _, im := range imp.Messages {
		if err := parley.Prepare(im.Message, db.limits); err != nil {
			return nil, withOrigin(im.Origin, err)
		}
		if id := im.Message.Meta().SourceID; id != "" {
			if prev, dup := seen[id]; dup {
				return nil, parley.Errorf(parley.EINVALID, "%s: source id %q is also the id of %s", im.Origin, id, prev)
			}
			seen[id] = im.Origin
			ids = append(ids, id)
		}
	}
	report := &parley.ImportReport{Created: convKey == "", Skipped: imp.Skipped, Warnings: imp.Warnings}
	if strings.TrimSpace(imp.SystemPrompt) != "" {
		sp := imp.SystemPrompt
		report.SystemPrompt = &sp
	}
	var added []parley.Message
	err = db.transact(ctx, func(tx *txn) error {
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
		stored, err := findCopies(ctx, tx, convKey, report.Created, imp.Messages)
		if err != nil {
			return err
		}
		// The conversation's row is this transaction's (created or locked): the messages
		// are numbered here and the conversation bumped once, at the end (see
		// insertMessageAt).
		var last int
		if err := tx.GetContext(ctx, &last, `SELECT last_position FROM conversations WHERE id = $1`, convKey); err != nil {
			return err
		}
		for _, im := range imp.Messages {
			if stored.has(im.Message) {
				report.AlreadyPresent++
				continue
			}
			if id := im.Message.Meta().SourceID; id != "" && present[id] {
				grew, err := growReply(ctx, tx, convKey, id, im.Message)
				if err != nil {
					return withOrigin(im.Origin, err)
				}
				if grew {
					report.Warnings = append(report.Warnings, fmt.Sprintf(
						"%s: the reply %s was imported before it was complete; it is updated with what it has now", im.Origin, id))
				}
				report.AlreadyPresent++
				continue
			}
			if err := db.insertMessageAt(ctx, tx, convKey, im.Message, last+1); err != nil {
				return withOrigin(im.Origin, err)
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
	report.Added = len(added)
	report.AddedByVariant = parley.CountVariants(added)
	return report, nil
}

// copies are messages a conversation has that an import may bring again under other
// source ids: a resumed Claude Code session re-writes earlier turns with new record ids
// but the same times and text. A user's (or supervisor's) text or image with the same
// time and content as a stored one, and a result for a call that already has a result
// with the same text, are such copies. (A result with other text for an answered call
// is still refused.)
type copies struct {
	userTurns map[string]bool   // created_at and content of stored user-side text and images
	results   map[string]string // call id -> content of its stored result
}

func userTurnKey(at time.Time, content string) string {
	return fmt.Sprintf("%d\x00%s", at.UnixMicro(), content)
}

func findCopies(ctx context.Context, tx *txn, convKey string, created bool, msgs []parley.ImportedMessage) (*copies, error) {
	c := &copies{userTurns: make(map[string]bool), results: make(map[string]string)}
	if created {
		return c, nil // a new conversation has nothing
	}
	var callIDs []string
	timedUser := false
	for _, im := range msgs {
		switch m := im.Message.(type) {
		case *parley.ToolResultMessage:
			callIDs = append(callIDs, m.ToolCallID)
		case *parley.TextMessage, *parley.ImageMessage:
			meta := m.Meta()
			timedUser = timedUser || (meta.Role != parley.RoleAssistant && !meta.CreatedAt.IsZero())
		}
	}
	if timedUser {
		// Images are told apart by a digest of their bytes or URL, not the bytes.
		var rows []struct {
			CreatedAt time.Time `db:"created_at"`
			Content   string    `db:"content"`
		}
		if err := tx.SelectContext(ctx, &rows, `SELECT created_at, CASE WHEN kind = 'image'
				THEN 'image:' || md5(coalesce(payload->'source'->>'data', '') || coalesce(payload->'source'->>'url', ''))
				ELSE content END AS content
			FROM messages WHERE conversation_id = $1 AND kind IN ('text', 'image') AND role IN ('user', 'supervisor')`, convKey); err != nil {
			return nil, fmt.Errorf("find stored user turns: %w", err)
		}
		for _, r := range rows {
			c.userTurns[userTurnKey(r.CreatedAt, r.Content)] = true
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
			return nil, fmt.Errorf("find stored tool results: %w", err)
		}
		for _, r := range rows {
			c.results[r.CallID] = r.Content
		}
	}
	return c, nil
}

// has reports whether m is a copy of a stored message.
func (c *copies) has(m parley.Message) bool {
	switch m := m.(type) {
	case *parley.TextMessage:
		return m.Role != parley.RoleAssistant && !m.CreatedAt.IsZero() && c.userTurns[userTurnKey(m.CreatedAt, m.Content())]
	case *parley.ImageMessage:
		sum := md5.Sum([]byte(m.Source.Data + m.Source.URL))
		return m.Role == parley.RoleUser && !m.CreatedAt.IsZero() &&
			c.userTurns[userTurnKey(m.CreatedAt, "image:"+hex.EncodeToString(sum[:]))]
	case *parley.ToolResultMessage:
		stored, ok := c.results[m.ToolCallID]
		return ok && stored == m.Content()
	}
	return false
}

// growReply brings up to date an assistant reply imported before the source had all of
// it (a session file read while the reply was being written): when the new copy has
// more parts or more tool calls than the stored one, and keeps every stored call, the
// stored message takes the new content, keeping its id, position, time and the
// decisions on its calls. Anything else already imported is left as it is.
func growReply(ctx context.Context, tx *txn, convKey, sourceID string, m parley.Message) (bool, error) {
	var newCalls []parley.ToolCall
	var body parley.Body
	switch m := m.(type) {
	case *parley.ToolRequestMessage:
		newCalls, body = m.ToolCalls, m.Body
	case *parley.TextMessage:
		if m.Role != parley.RoleAssistant {
			return false, nil
		}
		body = m.Body
	default:
		return false, nil
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
	var oldCalls []parley.ToolCall
	var oldBody parley.Body
	switch s := stored.(type) {
	case *parley.ToolRequestMessage:
		oldCalls, oldBody = s.ToolCalls, s.Body
	case *parley.TextMessage:
		if s.Role != parley.RoleAssistant {
			return false, nil
		}
		oldBody = s.Body
	default:
		return false, nil
	}
	if len(newCalls) <= len(oldCalls) && len(body.Parts) <= len(oldBody.Parts) {
		return false, nil
	}
	byID := make(map[string]parley.ToolCall, len(oldCalls))
	for _, c := range oldCalls {
		byID[c.ID] = c
	}
	calls := make([]parley.ToolCall, 0, len(newCalls))
	var added []parley.ToolCall
	for _, c := range newCalls {
		if old, ok := byID[c.ID]; ok {
			calls = append(calls, old) // keeps its approval
			delete(byID, c.ID)
			continue
		}
		calls = append(calls, c)
		added = append(added, c)
	}
	if len(byID) > 0 {
		return false, nil // not a longer copy of the same reply: leave it
	}
	meta := *stored.Meta()
	var updated parley.Message = &parley.TextMessage{MessageMeta: meta, Body: body}
	if len(calls) > 0 {
		meta.Role = parley.RoleInvocation
		updated = &parley.ToolRequestMessage{MessageMeta: meta, Body: body, ToolCalls: calls}
	}
	enc, err := encodeMessage(updated)
	if err != nil {
		return false, err
	}
	_, err = tx.ExecContext(ctx, `UPDATE messages SET schema_version = $2, kind = $3, role = $4, content = $5,
		tool_calls = $6, payload = $7, updated_at = now() WHERE id = $1`,
		row.ID, enc.SchemaVersion, enc.Kind, enc.Role, enc.Content, nullJSON(enc.ToolCalls), enc.Payload)
	if err != nil {
		return false, fmt.Errorf("update imported reply %s: %w", sourceID, err)
	}
	if len(added) > 0 {
		if err := recordToolCalls(ctx, tx, convKey, row.ID, added); err != nil {
			return false, err
		}
	}
	if _, err := markMessageChanged(ctx, tx, convKey, row.ID); err != nil {
		return false, err
	}
	return true, nil
}

// importTitle is the title of the conversation an import creates: the one asked for,
// checked as any title is, or the source's, made to fit.
func importTitle(target parley.ImportTarget, imp *parley.Import) (string, error) {
	if target.ConversationID != "" {
		return "", nil
	}
	if target.Title != "" {
		return parley.CleanTitle(target.Title)
	}
	t, err := parley.CleanText("title", imp.Title)
	if err != nil {
		return "", nil // a source's unusable title is no reason to refuse its history
	}
	t = strings.Join(strings.Fields(t), " ")
	if utf8.RuneCountInString(t) > parley.MaxTitleLength {
		t = string([]rune(t)[:parley.MaxTitleLength-1]) + "…"
	}
	return t, nil
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

// withOrigin puts where a message came from in front of a user-facing error about it.
func withOrigin(origin string, err error) error {
	var perr *parley.Error
	if origin == "" || !errors.As(err, &perr) || perr.Code == parley.EINTERNAL {
		return err
	}
	return &parley.Error{Code: perr.Code, Message: origin + ": " + perr.Message}
}

func describeTarget(t parley.ImportTarget) string {
	if t.ConversationID != "" {
		return t.ConversationID
	}
	return "a new conversation"
}
