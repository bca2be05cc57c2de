package server_test

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/parley-dev/parley"
	"github.com/parley-dev/parley/internal/testserver"
	"github.com/parley-dev/parley/server"
)

// pageReads tells page reads of one conversation from batched ones, and from those read
// with their conversation.
type pageReads struct {
	parley.MessageService
	single, batched, folded atomic.Int64
}

func (p *pageReads) FindConversationPage(ctx context.Context, id string, r parley.PageRequest) (*parley.Conversation, *parley.MessagePage, error) {
	p.folded.Add(1)
	return p.MessageService.FindConversationPage(ctx, id, r)
}

func (p *pageReads) FindMessages(ctx context.Context, conv *parley.Conversation, r parley.PageRequest) (*parley.MessagePage, error) {
	p.single.Add(1)
	return p.MessageService.FindMessages(ctx, conv, r)
}

func (p *pageReads) FindMessagePages(ctx context.Context, convs []*parley.Conversation, r parley.PageRequest) ([]*parley.MessagePage, error) {
	p.batched.Add(1)
	return p.MessageService.FindMessagePages(ctx, convs, r)
}

// TestLoneConversationSkipsTheLoader: a conversation read on its own has nothing to batch
// with, so its page is read directly rather than after the loader's wait, and by
// conversation(id:) together with the conversation (one statement) when it is of the
// active branch; conversations in a list are still batched.
func TestLoneConversationSkipsTheLoader(t *testing.T) {
	t.Parallel()
	reads := &pageReads{}
	srv := testserver.NewWith(t, testserver.Options{Configure: func(c *server.Config) {
		reads.MessageService = c.Messages
		c.Messages = reads
	}})
	conv := srv.CreateConversation(t, "alone")
	added := srv.AddMessage(t, conv, testserver.Text("USER", "hi"))
	tests := []struct {
		name                    string
		query                   string
		single, batched, folded int64
	}{
		{"conversation", `query($c: ID!) { conversation(id: $c) { messages { totalCount } } }`, 0, 0, 1},
		{"conversation, two pages", `query($c: ID!) { conversation(id: $c) { a: messages(first: 1) { totalCount } b: messages(last: 1) { totalCount } } }`, 1, 0, 1},
		{"conversation, a branch", `query($c: ID!, $m: ID) { conversation(id: $c) { messages(branch: $m) { totalCount } } }`, 1, 0, 0},
		{"conversation, no messages", `query($c: ID!) { conversation(id: $c) { title } }`, 0, 0, 0},
		{"conversation, messages skipped", `query($c: ID!) { conversation(id: $c) { title messages @skip(if: true) { totalCount } } }`, 0, 0, 0},
		{"node", `query($c: ID!) { node(id: $c) { ... on Conversation { messages { totalCount } } } }`, 1, 0, 0},
		{"list", `{ conversations { edges { node { messages { totalCount } } } } }`, 0, 1, 0},
	}
	for _, tc := range tests {
		reads.single.Store(0)
		reads.batched.Store(0)
		reads.folded.Store(0)
		srv.MustDo(t, tc.query, map[string]any{"c": conv, "m": added.ID}, nil)
		if s, b, f := reads.single.Load(), reads.batched.Load(), reads.folded.Load(); s != tc.single || b != tc.batched || f != tc.folded {
			t.Errorf("%s: got %d single, %d batched and %d folded page reads, want %d, %d and %d", tc.name, s, b, f, tc.single, tc.batched, tc.folded)
		}
	}
}

// TestFoldedPageErrorsStayOnMessages: when conversation(id:) reads its messages' page
// with it, a page the store refuses is still the messages field's error, beside the
// conversation's fields, as when the two were read apart; a missing conversation is
// still null with NOT_FOUND.
func TestFoldedPageErrorsStayOnMessages(t *testing.T) {
	t.Parallel()
	srv := testserver.New(t)
	conv := srv.CreateConversation(t, "errors")
	srv.AddMessage(t, conv, testserver.Text("USER", "hi"))
	tests := []struct {
		name string
		conv string
		args string
		data string
		code string
		path string
	}{
		{"negative size", conv, `first: -1`, `{"conversation":null}`, "BAD_USER_INPUT", "conversation.messages"},
		{"bad cursor", conv, `first: 1, after: "nope"`, `{"conversation":null}`, "BAD_USER_INPUT", "conversation.messages"},
		{"missing conversation", "conv_00000000-0000-4000-8000-000000000000", `first: 1`, `{"conversation":null}`, "NOT_FOUND", "conversation"},
		{"fine", conv, `last: 1`, `{"conversation":{"title":"errors","messages":{"totalCount":1}}}`, "", ""},
	}
	for _, tc := range tests {
		r := srv.Do(t, `query($c: ID!) { conversation(id: $c) { title messages(`+tc.args+`) { totalCount } } }`, map[string]any{"c": tc.conv})
		if got := string(r.Data); got != tc.data {
			t.Errorf("%s: got data %s, want %s", tc.name, got, tc.data)
		}
		if tc.code == "" {
			if len(r.Errors) > 0 {
				t.Errorf("%s: got errors %+v, want none", tc.name, r.Errors)
			}
			continue
		}
		if len(r.Errors) != 1 {
			t.Fatalf("%s: got errors %+v, want one", tc.name, r.Errors)
		}
		e := r.Errors[0]
		var path []string
		for _, p := range e.Path {
			path = append(path, fmt.Sprint(p))
		}
		if got := strings.Join(path, "."); e.Extensions["code"] != tc.code || got != tc.path {
			t.Errorf("%s: got %s at %s (%s), want %s at %s", tc.name, e.Extensions["code"], got, e.Message, tc.code, tc.path)
		}
	}
}
