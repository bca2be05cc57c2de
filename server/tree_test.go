package server_test

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/parley-dev/parley"
	"github.com/parley-dev/parley/internal/testserver"
)

// treeMsg is a message as the tree tests read it.
type treeMsg struct {
	Typename string `json:"__typename"`
	ID       string `json:"id"`
	Position int    `json:"position"`
	ParentID *string
	Text     string
	Kind     string
	From     string
	To       string
	Params   map[string]any
	Siblings struct {
		Count int
		Index int
		IDs   []string `json:"ids"`
	}
}

const treeFields = `__typename ... on MessageBase { id position parentId siblings { count index ids } }
	... on TextMessage { text } ... on SystemControlMessage { kind from to params }`

// addAt adds a text message, as a child of parent or a sibling of sibling when given.
func addAt(t *testing.T, srv *testserver.Server, conv, content, parent, sibling string) treeMsg {
	t.Helper()
	vars := map[string]any{"c": conv, "i": testserver.Text("USER", content)}
	if parent != "" {
		vars["p"] = parent
	}
	if sibling != "" {
		vars["s"] = sibling
	}
	var out struct{ AddMessage struct{ Node treeMsg } }
	srv.MustDo(t, `mutation($c: ID!, $i: MessageInput!, $p: ID, $s: ID) { addMessage(conversationId: $c, input: $i, parentId: $p, siblingOf: $s) {
		node { `+treeFields+` } } }`, vars, &out)
	return out.AddMessage.Node
}

type treePage struct {
	MessageCount int
	Messages     struct {
		TotalCount int
		PageInfo   struct {
			HasNextPage, HasPreviousPage bool
			StartCursor, EndCursor       *string
		}
		Edges []struct {
			Cursor string
			Node   treeMsg
		}
	}
}

func (p treePage) ids() []string {
	var out []string
	for _, e := range p.Messages.Edges {
		out = append(out, e.Node.ID)
	}
	return out
}

// readBranch reads a page of conv's messages with the arguments given (first, after, last,
// before, branch).
func readBranch(t *testing.T, srv *testserver.Server, conv string, args map[string]any) treePage {
	t.Helper()
	vars := map[string]any{"c": conv}
	for k, v := range args {
		vars[k] = v
	}
	var out struct{ Conversation treePage }
	srv.MustDo(t, `query($c: ID!, $first: Int, $after: String, $last: Int, $before: String, $branch: ID) {
		conversation(id: $c) { messageCount messages(first: $first, after: $after, last: $last, before: $before, branch: $branch) {
			totalCount pageInfo { hasNextPage hasPreviousPage startCursor endCursor }
			edges { cursor node { `+treeFields+` } } } } }`, vars, &out)
	return out.Conversation
}

