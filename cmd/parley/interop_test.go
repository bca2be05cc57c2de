package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/parley-dev/parley/internal/pgtest"
)

// TestImportExport imports a Claude Code session with the CLI, again (adding nothing),
// and exports it in each format.
func TestImportExport(t *testing.T) {
	t.Parallel()
	dsn := pgtest.NewDatabase(t)
	parley := func(args ...string) (string, string, error) {
		var out, errOut syncBuffer
		err := run(context.Background(), append([]string{"parley", "--log-level", "warn"}, args...), &out, &errOut)
		return out.String(), errOut.String(), err
	}
	const session = "../../interop/claudecode/testdata/session.jsonl"

	out, _, err := parley("import", "--database-url", dsn, "--format", "claude-code-jsonl", session)
	if err != nil {
		t.Fatal(err)
	}
	id, rest, _ := strings.Cut(out, "\n")
	if !strings.HasPrefix(id, "conv_") {
		t.Fatalf("the report does not start with the conversation's id:\n%s", out)
	}
	for _, want := range []string{
		`Imported as a new conversation, "Fix the flaky login test" (14 messages now)`,
		"Added 14 messages: 4 TextMessage, 1 ImageMessage, 4 ToolRequestMessage, 4 ToolResultMessage, 1 CompactionMessage",
		"      3  sidechain (sub-agent) record (line 15, line 16, line 17)",
		`line 23: unfamiliar record type "future-thing" skipped`,
	} {
		if !strings.Contains(rest, want) {
			t.Errorf("the report lacks %q:\n%s", want, out)
		}
	}

	out, _, err = parley("import", "--database-url", dsn, "--format", "CLAUDE_CODE_JSONL", "--conversation", id, "--json", session)
	if err != nil {
		t.Fatal(err)
	}
	var rep struct {
		Added, AlreadyPresent int
		Conversation          struct{ ID string }
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil || rep.Added != 0 || rep.AlreadyPresent != 14 || rep.Conversation.ID != id {
		t.Errorf("re-import: got %+v (%v) from\n%s", rep, err, out)
	}

	out, _, err = parley("export", "--database-url", dsn, "--format", "markdown", id)
	if err != nil || !strings.HasPrefix(out, "# Fix the flaky login test\n\n[User]\n") || !strings.Contains(out, "[Tool Call]") {
		t.Errorf("markdown export (%v):\n%s", err, out)
	}
	_, _, err = parley("export", "--database-url", dsn, "--format", "openai-chat", id)
	if err == nil || !strings.Contains(err.Error(), `tool call "toolu_rerun" (Bash) at position 14 has no result`) {
		t.Errorf("export of an unanswered call without --repair: got %v", err)
	}
	out, errOut, err := parley("export", "--database-url", dsn, "--format", "anthropic-messages", "--repair", "--system", "Be brief.",
		"--max-tokens", "100000", "--cache-breakpoints", "2", id)
	if err != nil {
		t.Fatal(err)
	}
	var body struct {
		System   []struct{ Text string }
		Messages []json.RawMessage
	}
	// The system prompt alone: the export starts at the session's compaction summary,
	// after the text Claude Code injected (SUPERVISOR). Two cache breakpoints.
	if err := json.Unmarshal([]byte(out), &body); err != nil || len(body.System) != 1 || body.System[0].Text != "Be brief." ||
		len(body.Messages) == 0 || strings.Count(out, `"cache_control"`) != 2 {
		t.Errorf("anthropic export (%v):\n%s", err, out)
	}
	for _, want := range []string{"About ", "(budget 100000)", `Repaired: dropped the unanswered tool call "toolu_rerun"`,
		"Note: the transcript starts at the compaction at position 10", "End cursor (export what follows with --after): "} {
		if !strings.Contains(errOut, want) {
			t.Errorf("the export report lacks %q:\n%s", want, errOut)
		}
	}
	// Nothing follows the end cursor yet.
	_, end, _ := strings.Cut(errOut, "End cursor (export what follows with --after): ")
	end, _, _ = strings.Cut(end, "\n")
	out, _, err = parley("export", "--database-url", dsn, "--format", "openai-chat", "--repair", "--after", end, id)
	if err != nil || strings.TrimSpace(out) != "[]" {
		t.Errorf("export after the end (%v):\n%s", err, out)
	}
	_, _, err = parley("export", "--database-url", dsn, "--format", "openai-chat", "--images", "sideways", id)
	if err == nil || !strings.Contains(err.Error(), `images: "sideways" is not one of AS_SENT, AS_TEXT, FOR_MODEL`) {
		t.Errorf("--images sideways: got %v", err)
	}
}

// TestImportStdin imports from standard input, and refuses what it should.
func TestImportStdin(t *testing.T) {
	dsn := pgtest.NewDatabase(t)
	old := stdin
	defer func() { stdin = old }()
	stdin = strings.NewReader(`{"system": "Be kind.", "messages": [{"role": "user", "content": "Hello"}]}`)
	var out, errOut syncBuffer
	err := run(context.Background(), []string{"parley", "import", "--database-url", dsn, "-f", "anthropic_messages", "-t", "Greeting", "-"}, &out, &errOut)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), `"Greeting"`) || !strings.Contains(out.String(), "System prompt (8 characters) not stored") {
		t.Errorf("report:\n%s", out.String())
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"import", "--database-url", dsn, "--format", "yaml", "x"}, `format: "yaml" is not one of`},
		{[]string{"import", "--database-url", dsn, "--format", "openai_chat"}, "give one FILE"},
		{[]string{"import", "--database-url", dsn, "--format", "openai_chat", "--conversation", "c", "--title", "t", "x"}, "not both"},
		{[]string{"import", "--database-url", dsn, "--format", "openai_chat", "/nonexistent.json"}, "no such file"},
		{[]string{"export", "--database-url", dsn, "--format", "markdown", "conv_00000000-0000-4000-8000-000000000000"}, "not found"},
	} {
		err := run(context.Background(), append([]string{"parley"}, tc.args...), &out, &errOut)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: got %v, want an error containing %q", tc.args, err, tc.want)
		}
	}
}
