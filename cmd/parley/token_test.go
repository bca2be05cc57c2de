package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/parley-dev/parley"
	"github.com/parley-dev/parley/db"
	"github.com/parley-dev/parley/internal/pgtest"
)

// postAs sends a GraphQL request with a bearer token and returns the status and the
// first error's code ("" for none).
func postAs(t *testing.T, url, token, query string) (int, string, map[string]any) {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"query": query})
	req, _ := http.NewRequest(http.MethodPost, url+"/graphql", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out struct {
		Data   map[string]any
		Errors []struct{ Extensions struct{ Code string } }
	}
	json.NewDecoder(resp.Body).Decode(&out)
	code := ""
	if len(out.Errors) > 0 {
		code = out.Errors[0].Extensions.Code
	}
	return resp.StatusCode, code, out.Data
}

// TestTokens: parley token create prints a token once, list shows it without the
// token, serve --auth-tokens accepts it as its owner's, and after revoke it is refused.
// Import and export act for --owner, and another owner's conversation is not found.
func TestTokens(t *testing.T) {
	t.Parallel()
	dsn := pgtest.NewDatabase(t)
	cli := func(args ...string) (string, string, error) {
		var out, errOut syncBuffer
		err := run(context.Background(), append([]string{"parley"}, args...), &out, &errOut)
		return out.String(), errOut.String(), err
	}
	out, errOut, err := cli("token", "create", "--database-url", dsn, "--owner", "alice", "--name", "laptop", "--expires", "720h")
	if err != nil {
		t.Fatalf("token create: %v\n%s", err, errOut)
	}
	alice := strings.TrimSpace(out)
	if !strings.HasPrefix(alice, "prl_") || !strings.Contains(errOut, "shown once") {
		t.Fatalf("token create: got %q / %q, want a prl_ token and a note that it is shown once", out, errOut)
	}
	out, _, err = cli("token", "create", "--database-url", dsn, "--owner", "bob", "--json")
	if err != nil {
		t.Fatal(err)
	}
	var bobTok struct{ Token, ID string }
	if err := json.Unmarshal([]byte(out), &bobTok); err != nil {
		t.Fatalf("token create --json: %v\n%s", err, out)
	}

	out, _, err = cli("token", "list", "--database-url", dsn, "--owner", "alice")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "laptop") || strings.Contains(out, "bob") || strings.Contains(out, alice) {
		t.Errorf("token list --owner alice: got\n%s\nwant alice's token, without the token itself", out)
	}

	url, stop := serve(t, "--database-url", dsn, "--auth-tokens")
	defer stop()
	status, code, data := postAs(t, url, bobTok.Token, `mutation { createConversation(title: "bob's") { id } }`)
	if status != 200 || code != "" {
		t.Fatalf("bob creates a conversation: status %d, code %q", status, code)
	}
	bobConv := data["createConversation"].(map[string]any)["id"].(string)
	if _, code, _ := postAs(t, url, alice, `{ conversation(id: "`+bobConv+`") { title } }`); code != "NOT_FOUND" {
		t.Errorf("alice reads bob's conversation: got %q, want NOT_FOUND", code)
	}

	// The command line acts for --owner too.
	if _, _, err := cli("export", "--database-url", dsn, "--format", "MARKDOWN", "--owner", "alice", bobConv); err == nil ||
		!strings.Contains(err.Error(), "not found") {
		t.Errorf("export of bob's conversation as alice: got %v, want not found", err)
	}
	if out, _, err := cli("export", "--database-url", dsn, "--format", "MARKDOWN", "--owner", "bob", bobConv); err != nil {
		t.Errorf("export of bob's conversation as bob: %v\n%s", err, out)
	}
	chat := filepath.Join(t.TempDir(), "chat.json")
	os.WriteFile(chat, []byte(`[{"role":"user","content":"hi"}]`), 0o600)
	if _, _, err := cli("import", "--database-url", dsn, "--format", "OPENAI_CHAT", "--owner", "alice", "--conversation", bobConv, chat); err == nil ||
		!strings.Contains(err.Error(), "not found") {
		t.Errorf("import into bob's conversation as alice: got %v, want not found", err)
	}

	// Revoked by id, bob's token no longer gets in.
	if out, _, err := cli("token", "revoke", "--database-url", dsn, bobTok.ID); err != nil || !strings.Contains(out, "Revoked") {
		t.Fatalf("token revoke: %v %s", err, out)
	}
	if status, code, _ := postAs(t, url, bobTok.Token, `{ __typename }`); status != 401 || code != "UNAUTHENTICATED" {
		t.Errorf("revoked token: status %d code %q, want 401 UNAUTHENTICATED", status, code)
	}
	out, _, _ = cli("token", "list", "--database-url", dsn)
	if !strings.Contains(out, "revoked") || !strings.Contains(out, "active") {
		t.Errorf("token list: got\n%s\nwant bob's revoked and alice's active", out)
	}
}

// TestServeRefusesOpenLocalMode: without authentication, serve will not listen beyond
// loopback, and says how to fix it.
func TestServeRefusesOpenLocalMode(t *testing.T) {
	t.Parallel()
	var out, errOut syncBuffer
	err := run(context.Background(), []string{"parley", "serve", "--addr", "0.0.0.0:0", "--database-url", pgtest.NewDatabase(t)}, &out, &errOut)
	if err == nil || !strings.Contains(err.Error(), "without authentication") || !strings.Contains(err.Error(), "--auth-tokens") {
		t.Errorf("serve on 0.0.0.0 in local mode: got %v, want a refusal naming the fix", err)
	}
}

// TestTokenListShowsShareLinks: share links are listed with the owner's tokens, scoped
// to their conversation, and parley token revoke revokes them.
func TestTokenListShowsShareLinks(t *testing.T) {
	t.Parallel()
	dsn := pgtest.NewDatabase(t)
	store, err := db.Open(context.Background(), dsn, db.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	ctx := parley.WithOwner(context.Background(), "alice")
	conv, err := store.CreateConversation(ctx, "shared")
	if err != nil {
		t.Fatal(err)
	}
	link, _, err := store.CreateShareLink(ctx, conv.ID, "", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	cli := func(args ...string) string {
		var out, errOut syncBuffer
		if err := run(context.Background(), append([]string{"parley"}, args...), &out, &errOut); err != nil {
			t.Fatalf("%v: %v\n%s", args, err, errOut.String())
		}
		return out.String()
	}
	out := cli("token", "list", "--database-url", dsn, "--owner", "alice")
	if !strings.Contains(out, link.ID) || !strings.Contains(out, "share link: "+conv.ID) || !strings.Contains(out, "active") {
		t.Errorf("token list: got\n%s\nwant %s as a share link of %s, active", out, link.ID, conv.ID)
	}
	cli("token", "revoke", "--database-url", dsn, link.ID)
	if out := cli("token", "list", "--database-url", dsn, "--owner", "alice"); !strings.Contains(out, "revoked") {
		t.Errorf("token list after revoke: got\n%s\nwant the link revoked", out)
	}
}
