package claudecode_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/parley-dev/parley"
)

// parents lists each message of an import as "sourceID<-parent", a root's parent "ROOT"
// and an unknown one "".
func parents(imp *parley.Import) []string {
	out := make([]string, len(imp.Messages))
	for i, im := range imp.Messages {
		parent := im.Parent
		if im.Root {
			parent = "ROOT"
		}
		out[i] = im.Message.Meta().SourceID + "<-" + parent
	}
	return out
}

// TestRewindParents: a rewind (a second prompt after an earlier reply) and an edited
// first prompt (a second root) name their parents; progress and system records between
// pass their place on.
func TestRewindParents(t *testing.T) {
	t.Parallel()
	raw, err := os.ReadFile("testdata/rewind.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	imp := parse(t, string(raw))
	want := []string{"u-01<-ROOT", "msg_01<-u-01", "u-02<-msg_01", "msg_02<-u-02", "u-03<-msg_02", "msg_03<-u-03",
		"u-04<-msg_01", "msg_04<-u-04", "u-05<-ROOT", "msg_05<-u-05", "u-06<-msg_04", "msg_06<-u-06", "u-07<-msg_06", "msg_07<-u-07"}
	if got := parents(imp); strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("got  %q\nwant %q", got, want)
	}
}

// TestParentsOfOneTurn: what Claude Code writes as a fork of records is one line of
// messages: a reply streamed over several lines, parallel tool results each naming its
// call's line, progress records beside a result, a re-written copy of a turn.
func TestParentsOfOneTurn(t *testing.T) {
	t.Parallel()
	at := func(r map[string]any, parent any) map[string]any { r["parentUuid"] = parent; return r }
	data := lines(t,
		at(user("u1", "go"), nil),
		at(assistant("a1", "msg_A", map[string]any{"type": "text", "text": "Two reads."}), "u1"),
		at(assistant("a2", "msg_A", map[string]any{"type": "tool_use", "id": "t1", "name": "Read", "input": map[string]any{}}), "a1"),
		at(assistant("a3", "msg_A", map[string]any{"type": "tool_use", "id": "t2", "name": "Read", "input": map[string]any{}}), "a2"),
		at(map[string]any{"type": "progress", "uuid": "p1"}, "a3"),
		// The results each name their call's line, in the order they came back.
		at(user("r2", []map[string]any{{"type": "tool_result", "tool_use_id": "t2", "content": "two"}}), "a3"),
		at(user("r1", []map[string]any{{"type": "tool_result", "tool_use_id": "t1", "content": "one"}}), "a2"),
		at(assistant("a4", "msg_B", map[string]any{"type": "text", "text": "Done."}), "r1"),
		// A prompt whose parent is the first result in file order: still after the run.
		at(user("u2", "and then?", "timestamp", "2026-02-10T10:00:05Z"), "r2"),
	)
	want := []string{"u1<-ROOT", "msg_A<-u1", "r2<-msg_A", "r1<-r2", "msg_B<-r1", "u2<-r1"}
	if got := parents(parse(t, data)); strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("got  %q\nwant %q", got, want)
	}
}

// TestRealSessionsAreOneBranch: the real sessions have forks of records (progress
// records beside results, parallel results naming their calls' lines) but none of
// messages: each message follows the one before it.
func TestRealSessionsAreOneBranch(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"tool-heavy-v2.1.38.jsonl", "sidechains-v1.0.98.jsonl"} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			raw, err := os.ReadFile(filepath.Join("..", "..", "..", "shared", "fixtures", "claude-code", name))
			if os.IsNotExist(err) {
				t.Skipf("no shared fixture %s", name)
			} else if err != nil {
				t.Fatal(err)
			}
			imp := parse(t, string(raw))
			if len(imp.Messages) < 10 {
				t.Fatalf("got %d messages, want a session", len(imp.Messages))
			}
			prev := "ROOT"
			for i, im := range imp.Messages {
				got := im.Parent
				if im.Root {
					got = "ROOT"
				}
				if got != prev {
					t.Errorf("message %d (%s, %s): parent %q, want the message before it, %q", i, im.Origin, im.Message.Meta().SourceID, got, prev)
				}
				prev = im.Message.Meta().SourceID
			}
		})
	}
}

// A parent outside the file (a resumed session's first record) is unknown: the message
// follows the one before it.
func TestUnknownParent(t *testing.T) {
	t.Parallel()
	r := user("u9", "more")
	r["parentUuid"] = "not-in-this-file"
	imp := parse(t, lines(t, r))
	if got := parents(imp); fmt.Sprint(got) != "[u9<-]" {
		t.Errorf("got %q, want an unknown parent", got)
	}
}