func TestEditAndRegenerateCreateSiblings(t *testing.T) {
	t.Parallel()
	srv := testserver.New(t)
	conv := srv.CreateConversation(t, "tree")
	u1 := addAt(t, srv, conv, "Hi", "", "")
	a1 := addAt(t, srv, conv, "Hello", "", "")
	u2 := addAt(t, srv, conv, "What is 2+2?", "", "")
	a2 := addAt(t, srv, conv, "5", "", "")
	if a2.Position != 4 || *a2.ParentID != u2.ID || a2.Siblings.Count != 1 {
		t.Fatalf("a linear message: got position %d, parent %v, %d siblings; want 4, %s, 1", a2.Position, *a2.ParentID, a2.Siblings.Count, u2.ID)
	}

	// Edit the prompt: a sibling of u2 under a1, which becomes the active branch.
	var edit struct{ EditMessage struct{ Node treeMsg } }
	srv.MustDo(t, `mutation($m: ID!, $i: MessageInput!) { editMessage(messageId: $m, input: $i) { node { `+treeFields+` } } }`,
		map[string]any{"m": u2.ID, "i": testserver.Text("USER", "What is 2+2, exactly?")}, &edit)
	u2b := edit.EditMessage.Node
	if u2b.Position != 3 || u2b.ParentID == nil || *u2b.ParentID != a1.ID {
		t.Fatalf("edit: got position %d parent %v, want 3 under %s", u2b.Position, u2b.ParentID, a1.ID)
	}
	if got, want := u2b.Siblings, []string{u2.ID, u2b.ID}; got.Count != 2 || got.Index != 1 || !slices.Equal(got.IDs, want) {
		t.Errorf("edit's siblings: got %+v, want count 2 index 1 ids %v", got, want)
	}
	p := readBranch(t, srv, conv, nil)
	if got, want := p.ids(), []string{u1.ID, a1.ID, u2b.ID}; !slices.Equal(got, want) {
		t.Fatalf("active branch after the edit: got %v, want %v", got, want)
	}
	if p.MessageCount != 3 || p.Messages.TotalCount != 3 {
		t.Errorf("counts after the edit: got messageCount %d totalCount %d, want 3 and 3", p.MessageCount, p.Messages.TotalCount)
	}
	// Every message of the page knows its siblings (read with the page).
	if s := p.Messages.Edges[2].Node.Siblings; s.Count != 2 || s.Index != 1 {
		t.Errorf("page: edited prompt's siblings: got %+v, want 2, index 1", s)
	}
	if s := p.Messages.Edges[1].Node.Siblings; s.Count != 1 || s.Index != 0 || s.IDs[0] != a1.ID {
		t.Errorf("page: a1's siblings: got %+v, want itself alone", s)
	}

	// A reply, then a regenerated one streamed as its sibling.
	a3 := addAt(t, srv, conv, "4", "", "")
	var start struct{ StartMessage struct{ Node treeMsg } }
	srv.MustDo(t, `mutation($c: ID!, $s: ID) { startMessage(conversationId: $c, input: {siblingOf: $s}) { node { `+treeFields+` } } }`,
		map[string]any{"c": conv, "s": a3.ID}, &start)
	a3b := start.StartMessage.Node
	if a3b.Position != 4 || *a3b.ParentID != u2b.ID || a3b.Siblings.Count != 2 || a3b.Siblings.Index != 1 {
		t.Fatalf("regenerated reply: got position %d parent %v siblings %+v, want 4 under %s, 2 siblings, index 1",
			a3b.Position, *a3b.ParentID, a3b.Siblings, u2b.ID)
	}
	srv.MustDo(t, `mutation($m: ID!) { appendMessageDeltas(messageId: $m, seq: 1, deltas: [{kind: TEXT, index: 0, text: "Four."}]) { seq } }`, map[string]any{"m": a3b.ID}, nil)
	srv.MustDo(t, `mutation($m: ID!) { completeMessage(messageId: $m) { __typename } }`, map[string]any{"m": a3b.ID}, nil)
	p = readBranch(t, srv, conv, nil)
	if got, want := p.ids(), []string{u1.ID, a1.ID, u2b.ID, a3b.ID}; !slices.Equal(got, want) {
		t.Fatalf("active branch after regenerating: got %v, want %v", got, want)
	}
	if got := p.Messages.Edges[3].Node.Text; got != "Four." {
		t.Errorf("regenerated reply's text: got %q, want %q", got, "Four.")
	}
	// The old versions are where they were, on their branches.
	old := readBranch(t, srv, conv, map[string]any{"branch": a2.ID})
	if got, want := old.ids(), []string{u1.ID, a1.ID, u2.ID, a2.ID}; !slices.Equal(got, want) {
		t.Errorf("the first branch: got %v, want %v", got, want)
	}
	// Read alone (not with a page), a message's siblings are the same.
	var one struct{ Message treeMsg }
	srv.MustDo(t, `query($m: ID!) { message(id: $m) { `+treeFields+` } }`, map[string]any{"m": a3.ID}, &one)
	if got, want := one.Message.Siblings.IDs, []string{a3.ID, a3b.ID}; !slices.Equal(got, want) || one.Message.Siblings.Index != 0 {
		t.Errorf("message(id) siblings: got %+v, want %v index 0", one.Message.Siblings, want)
	}

	// Editing the first message makes a second root.
	srv.MustDo(t, `mutation($m: ID!, $i: MessageInput!) { editMessage(messageId: $m, input: $i) { node { `+treeFields+` } } }`,
		map[string]any{"m": u1.ID, "i": testserver.Text("USER", "Hello there")}, &edit)
	root := edit.EditMessage.Node
	if root.Position != 1 || root.ParentID != nil || root.Siblings.Count != 2 || root.Siblings.IDs[0] != u1.ID {
		t.Errorf("edited first message: got position %d parent %v siblings %+v, want a second root", root.Position, root.ParentID, root.Siblings)
	}
	if p := readBranch(t, srv, conv, nil); !slices.Equal(p.ids(), []string{root.ID}) || p.MessageCount != 1 {
		t.Errorf("active branch after editing the root: got %v (%d), want [%s]", p.ids(), p.MessageCount, root.ID)
	}
}

