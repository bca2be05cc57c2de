package server_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/parley-dev/parley"
	"github.com/parley-dev/parley/internal/testserver"
)

const createShare = `mutation($c: ID!, $b: ID, $e: Int!) { createShareLink(conversationId: $c, branch: $b, expiresInSeconds: $e) {
	secret path link { id conversationId branch expiresAt revokedAt } } }`

type shareCreation struct {
	CreateShareLink struct {
		Secret, Path string
		Link         struct {
			ID, ConversationID string
			Branch             *string
			ExpiresAt          time.Time
		}
	}
}

// TestShareLinkScope: a share link reads its conversation and nothing else, writes
// nothing, and stops working once revoked, in local mode (where credentials are
// otherwise ignored) and in auth mode alike.
func TestShareLinkScope(t *testing.T) {
	t.Parallel()
	for _, mode := range []string{"local", "auth"} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			srv := testserver.New(t)
			owner := srv
			if mode == "auth" {
				srv = authServer(t)
				owner = srv.As(hs256(t, "alice", time.Now().Add(time.Hour)))
			}
			shared := owner.CreateConversation(t, "shared")
			other := owner.CreateConversation(t, "other")
			m := owner.AddMessage(t, shared, testserver.Text("USER", "hello"))
			otherMsg := owner.AddMessage(t, other, testserver.Text("USER", "secret"))

			var c shareCreation
			before := time.Now()
			owner.MustDo(t, createShare, map[string]any{"c": shared, "b": m.ID, "e": 3600}, &c)
			link := c.CreateShareLink
			if !strings.HasPrefix(link.Secret, "prl_share_") {
				t.Errorf("secret %q: want the prl_share_ prefix", link.Secret)
			}
			if want := "/viewer/c/" + shared + "?branch=" + m.ID + "#share=" + link.Secret; link.Path != want {
				t.Errorf("path: got %q, want %q", link.Path, want)
			}
			if link.Link.ConversationID != shared || link.Link.Branch == nil || *link.Link.Branch != m.ID {
				t.Errorf("link: got %+v, want conversation %s branch %s", link.Link, shared, m.ID)
			}
			if d := link.Link.ExpiresAt.Sub(before); d < 59*time.Minute || d > 61*time.Minute {
				t.Errorf("expiresAt %s: want an hour from now", link.Link.ExpiresAt)
			}
			viewer := srv.As(link.Secret)

			var got struct {
				Conversation struct {
					Title    string
					Messages struct{ TotalCount int }
				}
			}
			viewer.MustDo(t, `query($id: ID!) { conversation(id: $id) { title messages(branch: null) { totalCount } } }`, map[string]any{"id": shared}, &got)
			if got.Conversation.Title != "shared" || got.Conversation.Messages.TotalCount != 1 {
				t.Errorf("the shared conversation: got %+v, want its title and 1 message", got.Conversation)
			}
			viewer.MustDo(t, `query($id: ID!) { node(id: $id) { id } }`, map[string]any{"id": shared}, nil)

			refused := []struct{ name, query string }{
				{"another conversation", `{ conversation(id: "` + other + `") { title } }`},
				{"another through a variable", `query($id: ID!) { conversation(id: $id) { title } }`},
				{"another's message by node", `{ node(id: "` + otherMsg.ID + `") { id } }`},
				{"the list", `{ conversations { totalCount } }`},
				{"the list in a fragment", `{ ...F } fragment F on Query { conversations { totalCount } }`},
				{"the list in an inline fragment", `{ ... on Query { conversations { totalCount } } }`},
				{"a message by id", `{ message(id: "` + m.ID + `") { __typename } }`},
				{"share links", `{ shareLinks { id } }`},
				{"a write", `mutation { addMessage(conversationId: "` + shared + `", input: {text: {role: USER, content: "x"}}) { cursor } }`},
				{"another share link", `mutation { createShareLink(conversationId: "` + shared + `", expiresInSeconds: 3600) { secret } }`},
			}
			for _, r := range refused {
				resp := viewer.Do(t, r.query, map[string]any{"id": other})
				if code := resp.ErrorCode(t); code != "FORBIDDEN" {
					t.Errorf("%s: got %s, want FORBIDDEN", r.name, code)
				}
				if len(resp.Data) > 0 && string(resp.Data) != "null" {
					t.Errorf("%s: got data %s, want none", r.name, resp.Data)
				}
			}

			var list struct {
				ShareLinks []struct{ ID, ConversationID string }
			}
			owner.MustDo(t, `query($c: ID) { shareLinks(conversationId: $c) { id conversationId } }`, map[string]any{"c": shared}, &list)
			if len(list.ShareLinks) != 1 || list.ShareLinks[0].ID != link.Link.ID {
				t.Errorf("shareLinks: got %+v, want the one link %s", list.ShareLinks, link.Link.ID)
			}

			owner.MustDo(t, `mutation($id: ID!) { revokeShareLink(id: $id) { revokedAt } }`, map[string]any{"id": link.Link.ID}, nil)
			resp := viewer.Do(t, `query($id: ID!) { conversation(id: $id) { title } }`, map[string]any{"id": shared})
			if resp.Status != http.StatusUnauthorized || resp.ErrorCode(t) != "UNAUTHENTICATED" {
				t.Errorf("after revocation: got %d %+v, want 401 UNAUTHENTICATED", resp.Status, resp.Errors)
			}
		})
	}
}

