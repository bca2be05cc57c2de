package server_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/parley-dev/parley"
	"github.com/parley-dev/parley/internal/testserver"
	"github.com/parley-dev/parley/server"
)

// countingMessages counts the page reads that reach the store.
type countingMessages struct {
	parley.MessageService
	reads atomic.Int64
}

func (c *countingMessages) FindMessages(ctx context.Context, conv *parley.Conversation, p parley.PageRequest) (*parley.MessagePage, error) {
	c.reads.Add(1)
	return c.MessageService.FindMessages(ctx, conv, p)
}

func (c *countingMessages) FindMessagePages(ctx context.Context, convs []*parley.Conversation, p parley.PageRequest) ([]*parley.MessagePage, error) {
	c.reads.Add(1)
	return c.MessageService.FindMessagePages(ctx, convs, p)
}

// TestConversationListBatchesMessages: a list of conversations with their messages reads
// the messages once per distinct page, not once per conversation, and each conversation
// still gets its own page.
func TestConversationListBatchesMessages(t *testing.T) {
	t.Parallel()
	counter := &countingMessages{}
	srv := testserver.NewWith(t, testserver.Options{Configure: func(c *server.Config) {
		counter.MessageService = c.Messages
		c.Messages = counter
	}})
	want := map[string][]string{}
	for i := range 6 {
		conv := srv.CreateConversation(t, fmt.Sprintf("c%d", i))
		for j := range i % 4 {
			text := fmt.Sprintf("c%d m%d", i, j)
			srv.AddMessage(t, conv, testserver.Text("USER", text))
			want[conv] = append(want[conv], text)
		}
	}
	var out struct {
		Conversations struct {
			Edges []struct {
				Node struct {
					ID     string
					First2 struct {
						Edges []struct{ Node struct{ Text string } }
					}
					Last1 struct {
						PageInfo struct{ HasPreviousPage bool }
						Edges    []struct{ Node struct{ Text string } }
					}
				}
			}
		}
	}
	counter.reads.Store(0)
	srv.MustDo(t, `{ conversations(first: 10) { edges { node { id
		first2: messages(first: 2) { edges { node { ... on TextMessage { text } } } }
		last1: messages(last: 1) { pageInfo { hasPreviousPage } edges { node { ... on TextMessage { text } } } }
	} } } }`, nil, &out)
	// Two distinct pages over six conversations: two reads when every sibling joins the
	// batch within the loader's wait, as it does on an idle machine; a loaded machine may
	// split a batch, but twelve reads would mean no batching at all.
	if got := counter.reads.Load(); got < 2 || got >= 12 {
		t.Errorf("page reads: got %d, want from 2 to 11 (12 is one per conversation and page: no batching)", got)
	} else if got > 2 {
		t.Logf("page reads: %d (a batch was split; 2 on an idle machine)", got)
	}
	if len(out.Conversations.Edges) != 6 {
		t.Fatalf("got %d conversations, want 6", len(out.Conversations.Edges))
	}
	for _, e := range out.Conversations.Edges {
		texts := want[e.Node.ID]
		var first2 []string
		for _, m := range e.Node.First2.Edges {
			first2 = append(first2, m.Node.Text)
		}
		if wantFirst := texts[:min(2, len(texts))]; fmt.Sprint(first2) != fmt.Sprint(wantFirst) {
			t.Errorf("%s first 2: got %v, want %v", e.Node.ID, first2, wantFirst)
		}
		var last1 []string
		for _, m := range e.Node.Last1.Edges {
			last1 = append(last1, m.Node.Text)
		}
		if wantLast := texts[max(0, len(texts)-1):]; fmt.Sprint(last1) != fmt.Sprint(wantLast) {
			t.Errorf("%s last 1: got %v, want %v", e.Node.ID, last1, wantLast)
		}
		if got, want := e.Node.Last1.PageInfo.HasPreviousPage, len(texts) > 1; got != want {
			t.Errorf("%s last 1 hasPreviousPage: got %v, want %v", e.Node.ID, got, want)
		}
	}
}
