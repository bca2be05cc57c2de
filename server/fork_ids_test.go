package server_test

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/parley-dev/parley/internal/testserver"
)

// The entry points that take a message id, for the messages a fork shares with its
// source (copy-free forks, issue 16): a fork's message ids are its own, whether its
// history was copied or not, and each of them works as it would in a copy.

// forkAt forks at the message m and returns the fork's id and its messages' ids, oldest
// first.
func forkAt(t *testing.T, srv *testserver.Server, m string) (string, []string) {
	t.Helper()
	var f forkResult
	srv.MustDo(t, forkMutation, map[string]any{"m": m}, &f)
	return f.ForkConversation.ID, readBranch(t, srv, f.ForkConversation.ID, map[string]any{"first": 50}).ids()
}

// TestForkMessageByID: node(id:), message(id:) and nodes(ids:) find the fork's messages
// by the fork's ids, as the fork's: their conversation, position and parent are the
// fork's, their content the source's.
func TestForkMessageByID(t *testing.T) {
	t.Parallel()
	srv := testserver.New(t)
	src := srv.CreateConversation(t, "source")
	u1 := addAt(t, srv, src, "walrus one", "", "")
	addAt(t, srv, src, "walrus two", "", "")
	u3 := addAt(t, srv, src, "walrus three", "", "")
	fork, ids := forkAt(t, srv, u3.ID)
	if len(ids) != 3 || ids[0] == u1.ID {
		t.Fatalf("the fork's messages: got %v, want three ids of its own", ids)
	}
	type msg struct {
		ID             string
		ConversationID string
		Position       int
		ParentID       *string
		Text           string
		Siblings       struct{ IDs []string }
	}
	const fields = `id conversationId position parentId siblings { ids } ... on TextMessage { text }`
	for i, id := range ids {
		var out struct {
			Node    *msg
			Message *msg
		}
		srv.MustDo(t, `query($id: ID!) { node(id: $id) { ... on MessageBase { `+fields+` } } message(id: $id) { ... on MessageBase { `+fields+` } } }`,
			map[string]any{"id": id}, &out)
		for name, m := range map[string]*msg{"node": out.Node, "message": out.Message} {
			if m == nil {
				t.Fatalf("%s(%s): null, want the fork's message %d", name, id, i+1)
			}
			var parent string
			if m.ParentID != nil {
				parent = *m.ParentID
			}
			wantParent := ""
			if i > 0 {
				wantParent = ids[i-1]
			}
			wantText := []string{"walrus one", "walrus two", "walrus three"}[i]
			if m.ID != id || m.ConversationID != fork || m.Position != i+1 || parent != wantParent || m.Text != wantText ||
				len(m.Siblings.IDs) != 1 || m.Siblings.IDs[0] != id {
				t.Errorf("%s(%s): got %+v, want it in %s at %d under %q, saying %q, alone", name, id, *m, fork, i+1, wantParent, wantText)
			}
		}
	}
	var list struct{ Nodes []*msg }
	srv.MustDo(t, `query($ids: [ID!]!) { nodes(ids: $ids) { ... on MessageBase { `+fields+` } } }`,
		map[string]any{"ids": append(ids, u1.ID)}, &list)
	if len(list.Nodes) != 4 || list.Nodes[0] == nil || list.Nodes[2] == nil || list.Nodes[3] == nil ||
		list.Nodes[2].Text != "walrus three" || list.Nodes[3].ConversationID != src {
		raw, _ := json.Marshal(list)
		t.Errorf("nodes: got %s, want the fork's three and the source's first", raw)
	}
	// A derived id of no fork is not found.
	var none struct{ Node *msg }
	srv.MustDo(t, `query($id: ID!) { node(id: $id) { ... on MessageBase { id } } }`,
		map[string]any{"id": "msg_00000000-0009-8000-8000-010000000000"}, &none)
	if none.Node != nil {
		t.Errorf("a derived id of no fork: got %+v, want null", *none.Node)
	}
}

