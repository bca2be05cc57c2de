package db

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/parley-dev/parley"
)

// Ensure DB implements the services.
var (
	_ parley.ConversationService = (*DB)(nil)
	_ parley.MessageService      = (*DB)(nil)
)

type conversationRow struct {
	ID           string         `db:"id"`
	Title        string         `db:"title"`
	CreatedAt    time.Time      `db:"created_at"`
	UpdatedAt    time.Time      `db:"updated_at"`
	MessageCount int            `db:"message_count"`
	LastPosition int            `db:"last_position"`
	ForkedFrom   sql.NullString `db:"forked_from"`
}

// A conversation's message count and last position are its active branch's length.
const conversationColumns = `id, title, created_at, updated_at, ` + leafDepth + ` AS message_count, ` + leafDepth + ` AS last_position, forked_from::text AS forked_from`

// findConversationSQL reads a conversation of an owner. It runs prepared (DB.prepare):
// every read of a history starts with it.
const findConversationSQL = `SELECT ` + conversationColumns + ` FROM conversations WHERE id = $1 AND owner = $2`

func (r *conversationRow) conversation() *parley.Conversation {
	return &parley.Conversation{
		ID:           parley.ConversationID(r.ID),
		Title:        r.Title,
		CreatedAt:    r.CreatedAt,
		UpdatedAt:    r.UpdatedAt,
		MessageCount: r.MessageCount,
		LastPosition: r.LastPosition,
		ForkedFrom:   messageIDOf(r.ForkedFrom),
	}
}

func messageIDOf(key sql.NullString) string {
	if !key.Valid {
		return ""
	}
	return parley.MessageID(key.String)
}

func conversationNotFound(id string) error {
	return parley.Errorf(parley.ENOTFOUND, "conversation %q not found", id)
}

// FindConversationByID implements parley.ConversationService.
func (db *DB) FindConversationByID(ctx context.Context, id string) (*parley.Conversation, error) {
	key, ok := parley.ParseConversationID(id)
	if !ok {
		return nil, conversationNotFound(id)
	}
	owner, err := ownerOf(ctx)
	if err != nil {
		return nil, err
	}
	var row conversationRow
	err = db.get(ctx, &row, findConversationSQL, key, owner)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, conversationNotFound(id)
	} else if err != nil {
		return nil, classify(fmt.Errorf("find conversation %s: %w", id, err))
	}
	return row.conversation(), nil
}

// CreateConversation implements parley.ConversationService.
func (db *DB) CreateConversation(ctx context.Context, title string) (*parley.Conversation, error) {
	owner, err := ownerOf(ctx)
	if err != nil {
		return nil, err
	}
	title, err = parley.CleanTitle(title)
	if err != nil {
		return nil, err
	}
	var row conversationRow
	err = db.transact(ctx, func(tx *txn) error {
		return tx.GetContext(ctx, &row, `INSERT INTO conversations (title, owner) VALUES ($1, $2) RETURNING `+conversationColumns, title, owner)
	})
	if err != nil {
		return nil, fmt.Errorf("create conversation: %w", err)
	}
	return row.conversation(), nil
}

