package server_test

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/parley-dev/parley"
	"github.com/parley-dev/parley/internal/testserver"
	"github.com/parley-dev/parley/server"
)

// pageReads tells page reads of one conversation from batched ones.
type pageReads struct {
	parley.MessageService
	single, batched atomic.Int64
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
// with, so its page is read directly rather than after the loader's wait; conversations
// in a list are still batched.
func TestLoneConversationSkipsTheLoader(t *testing.T) {
	t.Parallel()
	reads := &pageReads{}
	srv := testserver.NewWith(t, testserver.Options{Configure: func(c *server.Config) {
		reads.MessageService = c.Messages
		c.Messages = reads
	}})
	conv := srv.CreateConversation(t, "alone")
	srv.AddMessage(t, conv, testserver.Text("USER", "hi"))
	tests := []struct {
		name            string
		query           string
		single, batched int64
	}{
		{"conversation", `query($c: ID!) { conversation(id: $c) { messages { totalCount } } }`, 1, 0},
		{"node", `query($c: ID!) { node(id: $c) { ... on Conversation { messages { totalCount } } } }`, 1, 0},
		{"list", `{ conversations { edges { node { messages { totalCount } } } } }`, 0, 1},
	}
	for _, tc := range tests {
		reads.single.Store(0)
		reads.batched.Store(0)
		srv.MustDo(t, tc.query, map[string]any{"c": conv}, nil)
		if s, b := reads.single.Load(), reads.batched.Load(); s != tc.single || b != tc.batched {
			t.Errorf("%s: got %d single and %d batched page reads, want %d and %d", tc.name, s, b, tc.single, tc.batched)
		}
	}
}