// TestForkNodesBytesBounded: the messages a fork shares weigh in nodes(ids:)'s budget
// under the fork's ids as they do under the source's.
func TestForkNodesBytesBounded(t *testing.T) {
	t.Parallel()
	srv := testserver.NewWired(t, fmt.Sprintf("limits:\n  max_page_bytes: %d\n", 1<<20))
	conv := srv.CreateConversation(t, "nodes")
	var big []string
	for i := range 3 {
		big = append(big, srv.AddMessage(t, conv, testserver.Text("USER", fmt.Sprintf("%d:%s", i, strings.Repeat("x", 400<<10)))).ID)
	}
	var f forkResult
	srv.MustDo(t, forkMutation, map[string]any{"m": big[2]}, &f)
	var ids []string
	args := map[string]any{"first": 1}
	for len(ids) < 3 { // a message a page: each is most of the page's budget
		p := readBranch(t, srv.Server, f.ForkConversation.ID, args)
		ids = append(ids, p.ids()...)
		if !p.Messages.PageInfo.HasNextPage {
			break
		}
		args["after"] = *p.Messages.PageInfo.EndCursor
	}
	if len(ids) != 3 {
		t.Fatalf("the fork's messages: got %v, want 3", ids)
	}
	const query = `query($ids: [ID!]!) { nodes(ids: $ids) { id } }`
	for name, ids := range map[string][]string{"the source's": big, "the fork's": ids} {
		if code := srv.Do(t, query, map[string]any{"ids": ids}).ErrorCode(t); code != "NODES_TOO_LARGE" {
			t.Errorf("%s three large messages: got %s, want NODES_TOO_LARGE", name, code)
		}
	}
	if r := srv.Do(t, query, map[string]any{"ids": ids[:1]}); len(r.Errors) > 0 || !strings.Contains(string(r.Data), ids[0]) {
		t.Errorf("one of the fork's: got %s %+v, want it", r.Data, r.Errors)
	}
}

// forkCalls is what tool call tests read of a tool request.
type forkCalls struct {
	ID        string
	ToolCalls []struct {
		CallID         string
		ApprovalStatus string
	}
}

// callStatus returns the approval status of call in the tool request id.
func callStatus(t *testing.T, srv *testserver.Server, id, call string) string {
	t.Helper()
	var out struct{ Node *forkCalls }
	srv.MustDo(t, `query($id: ID!) { node(id: $id) { ... on ToolRequestMessage { id toolCalls { callId approvalStatus } } } }`,
		map[string]any{"id": id}, &out)
	if out.Node == nil {
		t.Fatalf("node(%s): null, want a tool request", id)
	}
	for _, c := range out.Node.ToolCalls {
		if c.CallID == call {
			return c.ApprovalStatus
		}
	}
	t.Fatalf("node(%s): no call %s", id, call)
	return ""
}

type awaitingCall struct {
	ConversationID string
	Message        struct{ ID string }
	ToolCall       struct{ CallID string }
	ClaimedBy      *string
}

func awaitingIn(t *testing.T, srv *testserver.Server, conv string) []awaitingCall {
	t.Helper()
	var out struct{ ToolCallsAwaitingResult []awaitingCall }
	vars := map[string]any{}
	if conv != "" {
		vars["c"] = conv
	}
	srv.MustDo(t, `query($c: ID) { toolCallsAwaitingResult(conversationId: $c) { conversationId message { id } toolCall { callId } claimedBy } }`,
		vars, &out)
	return out.ToolCallsAwaitingResult
}

const claimMutation = `mutation($m: ID!, $c: String!, $w: String!) { claimToolCall(messageId: $m, toolCallId: $c, worker: $w) {
	conversationId message { id } toolCall { callId } claimedBy } }`

const decideMutation = `mutation($m: ID!, $c: String!, $s: ApprovalStatus!) { setToolCallApproval(messageId: $m, toolCallId: $c, status: $s) { id } }`

