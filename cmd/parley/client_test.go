package main

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/parley-dev/parley/internal/pgtest"
)

const sessionFile = "../../interop/claudecode/testdata/session.jsonl"

// cliRun runs parley with args and returns its stdout, stderr and error.
func cliRun(args ...string) (string, string, error) {
	var out, errOut syncBuffer
	err := run(context.Background(), append([]string{"parley"}, args...), &out, &errOut)
	return out.String(), errOut.String(), err
}

// cliProcess runs parley (this test binary, acting as it) as a process of its own,
// with env added to its environment, and returns its stdout, stderr and error.
func cliProcess(env []string, args ...string) (string, string, error) {
	exe, err := os.Executable()
	if err != nil {
		return "", "", err
	}
	var out, errOut syncBuffer
	cmd := exec.Command(exe, args...)
	cmd.Env = append(append(os.Environ(), actAsParley+"=1"), env...)
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err = cmd.Run()
	return out.String(), errOut.String(), err
}

// createToken makes an API token for owner in the database dsn with parley token create.
func createToken(t *testing.T, dsn, owner string, extra ...string) string {
	t.Helper()
	out, errOut, err := cliRun(append([]string{"token", "create", "--database-url", dsn, "--owner", owner}, extra...)...)
	if err != nil {
		t.Fatalf("token create: %v\n%s", err, errOut)
	}
	return strings.TrimSpace(out)
}

