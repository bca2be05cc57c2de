package server_test

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/parley-dev/parley/internal/testserver"
)

// treeDoc is a PARLEY_JSON document as far as its tree goes.
type treeDoc struct {
	Tree         bool
	Conversation struct{ ActiveLeafID string }
	Messages     []struct {
		Type      string
		ID        string
		Role      string
		Position  int
		ParentID  string
		Hidden    bool
		DeletedAt *string
		Kind      string
		Parts     []struct{ Kind, Text string }
	}
}

// shape is the document's tree without ids and times: each message's variant, text,
// place (its parent's index in the document, -1 for a root) and flags, and the index of
// the active leaf. Two exports of the same tree have the same shape.
func (d treeDoc) shape() []string {
	index := make(map[string]int)
	var out []string
	for i, m := range d.Messages {
		index[m.ID] = i
		parent := -1
		if m.ParentID != "" {
			p, ok := index[m.ParentID]
			if !ok {
				return []string{fmt.Sprintf("message %d names parent %s, not an earlier message", i, m.ParentID)}
			}
			parent = p
		}
		out = append(out, fmt.Sprintf("%d %s/%s %s %v parent=%d pos=%d hidden=%v deleted=%v",
			i, m.Type, m.Kind, m.Role, m.Parts, parent, m.Position, m.Hidden, m.DeletedAt != nil))
	}
	return append(out, fmt.Sprintf("active leaf %d", index[d.Conversation.ActiveLeafID]))
}

func exportTree(t *testing.T, srv *testserver.Server, conv string) (string, treeDoc) {
	t.Helper()
	var out struct {
		Conversation struct{ Transcript json.RawMessage }
	}
	srv.MustDo(t, `query($c: ID!) { conversation(id: $c) { transcript(format: PARLEY_JSON) } }`, map[string]any{"c": conv}, &out)
	var raw string
	if err := json.Unmarshal(out.Conversation.Transcript, &raw); err != nil {
		raw = string(out.Conversation.Transcript)
	}
	var doc treeDoc
	if err := json.Unmarshal([]byte(raw), &doc); err != nil {
		t.Fatalf("decode the export: %v\n%s", err, raw)
	}
	return raw, doc
}

type importResult struct {
	ImportConversation struct {
		Conversation          struct{ ID string }
		Added, AlreadyPresent int
	}
}

func importTree(t *testing.T, srv *testserver.Server, data, conv string) importResult {
	t.Helper()
	vars := map[string]any{"d": data}
	if conv != "" {
		vars["c"] = conv
	}
	var out importResult
	srv.MustDo(t, `mutation($d: String!, $c: ID) { importConversation(format: PARLEY_JSON, data: $d, conversationId: $c) {
		conversation { id } added alreadyPresent } }`, vars, &out)
	return out
}

func branchLengths(t *testing.T, srv *testserver.Server, conv string) []string {
	t.Helper()
	var out struct {
		Conversation struct {
			MessageCount int
			Branches     []struct {
				Length       int
				ForkPosition int
				Active       bool
			}
		}
	}
	srv.MustDo(t, `query($c: ID!) { conversation(id: $c) { messageCount branches { length forkPosition active } } }`, map[string]any{"c": conv}, &out)
	got := []string{fmt.Sprint("messageCount ", out.Conversation.MessageCount)}
	for _, b := range out.Conversation.Branches {
		got = append(got, fmt.Sprintf("%d@%d active=%v", b.Length, b.ForkPosition, b.Active))
	}
	return got
}