// TestForkToolCalls: the tool calls of the requests a fork shares are the fork's as they
// would be in a copy: awaiting in it, answered in it, claimed and decided in it by the
// fork's ids without touching the source's, kept as they were when the source's are
// decided or claimed, and their ids taken in it (by a request added, or opened by a
// streaming one).
func TestForkToolCalls(t *testing.T) {
	t.Parallel()
	srv := testserver.New(t)
	src := srv.CreateConversation(t, "source")
	srv.AddMessage(t, src, testserver.Text("USER", "look around"))
	req := srv.AddMessage(t, src, map[string]any{"toolRequest": map[string]any{"toolCalls": []any{
		map[string]any{"id": "c1", "name": "ls", "arguments": map[string]any{}},
		map[string]any{"id": "c2", "name": "cat", "arguments": map[string]any{}},
	}}}).ID
	srv.MustDo(t, decideMutation, map[string]any{"m": req, "c": "c1", "s": "APPROVED"}, nil)
	// The forks are made at the request: c1 is awaiting in each.
	newFork := func() (string, string) {
		t.Helper()
		fork, ids := forkAt(t, srv, req)
		if len(ids) != 2 {
			t.Fatalf("fork: got %v, want two messages", ids)
		}
		return fork, ids[1]
	}

	t.Run("awaiting", func(t *testing.T) {
		fork, freq := newFork()
		got := awaitingIn(t, srv, fork)
		if len(got) != 1 || got[0].ConversationID != fork || got[0].Message.ID != freq || got[0].ToolCall.CallID != "c1" || got[0].ClaimedBy != nil {
			t.Errorf("awaiting in the fork: got %+v, want c1 of %s in %s, unclaimed", got, freq, fork)
		}
	})

	t.Run("answered", func(t *testing.T) {
		fork, freq := newFork()
		var out struct {
			AddMessage struct {
				Node struct {
					ToolName string
					ParentID *string
				}
			}
		}
		srv.MustDo(t, `mutation($c: ID!, $i: MessageInput!) { addMessage(conversationId: $c, input: $i) {
			node { ... on ToolResultMessage { toolName parentId } } } }`,
			map[string]any{"c": fork, "i": map[string]any{"toolResult": map[string]any{"toolCallId": "c1", "status": "SUCCESS", "content": "other"}}}, &out)
		if n := out.AddMessage.Node; n.ToolName != "ls" || n.ParentID == nil || *n.ParentID != freq {
			t.Errorf("the fork's result: got %+v, want ls's under %s", n, freq)
		}
		if got := awaitingIn(t, srv, fork); len(got) != 0 {
			t.Errorf("awaiting in the fork after its result: got %+v, want none", got)
		}
		if got := awaitingIn(t, srv, src); len(got) != 1 || got[0].Message.ID != req {
			t.Errorf("awaiting in the source after the fork's result: got %+v, want c1 of %s", got, req)
		}
		r := srv.Do(t, `mutation($c: ID!, $i: MessageInput!) { addMessage(conversationId: $c, input: $i) { cursor } }`,
			map[string]any{"c": fork, "i": map[string]any{"toolResult": map[string]any{"toolCallId": "c1", "status": "SUCCESS", "content": "again"}}})
		if len(r.Errors) != 1 {
			t.Errorf("a second result in the fork: got %s, want it refused", r.Data)
		}
	})

	t.Run("claimed in the fork", func(t *testing.T) {
		fork, freq := newFork()
		var out struct{ ClaimToolCall awaitingCall }
		srv.MustDo(t, claimMutation, map[string]any{"m": freq, "c": "c1", "w": "w1"}, &out)
		if c := out.ClaimToolCall; c.ConversationID != fork || c.Message.ID != freq || c.ClaimedBy == nil || *c.ClaimedBy != "w1" {
			t.Errorf("claim in the fork: got %+v, want c1 of %s claimed by w1", c, freq)
		}
		if got := awaitingIn(t, srv, fork); len(got) != 1 || got[0].ClaimedBy == nil || *got[0].ClaimedBy != "w1" || got[0].Message.ID != freq {
			t.Errorf("awaiting in the fork after the claim: got %+v, want c1 claimed by w1", got)
		}
	})

	t.Run("claimed and answered in the source", func(t *testing.T) {
		fork, freq := newFork()
		srv.MustDo(t, claimMutation, map[string]any{"m": req, "c": "c1", "w": "w2"}, nil)
		if got := awaitingIn(t, srv, fork); len(got) != 1 || got[0].ClaimedBy != nil || got[0].Message.ID != freq {
			t.Errorf("awaiting in the fork after a claim in the source: got %+v, want c1 of %s unclaimed", got, freq)
		}
		later, lreq := newFork()
		srv.AddMessage(t, src, map[string]any{"toolResult": map[string]any{"toolCallId": "c1", "status": "SUCCESS", "content": "a b", "worker": "w2"}})
		if got := awaitingIn(t, srv, src); len(got) != 0 {
			t.Errorf("awaiting in the source after its result: got %+v, want none", got)
		}
		for f, r := range map[string]string{fork: freq, later: lreq} {
			if got := awaitingIn(t, srv, f); len(got) != 1 || got[0].Message.ID != r {
				t.Errorf("awaiting in a fork after the source's result: got %+v, want c1 of %s", got, r)
			}
		}
	})

	t.Run("decided", func(t *testing.T) {
		fork, freq := newFork()
		_, beforeReq := newFork()
		srv.MustDo(t, decideMutation, map[string]any{"m": freq, "c": "c2", "s": "APPROVED"}, nil)
		if got := callStatus(t, srv, freq, "c2"); got != "APPROVED" {
			t.Errorf("c2 in the fork: got %s, want APPROVED", got)
		}
		if got := callStatus(t, srv, req, "c2"); got != "PENDING" {
			t.Errorf("c2 in the source after the fork's decision: got %s, want PENDING", got)
		}
		if got := awaitingIn(t, srv, fork); len(got) != 2 {
			t.Errorf("awaiting in the fork: got %+v, want c1 and c2", got)
		}
		srv.MustDo(t, decideMutation, map[string]any{"m": req, "c": "c2", "s": "DENIED"}, nil)
		if got := callStatus(t, srv, beforeReq, "c2"); got != "PENDING" {
			t.Errorf("c2 in a fork made before the source's decision: got %s, want PENDING", got)
		}
	})

	t.Run("ids taken", func(t *testing.T) {
		fork, _ := newFork()
		r := srv.Do(t, `mutation($c: ID!, $i: MessageInput!) { addMessage(conversationId: $c, input: $i) { cursor } }`,
			map[string]any{"c": fork, "i": map[string]any{"toolRequest": map[string]any{"toolCalls": []any{
				map[string]any{"id": "c2", "name": "ls", "arguments": map[string]any{}}}}}})
		if code := r.ErrorCode(t); code != "BAD_USER_INPUT" || !strings.Contains(r.Errors[0].Message, `"c2" is already used`) {
			t.Errorf("a request reusing a shared call's id: got %s %q, want BAD_USER_INPUT naming c2", code, r.Errors[0].Message)
		}
		m := startMessage(t, srv, fork, nil)
		r = srv.Do(t, appendMutation, map[string]any{"m": m.ID, "s": 1, "d": []map[string]any{
			{"kind": "TOOL_ARGUMENTS", "index": 0, "toolCallId": "c1", "toolName": "ls", "text": `{}`}}})
		if code := r.ErrorCode(t); code != "BAD_USER_INPUT" || !strings.Contains(r.Errors[0].Message, `"c1", already used`) {
			t.Errorf("a streaming request opening a shared call's id: got %s %q, want BAD_USER_INPUT naming c1", code, r.Errors[0].Message)
		}
		// An id the source uses after the fork's point is free in the fork.
		srv.AddMessage(t, src, map[string]any{"toolRequest": map[string]any{"toolCalls": []any{
			map[string]any{"id": "c3", "name": "ls", "arguments": map[string]any{}}}}})
		srv.AddMessage(t, fork, map[string]any{"toolRequest": map[string]any{"toolCalls": []any{
			map[string]any{"id": "c3", "name": "ls", "arguments": map[string]any{}}}}})
	})
}