// buildTree makes a conversation with several forks and returns it with its branches,
// each the ids along it from the root:
//
//	main: 1..12
//	a:    1..4 of main, then 5..9
//	b:    1..7 of a, then 8..11
//	c:    1..10 of main, then 11
//	root: a second root, 1..3
func buildTree(t *testing.T, srv *testserver.Server) (string, map[string][]string) {
	t.Helper()
	conv := srv.CreateConversation(t, "forks")
	grow := func(name string, path []string, n int) []string {
		path = slices.Clone(path)
		for i := range n {
			parent := ""
			if len(path) > 0 {
				parent = path[len(path)-1]
			}
			m := addAt(t, srv, conv, fmt.Sprintf("%s %d", name, len(path)+1), parent, "")
			if m.Position != len(path)+1 {
				t.Fatalf("%s, message %d: got position %d", name, i, m.Position)
			}
			path = append(path, m.ID)
		}
		return path
	}
	b := map[string][]string{}
	b["main"] = grow("main", nil, 12)
	b["a"] = grow("a", b["main"][:4], 5)
	b["b"] = grow("b", b["a"][:7], 4)
	b["c"] = grow("c", b["main"][:10], 1)
	r := addAt(t, srv, conv, "root 1", "", b["main"][0])
	b["root"] = grow("root", []string{r.ID}, 2)
	return conv, b
}

func TestPagingAlongBranches(t *testing.T) {
	t.Parallel()
	srv := testserver.New(t)
	conv, branches := buildTree(t, srv)
	for name, path := range branches {
		leaf := path[len(path)-1]
		// Forward in pages of 3, then backward in pages of 2.
		var got []string
		var after any
		for {
			p := readBranch(t, srv, conv, map[string]any{"first": 3, "after": after, "branch": leaf})
			if p.Messages.TotalCount != len(path) {
				t.Errorf("%s: totalCount %d, want %d", name, p.Messages.TotalCount, len(path))
			}
			for i, e := range p.Messages.Edges {
				if want := len(got) + i + 1; e.Node.Position != want {
					t.Errorf("%s: message %s at position %d, want %d", name, e.Node.ID, e.Node.Position, want)
				}
			}
			got = append(got, p.ids()...)
			if p.Messages.PageInfo.HasPreviousPage != (after != nil) {
				t.Errorf("%s: hasPreviousPage %v after %v", name, p.Messages.PageInfo.HasPreviousPage, after)
			}
			if !p.Messages.PageInfo.HasNextPage {
				break
			}
			if len(got) > len(path) {
				t.Fatalf("%s: paging forward does not end: %v", name, got)
			}
			after = *p.Messages.PageInfo.EndCursor
		}
		if !slices.Equal(got, path) {
			t.Errorf("%s forward: got %v, want %v", name, got, path)
		}
		// Named by its second message, a branch goes on along first children: the
		// main line for every branch but the second root's.
		want := branches["main"]
		if name == "root" {
			want = path
		}
		got = nil
		var before any
		for {
			p := readBranch(t, srv, conv, map[string]any{"last": 2, "before": before, "branch": path[1]})
			got = append(p.ids(), got...)
			if !p.Messages.PageInfo.HasPreviousPage {
				break
			}
			if len(got) > len(want) {
				t.Fatalf("%s: paging backward does not end: %v", name, got)
			}
			before = *p.Messages.PageInfo.StartCursor
		}
		if !slices.Equal(got, want) {
			t.Errorf("branch through %s's second message, backward: got %v, want %v", name, got, want)
		}
	}
	// The active branch is the last one added to under the active branch: the second
	// root's, since it was added beside the active branch's root.
	if p := readBranch(t, srv, conv, map[string]any{"first": 50}); !slices.Equal(p.ids(), branches["root"]) || p.MessageCount != 3 {
		t.Errorf("active branch: got %v (%d), want %v", p.ids(), p.MessageCount, branches["root"])
	}
	// Sibling counts at the forks: main's 5th has a's 5th beside it.
	p := readBranch(t, srv, conv, map[string]any{"first": 1, "after": cursorAt(4), "branch": branches["a"][8]})
	if s := p.Messages.Edges[0].Node.Siblings; s.Count != 2 || s.Index != 1 || s.IDs[0] != branches["main"][4] {
		t.Errorf("a's 5th message's siblings: got %+v, want main's 5th then it", s)
	}
	// The branches list.
	var list struct {
		Conversation struct {
			Branches []struct {
				Leaf         struct{ ID string }
				ForkPointID  *string
				ForkPosition int
				Length       int
				Active       bool
			}
		}
	}
	srv.MustDo(t, `query($c: ID!) { conversation(id: $c) { branches { leaf { ... on MessageBase { id } } forkPointId forkPosition length active } } }`,
		map[string]any{"c": conv}, &list)
	byLeaf := map[string]int{}
	for i, b := range list.Conversation.Branches {
		byLeaf[b.Leaf.ID] = i
	}
	if len(list.Conversation.Branches) != len(branches) {
		t.Fatalf("branches: got %d, want %d: %+v", len(list.Conversation.Branches), len(branches), list.Conversation.Branches)
	}
	forks := map[string]int{"main": 0, "a": 4, "b": 7, "c": 10, "root": 0}
	for name, path := range branches {
		i, ok := byLeaf[path[len(path)-1]]
		if !ok {
			t.Errorf("branches: %s's leaf missing", name)
			continue
		}
		b := list.Conversation.Branches[i]
		if b.Length != len(path) || b.ForkPosition != forks[name] || b.Active != (name == "root") {
			t.Errorf("branch %s: got %+v, want length %d, fork at %d, active %v", name, b, len(path), forks[name], name == "root")
		}
		if forks[name] > 0 && (b.ForkPointID == nil || *b.ForkPointID != path[forks[name]-1]) {
			t.Errorf("branch %s: fork point %v, want %s", name, b.ForkPointID, path[forks[name]-1])
		}
	}
}

