package server_test

import (
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"

	"github.com/parley-dev/parley"
	"github.com/parley-dev/parley/auth"
	"github.com/parley-dev/parley/config"
	"github.com/parley-dev/parley/db"
	"github.com/parley-dev/parley/internal/testserver"
)

// searchHit is what the tests read of a hit.
type searchHit struct {
	Cursor string
	Node   struct {
		Message struct {
			ID       string `json:"id"`
			Position int    `json:"position"`
		}
		Conversation struct {
			ID    string `json:"id"`
			Title string `json:"title"`
		}
		BranchLeafID   string `json:"branchLeafId"`
		OnActiveBranch bool   `json:"onActiveBranch"`
		MessageCursor  string `json:"messageCursor"`
		Snippet        struct{ HTML, Text string }
		Rank           float64
	}
}

const searchQuery = `query($q: String!, $f: SearchFilter, $o: SearchOrder, $p: Boolean, $first: Int, $after: String) {
	search(query: $q, filter: $f, order: $o, prefix: $p, first: $first, after: $after) {
		edges { cursor node { message { ... on MessageBase { id position } } conversation { id title }
			branchLeafId onActiveBranch messageCursor snippet { html text } rank } }
		pageInfo { hasNextPage endCursor } } }`

type searchResult struct {
	Search struct {
		Edges    []searchHit
		PageInfo struct {
			HasNextPage bool
			EndCursor   *string
		}
	}
}

// search runs a search and returns its page; vars adds to the query.
func search(t *testing.T, srv *testserver.Server, q string, vars map[string]any) searchResult {
	t.Helper()
	v := map[string]any{"q": q}
	for k, x := range vars {
		v[k] = x
	}
	var out searchResult
	srv.MustDo(t, searchQuery, v, &out)
	return out
}

// hitIDs are the ids of the messages found, sorted.
func hitIDs(r searchResult) []string {
	ids := make([]string, len(r.Search.Edges))
	for i, e := range r.Search.Edges {
		ids[i] = e.Node.Message.ID
	}
	slices.Sort(ids)
	return ids
}

func sorted(ids ...string) []string {
	out := slices.Clone(ids)
	slices.Sort(out)
	if out == nil {
		out = []string{}
	}
	return out
}

const xssText = `<script>alert("xss")</script><img src=x onerror=alert(1)> capybara & <b>bold</b> common`

// searchCorpus is two conversations of every searchable variant.
type searchCorpus struct {
	a, b                                         string // conversations
	question, reply, readCall, readErr, ghCall   string
	ghResult, file, mcp, xss, bQuestion, bAnswer string
}

func newSearchCorpus(t *testing.T, srv *testserver.Server) searchCorpus {
	t.Helper()
	var c searchCorpus
	c.a = srv.CreateConversation(t, "Deploy notes")
	c.b = srv.CreateConversation(t, "Animal facts")
	add := func(conv string, input map[string]any, prov map[string]any) string {
		t.Helper()
		var out struct {
			AddMessage struct{ Node struct{ ID string } } `json:"addMessage"`
		}
		srv.MustDo(t, `mutation($c: ID!, $i: MessageInput!, $p: ProvenanceInput) { addMessage(conversationId: $c, input: $i, provenance: $p) {
			node { ... on MessageBase { id } } } }`, map[string]any{"c": conv, "i": input, "p": prov}, &out)
		return out.AddMessage.Node.ID
	}
	c.question = add(c.a, testserver.Text("USER", "How do I fix the flaky deploy script in internal/pgtest/db.go? common"), nil)
	c.reply = add(c.a, map[string]any{"text": map[string]any{"role": "ASSISTANT", "parts": []any{
		map[string]any{"kind": "THINKING", "text": "pondering the zebra migration"},
		map[string]any{"kind": "TEXT", "text": "Run the migration with snake_case_flag enabled, common practice"},
	}}}, map[string]any{"provider": "anthropic", "model": "claude-sonnet"})
	c.readCall = add(c.a, map[string]any{"toolRequest": map[string]any{"content": "reading it, common",
		"toolCalls": []any{map[string]any{"id": "c1", "name": "read_file", "arguments": map[string]any{"path": "internal/pgtest/db.go"}}}}},
		map[string]any{"provider": "anthropic", "model": "claude-opus"})
	c.readErr = add(c.a, map[string]any{"toolResult": map[string]any{"toolCallId": "c1", "status": "ERROR",
		"error": map[string]any{"message": "permission denied for quokka, common"}}}, nil)
	c.ghCall = add(c.a, map[string]any{"toolRequest": map[string]any{"content": "searching, common",
		"toolCalls": []any{map[string]any{"id": "c2", "name": "mcp__github__search", "arguments": map[string]any{"q": "walrus"}}}}}, nil)
	srv.MustDo(t, `mutation($m: ID!) { setToolCallApproval(messageId: $m, toolCallId: "c2", status: APPROVED) { id } }`,
		map[string]any{"m": c.ghCall}, nil)
	c.ghResult = add(c.a, map[string]any{"toolResult": map[string]any{"toolCallId": "c2", "status": "SUCCESS",
		"content": "common", "output": map[string]any{"items": []any{"walrus sighted"}}}}, nil)
	c.file = add(c.a, map[string]any{"fileReference": map[string]any{"path": "docs/guide/setup.md"}}, nil)
	c.mcp = add(c.a, map[string]any{"mcpResource": map[string]any{"serverName": "wiki", "resourceUri": "wiki://pages/ocelot",
		"content": "the ocelot page, common"}}, nil)
	c.xss = add(c.a, testserver.Text("USER", xssText), nil)
	c.bQuestion = add(c.b, testserver.Text("USER", "capybara or otter facts? common"), map[string]any{"provider": "openai", "model": "gpt-5"})
	c.bAnswer = add(c.b, testserver.Text("ASSISTANT", "otters hold hands while they sleep, common"), map[string]any{"provider": "openai", "model": "gpt-5"})
	return c
}

