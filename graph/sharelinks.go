package graph

import (
	"net/url"

	"github.com/parley-dev/parley"
	"github.com/parley-dev/parley/graph/model"
)

var errNoShareLinks = &parley.Error{Code: parley.EUNAVAILABLE, Message: "Share links are not available on this server."}

func shareLinkModel(t *parley.APIToken) *model.ShareLink {
	l := &model.ShareLink{ID: t.ID, ConversationID: t.ConversationID, CreatedAt: t.CreatedAt,
		LastUsedAt: t.LastUsedAt, RevokedAt: t.RevokedAt}
	if t.ExpiresAt != nil {
		l.ExpiresAt = *t.ExpiresAt
	}
	if t.Branch != "" {
		b := t.Branch
		l.Branch = &b
	}
	return l
}

// sharePath is the viewer's path for a share link, its secret in the fragment.
func sharePath(t *parley.APIToken, secret string) string {
	u := url.URL{Path: "/viewer/c/" + t.ConversationID, Fragment: "share=" + secret}
	if t.Branch != "" {
		u.RawQuery = url.Values{"branch": {t.Branch}}.Encode()
	}
	return u.String()
}