// TestShareLinkBadInput: what createShareLink refuses, naming what is wrong, writing
// nothing.
func TestShareLinkBadInput(t *testing.T) {
	t.Parallel()
	srv := authServer(t)
	alice := srv.As(hs256(t, "alice", time.Now().Add(time.Hour)))
	bob := srv.As(hs256(t, "bob", time.Now().Add(time.Hour)))
	conv := alice.CreateConversation(t, "mine")
	other := alice.CreateConversation(t, "other")
	otherMsg := alice.AddMessage(t, other, testserver.Text("USER", "x"))
	tests := []struct {
		name     string
		as       *testserver.Server
		vars     map[string]any
		code, in string
	}{
		{"no lifetime", alice, map[string]any{"c": conv, "e": 0}, "BAD_USER_INPUT", "expiresInSeconds"},
		{"too long", alice, map[string]any{"c": conv, "e": 400 * 86400}, "BAD_USER_INPUT", "expiresInSeconds"},
		{"no such conversation", alice, map[string]any{"c": "conv_00000000-0000-0000-0000-000000000000", "e": 3600}, "NOT_FOUND", "conv_"},
		{"another owner's", bob, map[string]any{"c": conv, "e": 3600}, "NOT_FOUND", conv},
		{"a branch elsewhere", alice, map[string]any{"c": conv, "b": otherMsg.ID, "e": 3600}, "NOT_FOUND", otherMsg.ID},
		{"not a message id", alice, map[string]any{"c": conv, "b": "nope", "e": 3600}, "NOT_FOUND", "nope"},
	}
	for _, tt := range tests {
		resp := tt.as.Do(t, createShare, tt.vars)
		if code := resp.ErrorCode(t); code != tt.code || !strings.Contains(resp.Errors[0].Message, tt.in) {
			t.Errorf("%s: got %s %q, want %s naming %q", tt.name, code, resp.Errors[0].Message, tt.code, tt.in)
		}
	}
	var list struct{ ShareLinks []struct{ ID string } }
	alice.MustDo(t, `{ shareLinks { id } }`, nil, &list)
	if len(list.ShareLinks) != 0 {
		t.Errorf("after refusals: got %d share links, want 0", len(list.ShareLinks))
	}
}

// TestShareLinkWebsocket: over graphql-transport-ws in local mode, a share link
// subscribes to its conversation's events, is refused every other subscription, and its
// socket closes within seconds of its revocation.
func TestShareLinkWebsocket(t *testing.T) {
	t.Parallel()
	srv := testserver.NewWired(t, "")
	shared := srv.CreateConversation(t, "shared")
	other := srv.CreateConversation(t, "other")
	var c shareCreation
	srv.MustDo(t, createShare, map[string]any{"c": shared, "e": 600}, &c)

	conn, typ, code, reason := wsDial(t, srv.URL, map[string]any{"Authorization": "Bearer " + c.CreateShareLink.Secret})
	if typ != "connection_ack" {
		t.Fatalf("got %q (close %d %q), want connection_ack", typ, code, reason)
	}
	refused := []struct{ name, query string }{
		{"another conversation's stream", `subscription { messageStream(conversationId: "` + other + `") { cursor } }`},
		{"the list", `subscription { conversationsChanged { cursor } }`},
	}
	for i, r := range refused {
		id := "r" + string(rune('0'+i))
		wsSubscribe(t, conn, id, r.query, nil)
		// Refused before it runs: its errors (gqlgen sends them as a next without data),
		// then complete.
		m, code, reason := wsNext(t, conn, 30*time.Second)
		if m == nil || m["id"] != id || !strings.Contains(fmtJSON(m), "FORBIDDEN") || strings.Contains(fmtJSON(m), `"data":{`) {
			t.Errorf("%s: got %v (close %d %q), want FORBIDDEN and no data", r.name, m, code, reason)
		}
		if m, code, reason := wsNext(t, conn, 30*time.Second); m == nil || m["id"] != id || m["type"] != "complete" {
			t.Errorf("%s: got %v (close %d %q), want complete", r.name, m, code, reason)
		}
	}
	// From the start, so that the message reaches it however late it registers.
	wsSubscribe(t, conn, "live", `subscription($c: ID!, $a: String) { messageStream(conversationId: $c, after: $a) { cursor message { ... on TextMessage { text } } } }`,
		map[string]any{"c": shared, "a": parley.MessageCursor(0)})
	srv.AddMessage(t, shared, testserver.Text("USER", "live to the share"))
	if m, code, reason := wsNext(t, conn, 30*time.Second); m == nil || m["type"] != "next" || !strings.Contains(fmtJSON(m), "live to the share") {
		t.Fatalf("through the share link's subscription: got %v (close %d %q), want the message", m, code, reason)
	}
	revokedAt := time.Now()
	srv.MustDo(t, `mutation($id: ID!) { revokeShareLink(id: $id) { id } }`, map[string]any{"id": c.CreateShareLink.Link.ID}, nil)
	if m, code, reason := wsNext(t, conn, 30*time.Second); m != nil || code != 4403 || !strings.Contains(reason, "revoked") {
		t.Errorf("after revoking: got %v (close %d %q), want close 4403, revoked", m, code, reason)
	}
	if took := time.Since(revokedAt); took > 15*time.Second {
		t.Errorf("the socket closed %s after revoking, want within seconds", took)
	}
}

func fmtJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
