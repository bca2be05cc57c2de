package interop_test

import (
	"strings"
	"testing"

	"github.com/parley-dev/parley/internal/testserver"
)

const rewindSession = "claudecode/testdata/rewind.jsonl"

const branchesQuery = `query($id: ID!) { conversation(id: $id) { messageCount
	branches { length active forkPosition leaf { ... on MessageBase { sourceId } } }
	messages(first: 100) { edges { node { ... on MessageBase { sourceId position parentId siblings { count index } } } } }
} }`

type branchesResult struct {
	Conversation struct {
		MessageCount int
		Branches     []struct {
			Length, ForkPosition int
			Active               bool
			Leaf                 struct{ SourceID string }
		}
		Messages struct {
			Edges []struct {
				Node struct {
					SourceID string
					Position int
					ParentID *string
					Siblings struct{ Count, Index int }
				}
			}
		}
	}
}

// branchSummary is "leafSourceId:length" for each branch, newest leaf first, the active
// one marked with a star.
func (r branchesResult) branchSummary() string {
	var parts []string
	for _, b := range r.Conversation.Branches {
		s := b.Leaf.SourceID + ":" + itoa(b.Length)
		if b.Active {
			s += "*"
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, " ")
}

func (r branchesResult) path() string {
	var ids []string
	for _, e := range r.Conversation.Messages.Edges {
		ids = append(ids, e.Node.SourceID+"@"+itoa(e.Node.Position))
	}
	return strings.Join(ids, " ")
}

// TestClaudeCodeRewindImportsAsBranches: a session with a rewind (a second prompt after
// an earlier reply), an edited first prompt (a second root) and a return to the rewound
// branch imports as three branches, the file's last one active; importing it again adds
// nothing and changes no branch.
func TestClaudeCodeRewindImportsAsBranches(t *testing.T) {
	t.Parallel()
	srv := testserver.New(t)
	data := readFile(t, rewindSession)
	rep := importData(t, srv, "CLAUDE_CODE_JSONL", data, "", "")
	if rep.Added != 14 || rep.Conversation.MessageCount != 8 {
		t.Errorf("got added %d, messageCount %d; want 14 messages, 8 on the active branch", rep.Added, rep.Conversation.MessageCount)
	}
	var got branchesResult
	srv.MustDo(t, branchesQuery, map[string]any{"id": rep.Conversation.ID}, &got)
	const wantBranches = "msg_07:8* msg_05:2 msg_03:6"
	if s := got.branchSummary(); s != wantBranches {
		t.Errorf("branches: got %s, want %s", s, wantBranches)
	}
	const wantPath = "u-01@1 msg_01@2 u-04@3 msg_04@4 u-06@5 msg_06@6 u-07@7 msg_07@8"
	if p := got.path(); p != wantPath {
		t.Errorf("active branch: got %s, want %s", p, wantPath)
	}
	// The rewound prompt is the second of two versions, and the first prompt the first of
	// two roots.
	for _, e := range got.Conversation.Messages.Edges {
		n := e.Node
		want := map[string][2]int{"u-01": {2, 0}, "u-04": {2, 1}}[n.SourceID]
		if want == ([2]int{}) {
			want = [2]int{1, 0}
		}
		if n.Siblings.Count != want[0] || n.Siblings.Index != want[1] {
			t.Errorf("%s: got siblings %d/%d, want index %d of %d", n.SourceID, n.Siblings.Index, n.Siblings.Count, want[1], want[0])
		}
	}
	// The transcript follows the active branch: the rain branch's call is not in it.
	tr, _ := transcript(t, srv, rep.Conversation.ID, "ANTHROPIC_MESSAGES", transcriptOpts{})
	if s := string(tr); !strings.Contains(s, "Snow without a sound") || strings.Contains(s, "toolu_rain") || !strings.Contains(s, "toolu_save") {
		t.Errorf("transcript: got %s, want the snow branch only", s)
	}

	again := importData(t, srv, "CLAUDE_CODE_JSONL", data, rep.Conversation.ID, "")
	if again.Added != 0 || again.AlreadyPresent != 14 || again.Conversation.MessageCount != 8 {
		t.Errorf("again: got added %d, alreadyPresent %d, messageCount %d; want 0, 14, 8", again.Added, again.AlreadyPresent, again.Conversation.MessageCount)
	}
	var after branchesResult
	srv.MustDo(t, branchesQuery, map[string]any{"id": rep.Conversation.ID}, &after)
	if s := after.branchSummary(); s != wantBranches {
		t.Errorf("branches after importing again: got %s, want %s", s, wantBranches)
	}
}

// TestClaudeCodeLongerFileGrowsItsBranch: the same session imported first without its
// last turns, then whole: the new turns go where their parents are (the snow branch,
// stored by the first import), which becomes active.
func TestClaudeCodeLongerFileGrowsItsBranch(t *testing.T) {
	t.Parallel()
	srv := testserver.New(t)
	data := readFile(t, rewindSession)
	lines := strings.SplitAfter(strings.TrimSpace(data), "\n")
	first := importData(t, srv, "CLAUDE_CODE_JSONL", strings.Join(lines[:12], ""), "", "")
	if first.Added != 10 || first.Conversation.MessageCount != 2 {
		t.Fatalf("first part: got added %d, messageCount %d; want 10, 2 (the limerick root active)", first.Added, first.Conversation.MessageCount)
	}
	whole := importData(t, srv, "CLAUDE_CODE_JSONL", data, first.Conversation.ID, "")
	if whole.Added != 4 || whole.AlreadyPresent != 10 || whole.Conversation.MessageCount != 8 {
		t.Errorf("whole: got added %d, alreadyPresent %d, messageCount %d; want 4, 10, 8", whole.Added, whole.AlreadyPresent, whole.Conversation.MessageCount)
	}
	var got branchesResult
	srv.MustDo(t, branchesQuery, map[string]any{"id": first.Conversation.ID}, &got)
	if s := got.branchSummary(); s != "msg_07:8* msg_05:2 msg_03:6" {
		t.Errorf("branches: got %s", s)
	}
}

// TestClaudeCodeResultOnAnotherBranch: a tool result whose parent is on another branch
// than its call is refused, naming the line, and nothing is stored.
func TestClaudeCodeResultOnAnotherBranch(t *testing.T) {
	t.Parallel()
	srv := testserver.New(t)
	at := func(r obj, parent any) obj { r["parentUuid"] = parent; return r }
	data := jsonl(t,
		at(ccUser("u1", "go"), nil),
		at(ccAssistant("a1", "msg_A", obj{"type": "tool_use", "id": "t1", "name": "Read", "input": obj{}}), "u1"),
		at(ccUser("u2", "no, something else"), nil),
		at(ccUser("r1", []obj{{"type": "tool_result", "tool_use_id": "t1", "content": "x"}}), "u2"),
	)
	resp := srv.Do(t, importMutation, importVars("CLAUDE_CODE_JSONL", data, "", ""))
	if len(resp.Errors) != 1 || !strings.Contains(resp.Errors[0].Message, "line 4") ||
		!strings.Contains(resp.Errors[0].Message, "another branch") {
		t.Fatalf("got %+v, want an error naming line 4 and the branch", resp.Errors)
	}
	if n := conversationCount(t, srv); n != 0 {
		t.Errorf("got %d conversations, want none", n)
	}
}