// TestSearchSyntax: words, phrases, OR, exclusion, prefixes and identifiers find what
// they should and nothing else, across every variant searched.
func TestSearchSyntax(t *testing.T) {
	t.Parallel()
	srv := testserver.New(t)
	c := newSearchCorpus(t, srv)
	for _, tt := range []struct {
		name   string
		q      string
		prefix bool
		thinks bool
		want   []string
	}{
		{"words", "flaky deploy", false, false, []string{c.question}},
		{"all words must match", "flaky otter", false, false, nil},
		{"phrase", `"deploy script"`, false, false, []string{c.question}},
		{"phrase out of order", `"script deploy"`, false, false, nil},
		{"or", "quokka or ocelot", false, false, []string{c.readErr, c.mcp}},
		{"exclusion", "capybara -otter", false, false, []string{c.xss}},
		{"prefix", "capy", true, false, []string{c.xss, c.bQuestion}},
		{"prefix off", "capy", false, false, nil},
		{"prefix after words", "otters ho", true, false, []string{c.bAnswer}},
		{"path part", "pgtest", false, false, []string{c.question, c.readCall}},
		{"file name", "db.go", false, false, []string{c.question, c.readCall}},
		{"whole path", "internal/pgtest/db.go", false, false, []string{c.question, c.readCall}},
		{"path prefix", "internal/pgt", true, false, []string{c.question, c.readCall}},
		{"excluded path", "common -db.go", false, false, []string{c.reply, c.readErr, c.ghCall, c.ghResult, c.mcp, c.xss, c.bQuestion, c.bAnswer}},
		{"snake_case part", "snake", false, false, []string{c.reply}},
		{"snake_case whole", "snake_case_flag", false, false, []string{c.reply}},
		{"tool name", "read_file", false, false, []string{c.readCall, c.readErr}},
		{"tool name with underscores", "mcp__github__search", false, false, []string{c.ghCall, c.ghResult}},
		{"tool arguments and output", "walrus", false, false, []string{c.ghCall, c.ghResult}},
		{"error message", "quokka", false, false, []string{c.readErr}},
		{"file path", "setup.md", false, false, []string{c.file}},
		{"mcp uri", "wiki://pages/ocelot", false, false, []string{c.mcp}},
		{"thinking left out", "zebra", false, false, nil},
		{"thinking asked", "zebra", false, true, []string{c.reply}},
		{"exclusion leaves the thinking out", "snake -zebra", false, false, []string{c.reply}},
		{"exclusion with the thinking asked", "snake -zebra", false, true, nil},
		{"prefix leaves the thinking out", "zeb", true, false, nil},
		{"prefix with the thinking asked", "zeb", true, true, []string{c.reply}},
		{"thinking asked, text still found", "snake", false, true, []string{c.reply}},
		{"escaped text found by its words", "script bold", false, false, []string{c.xss}},
		{"case folded", "CAPYBARA OTTER", false, false, []string{c.bQuestion}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got := hitIDs(search(t, srv, tt.q, map[string]any{"p": tt.prefix, "f": map[string]any{"includeThinking": tt.thinks}}))
			if want := sorted(tt.want...); !slices.Equal(got, want) {
				t.Errorf("search %q: got %v, want %v", tt.q, got, want)
			}
		})
	}
}