// TestParleyJSONCarriesTheTree: a tree with several forks, a hidden message, a tombstone
// and a branch switch exports as PARLEY_JSON with every branch, and imports back as the
// same tree: the same messages under the same parents, the same flags, the same branches
// with the same one active. Importing it again adds nothing.
func TestParleyJSONCarriesTheTree(t *testing.T) {
	t.Parallel()
	srv := testserver.New(t)
	conv, b := buildTree(t, srv)
	srv.MustDo(t, `mutation($m: ID!) { setMessageHidden(messageId: $m, hidden: true) { __typename } }`, map[string]any{"m": b["a"][5]}, nil)
	srv.MustDo(t, `mutation($m: ID!) { deleteMessage(messageId: $m) { __typename } }`, map[string]any{"m": b["main"][2]}, nil)
	srv.MustDo(t, `mutation($c: ID!, $m: ID!) { switchBranch(conversationId: $c, messageId: $m) { __typename } }`,
		map[string]any{"c": conv, "m": b["b"][len(b["b"])-1]}, nil)

	data, doc := exportTree(t, srv, conv)
	// 12 + 5 + 4 + 1 + 3 messages and the switch's record.
	if !doc.Tree || len(doc.Messages) != 26 {
		t.Fatalf("export: got tree %v with %d messages, want a tree of 26", doc.Tree, len(doc.Messages))
	}
	imported := importTree(t, srv, data, "")
	if imported.ImportConversation.Added != 26 {
		t.Fatalf("import: got %d added, want 26", imported.ImportConversation.Added)
	}
	copyID := imported.ImportConversation.Conversation.ID
	_, back := exportTree(t, srv, copyID)
	if got, want := back.shape(), doc.shape(); !reflect.DeepEqual(got, want) {
		t.Errorf("the imported tree differs:\ngot  %q\nwant %q", got, want)
	}
	if got, want := branchLengths(t, srv, copyID), branchLengths(t, srv, conv); !reflect.DeepEqual(got, want) {
		t.Errorf("branches: got %q, want %q", got, want)
	}

	again := importTree(t, srv, data, copyID)
	if again.ImportConversation.Added != 0 || again.ImportConversation.AlreadyPresent != 26 {
		t.Errorf("again: got added %d, alreadyPresent %d; want 0, 26", again.ImportConversation.Added, again.ImportConversation.AlreadyPresent)
	}
	// One branch's export is one line: it imports as a conversation of one branch.
	var out struct {
		Conversation struct{ Transcript json.RawMessage }
	}
	srv.MustDo(t, `query($c: ID!, $b: ID) { conversation(id: $c) { transcript(format: PARLEY_JSON, branch: $b) } }`,
		map[string]any{"c": conv, "b": b["c"][10]}, &out)
	var line string
	if err := json.Unmarshal(out.Conversation.Transcript, &line); err != nil {
		line = string(out.Conversation.Transcript)
	}
	one := importTree(t, srv, line, "")
	if got := branchLengths(t, srv, one.ImportConversation.Conversation.ID); !reflect.DeepEqual(got, []string{"messageCount 11", "11@0 active=true"}) {
		t.Errorf("one branch: got %q", got)
	}
}

// TestParleyJSONTreeErrors: a parent that is not an earlier message, or an active leaf
// that is no message, is refused, naming it, and nothing is stored.
func TestParleyJSONTreeErrors(t *testing.T) {
	t.Parallel()
	srv := testserver.New(t)
	msg := func(id, parent string) map[string]any {
		m := map[string]any{"type": "text", "id": id, "role": "USER", "parts": []map[string]any{{"kind": "TEXT", "text": "hi " + id}}}
		if parent != "" {
			m["parentId"] = parent
		}
		return m
	}
	for _, tc := range []struct {
		name, leaf, want string
		msgs             []map[string]any
	}{
		{"parent after", "", `messages[0].parentId: "b" is not the id of an earlier message`, []map[string]any{msg("a", "b"), msg("b", "")}},
		{"unknown leaf", "zz", `conversation.activeLeafId: "zz" is not the id of a message`, []map[string]any{msg("a", "")}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			raw, _ := json.Marshal(map[string]any{"format": "parley.conversation", "version": 1, "tree": true,
				"conversation": map[string]any{"title": "x", "activeLeafId": tc.leaf}, "messages": tc.msgs})
			resp := srv.Do(t, `mutation($d: String!) { importConversation(format: PARLEY_JSON, data: $d) { added } }`, map[string]any{"d": string(raw)})
			if len(resp.Errors) != 1 || !strings.Contains(resp.Errors[0].Message, tc.want) {
				t.Errorf("got %+v, want an error saying %s", resp.Errors, tc.want)
			}
		})
	}
	var out struct{ Conversations struct{ TotalCount int } }
	srv.MustDo(t, `{ conversations { totalCount } }`, nil, &out)
	if out.Conversations.TotalCount != 0 {
		t.Errorf("got %d conversations, want none", out.Conversations.TotalCount)
	}
}
