package db

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"database/sql"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/lib/pq"

	"github.com/parley-dev/parley"
)

var _ parley.TokenService = (*DB)(nil)

// API tokens are parley.TokenPrefix and 32 random bytes in base64url. Only their SHA-256
// is stored: a token has 256 bits of entropy, so nothing is gained by a slow password
// hash (there is no dictionary to try), and a plain digest can be the lookup key.

const tokenPrefix = "tok_" // the public id of a token: tok_<uuid>

func tokenID(key string) string { return tokenPrefix + key }

func hashToken(secret string) []byte {
	sum := sha256.Sum256([]byte(secret))
	return sum[:]
}

type tokenRow struct {
	ID         string       `db:"id"`
	Owner      string       `db:"owner"`
	Name       string       `db:"name"`
	CreatedAt  time.Time    `db:"created_at"`
	LastUsedAt sql.NullTime `db:"last_used_at"`
	ExpiresAt  sql.NullTime `db:"expires_at"`
	RevokedAt  sql.NullTime `db:"revoked_at"`
	ReadOnly   bool         `db:"read_only"`
	// Share links: the conversation's key, and the branch's message id as given.
	ConversationKey sql.NullString `db:"conversation_id"`
	Branch          sql.NullString `db:"branch"`
}

const tokenColumns = `id, owner, name, created_at, last_used_at, expires_at, revoked_at, read_only, conversation_id, branch`

func nullTimePtr(t sql.NullTime) *time.Time {
	if !t.Valid {
		return nil
	}
	v := t.Time
	return &v
}

func (r *tokenRow) token() *parley.APIToken {
	return &parley.APIToken{
		ID: tokenID(r.ID), Owner: r.Owner, Name: r.Name, CreatedAt: r.CreatedAt,
		LastUsedAt: nullTimePtr(r.LastUsedAt), ExpiresAt: nullTimePtr(r.ExpiresAt), RevokedAt: nullTimePtr(r.RevokedAt),
		ReadOnly: r.ReadOnly, ConversationID: r.conversationID(), Branch: r.Branch.String,
	}
}

func (r *tokenRow) conversationID() string {
	if !r.ConversationKey.Valid {
		return ""
	}
	return parley.ConversationID(r.ConversationKey.String)
}

// CreateToken implements parley.TokenService.
func (db *DB) CreateToken(ctx context.Context, owner, name string, expiresAt *time.Time, readOnly bool) (*parley.APIToken, string, error) {
	owner, err := parley.CleanOwner(owner)
	if err != nil {
		return nil, "", err
	}
	if name, err = parley.CleanTokenName(name); err != nil {
		return nil, "", err
	}
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		return nil, "", fmt.Errorf("create token: %w", err)
	}
	secret := parley.TokenPrefix + base64.RawURLEncoding.EncodeToString(b[:])
	var row struct {
		tokenRow
		Now time.Time `db:"tx_now"`
	}
	err = db.transact(ctx, func(tx *txn) error {
		// The expiry is checked against the insert's own time, read along; a token
		// already expired is refused and rolled back.
		if err := tx.GetContext(ctx, &row, `INSERT INTO api_tokens (owner, name, token_sha256, expires_at, read_only)
			VALUES ($1, $2, $3, $4, $5) RETURNING `+tokenColumns+`, transaction_timestamp() AS tx_now`,
			owner, name, hashToken(secret), expiresAt, readOnly); err != nil {
			return err
		}
		return parley.CheckTokenExpiry(expiresAt, row.Now)
	})
	if err != nil {
		return nil, "", fmt.Errorf("create token for %q: %w", owner, err)
	}
	return row.token(), secret, nil
}

func tokenNotFound(idOrSecret string) error {
	if strings.HasPrefix(idOrSecret, parley.TokenPrefix) {
		return parley.Errorf(parley.ENOTFOUND, "no such token")
	}
	return parley.Errorf(parley.ENOTFOUND, "token %q not found", idOrSecret)
}