// TestSearchFilters: each filter alone and combined narrows "common" (in every message
// but the file reference) to exactly the messages it names.
func TestSearchFilters(t *testing.T) {
	t.Parallel()
	srv := testserver.New(t)
	c := newSearchCorpus(t, srv)
	// The creation times bound a date range: everything before bQuestion.
	var at struct {
		Message struct{ CreatedAt time.Time } `json:"message"`
	}
	srv.MustDo(t, `query($m: ID!) { message(id: $m) { ... on MessageBase { createdAt } } }`, map[string]any{"m": c.bQuestion}, &at)
	cut := at.Message.CreatedAt.Format(time.RFC3339Nano)

	everything := []string{c.question, c.reply, c.readCall, c.readErr, c.ghCall, c.ghResult, c.mcp, c.xss, c.bQuestion, c.bAnswer}
	for _, tt := range []struct {
		name   string
		filter map[string]any
		want   []string
	}{
		{"none", map[string]any{}, everything},
		{"conversation", map[string]any{"conversationIds": []string{c.b}}, []string{c.bQuestion, c.bAnswer}},
		{"kinds", map[string]any{"kinds": []string{"TOOL_REQUEST", "MCP_RESOURCE"}}, []string{c.readCall, c.ghCall, c.mcp}},
		{"roles", map[string]any{"roles": []string{"ASSISTANT"}}, []string{c.reply, c.bAnswer}},
		{"tool name", map[string]any{"toolNames": []string{"read_file"}}, []string{c.readCall, c.readErr}},
		{"tool glob", map[string]any{"toolNames": []string{"mcp__*"}}, []string{c.ghCall, c.ghResult}},
		{"tool glob of one character", map[string]any{"toolNames": []string{"read?file"}}, []string{c.readCall, c.readErr}},
		{"tool glob with a literal underscore", map[string]any{"toolNames": []string{"read_fil"}}, nil},
		{"tool result status", map[string]any{"toolResultStatus": "ERROR"}, []string{c.readErr}},
		{"approval status", map[string]any{"approvalStatus": "APPROVED"}, []string{c.ghCall}},
		{"model", map[string]any{"models": []string{"claude-opus", "gpt-5"}}, []string{c.readCall, c.bQuestion, c.bAnswer}},
		{"provider", map[string]any{"providers": []string{"anthropic"}}, []string{c.reply, c.readCall}},
		{"created before", map[string]any{"createdBefore": cut}, []string{c.question, c.reply, c.readCall, c.readErr, c.ghCall, c.ghResult, c.mcp, c.xss}},
		{"created after", map[string]any{"createdAfter": cut}, []string{c.bQuestion, c.bAnswer}},
		{"tool name and status", map[string]any{"toolNames": []string{"*"}, "toolResultStatus": "SUCCESS"}, []string{c.ghResult}},
		{"exact tool name and status", map[string]any{"toolNames": []string{"read_file"}, "toolResultStatus": "ERROR"}, []string{c.readErr}},
		{"exact tool names and status", map[string]any{"toolNames": []string{"read_file", "mcp__github__search"}, "toolResultStatus": "SUCCESS"},
			[]string{c.ghResult}},
		{"exact tool name of another status", map[string]any{"toolNames": []string{"mcp__github__search"}, "toolResultStatus": "ERROR"}, nil},
		{"tool glob and status", map[string]any{"toolNames": []string{"read_*"}, "toolResultStatus": "ERROR"}, []string{c.readErr}},
		{"provider and role", map[string]any{"providers": []string{"openai"}, "roles": []string{"USER"}}, []string{c.bQuestion}},
		{"conversation and kind", map[string]any{"conversationIds": []string{c.a}, "kinds": []string{"TEXT"}}, []string{c.question, c.reply, c.xss}},
		{"contradicting", map[string]any{"kinds": []string{"TEXT"}, "toolResultStatus": "ERROR"}, nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got := hitIDs(search(t, srv, "common", map[string]any{"f": tt.filter, "first": 100}))
			if want := sorted(tt.want...); !slices.Equal(got, want) {
				t.Errorf("filter %v: got %v, want %v", tt.filter, got, want)
			}
		})
	}
}

// TestSearchSnippets: a message's markup never comes back as markup: the snippet's HTML
// parses to text and <mark> elements only, and its text is the message's.
func TestSearchSnippets(t *testing.T) {
	t.Parallel()
	srv := testserver.New(t)
	c := newSearchCorpus(t, srv)
	for _, q := range []string{"capybara", "script", "alert", "onerror", "bold"} {
		r := search(t, srv, q, map[string]any{"f": map[string]any{"conversationIds": []string{c.a}}})
		if len(r.Search.Edges) == 0 || r.Search.Edges[0].Node.Message.ID != c.xss {
			t.Fatalf("search %q: got %v, want the XSS message first", q, hitIDs(r))
		}
		s := r.Search.Edges[0].Node.Snippet
		marks := 0
		doc, err := html.ParseFragment(strings.NewReader(s.HTML), &html.Node{Type: html.ElementNode, Data: "div", DataAtom: atom.Div})
		if err != nil {
			t.Fatal(err)
		}
		var walk func(n *html.Node)
		walk = func(n *html.Node) {
			switch n.Type {
			case html.ElementNode:
				if n.Data != "mark" || len(n.Attr) > 0 {
					t.Errorf("search %q: snippet has element <%s %v>: %s", q, n.Data, n.Attr, s.HTML)
				}
				marks++
			case html.TextNode:
			default:
				t.Errorf("search %q: snippet has a node of type %d: %s", q, n.Type, s.HTML)
			}
			for ch := n.FirstChild; ch != nil; ch = ch.NextSibling {
				walk(ch)
			}
		}
		for _, n := range doc {
			walk(n)
		}
		if marks == 0 {
			t.Errorf("search %q: snippet marks nothing: %s", q, s.HTML)
		}
		// The text is a piece of the message's (Postgres starts it at a word).
		if !strings.Contains(xssText, s.Text) || !strings.Contains(s.Text, q) {
			t.Errorf("search %q: snippet text %q is not a piece of the message's text around %q", q, s.Text, q)
		}
	}
	// A path's parts are marked, and the path reads as written.
	r := search(t, srv, "pgtest", nil)
	for _, e := range r.Search.Edges {
		if s := e.Node.Snippet; !strings.Contains(s.Text, "internal/pgtest/db.go") || !strings.Contains(s.HTML, "<mark>pgtest</mark>") {
			t.Errorf("snippet of a path: got %+v, want the path with pgtest marked", s)
		}
	}
}