// TestForkImport: importing a history into a fork finds the records it shares with its
// source as the fork's own (the same source records are not added again), as it would
// in a fork that copied them, and places the rest after them.
func TestForkImport(t *testing.T) {
	t.Parallel()
	srv := testserver.New(t)
	const session = `{"type":"user","uuid":"u1","parentUuid":null,"timestamp":"2026-02-10T10:00:00Z","message":{"role":"user","content":"walrus one"}}
{"type":"assistant","uuid":"a1","parentUuid":"u1","timestamp":"2026-02-10T10:00:01Z","message":{"id":"msg_1","role":"assistant","model":"m","content":[{"type":"text","text":"walrus two"}]}}
{"type":"user","uuid":"u2","parentUuid":"a1","timestamp":"2026-02-10T10:00:02Z","message":{"role":"user","content":"walrus three"}}
{"type":"assistant","uuid":"a2","parentUuid":"u2","timestamp":"2026-02-10T10:00:03Z","message":{"id":"msg_2","role":"assistant","model":"m","content":[{"type":"text","text":"walrus four"}]}}
`
	type report struct {
		ImportConversation struct {
			Conversation   struct{ ID string }
			Added          int
			AlreadyPresent int
		}
	}
	const imp = `mutation($d: String!, $c: ID) { importConversation(format: CLAUDE_CODE_JSONL, data: $d, conversationId: $c) {
		conversation { id } added alreadyPresent } }`
	var first report
	srv.MustDo(t, imp, map[string]any{"d": session}, &first)
	src := first.ImportConversation.Conversation.ID
	ids := readBranch(t, srv, src, map[string]any{"first": 10}).ids()
	if len(ids) != 4 {
		t.Fatalf("the import: got %v, want 4 messages", ids)
	}
	fork, shared := forkAt(t, srv, ids[1])
	var again report
	srv.MustDo(t, imp, map[string]any{"d": session, "c": fork}, &again)
	if r := again.ImportConversation; r.Added != 2 || r.AlreadyPresent != 2 {
		t.Errorf("the import into the fork: added %d, %d already present; want 2 and 2", r.Added, r.AlreadyPresent)
	}
	p := readBranch(t, srv, fork, map[string]any{"first": 10})
	var texts []string
	for _, e := range p.Messages.Edges {
		texts = append(texts, e.Node.Text)
	}
	if got := p.ids(); len(got) != 4 || got[0] != shared[0] || got[1] != shared[1] ||
		strings.Join(texts, ",") != "walrus one,walrus two,walrus three,walrus four" || p.MessageCount != 4 {
		t.Errorf("the fork after the import: got %v %v (%d messages), want %v then the two added", got, texts, p.MessageCount, shared)
	}
}

