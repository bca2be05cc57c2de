package server_test

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

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
	ann, bob := annAndBob(t)
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

// TestForkStaysWhenItsSourceChanges: a fork's history is its own from the moment it is
// made. Hiding, deleting or editing a message of the path in the source, and deleting
// the source conversation, leave what the fork reads (its page, count, exports and
// search) as it was; deleting the source only clears the fork's link back. A fork that
// shares the source's rows instead of copying them must keep this.
func TestForkStaysWhenItsSourceChanges(t *testing.T) {
	t.Parallel()
	srv := testserver.New(t)
	src := srv.CreateConversation(t, "source")
	u1 := addAt(t, srv, src, "walrus one", "", "")
	a1 := addAt(t, srv, src, "walrus two", "", "")
	u2 := addAt(t, srv, src, "walrus three", "", "")
	var f forkResult
	srv.MustDo(t, forkMutation, map[string]any{"m": u2.ID}, &f)
	fork := f.ForkConversation.ID

	const read = `query($c: ID!) { conversation(id: $c) { messageCount
		messages(first: 10) { totalCount edges { node { ` + treeFields + ` ... on TextMessage { hidden deletedAt } } } }
		markdown: transcript(format: MARKDOWN) parley: transcript(format: PARLEY_JSON) openai: transcript(format: OPENAI_CHAT) } }`
	type view struct {
		Conversation json.RawMessage
		Hits         []string
	}
	look := func() view {
		t.Helper()
		var v view
		srv.MustDo(t, read, map[string]any{"c": fork}, &v)
		v.Hits = hitIDs(search(t, srv, "walrus", map[string]any{"f": map[string]any{"conversationIds": []string{fork}}}))
		return v
	}
	want := look()
	if len(want.Hits) != 3 || !strings.Contains(string(want.Conversation), "walrus two") {
		t.Fatalf("the fork before any change: got %s and hits %v, want its three messages found", want.Conversation, want.Hits)
	}
	for _, step := range []struct {
		name   string
		change func()
	}{
		{"hide a message of the path in the source", func() {
			srv.MustDo(t, `mutation($m: ID!) { setMessageHidden(messageId: $m, hidden: true) { __typename } }`, map[string]any{"m": u1.ID}, nil)
		}},
		{"delete a message of the path in the source", func() {
			srv.MustDo(t, `mutation($m: ID!) { deleteMessage(messageId: $m) { __typename } }`, map[string]any{"m": a1.ID}, nil)
		}},
		{"edit a message of the path in the source", func() {
			srv.MustDo(t, `mutation($m: ID!, $i: MessageInput!) { editMessage(messageId: $m, input: $i) { cursor } }`,
				map[string]any{"m": u2.ID, "i": testserver.Text("USER", "walrus edited")}, nil)
		}},
		{"delete the source", func() {
			srv.MustDo(t, `mutation($c: ID!) { deleteConversation(id: $c) }`, map[string]any{"c": src}, nil)
		}},
	} {
		step.change()
		got := look()
		if string(got.Conversation) != string(want.Conversation) || !slices.Equal(got.Hits, want.Hits) {
			t.Errorf("after %s: the fork reads %s, found %v; want %s, found %v", step.name, got.Conversation, got.Hits, want.Conversation, want.Hits)
		}
	}
	var link struct {
		Conversation struct{ ForkedFromID *string }
	}
	srv.MustDo(t, `query($c: ID!) { conversation(id: $c) { forkedFromId } }`, map[string]any{"c": fork}, &link)
	if link.Conversation.ForkedFromID != nil {
		t.Errorf("the fork's link after its source was deleted: got %s, want null", *link.Conversation.ForkedFromID)
	}
}
