package server_test

import (
	"slices"
	"testing"

	"github.com/parley-dev/parley/auth"
	"github.com/parley-dev/parley/db"
	"github.com/parley-dev/parley/internal/testserver"
)

const forkMutation = `mutation($m: ID!) { forkConversation(messageId: $m) { id messageCount } }`

type forkResult struct {
	ForkConversation struct {
		ID           string
		MessageCount int
	}
}

// TestForkIsSearchable: a fork's messages carry their search vectors over from the
// source (migration 000019): they are found in the fork as in the source, hidden ones
// too, deleted ones not, and a change to a copy afterwards is searched as it is then,
// in the fork only. Another owner finds none of them.
func TestForkIsSearchable(t *testing.T) {
	t.Parallel()
	srv := testserver.NewWith(t, testserver.Options{Auth: func(store *db.DB) auth.Config { return auth.Config{Tokens: store} }})
	annToken, _ := token(t, srv, "ann", nil)
	bobToken, _ := token(t, srv, "bob", nil)
	ann, bob := srv.As(annToken), srv.As(bobToken)
	src := ann.CreateConversation(t, "source")
	kept := ann.AddMessage(t, src, testserver.Text("USER", "pangolin kept")).ID
	hidden := ann.AddMessage(t, src, testserver.Text("ASSISTANT", "pangolin hidden")).ID
	gone := ann.AddMessage(t, src, testserver.Text("USER", "pangolin deleted")).ID
	last := ann.AddMessage(t, src, testserver.Text("ASSISTANT", "the end")).ID
	ann.MustDo(t, `mutation($m: ID!) { setMessageHidden(messageId: $m, hidden: true) { __typename } }`, map[string]any{"m": hidden}, nil)
	ann.MustDo(t, `mutation($m: ID!) { deleteMessage(messageId: $m) { __typename } }`, map[string]any{"m": gone}, nil)

	var f forkResult
	ann.MustDo(t, forkMutation, map[string]any{"m": last}, &f)
	fork := f.ForkConversation.ID
	copies := readBranch(t, ann, fork, map[string]any{"first": 10}).ids()
	if len(copies) != 4 {
		t.Fatalf("fork: got %d messages, want 4", len(copies))
	}
	inFork := map[string]any{"f": map[string]any{"conversationIds": []string{fork}}}
	if got, want := hitIDs(search(t, ann, "pangolin", inFork)), sorted(copies[0], copies[1]); !slices.Equal(got, want) {
		t.Errorf("pangolin in the fork: got %v, want the copies of the kept and the hidden message %v", got, want)
	}
	if got, want := hitIDs(search(t, ann, "pangolin", nil)), sorted(kept, hidden, copies[0], copies[1]); !slices.Equal(got, want) {
		t.Errorf("pangolin everywhere: got %v, want %v", got, want)
	}
	if got := hitIDs(search(t, bob, "pangolin", nil)); len(got) != 0 {
		t.Errorf("bob's search: got %v, want nothing of ann's", got)
	}

	// Deleting the copy changes the fork's vector (the update still computes it), not
	// the source's.
	ann.MustDo(t, `mutation($m: ID!) { deleteMessage(messageId: $m) { __typename } }`, map[string]any{"m": copies[0]}, nil)
	if got, want := hitIDs(search(t, ann, "pangolin", nil)), sorted(kept, hidden, copies[1]); !slices.Equal(got, want) {
		t.Errorf("after deleting the fork's copy: got %v, want %v", got, want)
	}
}

// TestForkPastAStreamingMessage: a path with a message still streaming cannot be
// forked (CONFLICT), and nothing of the fork is left; the path before it can.
func TestForkPastAStreamingMessage(t *testing.T) {
	t.Parallel()
	srv := testserver.New(t)
	conv := srv.CreateConversation(t, "streaming")
	first := srv.AddMessage(t, conv, testserver.Text("USER", "Write a poem")).ID
	srv.MustDo(t, `mutation($c: ID!) { startMessage(conversationId: $c) { cursor } }`, map[string]any{"c": conv}, nil)
	after := srv.AddMessage(t, conv, testserver.Text("USER", "And another")).ID

	count := func() int {
		var out struct{ Conversations struct{ TotalCount int } }
		srv.MustDo(t, `{ conversations(first: 1) { totalCount } }`, nil, &out)
		return out.Conversations.TotalCount
	}
	before := count()
	res := srv.Do(t, forkMutation, map[string]any{"m": after})
	if code := res.ErrorCode(t); code != "CONFLICT" {
		t.Errorf("fork past a streaming message: got %s, want CONFLICT", code)
	}
	if got := count(); got != before {
		t.Errorf("conversations after the refused fork: got %d, want %d", got, before)
	}
	var f forkResult
	srv.MustDo(t, forkMutation, map[string]any{"m": first}, &f)
	if f.ForkConversation.MessageCount != 1 {
		t.Errorf("fork before the streaming message: got %d messages, want 1", f.ForkConversation.MessageCount)
	}
}