// TestForkBranches: the fork's ids of the messages it shares name branches of the fork
// (a page's branch, a subscription's, switchBranch's message), as they would in a copy:
// the branch through a shared message runs on along its first children, into the
// messages added to the fork.
func TestForkBranches(t *testing.T) {
	t.Parallel()
	srv := testserver.New(t)
	src := srv.CreateConversation(t, "source")
	for _, s := range []string{"walrus one", "walrus two", "walrus three"} {
		addAt(t, srv, src, s, "", "")
	}
	fork, shared := forkAt(t, srv, readBranch(t, srv, src, map[string]any{"first": 5}).ids()[2])
	x4 := addAt(t, srv, fork, "walrus four", "", "")
	y4 := addAt(t, srv, fork, "walrus four again", "", x4.ID) // a sibling: the active branch

	// A page of the branch through a shared message.
	if got, want := branchIDs(t, srv, fork, shared[1]), append(append([]string{}, shared...), x4.ID); !slices.Equal(got, want) {
		t.Errorf("the branch through %s: got %v, want %v", shared[1], got, want)
	}

	// A subscription to that branch hears of its changes only.
	conn, typ, code, reason := wsDial(t, srv.URL, nil)
	if typ != "connection_ack" {
		t.Fatalf("got %q (close %d %q), want connection_ack", typ, code, reason)
	}
	wsSubscribe(t, conn, "u", `subscription($c: ID!, $b: ID) { messageUpdated(conversationId: $c, branch: $b) { node { ... on MessageBase { id } } } }`,
		map[string]any{"c": fork, "b": shared[1]})
	// The subscription registers on its own time: the other branch's message, then the
	// branch's, are changed until it hears one.
	done := make(chan struct{})
	go func() {
		for {
			for _, id := range []string{y4.ID, x4.ID} {
				select {
				case <-done:
					return
				case <-time.After(50 * time.Millisecond):
				}
				srv.Do(t, `mutation($m: ID!) { setMessageHidden(messageId: $m, hidden: true) { __typename } }`, map[string]any{"m": id})
			}
		}
	}()
	m, _, _ := wsNext(t, conn, 30*time.Second)
	close(done)
	if m == nil || m["type"] != "next" || !strings.Contains(fmtJSON(m), x4.ID) || strings.Contains(fmtJSON(m), y4.ID) {
		t.Errorf("the subscription to the branch through %s: got %v, want %s's change only", shared[1], m, x4.ID)
	}

	// Switching to the branch through a shared message.
	var sw struct {
		SwitchBranch struct{ Control *treeMsg }
	}
	srv.MustDo(t, `mutation($c: ID!, $m: ID!) { switchBranch(conversationId: $c, messageId: $m) {
		control { id position parentId kind from to params } } }`, map[string]any{"c": fork, "m": shared[0]}, &sw)
	c := sw.SwitchBranch.Control
	if c == nil || c.From != y4.ID || c.To != x4.ID || c.Position != 5 || c.ParentID == nil || *c.ParentID != x4.ID ||
		c.Params["forkPoint"] != shared[2] || c.Params["forkPosition"] != float64(3) {
		t.Fatalf("switch: got control %+v, want from %s to %s at position 5 under it, forked at %s (3)", c, y4.ID, x4.ID, shared[2])
	}
	if got, want := branchIDs(t, srv, fork, ""), append(append([]string{}, shared...), x4.ID, c.ID); !slices.Equal(got, want) {
		t.Errorf("the active branch after switching: got %v, want %v", got, want)
	}
}