// RenameConversation implements parley.ConversationService.
func (db *DB) RenameConversation(ctx context.Context, id, title string) (*parley.Conversation, error) {
	key, ok := parley.ParseConversationID(id)
	if !ok {
		return nil, conversationNotFound(id)
	}
	owner, err := ownerOf(ctx)
	if err != nil {
		return nil, err
	}
	title, err = parley.CleanTitle(title)
	if err != nil {
		return nil, err
	}
	var row conversationRow
	err = db.transact(ctx, func(tx *txn) error {
		err := tx.GetContext(ctx, &row, `UPDATE conversations SET title = $2, updated_at = now()
			WHERE id = $1 AND owner = $3 RETURNING `+conversationColumns, key, title, owner)
		if errors.Is(err, sql.ErrNoRows) {
			return conversationNotFound(id)
		}
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("rename conversation %s: %w", id, err)
	}
	return row.conversation(), nil
}

// DeleteConversation implements parley.ConversationService.
func (db *DB) DeleteConversation(ctx context.Context, id string) error {
	key, ok := parley.ParseConversationID(id)
	if !ok {
		return conversationNotFound(id)
	}
	owner, err := ownerOf(ctx)
	if err != nil {
		return err
	}
	return db.transact(ctx, func(tx *txn) error {
		// The forks sharing its rows get their own copies first (db/fork.go), and the forks
		// made from its messages (rows, or rows it shares: a range of derived ids) lose
		// their forkedFrom.
		if err := materializeForksOf(ctx, tx, key, 0, 0); err != nil {
			return err
		}
		// A probe of conversations_forked_from_idx per message, as the foreign key's
		// ON DELETE SET NULL made before 000025, and one range of it for the derived ids.
		if _, err := tx.ExecContext(ctx, `UPDATE conversations f SET forked_from = NULL
			FROM messages m WHERE m.conversation_id = $1 AND f.forked_from = m.id`, key); err != nil {
			return fmt.Errorf("unlink the forks of %s: %w", id, err)
		}
		if _, err := tx.ExecContext(ctx, `UPDATE conversations f SET forked_from = NULL
			FROM conversations c WHERE c.id = $1 AND c.owner = $2 AND c.fork_no IS NOT NULL
				AND f.forked_from BETWEEN fork_message_id(c.fork_no, 0) AND fork_message_id(c.fork_no, 2147483647)`,
			key, owner); err != nil {
			return fmt.Errorf("unlink the forks of %s: %w", id, err)
		}
		res, err := tx.ExecContext(ctx, `DELETE FROM conversations WHERE id = $1 AND owner = $2`, key, owner)
		if err != nil {
			return fmt.Errorf("delete conversation %s: %w", id, err)
		}
		if n, err := res.RowsAffected(); err != nil {
			return err
		} else if n == 0 {
			return conversationNotFound(id)
		}
		// Ends the conversation's subscriptions on every replica.
		return notifyDeleted(ctx, tx, key)
	})
}

// FindConversations implements parley.ConversationService: keyset pagination over
// (updated_at, id), newest first.
func (db *DB) FindConversations(ctx context.Context, page parley.PageRequest) (*parley.ConversationPage, error) {
	page, err := parley.CheckPage(page)
	if err != nil {
		return nil, err
	}
	owner, err := ownerOf(ctx)
	if err != nil {
		return nil, err
	}
	where, args := "owner = $1", []any{owner}
	if page.After != nil {
		ts, key, err := parley.ParseConversationCursor("after", *page.After)
		if err != nil {
			return nil, err
		}
		args = append(args, ts, key)
		where += fmt.Sprintf(" AND (updated_at, id) < ($%d, $%d)", len(args)-1, len(args))
	}
	if page.Before != nil {
		ts, key, err := parley.ParseConversationCursor("before", *page.Before)
		if err != nil {
			return nil, err
		}
		args = append(args, ts, key)
		where += fmt.Sprintf(" AND (updated_at, id) > ($%d, $%d)", len(args)-1, len(args))
	}
	// Forward pages read newest first from the after cursor; backward pages read oldest
	// first from the before cursor and are reversed.
	backward := page.First == nil
	limit := 0
	order := "DESC"
	if backward {
		limit, order = *page.Last, "ASC"
	} else {
		limit = *page.First
	}
	var rows []conversationRow
	query := fmt.Sprintf(`SELECT %s FROM conversations WHERE %s ORDER BY updated_at %s, id %s LIMIT %d`,
		conversationColumns, where, order, order, limit+1)
	if err := db.db.SelectContext(ctx, &rows, query, args...); err != nil {
		return nil, classify(fmt.Errorf("find conversations: %w", err))
	}
	more := len(rows) > limit
	if more {
		rows = rows[:limit]
	}
	if backward {
		slices.Reverse(rows)
	}
	out := &parley.ConversationPage{}
	if !backward && page.Last != nil && len(rows) > *page.Last {
		rows = rows[len(rows)-*page.Last:]
		out.HasPreviousPage = true
	}
	for i := range rows {
		out.Conversations = append(out.Conversations, rows[i].conversation())
		out.Cursors = append(out.Cursors, parley.ConversationCursor(rows[i].UpdatedAt, rows[i].ID))
	}
	if backward {
		out.HasPreviousPage = more
		out.HasNextPage = page.Before != nil
	} else {
		out.HasNextPage = more
		out.HasPreviousPage = out.HasPreviousPage || page.After != nil
	}
	return out, nil
}

// countConversationsSQL reads the owner's count, which triggers on conversations keep
// (migration 000006): one index lookup however many conversations there are.
const countConversationsSQL = `SELECT COALESCE((SELECT conversations FROM conversation_counts WHERE owner = $1), 0)`

// CountConversations returns how many conversations the owner has.
func (db *DB) CountConversations(ctx context.Context) (int, error) {
	owner, err := ownerOf(ctx)
	if err != nil {
		return 0, err
	}
	var n int
	if err := db.db.GetContext(ctx, &n, countConversationsSQL, owner); err != nil {
		return 0, classify(fmt.Errorf("count conversations: %w", err))
	}
	return n, nil
}