// TestClientMode: import, conversations and export with --server talk to a running
// parley serve that requires API tokens, and give what the same commands give on the
// database: the import lands in the token's owner's conversations, the list and the
// export read it back, the export byte for byte as a local export writes it.
func TestClientMode(t *testing.T) {
	t.Parallel()
	dsn := pgtest.NewDatabase(t)
	p := startProcess(t, "--database-url", dsn, "--auth-tokens")
	alice := createToken(t, dsn, "alice")

	out, errOut, err := cliRun("import", "--server", p.url, "--token", alice, "--format", "CLAUDE_CODE_JSONL", "--json", sessionFile)
	if err != nil {
		t.Fatalf("import --server: %v\n%s", err, errOut)
	}
	var rep struct {
		Created      bool
		Added        int
		Conversation struct{ ID, Owner string }
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil || !rep.Created || rep.Added != 14 || rep.Conversation.Owner != "alice" {
		t.Fatalf("import --server --json: got %+v (%v), want a new conversation of alice with 14 messages, from\n%s", rep, err, out)
	}
	// The report in text, as a local import prints it; again the same history adds nothing.
	out, errOut, err = cliRun("import", "--server", p.url, "--token", alice, "--format", "CLAUDE_CODE_JSONL",
		"--conversation", rep.Conversation.ID, sessionFile)
	if err != nil {
		t.Fatalf("import --server again: %v\n%s", err, errOut)
	}
	if !strings.HasPrefix(out, rep.Conversation.ID+"\n") || !strings.Contains(out, "Added 0 messages") || !strings.Contains(out, "Already present from an earlier import: 14") {
		t.Errorf("import --server into the conversation again: got\n%s", out)
	}

	// PARLEY_SERVER and PARLEY_TOKEN stand for the flags (in a parley process of its own:
	// parallel tests cannot set this one's environment).
	env := []string{"PARLEY_SERVER=" + p.url, "PARLEY_TOKEN=" + alice}
	out, errOut, err = cliProcess(env, "conversations", "--json")
	if err != nil {
		t.Fatalf("conversations with PARLEY_SERVER: %v\n%s", err, errOut)
	}
	var list []struct {
		ID, Title, Owner string
		MessageCount     int
	}
	if err := json.Unmarshal([]byte(out), &list); err != nil || len(list) != 1 || list[0].ID != rep.Conversation.ID || list[0].Owner != "alice" || list[0].MessageCount != 14 {
		t.Fatalf("conversations --json from the server: got %+v (%v), want alice's one conversation of 14 messages", list, err)
	}
	out, _, err = cliProcess(env, "list", "--limit", "1")
	if err != nil || !strings.Contains(out, rep.Conversation.ID) || !strings.Contains(out, "alice") {
		t.Errorf("list from the server: got %v\n%s", err, out)
	}

	for _, format := range [][]string{{"PARLEY_JSON"}, {"MARKDOWN"}, {"ANTHROPIC_MESSAGES", "--repair", "--system", "Be brief."}} {
		opts := append(format[1:], rep.Conversation.ID)
		remote, remoteErr, err := cliRun(append([]string{"export", "--server", p.url, "--token", alice, "--format", format[0]}, opts...)...)
		if err != nil {
			t.Fatalf("export --server %s: %v\n%s", format, err, remoteErr)
		}
		local, localErr, err := cliRun(append([]string{"export", "--database-url", dsn, "--owner", "alice", "--format", format[0]}, opts...)...)
		if err != nil {
			t.Fatalf("export %s from the database: %v\n%s", format, err, localErr)
		}
		if remote != local || len(remote) < 100 {
			t.Errorf("export %s: the server's (%d bytes) differs from the database's (%d bytes):\n%s\n---\n%s", format, len(remote), len(local), remote, local)
		}
		if remoteErr != localErr {
			t.Errorf("export %s: the server's report\n%s\ndiffers from the database's\n%s", format, remoteErr, localErr)
		}
	}
}

// TestClientModeErrors: each way a client-mode command can fail says what is wrong,
// and a refused or bad import stores nothing.
func TestClientModeErrors(t *testing.T) {
	t.Parallel()
	dsn := pgtest.NewDatabase(t)
	p := startProcess(t, "--database-url", dsn, "--auth-tokens")
	alice := createToken(t, dsn, "alice")
	reader := createToken(t, dsn, "alice", "--read-only")

	// A port nothing listens on.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := "http://" + ln.Addr().String()
	ln.Close()
	// A server that is not Parley.
	other := httptest.NewServer(http.NotFoundHandler())
	defer other.Close()
	bad := filepath.Join(t.TempDir(), "bad.jsonl")
	if err := os.WriteFile(bad, []byte(`{"type":"user","message":{"role":"user","content":"hi"},"uuid":"a","timestamp":"2025-01-01T00:00:00Z"}`+"\n{not json\n"), 0o644); err != nil {
		t.Fatal(err)
	}

	for _, tc := range []struct {
		name string
		args []string
		want []string
	}{
		{"no token", []string{"import", "--server", p.url, "--format", "CLAUDE_CODE_JSONL", sessionFile},
			[]string{"requires a credential", "--token or PARLEY_TOKEN"}},
		{"unknown token", []string{"import", "--server", p.url, "--token", "prl_nosuchtoken", "--format", "CLAUDE_CODE_JSONL", sessionFile},
			[]string{"refused the credential"}},
		{"read-only token", []string{"import", "--server", p.url, "--token", reader, "--format", "CLAUDE_CODE_JSONL", sessionFile},
			[]string{"refused POST /api/import", "read-only"}},
		{"bad URL", []string{"conversations", "--server", "ftp://example.com", "--token", alice},
			[]string{`--server: "ftp://example.com" is not the URL of a Parley server`}},
		{"not a URL", []string{"export", "--server", "127.0.0.1:8080", "--token", alice, "--format", "MARKDOWN", "conv_x"},
			[]string{"is not the URL of a Parley server"}},
		{"unreachable", []string{"import", "--server", closed, "--token", alice, "--format", "CLAUDE_CODE_JSONL", sessionFile},
			[]string{"cannot reach the Parley server at " + closed, "connection refused"}},
		{"not Parley", []string{"conversations", "--server", other.URL, "--token", alice},
			[]string{"GET /api/whoami at " + other.URL + " answered 404 Not Found", "is it a Parley server"}},
		{"another owner", []string{"conversations", "--server", p.url, "--token", alice, "--owner", "bob"},
			[]string{`--owner "bob": the credential sent to ` + p.url + ` acts for "alice"`}},
		{"bad history", []string{"import", "--server", p.url, "--token", alice, "--format", "CLAUDE_CODE_JSONL", bad},
			[]string{"line 2"}},
		{"bad format", []string{"import", "--server", p.url, "--token", alice, "--format", "CSV", sessionFile},
			[]string{"CSV"}},
		{"missing conversation", []string{"export", "--server", p.url, "--token", alice, "--format", "MARKDOWN", "conv_00000000-0000-0000-0000-000000000000"},
			[]string{"not found"}},
		{"import into a missing conversation", []string{"import", "--server", p.url, "--token", alice, "--format", "CLAUDE_CODE_JSONL",
			"--conversation", "conv_00000000-0000-0000-0000-000000000000", sessionFile}, []string{"not found"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := cliRun(tc.args...)
			if err == nil {
				t.Fatalf("got no error, want one saying %q", tc.want)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("got error %q, want it to say %q", err, w)
				}
			}
		})
	}
	out, _, err := cliRun("conversations", "--server", p.url, "--token", alice, "--json")
	if err != nil || strings.TrimSpace(out) != "[]" {
		t.Errorf("after refused and bad imports alice has conversations: %v\n%s", err, out)
	}
}