// cursorAt is the cursor of position p.
func cursorAt(p int) string { return parley.MessageCursor(p) }

func TestSwitchBranchRecordsAndChangesReads(t *testing.T) {
	t.Parallel()
	srv := testserver.New(t)
	conv := srv.CreateConversation(t, "switch")
	u1 := addAt(t, srv, conv, "Tell me a joke", "", "")
	a1 := addAt(t, srv, conv, "Why did the chicken...", "", "")
	a2 := addAt(t, srv, conv, "Knock knock.", "", a1.ID) // regenerated: active
	transcript := func() string {
		var out struct {
			Conversation struct{ Transcript json.RawMessage }
		}
		srv.MustDo(t, `query($c: ID!) { conversation(id: $c) { transcript(format: OPENAI_CHAT) } }`, map[string]any{"c": conv}, &out)
		return string(out.Conversation.Transcript)
	}
	if tr := transcript(); !strings.Contains(tr, "Knock knock.") || strings.Contains(tr, "chicken") {
		t.Fatalf("transcript before switching: got %s, want the regenerated reply only", tr)
	}
	var sw struct {
		SwitchBranch struct {
			Conversation struct{ MessageCount int }
			Control      *treeMsg
		}
	}
	srv.MustDo(t, `mutation($c: ID!, $m: ID!) { switchBranch(conversationId: $c, messageId: $m, switchedBy: "alice") {
		conversation { messageCount } control { id position parentId kind from to params } } }`, map[string]any{"c": conv, "m": a1.ID}, &sw)
	c := sw.SwitchBranch.Control
	if c == nil || c.Kind != "BRANCH_SWITCH" || c.From != a2.ID || c.To != a1.ID || c.Position != 3 || *c.ParentID != a1.ID {
		t.Fatalf("switch: got control %+v, want BRANCH_SWITCH from %s to %s at position 3 under it", c, a2.ID, a1.ID)
	}
	if c.Params["forkPoint"] != u1.ID || c.Params["forkPosition"] != float64(1) || c.Params["switchedBy"] != "alice" {
		t.Errorf("switch params: got %v, want forkPoint %s, forkPosition 1, switchedBy alice", c.Params, u1.ID)
	}
	if sw.SwitchBranch.Conversation.MessageCount != 3 {
		t.Errorf("messageCount after switching: got %d, want 3", sw.SwitchBranch.Conversation.MessageCount)
	}
	p := readBranch(t, srv, conv, nil)
	if got, want := p.ids(), []string{u1.ID, a1.ID, c.ID}; !slices.Equal(got, want) {
		t.Errorf("messages after switching: got %v, want %v", got, want)
	}
	// The transcript follows, and never carries the control message.
	if tr := transcript(); !strings.Contains(tr, "chicken") || strings.Contains(tr, "Knock") || strings.Contains(tr, "BRANCH") {
		t.Errorf("transcript after switching: got %s, want the first reply only", tr)
	}
	// Every format exports a branch by name, the Markdown for people included.
	for _, format := range []string{"OPENAI_CHAT", "OPENAI_RESPONSES", "ANTHROPIC_MESSAGES", "MARKDOWN", "PARLEY_JSON"} {
		var out struct {
			Conversation struct{ Transcript json.RawMessage }
		}
		srv.MustDo(t, `query($c: ID!, $f: TranscriptFormat!, $b: ID) { conversation(id: $c) { transcript(format: $f, branch: $b) } }`,
			map[string]any{"c": conv, "f": format, "b": a2.ID}, &out)
		if tr := string(out.Conversation.Transcript); !strings.Contains(tr, "Knock knock.") || strings.Contains(tr, "chicken") {
			t.Errorf("%s of the other branch: got %s, want the regenerated reply only", format, tr)
		}
	}
	// New messages continue the branch switched to.
	next := addAt(t, srv, conv, "Ha!", "", "")
	if next.Position != 4 || *next.ParentID != c.ID {
		t.Errorf("a message after switching: got position %d under %v, want 4 under the switch", next.Position, *next.ParentID)
	}
	// Switching to the active branch records nothing.
	srv.MustDo(t, `mutation($c: ID!, $m: ID!) { switchBranch(conversationId: $c, messageId: $m) { control { __typename } } }`,
		map[string]any{"c": conv, "m": u1.ID}, &sw)
	if sw.SwitchBranch.Control != nil {
		t.Errorf("switching to the active branch: got %+v, want no control message", sw.SwitchBranch.Control)
	}
	if p := readBranch(t, srv, conv, nil); len(p.ids()) != 4 {
		t.Errorf("after a switch to the active branch: got %d messages, want 4", len(p.ids()))
	}
}