// branchIDs returns the ids of the messages of a branch of conv (the active one for "").
func branchIDs(t *testing.T, srv *testserver.Server, conv, branch string) []string {
	t.Helper()
	vars := map[string]any{"c": conv}
	if branch != "" {
		vars["b"] = branch
	}
	var out struct {
		Conversation struct {
			Messages struct {
				Edges []struct{ Node struct{ ID string } }
			}
		}
	}
	srv.MustDo(t, `query($c: ID!, $b: ID) { conversation(id: $c) { messages(first: 50, branch: $b) { edges { node { ... on MessageBase { id } } } } } }`,
		vars, &out)
	var ids []string
	for _, e := range out.Conversation.Messages.Edges {
		ids = append(ids, e.Node.ID)
	}
	return ids
}

// TestForkClientMessageID: a client message id used in the history a fork shares is
// the fork's too: addMessage again with it (a retry into the fork) returns the fork's
// message, and another message under it is a CONFLICT, as in a copy.
func TestForkClientMessageID(t *testing.T) {
	t.Parallel()
	srv := testserver.New(t)
	src := srv.CreateConversation(t, "source")
	const add = `mutation($c: ID!, $i: MessageInput!, $k: String) { addMessage(conversationId: $c, input: $i, clientMessageId: $k) {
		node { ... on MessageBase { id conversationId position } } } }`
	type added struct {
		AddMessage struct {
			Node struct {
				ID, ConversationID string
				Position           int
			}
		}
	}
	var first added
	srv.MustDo(t, add, map[string]any{"c": src, "i": testserver.Text("USER", "hello"), "k": "k1"}, &first)
	srv.AddMessage(t, src, testserver.Text("ASSISTANT", "hi"))
	fork, shared := forkAt(t, srv, first.AddMessage.Node.ID)
	var again added
	srv.MustDo(t, add, map[string]any{"c": fork, "i": testserver.Text("USER", "hello"), "k": "k1"}, &again)
	if n := again.AddMessage.Node; n.ID != shared[0] || n.ConversationID != fork || n.Position != 1 {
		t.Errorf("the retry into the fork: got %+v, want the fork's %s at 1", n, shared[0])
	}
	r := srv.Do(t, add, map[string]any{"c": fork, "i": testserver.Text("USER", "another"), "k": "k1"})
	if code := r.ErrorCode(t); code != "CONFLICT" {
		t.Errorf("another message under the id in the fork: got %s, want CONFLICT", code)
	}
	if got := branchIDs(t, srv, fork, ""); len(got) != 1 {
		t.Errorf("the fork's messages: got %v, want its one", got)
	}
	// A streaming message under it too.
	var start struct {
		StartMessage struct{ Node struct{ ID string } }
	}
	r = srv.Do(t, `mutation($c: ID!, $i: StartMessageInput) { startMessage(conversationId: $c, input: $i) { node { ... on MessageBase { id } } } }`,
		map[string]any{"c": fork, "i": map[string]any{"clientMessageId": "k1"}})
	if len(r.Errors) != 1 || r.Errors[0].Code() != "CONFLICT" {
		json.Unmarshal(r.Data, &start)
		t.Errorf("a streaming message under the id in the fork: got %+v %+v, want CONFLICT", start, r.Errors)
	}
}

