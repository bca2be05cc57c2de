package server_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"slices"
	"testing"

	_ "github.com/lib/pq"

	"github.com/parley-dev/parley"
	"github.com/parley-dev/parley/internal/testserver"
)

// ownRows counts the message rows stored under a conversation (its public id): a fork
// that shares its path stores none of it.
func ownRows(t *testing.T, srv *testserver.Server, conv string) int {
	t.Helper()
	key, _ := parley.ParseConversationID(conv)
	sqlDB, err := sql.Open("postgres", srv.DSN)
	if err != nil {
		t.Fatal(err)
	}
	defer sqlDB.Close()
	var n int
	if err := sqlDB.QueryRowContext(context.Background(), `SELECT count(*) FROM messages WHERE conversation_id = $1`, key).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

func forkOf(t *testing.T, srv *testserver.Server, msg string) string {
	t.Helper()
	var f forkResult
	srv.MustDo(t, forkMutation, map[string]any{"m": msg}, &f)
	return f.ForkConversation.ID
}

func texts(p treePage) []string {
	var out []string
	for _, e := range p.Messages.Edges {
		out = append(out, e.Node.Text)
	}
	return out
}

// TestForkSharesItsPath: a fork stores none of the path it was forked at, reads it in
// both directions with ids of its own and continues after it; a fork of the fork, at a
// shared message and at one of its own, reads the right path; changing a shared message
// in the source makes the forks real first, with the ids they had, and changes the
// source only.
func TestForkSharesItsPath(t *testing.T) {
	t.Parallel()
	srv := testserver.New(t)
	src := srv.CreateConversation(t, "source")
	var ids []string
	for i := 1; i <= 6; i++ {
		ids = append(ids, addAt(t, srv, src, fmt.Sprintf("m%d", i), "", "").ID)
	}
	fork := forkOf(t, srv, ids[3]) // m1..m4
	if n := ownRows(t, srv, fork); n != 0 {
		t.Fatalf("a fork of 4 messages stores %d rows, want 0 (it shares them)", n)
	}
	p := readBranch(t, srv, fork, map[string]any{"first": 10})
	if got, want := texts(p), []string{"m1", "m2", "m3", "m4"}; !slices.Equal(got, want) || p.MessageCount != 4 {
		t.Fatalf("the fork: got %v (%d), want %v", got, p.MessageCount, want)
	}
	shared := p.ids()
	for i, id := range shared {
		if id == ids[i] {
			t.Errorf("shared message %d has the source's id %s, want one of the fork's", i+1, id)
		}
		if e := p.Messages.Edges[i].Node; e.Position != i+1 || (i > 0 && (e.ParentID == nil || *e.ParentID != shared[i-1])) {
			t.Errorf("shared message %d: position %d parent %v, want %d under %s", i+1, e.Position, e.ParentID, i+1, shared[max(i-1, 0)])
		}
	}
	if got := readBranch(t, srv, fork, map[string]any{"last": 2, "before": p.Messages.Edges[3].Cursor}); !slices.Equal(texts(got), []string{"m2", "m3"}) {
		t.Errorf("backward page of the fork: got %v, want [m2 m3]", texts(got))
	}

	// Search finds a shared message in the source and in the fork, under the fork's id,
	// in either order, and in the fork's scope alone; the fork's leaf is its last shared
	// message. Nothing is copied for it.
	for _, order := range []string{"RELEVANCE", "NEWEST"} {
		r := search(t, srv, "m3", map[string]any{"o": order})
		if got, want := hitIDs(r), sorted(ids[2], shared[2]); !slices.Equal(got, want) {
			t.Errorf("search m3 (%s): got %v, want the source's and the fork's %v", order, got, want)
		}
		for _, e := range r.Search.Edges {
			if e.Node.Message.ID == shared[2] && (e.Node.Conversation.ID != fork || e.Node.BranchLeafID != shared[3] ||
				!e.Node.OnActiveBranch || e.Node.Message.Position != 3) {
				t.Errorf("the fork's hit (%s): %+v, want conversation %s, leaf %s, on the active branch, position 3", order, e.Node, fork, shared[3])
			}
		}
	}
	if got, want := hitIDs(search(t, srv, "m3", map[string]any{"f": map[string]any{"conversationIds": []string{fork}}})), []string{shared[2]}; !slices.Equal(got, want) {
		t.Errorf("search m3 in the fork: got %v, want %v", got, want)
	}
	var convs struct {
		SearchConversations struct {
			Edges []struct {
				Node struct {
					Conversation struct{ ID string }
					MessageHits  int
				}
			}
		}
	}
	srv.MustDo(t, `{ searchConversations(query: "m3") { edges { node { conversation { id } messageHits } } } }`, nil, &convs)
	var found []string
	for _, e := range convs.SearchConversations.Edges {
		found = append(found, fmt.Sprintf("%s:%d", e.Node.Conversation.ID, e.Node.MessageHits))
	}
	if want := sorted(src+":1", fork+":1"); !slices.Equal(sorted(found...), want) {
		t.Errorf("searchConversations m3: got %v, want %v", found, want)
	}
	if n := ownRows(t, srv, fork); n != 0 {
		t.Errorf("searching made the fork store %d rows, want 0", n)
	}

	// Continuing the fork: its own rows, after the shared ones.
	f5 := addAt(t, srv, fork, "f5", "", "")
	if f5.Position != 5 || f5.ParentID == nil || *f5.ParentID != shared[3] {
		t.Fatalf("the fork's first own message: position %d parent %v, want 5 under %s", f5.Position, f5.ParentID, shared[3])
	}
	f6 := addAt(t, srv, fork, "f6", "", "")
	if n := ownRows(t, srv, fork); n != 2 {
		t.Errorf("the fork stores %d rows after two messages, want 2", n)
	}
	if got := readBranch(t, srv, fork, map[string]any{"last": 3}); !slices.Equal(texts(got), []string{"m4", "f5", "f6"}) || got.Messages.TotalCount != 6 {
		t.Errorf("the fork's last page: got %v (total %d), want [m4 f5 f6] (6)", texts(got), got.Messages.TotalCount)
	}

	// A fork of the fork at a shared message, and at one of its own.
	inner := forkOf(t, srv, shared[1])
	if got := texts(readBranch(t, srv, inner, map[string]any{"first": 10})); !slices.Equal(got, []string{"m1", "m2"}) {
		t.Errorf("fork at a shared message: got %v, want [m1 m2]", got)
	}
	if n := ownRows(t, srv, fork); n != 2 {
		t.Errorf("forking at a message the fork shares made it store %d rows, want its 2", n)
	}
	var from struct {
		Conversation struct{ ForkedFromID *string }
	}
	srv.MustDo(t, `query($c: ID!) { conversation(id: $c) { forkedFromId } }`, map[string]any{"c": inner}, &from)
	if f := from.Conversation.ForkedFromID; f == nil || *f != shared[1] {
		t.Errorf("the fork at a shared message: forkedFromId %v, want %s", f, shared[1])
	}
	outer := forkOf(t, srv, f6.ID)
	if got := texts(readBranch(t, srv, outer, map[string]any{"first": 10})); !slices.Equal(got, []string{"m1", "m2", "m3", "m4", "f5", "f6"}) {
		t.Errorf("fork of the fork at its own message: got %v", got)
	}
	if n := ownRows(t, srv, outer); n != 0 {
		t.Errorf("the fork of the fork stores %d rows, want 0", n)
	}

	// Hiding m2 in the source: the forks sharing it get their own copies first, under the
	// ids they showed, and keep m2 visible.
	srv.MustDo(t, `mutation($m: ID!) { setMessageHidden(messageId: $m, hidden: true) { __typename } }`, map[string]any{"m": ids[1]}, nil)
	after := readBranch(t, srv, fork, map[string]any{"first": 10})
	if got := after.ids(); !slices.Equal(got[:4], shared) {
		t.Errorf("the fork's ids after it was made real: got %v, want %v", got[:4], shared)
	}
	var hid struct {
		Conversation struct {
			Messages struct {
				Edges []struct{ Node struct{ Hidden bool } }
			}
		}
	}
	srv.MustDo(t, `query($c: ID!) { conversation(id: $c) { messages(first: 2) { edges { node { ... on MessageBase { hidden } } } } } }`,
		map[string]any{"c": fork}, &hid)
	if e := hid.Conversation.Messages.Edges; len(e) != 2 || e[1].Node.Hidden {
		t.Errorf("hiding m2 in the source hid it in the fork (or the fork lost it): %+v", e)
	}
	if n := ownRows(t, srv, fork); n != 6 {
		t.Errorf("the fork stores %d rows once made real, want 6", n)
	}
	if got := texts(readBranch(t, srv, outer, map[string]any{"first": 10})); !slices.Equal(got, []string{"m1", "m2", "m3", "m4", "f5", "f6"}) {
		t.Errorf("the fork of the fork after the change: got %v", got)
	}

	// Deleting the first fork leaves the forks of it whole, and without their forkedFrom.
	srv.MustDo(t, `mutation($c: ID!) { deleteConversation(id: $c) }`, map[string]any{"c": fork}, nil)
	if got := texts(readBranch(t, srv, outer, map[string]any{"first": 10})); !slices.Equal(got, []string{"m1", "m2", "m3", "m4", "f5", "f6"}) {
		t.Errorf("the fork of a deleted fork: got %v", got)
	}
	if got := texts(readBranch(t, srv, inner, map[string]any{"first": 10})); !slices.Equal(got, []string{"m1", "m2"}) {
		t.Errorf("the fork at a shared message of a deleted fork: got %v", got)
	}
	for _, c := range []string{inner, outer} {
		var link struct {
			Conversation struct{ ForkedFromID *string }
		}
		srv.MustDo(t, `query($c: ID!) { conversation(id: $c) { forkedFromId } }`, map[string]any{"c": c}, &link)
		if link.Conversation.ForkedFromID != nil {
			t.Errorf("%s's forkedFromId after its source was deleted: %s, want null", c, *link.Conversation.ForkedFromID)
		}
	}
}

// TestForkAtAToolRequest: an agent forks at a tool request to try another result; the
// source answering its call copies nothing into the fork (the call is not in the work
// queue: no fork lists it as awaiting), and the fork answers it its own way (which makes
// it real, once), each conversation pairing its own result.
func TestForkAtAToolRequest(t *testing.T) {
	t.Parallel()
	srv := testserver.New(t)
	src := srv.CreateConversation(t, "agent")
	for i := range 3 {
		srv.AddMessage(t, src, testserver.Text("USER", fmt.Sprintf("turn %d", i)))
	}
	req := srv.AddMessage(t, src, map[string]any{"toolRequest": map[string]any{"toolCalls": []any{
		map[string]any{"id": "k1", "name": "ls", "arguments": map[string]any{}},
	}}}).ID
	fork := forkOf(t, srv, req)
	result := func(conv, content string) {
		t.Helper()
		srv.MustDo(t, `mutation($c: ID!, $i: MessageInput!) { addMessage(conversationId: $c, input: $i) { cursor } }`,
			map[string]any{"c": conv, "i": map[string]any{"toolResult": map[string]any{"toolCallId": "k1", "status": "SUCCESS", "content": content}}}, nil)
	}
	result(src, "in the source")
	if n := ownRows(t, srv, fork); n != 0 {
		t.Errorf("the source's result made the fork store %d rows, want 0", n)
	}
	result(fork, "in the fork")
	var out struct {
		Conversation struct {
			Transcript json.RawMessage
		}
	}
	for conv, want := range map[string]string{src: "in the source", fork: "in the fork"} {
		srv.MustDo(t, `query($c: ID!) { conversation(id: $c) { transcript(format: OPENAI_CHAT) } }`, map[string]any{"c": conv}, &out)
		var msgs []struct {
			Role       string
			Content    any
			ToolCallID string `json:"tool_call_id"`
		}
		if err := json.Unmarshal(out.Conversation.Transcript, &msgs); err != nil {
			t.Fatalf("%s's transcript %s: %v", conv, out.Conversation.Transcript, err)
		}
		last := msgs[len(msgs)-1]
		if len(msgs) != 5 || last.Role != "tool" || last.ToolCallID != "k1" || fmt.Sprint(last.Content) != want {
			t.Errorf("%s's transcript: got %s, want its 5 messages ending with the result %q of k1", conv, out.Conversation.Transcript, want)
		}
	}
}

// TestForkContinuedByParentID: a client that names the fork's last shared message as
// the parent of its first message continues the fork without copying it; a message
// under an earlier shared one starts a branch there, which makes the fork real first.
func TestForkContinuedByParentID(t *testing.T) {
	t.Parallel()
	srv := testserver.New(t)
	src := srv.CreateConversation(t, "source")
	var last string
	for i := 1; i <= 4; i++ {
		last = addAt(t, srv, src, fmt.Sprintf("m%d", i), "", "").ID
	}
	fork := forkOf(t, srv, last)
	shared := readBranch(t, srv, fork, map[string]any{"first": 10}).ids()
	f5 := addAt(t, srv, fork, "f5", shared[3], "")
	if f5.Position != 5 || f5.ParentID == nil || *f5.ParentID != shared[3] || f5.Siblings.Count != 1 {
		t.Fatalf("under the last shared message: got position %d parent %v siblings %d, want 5 under %s, alone", f5.Position, f5.ParentID, f5.Siblings.Count, shared[3])
	}
	if n := ownRows(t, srv, fork); n != 1 {
		t.Errorf("continuing the fork by parentId made it store %d rows, want 1", n)
	}
	b3 := addAt(t, srv, fork, "b3", shared[1], "")
	if b3.Position != 3 || b3.ParentID == nil || *b3.ParentID != shared[1] || b3.Siblings.Count != 2 {
		t.Errorf("under a shared message: got position %d parent %v siblings %d, want 3 under %s beside %s", b3.Position, b3.ParentID, b3.Siblings.Count, shared[1], shared[2])
	}
	if got := texts(readBranch(t, srv, fork, map[string]any{"first": 10})); !slices.Equal(got, []string{"m1", "m2", "b3"}) {
		t.Errorf("the active branch after the new one: got %v, want [m1 m2 b3]", got)
	}
	if got := texts(readBranch(t, srv, fork, map[string]any{"first": 10, "branch": f5.ID})); !slices.Equal(got, []string{"m1", "m2", "m3", "m4", "f5"}) {
		t.Errorf("the first branch: got %v, want [m1 m2 m3 m4 f5]", got)
	}
}