func TestConcurrentWritersOnTwoBranches(t *testing.T) {
	t.Parallel()
	srv := testserver.New(t)
	conv := srv.CreateConversation(t, "writers")
	fork := addAt(t, srv, conv, "start", "", "")
	const n = 15
	paths := make([][]string, 2)
	var wg sync.WaitGroup
	for w := range paths {
		wg.Add(1)
		go func() {
			defer wg.Done()
			parent := fork.ID
			paths[w] = []string{fork.ID}
			for i := range n {
				m := addAt(t, srv, conv, fmt.Sprintf("writer %d, %d", w, i), parent, "")
				paths[w] = append(paths[w], m.ID)
				parent = m.ID
			}
		}()
	}
	wg.Wait()
	for w, path := range paths {
		p := readBranch(t, srv, conv, map[string]any{"first": 100, "branch": path[len(path)-1]})
		if got := p.ids(); !slices.Equal(got, path) {
			t.Errorf("writer %d's branch: got %v, want %v", w, got, path)
		}
		for i, e := range p.Messages.Edges {
			if e.Node.Position != i+1 {
				t.Errorf("writer %d's branch: %s at position %d, want %d", w, e.Node.ID, e.Node.Position, i+1)
			}
			if want := fmt.Sprintf("writer %d, %d", w, i-1); i > 0 && e.Node.Text != want {
				t.Errorf("writer %d's branch: position %d is %q, want %q", w, i+1, e.Node.Text, want)
			}
		}
	}
	// The two first replies are siblings.
	p := readBranch(t, srv, conv, map[string]any{"first": 1, "after": cursorAt(1), "branch": paths[0][n]})
	if s := p.Messages.Edges[0].Node.Siblings; s.Count != 2 {
		t.Errorf("the writers' first messages: got %+v, want 2 siblings", s)
	}
}

func TestToolResultOnItsCallsBranch(t *testing.T) {
	t.Parallel()
	srv := testserver.New(t)
	conv := srv.CreateConversation(t, "tools")
	u := addAt(t, srv, conv, "Read main.go", "", "")
	var req struct{ AddMessage struct{ Node treeMsg } }
	srv.MustDo(t, `mutation($c: ID!) { addMessage(conversationId: $c, input: {toolRequest: {toolCalls: [{id: "call_1", name: "read", arguments: {}}]}}) {
		node { `+treeFields+` } } }`, map[string]any{"c": conv}, &req)
	other := addAt(t, srv, conv, "Never mind", "", req.AddMessage.Node.ID) // a sibling of the request, now active
	result := `mutation($c: ID!, $p: ID) { addMessage(conversationId: $c, parentId: $p, input: {toolResult: {toolCallId: "call_1", status: SUCCESS, output: {}}}) {
		node { ... on MessageBase { id position } } } }`
	// On the active branch, which does not hold the call: refused, nothing written.
	r := srv.Do(t, result, map[string]any{"c": conv})
	if code := r.ErrorCode(t); code != "BAD_USER_INPUT" || !strings.Contains(r.Errors[0].Message, "another branch") {
		t.Errorf("a result off its call's branch: got %s %q, want BAD_USER_INPUT naming the branch", code, r.Errors[0].Message)
	}
	if p := readBranch(t, srv, conv, nil); !slices.Equal(p.ids(), []string{u.ID, other.ID}) {
		t.Errorf("after the refused result: got %v, want %v", p.ids(), []string{u.ID, other.ID})
	}
	// Under the call: stored.
	var ok struct{ AddMessage struct{ Node treeMsg } }
	srv.MustDo(t, result, map[string]any{"c": conv, "p": req.AddMessage.Node.ID}, &ok)
	if ok.AddMessage.Node.Position != 3 {
		t.Errorf("the result under its call: got position %d, want 3", ok.AddMessage.Node.Position)
	}
}