// TestSearchBranchScope: a hit on an inactive branch is found only with branches: ALL,
// with its branch's leaf; messages around it are read from its cursor on that branch.
func TestSearchBranchScope(t *testing.T) {
	t.Parallel()
	srv := testserver.New(t)
	conv := srv.CreateConversation(t, "tree")
	q := srv.AddMessage(t, conv, testserver.Text("USER", "tell me about narwhals")).ID
	oldReply := srv.AddMessage(t, conv, testserver.Text("ASSISTANT", "the first narwhal answer mentions tusks")).ID
	oldNext := srv.AddMessage(t, conv, testserver.Text("USER", "and their teeth? narwhal")).ID
	// Regenerating the reply makes a new active branch; the old one stays.
	var edit struct {
		EditMessage struct{ Node struct{ ID string } } `json:"editMessage"`
	}
	srv.MustDo(t, `mutation($m: ID!, $i: MessageInput!) { editMessage(messageId: $m, input: $i) { node { ... on MessageBase { id } } } }`,
		map[string]any{"m": oldReply, "i": testserver.Text("ASSISTANT", "the second narwhal answer, about horns")}, &edit)
	newReply := edit.EditMessage.Node.ID

	if got, want := hitIDs(search(t, srv, "narwhal", nil)), sorted(newReply); !slices.Equal(got, want) {
		t.Errorf("active branch: got %v, want %v", got, want)
	}
	if got := hitIDs(search(t, srv, "tusks", nil)); len(got) != 0 {
		t.Errorf("active branch: a hit off it was found: %v", got)
	}
	all := search(t, srv, "narwhal", map[string]any{"f": map[string]any{"branches": "ALL"}})
	if got, want := hitIDs(all), sorted(oldReply, oldNext, newReply); !slices.Equal(got, want) {
		t.Fatalf("all branches: got %v, want %v", got, want)
	}
	for _, e := range all.Search.Edges {
		n := e.Node
		wantActive, wantLeaf := n.Message.ID == newReply, oldNext
		if wantActive {
			wantLeaf = newReply
		}
		if n.OnActiveBranch != wantActive || n.BranchLeafID != wantLeaf {
			t.Errorf("hit %s: got onActiveBranch %v, branch leaf %s; want %v, %s", n.Message.ID, n.OnActiveBranch, n.BranchLeafID, wantActive, wantLeaf)
		}
		// Its cursor opens its branch at it: the message before it and the one after.
		var page struct {
			Conversation struct {
				Before, After struct {
					Edges []struct {
						Node struct{ ID string }
					}
				}
			}
		}
		srv.MustDo(t, `query($c: ID!, $b: ID, $at: String) { conversation(id: $c) {
				before: messages(last: 1, before: $at, branch: $b) { edges { node { ... on MessageBase { id } } } }
				after: messages(first: 1, after: $at, branch: $b) { edges { node { ... on MessageBase { id } } } } } }`,
			map[string]any{"c": conv, "b": n.BranchLeafID, "at": n.MessageCursor}, &page)
		var before, after []string
		for _, x := range page.Conversation.Before.Edges {
			before = append(before, x.Node.ID)
		}
		for _, x := range page.Conversation.After.Edges {
			after = append(after, x.Node.ID)
		}
		wantBefore, wantAfter := []string{q}, []string(nil)
		switch n.Message.ID {
		case oldReply:
			wantAfter = []string{oldNext}
		case oldNext:
			wantBefore = []string{oldReply}
		}
		if !slices.Equal(before, wantBefore) || !slices.Equal(after, wantAfter) {
			t.Errorf("around hit %s: got before %v after %v, want %v and %v", n.Message.ID, before, after, wantBefore, wantAfter)
		}
	}
}

// TestSearchKeptCurrent: a message is found once stored, a streaming one once it
// completes; a deleted message or conversation is gone at once; a hidden one stays.
func TestSearchKeptCurrent(t *testing.T) {
	t.Parallel()
	srv := testserver.New(t)
	conv := srv.CreateConversation(t, "current")
	other := srv.CreateConversation(t, "other")
	kept := srv.AddMessage(t, conv, testserver.Text("USER", "pangolin kept")).ID
	gone := srv.AddMessage(t, conv, testserver.Text("USER", "pangolin deleted")).ID
	hidden := srv.AddMessage(t, conv, testserver.Text("USER", "pangolin hidden")).ID
	inOther := srv.AddMessage(t, other, testserver.Text("USER", "pangolin elsewhere")).ID
	if got, want := hitIDs(search(t, srv, "pangolin", nil)), sorted(kept, gone, hidden, inOther); !slices.Equal(got, want) {
		t.Fatalf("stored: got %v, want %v", got, want)
	}
	srv.MustDo(t, `mutation($m: ID!) { deleteMessage(messageId: $m) { __typename } }`, map[string]any{"m": gone}, nil)
	srv.MustDo(t, `mutation($m: ID!) { setMessageHidden(messageId: $m, hidden: true) { __typename } }`, map[string]any{"m": hidden}, nil)
	if got, want := hitIDs(search(t, srv, "pangolin", nil)), sorted(kept, hidden, inOther); !slices.Equal(got, want) {
		t.Errorf("after delete and hide: got %v, want %v", got, want)
	}
	srv.MustDo(t, `mutation($c: ID!) { deleteConversation(id: $c) }`, map[string]any{"c": other}, nil)
	if got, want := hitIDs(search(t, srv, "pangolin", nil)), sorted(kept, hidden); !slices.Equal(got, want) {
		t.Errorf("after deleting a conversation: got %v, want %v", got, want)
	}

	// A streaming message: not found while it streams, found when it completes.
	var start struct {
		StartMessage struct{ Node struct{ ID string } } `json:"startMessage"`
	}
	srv.MustDo(t, `mutation($c: ID!) { startMessage(conversationId: $c) { node { ... on MessageBase { id } } } }`, map[string]any{"c": conv}, &start)
	live := start.StartMessage.Node.ID
	srv.MustDo(t, `mutation($m: ID!) { appendMessageDeltas(messageId: $m, seq: 1, deltas: [{kind: TEXT, index: 0, text: "armadillo streaming"}]) { seq } }`,
		map[string]any{"m": live}, nil)
	if got := hitIDs(search(t, srv, "armadillo", nil)); len(got) != 0 {
		t.Errorf("while streaming: got %v, want nothing", got)
	}
	srv.MustDo(t, `mutation($m: ID!) { completeMessage(messageId: $m) { __typename } }`, map[string]any{"m": live}, nil)
	if got, want := hitIDs(search(t, srv, "armadillo", nil)), sorted(live); !slices.Equal(got, want) {
		t.Errorf("completed: got %v, want %v", got, want)
	}
}

