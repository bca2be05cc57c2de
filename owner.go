package parley

import (
	"context"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// Every conversation has an owner: the principal a request authenticates as (an API
// token's owner, a JWT's sub) or, when the server runs without authentication on a
// loopback address, LocalOwner. Every read and write of the services is scoped by the
// owner carried in its context: another owner's conversation is as absent as one that
// does not exist (ENOTFOUND with the same message), so existence does not leak.

// LocalOwner owns everything in local mode (no authentication configured), and the
// conversations stored before owners existed.
const LocalOwner = "local"

// MaxOwnerLength bounds an owner name, in bytes.
const MaxOwnerLength = 200

// ownerKey carries the owner in a context.
type ownerKey struct{}

// WithOwner returns ctx acting on behalf of owner.
func WithOwner(ctx context.Context, owner string) context.Context {
	return context.WithValue(ctx, ownerKey{}, owner)
}

// OwnerFrom returns the owner ctx acts for, and false when it carries none. The
// services refuse to act without one (an internal error: every entry point, HTTP,
// websocket or command line, sets it), so a forgotten owner fails closed.
func OwnerFrom(ctx context.Context) (string, bool) {
	o, ok := ctx.Value(ownerKey{}).(string)
	return o, ok && o != ""
}

// CleanOwner checks an owner name given on a command line or in a token's claims: 1 to
// MaxOwnerLength bytes of valid UTF-8 without control characters, surrounding space
// removed.
func CleanOwner(name string) (string, error) {
	name = strings.TrimSpace(name)
	switch {
	case name == "":
		return "", Errorf(EINVALID, "owner: give a name")
	case len(name) > MaxOwnerLength:
		return "", Errorf(EINVALID, "owner: %d bytes, at most %d allowed", len(name), MaxOwnerLength)
	case !utf8.ValidString(name):
		return "", Errorf(EINVALID, "owner: not valid UTF-8")
	case strings.IndexFunc(name, unicode.IsControl) >= 0:
		return "", Errorf(EINVALID, "owner: control characters are not allowed")
	}
	return name, nil
}

// Principal is who a request acts for, and until when its credential holds.
type Principal struct {
	Owner string
	// ExpiresAt is when the credential stops being valid; zero for never. Websocket
	// connections and SSE streams end then.
	ExpiresAt time.Time
	// Method says how the request authenticated: "token", "jwt" or "local".
	Method string
	// TokenID names the API token used, for logs ("" for other methods).
	TokenID string
	// ReadOnly credentials (an API token made with --read-only, a JWT whose scopes
	// grant reading only) may query and subscribe, never mutate: every mutation is
	// refused with EFORBIDDEN, over every transport.
	ReadOnly bool
	// Conversation, for a share link, is the one conversation (its id) the credential
	// may read; Branch is the message whose branch the link opens on. Empty for every
	// other credential.
	Conversation string
	Branch       string
}

// Authenticator turns a bearer credential into the principal it stands for.
type Authenticator interface {
	// Authenticate returns EUNAUTHORIZED for a credential that is unknown, malformed,
	// revoked, expired or not yet valid; the message says which, without revealing
	// anything about other owners.
	Authenticate(ctx context.Context, credential string) (*Principal, error)
}

// APIToken describes a stored API token. The token itself is shown once, when it is
// created; only its SHA-256 hash is stored.
type APIToken struct {
	ID         string
	Owner      string
	Name       string
	CreatedAt  time.Time
	LastUsedAt *time.Time
	ExpiresAt  *time.Time
	RevokedAt  *time.Time
	// ReadOnly tokens may read and subscribe, never write.
	ReadOnly bool
	// ConversationID is set on share links: the one conversation the token may read,
	// and Branch the message whose branch the link opens on ("" for the active one).
	ConversationID string
	Branch         string
}

// TokenPrefix starts every API token, so that the server (and secret scanners) can tell
// one from a JWT.
const TokenPrefix = "prl_"

// TokenService stores API tokens.
type TokenService interface {
	// CreateToken makes a token for owner, named name ("" for none), valid until
	// expiresAt (nil for ever), allowed to read only when readOnly, and returns it with
	// its secret, which is not stored and cannot be shown again. Returns EINVALID for a
	// bad owner, name or expiry.
	CreateToken(ctx context.Context, owner, name string, expiresAt *time.Time, readOnly bool) (*APIToken, string, error)
	// RevokeToken revokes the token with this id, or this token (its secret). Returns
	// ENOTFOUND when there is none; revoking a revoked token is not an error.
	RevokeToken(ctx context.Context, idOrSecret string) (*APIToken, error)
	// FindTokens lists the tokens of owner ("" for every owner), newest first.
	FindTokens(ctx context.Context, owner string) ([]*APIToken, error)
	// AuthenticateToken returns the principal of a valid token and records its use.
	// Returns EUNAUTHORIZED as Authenticator does.
	AuthenticateToken(ctx context.Context, secret string) (*Principal, error)
	CredentialChecker
}

// CredentialChecker tells which API tokens no longer hold, for connections that
// outlive the request that authenticated them (websockets, SSE streams): they end
// when their token is revoked.
type CredentialChecker interface {
	// InvalidTokens returns those of ids (Principal.TokenID) that are revoked,
	// expired or gone.
	InvalidTokens(ctx context.Context, ids []string) ([]string, error)
}