func TestPlacementErrors(t *testing.T) {
	t.Parallel()
	srv := testserver.New(t)
	conv := srv.CreateConversation(t, "errors")
	other := srv.CreateConversation(t, "other")
	m := addAt(t, srv, conv, "one", "", "")
	elsewhere := addAt(t, srv, other, "two", "", "")
	tests := []struct {
		name, query string
		vars        map[string]any
		code, says  string
	}{
		{"parent and sibling", `mutation($c: ID!, $m: ID) { addMessage(conversationId: $c, parentId: $m, siblingOf: $m, input: {text: {role: USER, content: "x"}}) { cursor } }`,
			map[string]any{"c": conv, "m": m.ID}, "BAD_USER_INPUT", "parentId and siblingOf"},
		{"parent of another conversation", `mutation($c: ID!, $m: ID) { addMessage(conversationId: $c, parentId: $m, input: {text: {role: USER, content: "x"}}) { cursor } }`,
			map[string]any{"c": conv, "m": elsewhere.ID}, "NOT_FOUND", "parentId"},
		{"sibling of nothing", `mutation($c: ID!, $m: ID) { startMessage(conversationId: $c, input: {siblingOf: $m}) { cursor } }`,
			map[string]any{"c": conv, "m": "msg_00000000000000000000000000000000"}, "NOT_FOUND", "siblingOf"},
		{"branch of another conversation", `query($c: ID!, $m: ID) { conversation(id: $c) { messages(branch: $m) { totalCount } } }`,
			map[string]any{"c": conv, "m": elsewhere.ID}, "NOT_FOUND", "branch"},
		{"switch to another conversation's message", `mutation($c: ID!, $m: ID!) { switchBranch(conversationId: $c, messageId: $m) { control { id } } }`,
			map[string]any{"c": conv, "m": elsewhere.ID}, "NOT_FOUND", "messageId"},
	}
	for _, tc := range tests {
		r := srv.Do(t, tc.query, tc.vars)
		if len(r.Errors) != 1 || r.Errors[0].Code() != tc.code || !strings.Contains(r.Errors[0].Message, tc.says) {
			t.Errorf("%s: got %+v, want one %s naming %s", tc.name, r.Errors, tc.code, tc.says)
		}
	}
	// Nothing was written.
	if p := readBranch(t, srv, conv, nil); !slices.Equal(p.ids(), []string{m.ID}) {
		t.Errorf("after the refusals: got %v, want [%s]", p.ids(), m.ID)
	}
}