// RevokeToken implements parley.TokenService.
func (db *DB) RevokeToken(ctx context.Context, idOrSecret string) (*parley.APIToken, error) {
	idOrSecret = strings.TrimSpace(idOrSecret)
	where, arg := "", any(nil)
	if strings.HasPrefix(idOrSecret, parley.TokenPrefix) {
		where, arg = "token_sha256 = $1", hashToken(idOrSecret)
	} else if key, ok := parseTokenID(idOrSecret); ok {
		where, arg = "id = $1", key
	} else {
		return nil, tokenNotFound(idOrSecret)
	}
	var row tokenRow
	err := db.transact(ctx, func(tx *txn) error {
		err := tx.GetContext(ctx, &row, `UPDATE api_tokens SET revoked_at = coalesce(revoked_at, now())
			WHERE `+where+` RETURNING `+tokenColumns, arg)
		if errors.Is(err, sql.ErrNoRows) {
			return tokenNotFound(idOrSecret)
		}
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("revoke token: %w", err)
	}
	return row.token(), nil
}

func parseTokenID(id string) (string, bool) {
	rest, ok := strings.CutPrefix(id, tokenPrefix)
	if !ok || len(rest) != 36 {
		return "", false
	}
	// A UUID's shape; Postgres checks the rest.
	for i, c := range rest {
		dash := i == 8 || i == 13 || i == 18 || i == 23
		if dash != (c == '-') || (!dash && !strings.ContainsRune("0123456789abcdefABCDEF", c)) {
			return "", false
		}
	}
	return strings.ToLower(rest), true
}

// FindTokens implements parley.TokenService.
func (db *DB) FindTokens(ctx context.Context, owner string) ([]*parley.APIToken, error) {
	var rows []tokenRow
	err := db.db.SelectContext(ctx, &rows, `SELECT `+tokenColumns+` FROM api_tokens
		WHERE $1 = '' OR owner = $1 ORDER BY created_at DESC, id`, strings.TrimSpace(owner))
	if err != nil {
		return nil, classify(fmt.Errorf("list tokens: %w", err))
	}
	out := make([]*parley.APIToken, len(rows))
	for i := range rows {
		out[i] = rows[i].token()
	}
	return out, nil
}

// InvalidTokens implements parley.CredentialChecker, in one statement for all of ids.
func (db *DB) InvalidTokens(ctx context.Context, ids []string) ([]string, error) {
	keys := make([]string, 0, len(ids))
	byKey := make(map[string]string, len(ids))
	var invalid []string
	for _, id := range ids {
		key, ok := parseTokenID(id)
		if !ok {
			invalid = append(invalid, id)
			continue
		}
		keys = append(keys, key)
		byKey[key] = id
	}
	if len(keys) == 0 {
		return invalid, nil
	}
	var valid []string
	err := db.db.SelectContext(ctx, &valid, `SELECT id::text FROM api_tokens WHERE id = ANY($1::uuid[])
		AND revoked_at IS NULL AND (expires_at IS NULL OR expires_at > now())`, pq.StringArray(keys))
	if err != nil {
		return nil, classify(fmt.Errorf("check tokens: %w", err))
	}
	for _, key := range valid {
		delete(byKey, key)
	}
	for _, id := range byKey {
		invalid = append(invalid, id)
	}
	return invalid, nil
}

// errBadToken is the one answer to every token that does not authenticate, so that an
// unknown token and another's revoked one cannot be told apart.
var errBadToken = parley.Errorf(parley.EUNAUTHORIZED, "The token is invalid, revoked or expired.")

// AuthenticateToken implements parley.TokenService. A token's last use is recorded at
// most once a minute, so that authenticating does not write on every request.
func (db *DB) AuthenticateToken(ctx context.Context, secret string) (*parley.Principal, error) {
	if !strings.HasPrefix(secret, parley.TokenPrefix) || len(secret) > 100 {
		return nil, errBadToken
	}
	var row struct {
		tokenRow
		Valid bool `db:"valid"`
	}
	err := db.db.GetContext(ctx, &row, `SELECT `+tokenColumns+`,
			revoked_at IS NULL AND (expires_at IS NULL OR expires_at > now()) AS valid
		FROM api_tokens WHERE token_sha256 = $1`, hashToken(secret))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, errBadToken
	} else if err != nil {
		return nil, classify(fmt.Errorf("authenticate token: %w", err))
	}
	if !row.Valid {
		return nil, errBadToken
	}
	if _, err := db.db.ExecContext(ctx, `UPDATE api_tokens SET last_used_at = now()
		WHERE id = $1 AND (last_used_at IS NULL OR last_used_at < now() - interval '1 minute')`, row.ID); err != nil {
		db.log.WarnContext(ctx, "cannot record a token's use", "token", tokenID(row.ID), "err", err)
	}
	p := &parley.Principal{Owner: row.Owner, Method: "token", TokenID: tokenID(row.ID), ReadOnly: row.ReadOnly,
		Conversation: row.conversationID(), Branch: row.Branch.String}
	if row.ExpiresAt.Valid {
		p.ExpiresAt = row.ExpiresAt.Time
	}
	return p, nil
}
