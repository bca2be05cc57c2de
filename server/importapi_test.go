package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/parley-dev/parley/auth"
	"github.com/parley-dev/parley/config"
	"github.com/parley-dev/parley/db"
	"github.com/parley-dev/parley/internal/testserver"
	"github.com/parley-dev/parley/server"
)

const claudeSession = "../interop/claudecode/testdata/session.jsonl"

// importServer starts a server accepting API tokens and JWTs whose GraphQL body limit
// (1 KiB) is far below the session file, and whose import limit is maxImport bytes.
func importServer(t *testing.T, maxImport int64, limits server.RateLimits) *testserver.Server {
	t.Helper()
	cfg := config.Default()
	cfg.Limits.MaxBodyBytes = 1 << 10
	return testserver.NewWith(t, testserver.Options{Config: &cfg,
		Auth: func(store *db.DB) auth.Config { return auth.Config{Tokens: store, JWTSecret: jwtSecret} },
		Configure: func(c *server.Config) {
			c.ImportAPI.MaxBytes = maxImport
			c.RateLimits = limits
		}})
}

// apiRequest sends an HTTP API request and returns its status, headers and body.
func apiRequest(t *testing.T, method, url, credential string, body io.Reader, header ...string) (int, http.Header, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, url, body)
	if err != nil {
		t.Fatal(err)
	}
	if credential != "" {
		req.Header.Set("Authorization", "Bearer "+credential)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, resp.Header, b
}