// TestSearchToolResultFilter: a search by tool result status, alone or with tool names
// (the search index's keys, migration 000022), finds each owner's results of that
// status and tool only, follows branch scope when a result is edited into another
// status, and loses a deleted result at once.
func TestSearchToolResultFilter(t *testing.T) {
	t.Parallel()
	srv := testserver.NewWith(t, testserver.Options{Auth: func(store *db.DB) auth.Config {
		return auth.Config{Tokens: store}
	}})
	aliceToken, _ := token(t, srv, "alice", nil)
	bobToken, _ := token(t, srv, "bob", nil)
	alice, bob := srv.As(aliceToken), srv.As(bobToken)
	request := func(id, tool string) map[string]any {
		return map[string]any{"toolRequest": map[string]any{"content": "running",
			"toolCalls": []any{map[string]any{"id": id, "name": tool, "arguments": map[string]any{"q": "gecko"}}}}}
	}
	// call adds a call of tool and its result of status, both with the word "gecko",
	// and returns the result's id.
	call := func(srv *testserver.Server, conv, id, tool, status string) string {
		t.Helper()
		srv.AddMessage(t, conv, request(id, tool))
		result := map[string]any{"toolCallId": id, "status": status, "content": "gecko " + id}
		if status == "ERROR" {
			result["error"] = map[string]any{"message": "gecko failed"}
		}
		return srv.AddMessage(t, conv, map[string]any{"toolResult": result}).ID
	}
	ac := alice.CreateConversation(t, "tools")
	bashErr := call(alice, ac, "a1", "bash", "ERROR")
	bashOK := call(alice, ac, "a2", "bash", "SUCCESS")
	grepErr := call(alice, ac, "a3", "grep", "ERROR")
	edited := call(alice, ac, "a4", "bash", "ERROR")
	bc := bob.CreateConversation(t, "tools")
	bobBashErr := call(bob, bc, "b1", "bash", "ERROR")

	find := func(srv *testserver.Server, f map[string]any) []string {
		t.Helper()
		return hitIDs(search(t, srv, "gecko", map[string]any{"f": f, "first": 100}))
	}
	bashErrors := map[string]any{"toolNames": []string{"bash"}, "toolResultStatus": "ERROR"}
	for _, tt := range []struct {
		name   string
		filter map[string]any
		want   []string
	}{
		{"status", map[string]any{"toolResultStatus": "ERROR"}, []string{bashErr, grepErr, edited}},
		{"status and tool", bashErrors, []string{bashErr, edited}},
		{"status and tools", map[string]any{"toolNames": []string{"grep", "bash"}, "toolResultStatus": "ERROR"}, []string{bashErr, grepErr, edited}},
		{"status and glob", map[string]any{"toolNames": []string{"g*"}, "toolResultStatus": "ERROR"}, []string{grepErr}},
		{"other status and tool", map[string]any{"toolNames": []string{"bash"}, "toolResultStatus": "SUCCESS"}, []string{bashOK}},
		{"a tool without results of that status", map[string]any{"toolNames": []string{"grep"}, "toolResultStatus": "SUCCESS"}, nil},
	} {
		if got, want := find(alice, tt.filter), sorted(tt.want...); !slices.Equal(got, want) {
			t.Errorf("alice, %s: got %v, want %v", tt.name, got, want)
		}
	}
	if got, want := find(bob, bashErrors), sorted(bobBashErr); !slices.Equal(got, want) {
		t.Errorf("bob, status and tool: got %v, want %v", got, want)
	}

	// The last call retried, its result a success: a new active branch from the call's
	// parent, the error off it.
	var retry struct {
		AddMessage struct{ Node struct{ ID string } } `json:"addMessage"`
	}
	var parent struct {
		Message struct{ ParentID string } `json:"message"`
	}
	alice.MustDo(t, `query($m: ID!) { message(id: $m) { ... on MessageBase { parentId } } }`, map[string]any{"m": edited}, &parent)
	alice.MustDo(t, `mutation($c: ID!, $i: MessageInput!, $s: ID) { addMessage(conversationId: $c, input: $i, siblingOf: $s) { node { ... on MessageBase { id } } } }`,
		map[string]any{"c": ac, "i": request("a5", "bash"), "s": parent.Message.ParentID}, &retry)
	fixed := alice.AddMessage(t, ac, map[string]any{"toolResult": map[string]any{"toolCallId": "a5", "status": "SUCCESS", "content": "gecko fixed"}}).ID
	if got, want := find(alice, bashErrors), sorted(bashErr); !slices.Equal(got, want) {
		t.Errorf("after the edit, active branch: got %v, want %v", got, want)
	}
	if got, want := find(alice, map[string]any{"toolNames": []string{"bash"}, "toolResultStatus": "SUCCESS"}), sorted(bashOK, fixed); !slices.Equal(got, want) {
		t.Errorf("after the edit, successes: got %v, want %v", got, want)
	}
	all := map[string]any{"toolNames": []string{"bash"}, "toolResultStatus": "ERROR", "branches": "ALL"}
	if got, want := find(alice, all), sorted(bashErr, edited); !slices.Equal(got, want) {
		t.Errorf("after the edit, all branches: got %v, want %v", got, want)
	}

	alice.MustDo(t, `mutation($m: ID!) { deleteMessage(messageId: $m) { __typename } }`, map[string]any{"m": bashErr}, nil)
	if got, want := find(alice, all), sorted(edited); !slices.Equal(got, want) {
		t.Errorf("after deleting one: got %v, want %v", got, want)
	}
	if got, want := find(bob, bashErrors), sorted(bobBashErr); !slices.Equal(got, want) {
		t.Errorf("bob, after alice's changes: got %v, want %v", got, want)
	}
}