func TestHideExcludesFromLLMExportsOnly(t *testing.T) {
	t.Parallel()
	srv := testserver.New(t)
	conv := srv.CreateConversation(t, "hide")
	addAt(t, srv, conv, "First question", "", "")
	secret := addAt(t, srv, conv, "My password is hunter2", "", "")
	addAt(t, srv, conv, "Second question", "", "")
	export := func(format string) string {
		var out struct {
			Conversation struct{ Transcript json.RawMessage }
		}
		srv.MustDo(t, `query($c: ID!, $f: TranscriptFormat!) { conversation(id: $c) { transcript(format: $f) } }`,
			map[string]any{"c": conv, "f": format}, &out)
		return string(out.Conversation.Transcript)
	}
	hide := func(hidden bool) {
		var out struct{ SetMessageHidden struct{ Hidden bool } }
		srv.MustDo(t, `mutation($m: ID!, $h: Boolean!) { setMessageHidden(messageId: $m, hidden: $h) { ... on MessageBase { hidden } } }`,
			map[string]any{"m": secret.ID, "h": hidden}, &out)
		if out.SetMessageHidden.Hidden != hidden {
			t.Fatalf("setMessageHidden(%v): got hidden %v", hidden, out.SetMessageHidden.Hidden)
		}
	}
	hide(true)
	for _, f := range []string{"OPENAI_CHAT", "OPENAI_RESPONSES", "ANTHROPIC_MESSAGES"} {
		if tr := export(f); strings.Contains(tr, "hunter2") || !strings.Contains(tr, "Second question") {
			t.Errorf("%s with a hidden message: got %s, want it left out and the rest kept", f, tr)
		}
	}
	for _, f := range []string{"MARKDOWN", "PARLEY_JSON"} {
		if tr := export(f); !strings.Contains(tr, "hunter2") {
			t.Errorf("%s with a hidden message: got %s, want it kept (it is not sent to an LLM)", f, tr)
		}
	}
	var report struct {
		Conversation struct {
			TranscriptReport struct {
				Dropped []struct{ MessageID, Reason string }
			}
		}
	}
	srv.MustDo(t, `query($c: ID!) { conversation(id: $c) { transcriptReport(format: OPENAI_CHAT) { dropped { messageId reason } } } }`,
		map[string]any{"c": conv}, &report)
	if d := report.Conversation.TranscriptReport.Dropped; len(d) != 1 || d[0].MessageID != secret.ID || !strings.Contains(d[0].Reason, "hidden") {
		t.Errorf("transcriptReport: got %+v, want the hidden message dropped as hidden", d)
	}
	// Still in the history, marked.
	var hist struct {
		Conversation struct {
			Messages struct {
				Edges []struct {
					Node struct {
						ID, Text string
						Hidden   bool
					}
				}
			}
		}
	}
	srv.MustDo(t, `query($c: ID!) { conversation(id: $c) { messages { edges { node { ... on MessageBase { id hidden } ... on TextMessage { text } } } } } }`,
		map[string]any{"c": conv}, &hist)
	if e := hist.Conversation.Messages.Edges; len(e) != 3 || !e[1].Node.Hidden || e[1].Node.Text != "My password is hunter2" || e[0].Node.Hidden {
		t.Errorf("history with a hidden message: got %+v", e)
	}
	// Reversible.
	hide(false)
	if tr := export("OPENAI_CHAT"); !strings.Contains(tr, "hunter2") {
		t.Errorf("shown again: got %s, want it exported", tr)
	}
}

func TestDeleteLeavesATombstone(t *testing.T) {
	t.Parallel()
	srv := testserver.New(t)
	conv := srv.CreateConversation(t, "delete")
	m1 := addAt(t, srv, conv, "keep", "", "")
	m2 := addAt(t, srv, conv, "remove me", "", "")
	m3 := addAt(t, srv, conv, "keep too", "", "")
	alt := addAt(t, srv, conv, "another third", "", m3.ID)
	const del = `mutation($m: ID!) { deleteMessage(messageId: $m) { ... on MessageBase { id position deletedAt } ... on TextMessage { text } } }`
	var out struct {
		DeleteMessage struct {
			ID, Text  string
			Position  int
			DeletedAt *string
		}
	}
	srv.MustDo(t, del, map[string]any{"m": m2.ID}, &out)
	if d := out.DeleteMessage; d.ID != m2.ID || d.Text != "" || d.DeletedAt == nil || d.Position != 2 {
		t.Fatalf("deleteMessage: got %+v, want an empty tombstone at position 2", d)
	}
	first := *out.DeleteMessage.DeletedAt
	srv.MustDo(t, del, map[string]any{"m": m2.ID}, &out)
	if *out.DeleteMessage.DeletedAt != first {
		t.Errorf("deleting again: deletedAt %s, want %s unchanged", *out.DeleteMessage.DeletedAt, first)
	}
	for _, leaf := range []string{m3.ID, alt.ID} {
		p := readBranch(t, srv, conv, map[string]any{"branch": leaf})
		if got, want := p.ids(), []string{m1.ID, m2.ID, leaf}; !slices.Equal(got, want) {
			t.Errorf("branch %s after deleting: got %v, want %v", leaf, got, want)
		}
		for i, e := range p.Messages.Edges {
			if e.Node.Position != i+1 {
				t.Errorf("branch %s: position %d at %d", leaf, e.Node.Position, i+1)
			}
		}
		if s := p.Messages.Edges[2].Node.Siblings; s.Count != 2 || *p.Messages.Edges[2].Node.ParentID != m2.ID {
			t.Errorf("the children of the tombstone: got siblings %+v under %v", s, *p.Messages.Edges[2].Node.ParentID)
		}
	}
	var raw json.RawMessage
	srv.MustDo(t, `query($c: ID!) { conversation(id: $c) { a: transcript(format: MARKDOWN) b: transcript(format: PARLEY_JSON) c: transcript(format: OPENAI_CHAT) } }`,
		map[string]any{"c": conv}, &raw)
	if strings.Contains(string(raw), "remove me") {
		t.Errorf("exports after deleting: got %s, want the content gone", raw)
	}
	// A new message still continues the branch.
	if m := addAt(t, srv, conv, "next", "", ""); m.Position != 4 || *m.ParentID != alt.ID {
		t.Errorf("after deleting: got position %d under %v, want 4 under %s", m.Position, *m.ParentID, alt.ID)
	}
}

