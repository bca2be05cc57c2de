package main

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/parley-dev/parley/internal/pgtest"
)

// TestJSONOutputAndList: import --json speaks the API's field names, and conversations
// lists what was imported, as a table and as JSON, for the owner asked for only.
func TestJSONOutputAndList(t *testing.T) {
	t.Parallel()
	dsn := pgtest.NewDatabase(t)
	parley := func(args ...string) (string, error) {
		var out, errOut syncBuffer
		err := run(context.Background(), append([]string{"parley", "--log-level", "warn"}, args...), &out, &errOut)
		if err != nil {
			return "", err
		}
		return out.String(), nil
	}
	const session = "../../interop/claudecode/testdata/session.jsonl"
	out, err := parley("import", "--database-url", dsn, "--format", "claude-code-jsonl", "--json", session)
	if err != nil {
		t.Fatal(err)
	}
	var rep map[string]any
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("import --json: %v\n%s", err, out)
	}
	keys := func(m map[string]any) []string {
		var ks []string
		for k := range m {
			ks = append(ks, k)
		}
		slices.Sort(ks)
		return ks
	}
	want := []string{"added", "addedByVariant", "alreadyPresent", "conversation", "created", "skipped", "systemPrompt", "warnings"}
	if got := keys(rep); !slices.Equal(got, want) {
		t.Errorf("import --json keys: got %v, want %v", got, want)
	}
	conv := rep["conversation"].(map[string]any)
	if got, want := keys(conv), []string{"createdAt", "id", "messageCount", "owner", "title", "updatedAt"}; !slices.Equal(got, want) {
		t.Errorf("conversation keys: got %v, want %v", got, want)
	}
	if conv["owner"] != "local" || conv["messageCount"] != float64(14) || rep["added"] != float64(14) {
		t.Errorf("import --json: got %v", rep)
	}
	if _, err := parley("import", "--database-url", dsn, "--owner", "ann", "--format", "claude-code-jsonl", "--title", "Ann's", session); err != nil {
		t.Fatal(err)
	}

	out, err = parley("conversations", "--database-url", dsn, "--json")
	if err != nil {
		t.Fatal(err)
	}
	var list []map[string]any
	if err := json.Unmarshal([]byte(out), &list); err != nil {
		t.Fatalf("conversations --json: %v\n%s", err, out)
	}
	if len(list) != 1 || list[0]["id"] != conv["id"] || list[0]["title"] != "Fix the flaky login test" || list[0]["owner"] != "local" {
		t.Errorf("conversations --json of the local owner: got %v, want only %v", list, conv["id"])
	}
	out, err = parley("list", "--database-url", dsn, "--owner", "ann")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 2 || !strings.HasPrefix(lines[0], "ID") || !strings.Contains(lines[1], "Ann's") || !strings.Contains(lines[1], " ann ") || !strings.Contains(lines[1], " 14 ") {
		t.Errorf("list --owner ann: got\n%s", out)
	}
	out, err = parley("conversations", "--database-url", dsn, "--owner", "nobody", "--json")
	if err != nil || strings.TrimSpace(out) != "[]" {
		t.Errorf("conversations of an owner with none: got %q (%v), want []", out, err)
	}
}
