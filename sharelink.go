package parley

import (
	"context"
	"time"
)

// A share link is a read-only API token scoped to one conversation: whoever holds it
// can read that conversation (its messages, branches, exports, live events) and nothing
// else, until it expires or its owner revokes it. It is listed with the owner's tokens.
// Branch, when set, is the message whose branch the link opens on; the credential reads
// the whole conversation.

// ShareTokenPrefix starts the secret of every share link (after TokenPrefix), so that a
// server in local mode, which otherwise ignores credentials, still knows to hold a
// share link's bearer to its scope.
const ShareTokenPrefix = TokenPrefix + "share_"

// Bounds of a share link's lifetime.
const (
	MinShareLinkLifetime = time.Minute
	MaxShareLinkLifetime = 366 * 24 * time.Hour
)

// CheckShareLinkLifetime checks the lifetime asked for a share link. Returns EINVALID.
func CheckShareLinkLifetime(d time.Duration) error {
	if d < MinShareLinkLifetime || d > MaxShareLinkLifetime {
		return Errorf(EINVALID, "expiresInSeconds: %d is out of range %d..%d", int64(d/time.Second),
			int64(MinShareLinkLifetime/time.Second), int64(MaxShareLinkLifetime/time.Second))
	}
	return nil
}

// ShareLinkService stores share links. Every method acts for the owner in ctx.
type ShareLinkService interface {
	// CreateShareLink makes a share link to the owner's conversation conversationID
	// (optionally opening on the branch through message branch, "" for the active
	// branch), valid for lifetime, and returns it with its secret, which is not stored.
	// Returns ENOTFOUND when the conversation is not the owner's or the message is not
	// in it, EINVALID for a bad lifetime.
	CreateShareLink(ctx context.Context, conversationID, branch string, lifetime time.Duration) (*APIToken, string, error)
	// FindShareLinks lists the owner's share links, of conversationID only unless it is
	// "", newest first.
	FindShareLinks(ctx context.Context, conversationID string) ([]*APIToken, error)
	// RevokeShareLink revokes the owner's share link id. Returns ENOTFOUND when the owner
	// has none by that id; revoking a revoked link is not an error.
	RevokeShareLink(ctx context.Context, id string) (*APIToken, error)
	// AuthenticateToken returns the principal of a valid token (a share link's is
	// read-only and scoped to its conversation). Returns EUNAUTHORIZED.
	AuthenticateToken(ctx context.Context, secret string) (*Principal, error)
	CredentialChecker
}