func TestForkKeepsThePathAndTheOwnerCheck(t *testing.T) {
	t.Parallel()
	ann, bob := annAndBob(t)
	conv := ann.CreateConversation(t, "source")
	u1 := addAt(t, ann, conv, "Plan the trip", "", "")
	var req struct{ AddMessage struct{ Node treeMsg } }
	ann.MustDo(t, `mutation($c: ID!) { addMessage(conversationId: $c, input: {toolRequest: {toolCalls: [{id: "call_1", name: "search", arguments: {q: "trains"}}]}}) {
		node { `+treeFields+` } } }`, map[string]any{"c": conv}, &req)
	ann.MustDo(t, `mutation($c: ID!) { addMessage(conversationId: $c, input: {toolResult: {toolCallId: "call_1", status: SUCCESS, output: {n: 3}}}) { cursor } }`,
		map[string]any{"c": conv}, nil)
	a1 := addAt(t, ann, conv, "Three trains.", "", "")
	addAt(t, ann, conv, "Book the first", "", "")
	alt := addAt(t, ann, conv, "Three trains, or a bus.", "", a1.ID) // the fork point's branch: u1 req res alt
	const fork = `mutation($m: ID!, $t: String) { forkConversation(messageId: $m, title: $t) { id title messageCount forkedFromId } }`
	// Another owner's message is not found.
	if code := bob.Do(t, fork, map[string]any{"m": alt.ID}).ErrorCode(t); code != "NOT_FOUND" {
		t.Errorf("bob forking ann's message: got %s, want NOT_FOUND", code)
	}
	var out struct {
		ForkConversation struct {
			ID, Title    string
			MessageCount int
			ForkedFromID *string
		}
	}
	ann.MustDo(t, fork, map[string]any{"m": alt.ID, "t": "by bus"}, &out)
	f := out.ForkConversation
	if f.Title != "by bus" || f.MessageCount != 4 || f.ForkedFromID == nil || *f.ForkedFromID != alt.ID {
		t.Fatalf("fork: got %+v, want 4 messages titled \"by bus\" from %s", f, alt.ID)
	}
	p := readBranch(t, ann, f.ID, nil)
	var texts []string
	for i, e := range p.Messages.Edges {
		if e.Node.Position != i+1 {
			t.Errorf("fork: position %d at %d", e.Node.Position, i+1)
		}
		if slices.Contains([]string{u1.ID, alt.ID}, e.Node.ID) {
			t.Errorf("fork: message %s is the source's, want a copy", e.Node.ID)
		}
		texts = append(texts, e.Node.Typename+":"+e.Node.Text)
	}
	if want := []string{"TextMessage:Plan the trip", "ToolRequestMessage:", "ToolResultMessage:", "TextMessage:Three trains, or a bus."}; !slices.Equal(texts, want) {
		t.Errorf("fork's history: got %v, want %v", texts, want)
	}
	// The fork is its own: its calls and results pair (an LLM transcript needs that),
	// it grows apart from the source, and bob cannot read it.
	var tr struct {
		Conversation struct{ Transcript json.RawMessage }
	}
	ann.MustDo(t, `query($c: ID!) { conversation(id: $c) { transcript(format: OPENAI_CHAT) } }`, map[string]any{"c": f.ID}, &tr)
	if !strings.Contains(string(tr.Conversation.Transcript), "call_1") {
		t.Errorf("fork's transcript: got %s, want the call and its result", tr.Conversation.Transcript)
	}
	if m := addAt(t, ann, f.ID, "Go on", "", ""); m.Position != 5 {
		t.Errorf("a message in the fork: got position %d, want 5", m.Position)
	}
	if p := readBranch(t, ann, conv, nil); p.MessageCount != 4 {
		t.Errorf("the source after the fork grew: got %d messages on its active branch, want 4", p.MessageCount)
	}
	if code := bob.Do(t, `query($c: ID!) { conversation(id: $c) { id } }`, map[string]any{"c": f.ID}).ErrorCode(t); code != "NOT_FOUND" {
		t.Errorf("bob reading ann's fork: got %s, want NOT_FOUND", code)
	}
}