// TestSearchOwnerIsolation: two owners with the same words each find only their own,
// whatever the filters, even naming the other's conversation.
func TestSearchOwnerIsolation(t *testing.T) {
	t.Parallel()
	srv := testserver.NewWith(t, testserver.Options{Auth: func(store *db.DB) auth.Config {
		return auth.Config{Tokens: store}
	}})
	aliceToken, _ := token(t, srv, "alice", nil)
	bobToken, _ := token(t, srv, "bob", nil)
	alice, bob := srv.As(aliceToken), srv.As(bobToken)
	ac := alice.CreateConversation(t, "secret plans")
	bc := bob.CreateConversation(t, "secret plans")
	am := alice.AddMessage(t, ac, testserver.Text("USER", "the secret tapir plans")).ID
	bm := bob.AddMessage(t, bc, testserver.Text("USER", "the secret tapir plans")).ID
	for _, f := range []map[string]any{
		{},
		{"conversationIds": []string{ac, bc}},
		{"branches": "ALL", "includeThinking": true},
		{"roles": []string{"USER"}, "kinds": []string{"TEXT"}},
	} {
		if got, want := hitIDs(search(t, alice, "secret tapir", map[string]any{"f": f})), sorted(am); !slices.Equal(got, want) {
			t.Errorf("alice, filter %v: got %v, want %v", f, got, want)
		}
		if got, want := hitIDs(search(t, bob, "secret tapir", map[string]any{"f": f})), sorted(bm); !slices.Equal(got, want) {
			t.Errorf("bob, filter %v: got %v, want %v", f, got, want)
		}
	}
	var convs struct {
		SearchConversations struct {
			Edges []struct {
				Node struct{ Conversation struct{ ID string } }
			}
		} `json:"searchConversations"`
	}
	alice.MustDo(t, `{ searchConversations(query: "secret") { edges { node { conversation { id } } } } }`, nil, &convs)
	if e := convs.SearchConversations.Edges; len(e) != 1 || e[0].Node.Conversation.ID != ac {
		t.Errorf("alice's searchConversations: got %+v, want her conversation only", e)
	}
}

// TestSearchPaging: pages of hits in relevance and newest order cover every hit once,
// in order, and end.
func TestSearchPaging(t *testing.T) {
	t.Parallel()
	srv := testserver.New(t)
	conv := srv.CreateConversation(t, "many")
	var all []string
	for i := range 23 {
		// More mentions rank higher; some tie.
		text := strings.Repeat("lemur ", 1+i%5) + "number " + strings.Repeat("x", i)
		all = append(all, srv.AddMessage(t, conv, testserver.Text("USER", text)).ID)
	}
	for _, order := range []string{"RELEVANCE", "NEWEST"} {
		var seen []string
		var ranks []float64
		var after any
		for pages := 0; ; pages++ {
			if pages > 10 {
				t.Fatalf("%s: more pages than hits", order)
			}
			r := search(t, srv, "lemur", map[string]any{"o": order, "first": 5, "after": after})
			for _, e := range r.Search.Edges {
				seen = append(seen, e.Node.Message.ID)
				ranks = append(ranks, e.Node.Rank)
			}
			if !r.Search.PageInfo.HasNextPage {
				break
			}
			after = *r.Search.PageInfo.EndCursor
		}
		if got, want := sorted(seen...), sorted(all...); !slices.Equal(got, want) {
			t.Errorf("%s: pages gave %d hits %v, want each of the %d once", order, len(seen), got, len(want))
		}
		switch order {
		case "RELEVANCE":
			if !slices.IsSortedFunc(ranks, func(a, b float64) int { return -cmpFloat(a, b) }) {
				t.Errorf("RELEVANCE: ranks not descending: %v", ranks)
			}
		case "NEWEST":
			want := slices.Clone(all)
			slices.Reverse(want)
			if !slices.Equal(seen, want) {
				t.Errorf("NEWEST: got %v, want newest first %v", seen, want)
			}
		}
	}
}

