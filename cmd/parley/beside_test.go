package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/parley-dev/parley/localpg"
)

// TestImportBesideServe imports with the CLI into the data directory of a running
// parley serve: the command uses the server's Postgres (its socket) instead of failing
// on the directory's lock, and the server sees the conversation at once.
func TestImportBesideServe(t *testing.T) {
	t.Parallel()
	dir := dataDir(t)
	p := startProcess(t, "--data-dir", dir)

	var out, errOut syncBuffer
	err := run(context.Background(), []string{"parley", "import", "--data-dir", dir, "--format", "claude-code-jsonl", "--json",
		"../../interop/claudecode/testdata/session.jsonl"}, &out, &errOut)
	if err != nil {
		t.Fatalf("import beside a running server: %v\n%s", err, errOut.String())
	}
	var rep struct {
		Added        int
		Conversation struct{ ID string }
	}
	if err := json.Unmarshal([]byte(out.String()), &rep); err != nil || rep.Added != 14 {
		t.Fatalf("import report: got %+v (%v) from\n%s", rep, err, out.String())
	}
	data, err := gql(p.url, `query($c: ID!) { conversation(id: $c) { messageCount } }`, map[string]any{"c": rep.Conversation.ID})
	if err != nil {
		t.Fatal(err)
	}
	if got := data["conversation"].(map[string]any)["messageCount"]; got != float64(14) {
		t.Errorf("the server sees %v messages in the imported conversation, want 14", got)
	}
	// The server still owns its cluster: stopping the import's side changed nothing.
	if _, err := gql(p.url, `{ conversations(first: 1) { totalCount } }`, nil); err != nil {
		t.Errorf("the server after the import: %v", err)
	}
	if strings.Contains(errOut.String(), "starting embedded Postgres") && !strings.Contains(errOut.String(), "using the Postgres of the parley serve") {
		t.Errorf("the import did not say it used the server's Postgres:\n%s", errOut.String())
	}
}

// TestImportBesideAnotherCommand: a data directory whose Postgres another command runs
// without sharing it (not a server) is refused, saying so.
func TestImportBesideAnotherCommand(t *testing.T) {
	t.Parallel()
	dir := dataDir(t)
	c, err := localpg.Start(context.Background(), localpg.Config{DataDir: dir, Fast: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Stop(context.Background()) })
	var out, errOut syncBuffer
	err = run(context.Background(), []string{"parley", "import", "--data-dir", dir, "--format", "claude-code-jsonl",
		"../../interop/claudecode/testdata/session.jsonl"}, &out, &errOut)
	if err == nil || !strings.Contains(err.Error(), "does not share its postgres") {
		t.Errorf("import beside a command holding the directory: got %v, want an error saying it does not share its postgres", err)
	}
}
