package server_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/parley-dev/parley"
	"github.com/parley-dev/parley/internal/testserver"
	"github.com/parley-dev/parley/server"
)

// lockedBuffer is a bytes.Buffer the server's handlers may write to concurrently.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

// records returns the JSON log records written so far.
func (l *lockedBuffer) records(t *testing.T) []map[string]any {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []map[string]any
	sc := bufio.NewScanner(bytes.NewReader(l.b.Bytes()))
	for sc.Scan() {
		var r map[string]any
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("log line %q: %v", sc.Text(), err)
		}
		out = append(out, r)
	}
	return out
}

// failingCreate is the conversation service with a CreateConversation that fails as a
// broken dependency would: with an error that is not meant for users.
type failingCreate struct{ parley.ConversationService }

func (failingCreate) CreateConversation(context.Context, string) (*parley.Conversation, error) {
	return nil, errors.New(`pq: relation "conversations_secret" does not exist`)
}

// TestRequestIDInResponsesAndLogs: the request id in an error response is the one in
// the X-Request-Id header and in the log lines of the request (its access log line,
// and for an internal error the line with the real cause, which the client never
// sees). A client's own sane X-Request-Id is kept; an unusable one is replaced.
func TestRequestIDInResponsesAndLogs(t *testing.T) {
	t.Parallel()
	logs := &lockedBuffer{}
	srv := testserver.NewWith(t, testserver.Options{Configure: func(c *server.Config) {
		c.Logger = slog.New(slog.NewJSONHandler(logs, nil))
		c.Conversations = failingCreate{c.Conversations}
	}})
	tests := []struct {
		name, sent, query, code string
		keep                    bool // the id sent is the id used
	}{
		{"internal error, client's id", "client-id-1", `mutation { createConversation(title: "x") { id } }`, "INTERNAL_SERVER_ERROR", true},
		{"not found, generated id", "", `{ conversation(id: "conv_nope") { title } }`, "NOT_FOUND", false},
		{"parse error, unusable id replaced", "bad id with spaces", `{ nope `, "GRAPHQL_PARSE_FAILED", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			body, _ := json.Marshal(map[string]any{"query": tt.query})
			req, _ := http.NewRequest(http.MethodPost, srv.URL+"/graphql", bytes.NewReader(body))
			req.Header.Set("Content-Type", "application/json")
			if tt.sent != "" {
				req.Header.Set("X-Request-Id", tt.sent)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			raw, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			id := resp.Header.Get("X-Request-Id")
			if id == "" || (tt.keep && id != tt.sent) || (!tt.keep && id == tt.sent) {
				t.Fatalf("X-Request-Id: got %q for %q sent", id, tt.sent)
			}
			var out struct{ Errors []testserver.Error }
			if err := json.Unmarshal(raw, &out); err != nil || len(out.Errors) == 0 {
				t.Fatalf("response %s: want errors (%v)", raw, err)
			}
			for _, e := range out.Errors {
				if e.Extensions["requestId"] != id {
					t.Errorf("error %q: requestId %v, want %q", e.Message, e.Extensions["requestId"], id)
				}
			}
			if code := out.Errors[0].Code(); code != tt.code {
				t.Errorf("code: got %s, want %s", code, tt.code)
			}
			if strings.Contains(string(raw), "conversations_secret") || strings.Contains(string(raw), "pq:") {
				t.Errorf("the response shows the internal cause: %s", raw)
			}
			var access, cause bool
			for _, r := range logs.records(t) {
				if r["requestId"] != id {
					continue
				}
				switch r["msg"] {
				case "request":
					access = r["path"] == "/graphql" && r["status"] != nil
				case "internal error":
					cause = strings.Contains(r["err"].(string), "conversations_secret")
				}
			}
			if !access {
				t.Errorf("no access log line with requestId %q", id)
			}
			if want := tt.code == "INTERNAL_SERVER_ERROR"; cause != want {
				t.Errorf("a log line with requestId %q and the internal cause: got %v, want %v", id, cause, want)
			}
		})
	}
}