// TestSearchHitConversations: each hit's conversation is the conversation as the API
// reads it (the search statement reads it with the page), in both orders, on every page.
func TestSearchHitConversations(t *testing.T) {
	t.Parallel()
	srv := testserver.New(t)
	c := newSearchCorpus(t, srv)
	type conv struct {
		ID           string `json:"id"`
		Title        string `json:"title"`
		CreatedAt    string `json:"createdAt"`
		UpdatedAt    string `json:"updatedAt"`
		MessageCount int    `json:"messageCount"`
	}
	const fields = `id title createdAt updatedAt messageCount`
	want := map[string]conv{}
	for _, id := range []string{c.a, c.b} {
		var out struct{ Conversation conv }
		srv.MustDo(t, `query($id: ID!) { conversation(id: $id) { `+fields+` } }`, map[string]any{"id": id}, &out)
		want[id] = out.Conversation
	}
	for _, order := range []string{"RELEVANCE", "NEWEST"} {
		seen := map[string]bool{}
		var after any
		for pages := 0; ; pages++ {
			if pages > 10 {
				t.Fatalf("%s: more pages than hits", order)
			}
			var out struct {
				Search struct {
					Edges    []struct{ Node struct{ Conversation conv } }
					PageInfo struct {
						HasNextPage bool
						EndCursor   *string
					}
				}
			}
			srv.MustDo(t, `query($o: SearchOrder, $after: String) { search(query: "common", order: $o, first: 3, after: $after) {
				edges { node { conversation { `+fields+` } } } pageInfo { hasNextPage endCursor } } }`,
				map[string]any{"o": order, "after": after}, &out)
			for _, e := range out.Search.Edges {
				got := e.Node.Conversation
				if got != want[got.ID] {
					t.Errorf("%s: hit's conversation %+v, want %+v", order, got, want[got.ID])
				}
				seen[got.ID] = true
			}
			if !out.Search.PageInfo.HasNextPage {
				break
			}
			after = *out.Search.PageInfo.EndCursor
		}
		if !seen[c.a] || !seen[c.b] {
			t.Errorf("%s: hits in conversations %v, want both %s and %s", order, seen, c.a, c.b)
		}
	}
}

func cmpFloat(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// TestSearchBadInput: bad queries, filters, pages and cursors are refused with codes and
// messages that name what is wrong.
func TestSearchBadInput(t *testing.T) {
	t.Parallel()
	srv := testserver.New(t)
	conv := srv.CreateConversation(t, "c")
	srv.AddMessage(t, conv, testserver.Text("USER", "some words"))
	r := search(t, srv, "words", map[string]any{"first": 1})
	relevance := r.Search.Edges[0].Cursor
	for _, tt := range []struct {
		name    string
		q       string
		vars    map[string]any
		code    string
		mention string
	}{
		{"empty", "", nil, "SEARCH_QUERY_EMPTY", "empty"},
		{"blank", "  \t ", nil, "SEARCH_QUERY_EMPTY", "empty"},
		{"only punctuation", `"" - !!`, nil, "SEARCH_QUERY_EMPTY", "no word"},
		{"too long", strings.Repeat("word ", 201), nil, "SEARCH_QUERY_TOO_LONG", "1000"},
		{"bad conversation id", "words", map[string]any{"f": map[string]any{"conversationIds": []string{"nope"}}}, "BAD_USER_INPUT", "conversationIds"},
		{"blank tool name", "words", map[string]any{"f": map[string]any{"toolNames": []string{" "}}}, "BAD_USER_INPUT", "toolNames"},
		{"backwards dates", "words", map[string]any{"f": map[string]any{"createdAfter": "2026-02-01T00:00:00Z", "createdBefore": "2026-01-01T00:00:00Z"}}, "BAD_USER_INPUT", "createdAfter"},
		{"bad kind", "words", map[string]any{"f": map[string]any{"kinds": []string{"POEM"}}}, "GRAPHQL_VALIDATION_FAILED", "POEM"},
		{"too many values", "words", map[string]any{"f": map[string]any{"models": slices.Repeat([]string{"m"}, 101)}}, "BAD_USER_INPUT", "models"},
		{"bad cursor", "words", map[string]any{"after": "garbage"}, "BAD_USER_INPUT", "after"},
		{"a message cursor", "words", map[string]any{"after": "bTox"}, "BAD_USER_INPUT", "after"},
		{"cursor of the other order", "words", map[string]any{"after": relevance, "o": "NEWEST"}, "BAD_USER_INPUT", "other order"},
		{"zero first", "words", map[string]any{"first": 0}, "BAD_USER_INPUT", "first"},
		{"first too large", "words", map[string]any{"first": 101}, "BAD_USER_INPUT", "first"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			v := map[string]any{"q": tt.q}
			for k, x := range tt.vars {
				v[k] = x
			}
			resp := srv.Do(t, searchQuery, v)
			if got := resp.ErrorCode(t); got != tt.code {
				t.Errorf("got code %s, want %s (%+v)", got, tt.code, resp.Errors)
			}
			if msg := resp.Errors[0].Message; !strings.Contains(msg, tt.mention) {
				t.Errorf("message %q does not mention %q", msg, tt.mention)
			}
		})
	}
}