// TestForkShareLinkBranch: a share link to a fork can name its branch by the fork's id
// of a message it shares.
func TestForkShareLinkBranch(t *testing.T) {
	t.Parallel()
	srv := testserver.New(t)
	src := srv.CreateConversation(t, "source")
	addAt(t, srv, src, "walrus one", "", "")
	u2 := addAt(t, srv, src, "walrus two", "", "")
	fork, shared := forkAt(t, srv, u2.ID)
	x3 := addAt(t, srv, fork, "walrus three", "", "")
	var c shareCreation
	srv.MustDo(t, createShare, map[string]any{"c": fork, "b": shared[0], "e": 600}, &c)
	if l := c.CreateShareLink.Link; l.ConversationID != fork || l.Branch == nil || *l.Branch != shared[0] {
		t.Fatalf("the link: got %+v, want %s's branch %s", l, fork, shared[0])
	}
	viewer := srv.As(c.CreateShareLink.Secret)
	if got, want := branchIDs(t, viewer, fork, shared[0]), []string{shared[0], shared[1], x3.ID}; !slices.Equal(got, want) {
		t.Errorf("the branch through the link: got %v, want %v", got, want)
	}
	// A message the fork does not share is not its branch.
	r := srv.Do(t, createShare, map[string]any{"c": src, "b": shared[0], "e": 600})
	if code := r.ErrorCode(t); code != "NOT_FOUND" {
		t.Errorf("the fork's id as the source's branch: got %s, want NOT_FOUND", code)
	}
}

// TestForkUsage: a fork's usage counts the messages it shares, as in a copy.
func TestForkUsage(t *testing.T) {
	t.Parallel()
	srv := testserver.New(t)
	src := srv.CreateConversation(t, "source")
	const add = `mutation($c: ID!, $i: MessageInput!, $p: ProvenanceInput) { addMessage(conversationId: $c, input: $i, provenance: $p) {
		node { ... on MessageBase { id } } } }`
	var out struct {
		AddMessage struct{ Node struct{ ID string } }
	}
	srv.MustDo(t, add, map[string]any{"c": src, "i": testserver.Text("USER", "hi")}, nil)
	srv.MustDo(t, add, map[string]any{"c": src, "i": testserver.Text("ASSISTANT", "hello"),
		"p": map[string]any{"provider": "p", "usage": map[string]any{"inputTokens": 10, "outputTokens": 3}}}, &out)
	srv.MustDo(t, add, map[string]any{"c": src, "i": testserver.Text("ASSISTANT", "more"),
		"p": map[string]any{"provider": "p", "usage": map[string]any{"inputTokens": 100, "outputTokens": 30}}}, nil)
	fork, _ := forkAt(t, srv, out.AddMessage.Node.ID)
	srv.MustDo(t, add, map[string]any{"c": fork, "i": testserver.Text("ASSISTANT", "in the fork"),
		"p": map[string]any{"provider": "p", "usage": map[string]any{"inputTokens": 1000, "outputTokens": 300}}}, nil)
	usage := func(conv string) (int, int) {
		var u struct {
			Conversation struct {
				Usage struct{ InputTokens, OutputTokens int }
			}
		}
		srv.MustDo(t, `query($c: ID!) { conversation(id: $c) { usage { inputTokens outputTokens } } }`, map[string]any{"c": conv}, &u)
		return u.Conversation.Usage.InputTokens, u.Conversation.Usage.OutputTokens
	}
	if in, outTokens := usage(fork); in != 1010 || outTokens != 303 {
		t.Errorf("the fork's usage: got %d in, %d out; want 1010 and 303 (its message and the one it shares)", in, outTokens)
	}
	if in, outTokens := usage(src); in != 110 || outTokens != 33 {
		t.Errorf("the source's usage: got %d in, %d out; want 110 and 33", in, outTokens)
	}
}