func readSession(t *testing.T) []byte {
	t.Helper()
	b, err := os.ReadFile(claudeSession)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// conversationCount is how many conversations owner's credential sees.
func conversationCount(t *testing.T, srv *testserver.Server, credential string) int {
	t.Helper()
	r := srv.As(credential).Do(t, `{ conversations { totalCount } }`, nil)
	var d struct{ Conversations struct{ TotalCount int } }
	if len(r.Errors) > 0 || json.Unmarshal(r.Data, &d) != nil {
		t.Fatalf("conversations: %+v", r)
	}
	return d.Conversations.TotalCount
}

// TestImportAPI: POST /api/import stores a history sent as the body, far larger than
// the GraphQL body limit, for the credential's owner only, and answers the
// ImportReport; GET /api/whoami names the owner.
func TestImportAPI(t *testing.T) {
	t.Parallel()
	srv := importServer(t, 1<<20, server.RateLimits{})
	alice, bob := hs256(t, "alice", time.Now().Add(time.Hour)), hs256(t, "bob", time.Now().Add(time.Hour))
	session := readSession(t)

	status, _, body := apiRequest(t, http.MethodPost, srv.URL+"/api/import?format=CLAUDE_CODE_JSONL&title=Session", alice, bytes.NewReader(session))
	if status != http.StatusOK {
		t.Fatalf("POST /api/import: got %d, want 200\n%s", status, body)
	}
	var rep server.ImportReportJSON
	if err := json.Unmarshal(body, &rep); err != nil {
		t.Fatal(err)
	}
	if !rep.Created || rep.Added != 14 || rep.Conversation.Owner != "alice" || rep.Conversation.Title != "Session" || rep.Conversation.MessageCount != 14 {
		t.Errorf("import report: got %+v, want a new conversation of alice titled Session with 14 messages", rep)
	}
	r := srv.As(alice).Do(t, `query($c: ID!) { conversation(id: $c) { messageCount } }`, map[string]any{"c": rep.Conversation.ID})
	if !strings.Contains(string(r.Data), `"messageCount":14`) {
		t.Errorf("alice reads the imported conversation: got %s %+v", r.Data, r.Errors)
	}
	if n := conversationCount(t, srv, bob); n != 0 {
		t.Errorf("bob sees %d conversations after alice's import, want 0", n)
	}
	// Into bob's conversation: alice's credential does not see it.
	status, _, body = apiRequest(t, http.MethodPost, srv.URL+"/api/import?format=CLAUDE_CODE_JSONL&conversationId="+rep.Conversation.ID, bob, bytes.NewReader(session))
	if status != http.StatusNotFound || !strings.Contains(string(body), `"NOT_FOUND"`) {
		t.Errorf("bob importing into alice's conversation: got %d %s, want 404 NOT_FOUND", status, body)
	}
	// Without Content-Length (chunked), the same.
	status, _, body = apiRequest(t, http.MethodPost, srv.URL+"/api/import?format=CLAUDE_CODE_JSONL&conversationId="+rep.Conversation.ID, alice, io.MultiReader(bytes.NewReader(session)))
	if status != http.StatusOK || !strings.Contains(string(body), `"alreadyPresent":14`) {
		t.Errorf("importing the same session again, chunked: got %d %s, want 200 with alreadyPresent 14", status, body)
	}

	status, _, body = apiRequest(t, http.MethodGet, srv.URL+"/api/whoami", alice, nil)
	var who server.WhoamiJSON
	if status != http.StatusOK || json.Unmarshal(body, &who) != nil || who != (server.WhoamiJSON{Owner: "alice", Method: "jwt"}) {
		t.Errorf("GET /api/whoami: got %d %s", status, body)
	}
}

// TestImportAPIRefusals: each bad request is refused with its status, the API's code
// and a message naming what is wrong, and stores nothing.
func TestImportAPIRefusals(t *testing.T) {
	t.Parallel()
	session := readSession(t)
	srv := importServer(t, int64(len(session))-1, server.RateLimits{})
	alice := hs256(t, "alice", time.Now().Add(time.Hour))
	_, readOnly, err := srv.Store.CreateToken(context.Background(), "alice", "reader", nil, true)
	if err != nil {
		t.Fatal(err)
	}
	import_ := srv.URL + "/api/import?format=CLAUDE_CODE_JSONL"
	badLine := []byte(`{"type":"user","message":{"role":"user","content":"hi"},"uuid":"a","timestamp":"2025-01-01T00:00:00Z"}` + "\n{not json\n")

	for _, tc := range []struct {
		name       string
		method     string
		url        string
		credential string
		body       io.Reader
		header     []string
		status     int
		code, says string
	}{
		{"no credential", "POST", import_, "", bytes.NewReader(badLine), nil, 401, "UNAUTHENTICATED", "requires authentication"},
		{"bad credential", "POST", import_, "prl_nosuch", bytes.NewReader(badLine), nil, 401, "UNAUTHENTICATED", ""},
		{"read-only token", "POST", import_, readOnly, bytes.NewReader(badLine), nil, 403, "FORBIDDEN", "read-only"},
		{"no format", "POST", srv.URL + "/api/import", alice, bytes.NewReader(badLine), nil, 400, "BAD_USER_INPUT", `"format": missing`},
		{"unknown format", "POST", srv.URL + "/api/import?format=CSV", alice, bytes.NewReader(badLine), nil, 400, "BAD_USER_INPUT", "CSV"},
		{"unknown parameter", "POST", import_ + "&conversation=x", alice, bytes.NewReader(badLine), nil, 400, "BAD_USER_INPUT", `"conversation": unknown`},
		{"title and conversation", "POST", import_ + "&title=a&conversationId=conv_x", alice, bytes.NewReader(badLine), nil, 400, "BAD_USER_INPUT", "not both"},
		{"bad line", "POST", import_, alice, bytes.NewReader(badLine), nil, 400, "BAD_USER_INPUT", "line 2"},
		{"over the limit, said up front", "POST", import_, alice, bytes.NewReader(session), nil, 413, "REQUEST_TOO_LARGE", "limits.max_import_bytes"},
		{"over the limit, found reading", "POST", import_, alice, io.MultiReader(bytes.NewReader(session)), nil, 413, "REQUEST_TOO_LARGE", "Nothing was stored"},
		{"a format read whole, over the body limit", "POST", srv.URL + "/api/import?format=OPENAI_CHAT", alice,
			strings.NewReader(`[{"role":"user","content":"` + strings.Repeat("x", 2000) + `"}]`), nil, 413, "REQUEST_TOO_LARGE", "limits.max_body_bytes: OPENAI_CHAT is read whole"},
		{"cross-origin page", "POST", import_, alice, bytes.NewReader(badLine), []string{"Origin", "https://evil.example", "Sec-Fetch-Site", "cross-site"}, 403, "CROSS_ORIGIN_REFUSED", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			status, _, body := apiRequest(t, tc.method, tc.url, tc.credential, tc.body, tc.header...)
			var e struct {
				Errors []struct {
					Message    string
					Extensions struct{ Code string }
				}
			}
			if err := json.Unmarshal(body, &e); err != nil || len(e.Errors) != 1 {
				t.Fatalf("got %d %s, want one error", status, body)
			}
			if status != tc.status || e.Errors[0].Extensions.Code != tc.code || !strings.Contains(e.Errors[0].Message, tc.says) {
				t.Errorf("got %d %s %q, want %d %s saying %q", status, e.Errors[0].Extensions.Code, e.Errors[0].Message, tc.status, tc.code, tc.says)
			}
		})
	}
	if status, _, _ := apiRequest(t, http.MethodGet, import_, alice, nil); status != http.StatusMethodNotAllowed {
		t.Errorf("GET /api/import: got %d, want 405", status)
	}
	if n := conversationCount(t, srv, alice); n != 0 {
		t.Errorf("after refused imports alice has %d conversations, want 0", n)
	}
}

// TestImportAPIWriteRate: an import takes from its owner's write rate, refused over it
// with 429 and Retry-After.
func TestImportAPIWriteRate(t *testing.T) {
	t.Parallel()
	srv := importServer(t, 1<<20, server.RateLimits{Writes: 1, WritesBurst: 1})
	alice := hs256(t, "alice", time.Now().Add(time.Hour))
	session := readSession(t)
	url := srv.URL + "/api/import?format=CLAUDE_CODE_JSONL"
	if status, _, body := apiRequest(t, http.MethodPost, url, alice, bytes.NewReader(session)); status != http.StatusOK {
		t.Fatalf("first import: got %d %s", status, body)
	}
	status, h, body := apiRequest(t, http.MethodPost, url, alice, bytes.NewReader(session))
	if status != http.StatusTooManyRequests || h.Get("Retry-After") == "" || !strings.Contains(string(body), "RATE_LIMITED") {
		t.Errorf("second import at once: got %d Retry-After %q %s, want 429 RATE_LIMITED with Retry-After", status, h.Get("Retry-After"), body)
	}
}