// TestSearchConversations: titles are searched beside the active branch's messages.
func TestSearchConversations(t *testing.T) {
	t.Parallel()
	srv := testserver.New(t)
	byTitle := srv.CreateConversation(t, "Kubernetes <upgrade> plan")
	byMessage := srv.CreateConversation(t, "Untitled")
	neither := srv.CreateConversation(t, "Lunch")
	srv.AddMessage(t, byMessage, testserver.Text("USER", "the kubernetes cluster is down"))
	srv.AddMessage(t, neither, testserver.Text("USER", "soup"))
	var out struct {
		SearchConversations struct {
			Edges []struct {
				Node struct {
					Conversation struct{ ID string }
					Title        struct{ HTML, Text string }
					TitleMatched bool
					MessageHits  int
				}
			}
		} `json:"searchConversations"`
	}
	srv.MustDo(t, `{ searchConversations(query: "kube", prefix: true) { edges { node { conversation { id } title { html text } titleMatched messageHits } } } }`, nil, &out)
	got := map[string]string{}
	for _, e := range out.SearchConversations.Edges {
		n := e.Node
		got[n.Conversation.ID] = n.Title.HTML
		switch n.Conversation.ID {
		case byTitle:
			if !n.TitleMatched || n.MessageHits != 0 || n.Title.HTML != "<mark>Kubernetes</mark> &lt;upgrade&gt; plan" || n.Title.Text != "Kubernetes <upgrade> plan" {
				t.Errorf("by title: got %+v", n)
			}
		case byMessage:
			if n.TitleMatched || n.MessageHits != 1 {
				t.Errorf("by message: got %+v", n)
			}
		}
	}
	if len(got) != 2 || got[byTitle] == "" || got[byMessage] == "" {
		t.Errorf("got conversations %v, want %s and %s", got, byTitle, byMessage)
	}
}

// TestSearchConfigSetting: with search.config english, words are found by their stems
// and English stop words are not searched for; the simple default finds neither.
func TestSearchConfigSetting(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		config string
		want   bool
	}{{"english", true}, {"simple", false}} {
		t.Run(tt.config, func(t *testing.T) {
			t.Parallel()
			cfg := config.Default()
			cfg.Search.Config = tt.config
			srv := testserver.NewWith(t, testserver.Options{Config: &cfg})
			conv := srv.CreateConversation(t, "c")
			m := srv.AddMessage(t, conv, testserver.Text("USER", "the migrations were running slowly")).ID
			got := hitIDs(search(t, srv, "migration runs", nil))
			if found := slices.Equal(got, []string{m}); found != tt.want {
				t.Errorf("%s: search \"migration runs\" got %v, want found %v", tt.config, got, tt.want)
			}
			if tt.config == "english" {
				if code := srv.Do(t, searchQuery, map[string]any{"q": "the"}).ErrorCode(t); code != "SEARCH_QUERY_EMPTY" {
					t.Errorf("english: a stop word alone: got %s, want SEARCH_QUERY_EMPTY", code)
				}
			} else if got := hitIDs(search(t, srv, "the", nil)); !slices.Equal(got, []string{m}) {
				t.Errorf("simple: \"the\" got %v, want %s", got, m)
			}
		})
	}
}

// TestSearchRelevanceCandidates: relevance ranks only the matches of the most recently
// updated conversations, at most parley.SearchRelevanceCandidates, however well an older
// match ranks; narrowed to the older conversation, the search finds it. The matches are
// stored in SQL (a thousand messages through the API would be most of the test's time).
func TestSearchRelevanceCandidates(t *testing.T) {
	t.Parallel()
	srv := testserver.New(t)
	n := parley.SearchRelevanceCandidates
	old, recent := srv.CreateConversation(t, "Old"), srv.CreateConversation(t, "Recent")
	oldKey, _ := parley.ParseConversationID(old)
	recentKey, _ := parley.ParseConversationID(recent)
	// The old conversation's one message ranks above every other: the word four times.
	if _, err := srv.Store.SQL().ExecContext(t.Context(), `WITH m AS (
			INSERT INTO messages (conversation_id, position, depth, kind, role, content)
			SELECT $1::uuid, 1, 1, 'text', 'user', 'needle needle needle needle'
			UNION ALL SELECT $2::uuid, p, p, 'text', 'user', 'needle in hay ' || p FROM generate_series(1, $3) p
			RETURNING conversation_id)
		UPDATE conversations c SET last_position = x.n, message_count = x.n,
			updated_at = CASE WHEN c.id = $1::uuid THEN now() - interval '1 day' ELSE now() END
		FROM (SELECT conversation_id, count(*) AS n FROM m GROUP BY conversation_id) x WHERE c.id = x.conversation_id`,
		oldKey, recentKey, n); err != nil {
		t.Fatal(err)
	}

	hits, vars := 0, map[string]any{"first": parley.MaxSearchPageSize}
	for {
		r := search(t, srv, "needle", vars)
		for _, e := range r.Search.Edges {
			if e.Node.Conversation.ID == old {
				t.Fatalf("relevance ranked a match of the older conversation beyond the newest %d matches", n)
			}
		}
		hits += len(r.Search.Edges)
		if !r.Search.PageInfo.HasNextPage {
			break
		}
		vars["after"] = *r.Search.PageInfo.EndCursor
	}
	if hits != n {
		t.Errorf("relevance: got %d hits, want %d", hits, n)
	}

	r := search(t, srv, "needle", map[string]any{"f": map[string]any{"conversationIds": []string{old}}})
	if len(r.Search.Edges) != 1 || r.Search.Edges[0].Node.Conversation.ID != old {
		t.Errorf("narrowed to the old conversation: got %d hits, want its one match", len(r.Search.Edges))
	}
}