// TestForkLiveMessageIDs: the streaming calls refuse a message a fork shares (it ended
// before the fork), by the fork's id, as they would the fork's copy: appends and
// heartbeats as no longer streaming, ending it otherwise as a conflict, ending it as it
// ended again returns it.
func TestForkLiveMessageIDs(t *testing.T) {
	t.Parallel()
	srv := testserver.New(t)
	src := srv.CreateConversation(t, "source")
	m := startMessage(t, srv, src, nil)
	appendText(t, srv, m.ID, 1, "streamed")
	endMessage(t, srv, `mutation($m: ID!) { completeMessage(messageId: $m) { `+liveFields+` } }`, map[string]any{"m": m.ID})
	_, shared := forkAt(t, srv, m.ID)
	id := shared[0]
	for _, tc := range []struct{ name, query string }{
		{"append", `mutation($m: ID!) { appendMessageDeltas(messageId: $m, seq: 2, deltas: [{kind: TEXT, index: 0, text: "x"}]) { seq } }`},
		{"heartbeat", `mutation($m: ID!) { heartbeatMessage(messageId: $m) { seq } }`},
		{"abort", `mutation($m: ID!) { abortMessage(messageId: $m) { __typename } }`},
	} {
		if code := srv.Do(t, tc.query, map[string]any{"m": id}).ErrorCode(t); code != "CONFLICT" {
			t.Errorf("%s the fork's message: got %s, want CONFLICT", tc.name, code)
		}
	}
	got := endMessage(t, srv, `mutation($m: ID!) { completeMessage(messageId: $m) { `+liveFields+` } }`, map[string]any{"m": id})
	if got.ID != id || got.Text != "streamed" || got.MessageStatus != "COMPLETED" {
		t.Errorf("completing the fork's message again: got %+v, want %s as it is", got, id)
	}
}

// TestForkMessageIDsAreTheOwners: another owner finds nothing by a fork's ids of the
// messages it shares, nor its shared calls among the calls awaiting a result.
func TestForkMessageIDsAreTheOwners(t *testing.T) {
	t.Parallel()
	ann, bob := annAndBob(t)
	src := ann.CreateConversation(t, "source")
	req := ann.AddMessage(t, src, map[string]any{"toolRequest": map[string]any{"toolCalls": []any{
		map[string]any{"id": "c1", "name": "ls", "arguments": map[string]any{}}}}}).ID
	ann.MustDo(t, decideMutation, map[string]any{"m": req, "c": "c1", "s": "APPROVED"}, nil)
	_, shared := forkAt(t, ann, req)
	var out struct{ Node *struct{ ID string } }
	bob.MustDo(t, `query($id: ID!) { node(id: $id) { ... on MessageBase { id } } }`, map[string]any{"id": shared[0]}, &out)
	if out.Node != nil {
		t.Errorf("bob's node(%s): got %+v, want null", shared[0], *out.Node)
	}
	if got := awaitingIn(t, bob, ""); len(got) != 0 {
		t.Errorf("bob's awaiting calls: got %+v, want none", got)
	}
	if got := awaitingIn(t, ann, ""); len(got) != 2 {
		t.Errorf("ann's awaiting calls: got %+v, want c1 in the source and in the fork", got)
	}
	if code := bob.Do(t, claimMutation, map[string]any{"m": shared[0], "c": "c1", "w": "w"}).ErrorCode(t); code != "NOT_FOUND" {
		t.Errorf("bob's claim of the fork's call: got %s, want NOT_FOUND", code)
	}
}
