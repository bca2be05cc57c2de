package db

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/parley-dev/parley"
)

var _ parley.ShareLinkService = (*DB)(nil)

// CreateShareLink implements parley.ShareLinkService. The link is a read-only API token
// whose row names its conversation; its secret starts with parley.ShareTokenPrefix.
func (db *DB) CreateShareLink(ctx context.Context, conversationID, branch string, lifetime time.Duration) (*parley.APIToken, string, error) {
	owner, err := ownerOf(ctx)
	if err != nil {
		return nil, "", err
	}
	if err := parley.CheckShareLinkLifetime(lifetime); err != nil {
		return nil, "", err
	}
	convKey, ok := parley.ParseConversationID(conversationID)
	if !ok {
		return nil, "", parley.Errorf(parley.ENOTFOUND, "conversation %q not found", conversationID)
	}
	var msgKey, forkNo, depth any
	if branch != "" {
		key, ok := parley.ParseMessageID(branch)
		if !ok {
			return nil, "", parley.Errorf(parley.ENOTFOUND, "message %q not found in conversation %q", branch, conversationID)
		}
		msgKey = key
		if no, d, ok := parley.ParseForkMessageKey(key); ok {
			// A message the linked fork shares (db/fork.go): it has all the depths up
			// to its base depth.
			forkNo, depth = no, d
		}
	}
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		return nil, "", fmt.Errorf("create share link: %w", err)
	}
	secret := parley.ShareTokenPrefix + base64.RawURLEncoding.EncodeToString(b[:])
	var row tokenRow
	err = db.transact(ctx, func(tx *txn) error {
		// The conversation must be the owner's, and the branch's message in it: the
		// insert selects from them, so it inserts nothing otherwise.
		err := tx.GetContext(ctx, &row, `INSERT INTO api_tokens (owner, name, token_sha256, expires_at, read_only, conversation_id, branch)
			SELECT c.owner, 'share link', $3, transaction_timestamp() + make_interval(secs => $4), true, c.id, $5
			FROM conversations c
			WHERE c.id = $1 AND c.owner = $2
			  AND ($6::uuid IS NULL OR EXISTS (SELECT 1 FROM messages m WHERE m.id = $6::uuid AND m.conversation_id = c.id)
				OR (c.fork_no = $7::bigint AND c.base_depth >= $8::int))
			RETURNING `+tokenColumns, convKey, owner, hashToken(secret), lifetime.Seconds(), sql.NullString{String: branch, Valid: branch != ""}, msgKey,
			forkNo, depth)
		if errors.Is(err, sql.ErrNoRows) {
			if branch != "" {
				return parley.Errorf(parley.ENOTFOUND, "conversation %q, or message %q in it, not found", conversationID, branch)
			}
			return parley.Errorf(parley.ENOTFOUND, "conversation %q not found", conversationID)
		}
		return err
	})
	if err != nil {
		return nil, "", classify(fmt.Errorf("create share link to %s: %w", conversationID, err))
	}
	return row.token(), secret, nil
}

// FindShareLinks implements parley.ShareLinkService.
func (db *DB) FindShareLinks(ctx context.Context, conversationID string) ([]*parley.APIToken, error) {
	owner, err := ownerOf(ctx)
	if err != nil {
		return nil, err
	}
	var conv any
	if conversationID != "" {
		key, ok := parley.ParseConversationID(conversationID)
		if !ok {
			return nil, parley.Errorf(parley.ENOTFOUND, "conversation %q not found", conversationID)
		}
		conv = key
	}
	var rows []tokenRow
	err = db.db.SelectContext(ctx, &rows, `SELECT `+tokenColumns+` FROM api_tokens
		WHERE owner = $1 AND conversation_id IS NOT NULL AND ($2::uuid IS NULL OR conversation_id = $2::uuid)
		ORDER BY created_at DESC, id`, owner, conv)
	if err != nil {
		return nil, classify(fmt.Errorf("list share links: %w", err))
	}
	out := make([]*parley.APIToken, len(rows))
	for i := range rows {
		out[i] = rows[i].token()
	}
	return out, nil
}

// RevokeShareLink implements parley.ShareLinkService.
func (db *DB) RevokeShareLink(ctx context.Context, id string) (*parley.APIToken, error) {
	owner, err := ownerOf(ctx)
	if err != nil {
		return nil, err
	}
	key, ok := parseTokenID(strings.TrimSpace(id))
	if !ok {
		return nil, parley.Errorf(parley.ENOTFOUND, "share link %q not found", id)
	}
	var row tokenRow
	err = db.db.GetContext(ctx, &row, `UPDATE api_tokens SET revoked_at = coalesce(revoked_at, now())
		WHERE id = $1 AND owner = $2 AND conversation_id IS NOT NULL RETURNING `+tokenColumns, key, owner)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, parley.Errorf(parley.ENOTFOUND, "share link %q not found", id)
	} else if err != nil {
		return nil, classify(fmt.Errorf("revoke share link %s: %w", id, err))
	}
	return row.token(), nil
}
