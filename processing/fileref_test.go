package processing_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

const resolveMutation = `mutation($m: ID!, $a: AgentRole) { resolveFileReference(messageId: $m, agent: $a) {
	id path startLine endLine updatedAt
	resolution { status content truncated originalSize error { message retryable } resolvedAt } } }`

type resolution struct {
	Status       string
	Content      *string
	Truncated    bool
	OriginalSize *int
	Error        *struct {
		Message   string
		Retryable bool
	}
	ResolvedAt string
}

type fileRefNode struct {
	ID, Path   string
	StartLine  *int
	EndLine    *int
	UpdatedAt  string
	Resolution *resolution
}

// fileRef adds a file reference and returns its id.
func (e *env) fileRef(t *testing.T, conv, path string, start, end any) string {
	t.Helper()
	in := map[string]any{"path": path}
	if start != nil {
		in["startLine"] = start
	}
	if end != nil {
		in["endLine"] = end
	}
	return e.AddMessage(t, conv, map[string]any{"fileReference": in}).ID
}

func TestResolveFileReference(t *testing.T) {
	t.Parallel()
	ws := t.TempDir()
	outside := t.TempDir()
	if err := os.WriteFile(filepath.Join(ws, "notes.txt"), []byte("alpha\nbeta\ngamma\ndelta\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(outside, "secret.txt"), []byte("secret\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(outside, "secret.txt"), filepath.Join(ws, "link.txt")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ws, "big.txt"), []byte(strings.Repeat("0123456789\n", 20)), 0o644); err != nil {
		t.Fatal(err)
	}
	e := start(t, fmt.Sprintf(`
workspace: {root: %q, max_file_bytes: 100}
agents:
  PLANNER: [read_files]
  REVIEWER: []
`, ws))
	conv := e.CreateConversation(t, "files")

	tests := []struct {
		name          string
		path          string
		start, end    any
		agent         any
		wantStatus    string
		wantContent   string
		wantError     string
		wantTruncated bool
	}{
		{name: "whole file", path: "notes.txt", agent: "PLANNER", wantStatus: "COMPLETED", wantContent: "alpha\nbeta\ngamma\ndelta\n"},
		{name: "range", path: "notes.txt", start: 2, end: 3, wantStatus: "COMPLETED", wantContent: "2 | beta\n3 | gamma\n"},
		{name: "absolute path", path: filepath.Join(ws, "notes.txt"), end: 1, wantStatus: "COMPLETED", wantContent: "1 | alpha\n"},
		{name: "range past end", path: "notes.txt", start: 7, end: 9, wantStatus: "FAILED", wantError: "has 4 lines"},
		{name: "missing", path: "nope.txt", wantStatus: "FAILED", wantError: "no such file"},
		{name: "symlink out", path: "link.txt", wantStatus: "FAILED", wantError: "outside the workspace"},
		{name: "absolute outside", path: filepath.Join(outside, "secret.txt"), wantStatus: "FAILED", wantError: "outside the workspace root"},
		{name: "oversized", path: "big.txt", wantStatus: "COMPLETED", wantContent: strings.Repeat("0123456789\n", 9), wantTruncated: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			id := e.fileRef(t, conv, tt.path, tt.start, tt.end)
			var out struct{ ResolveFileReference fileRefNode }
			e.MustDo(t, resolveMutation, map[string]any{"m": id, "a": tt.agent}, &out)
			r := out.ResolveFileReference.Resolution
			if r == nil || r.Status != tt.wantStatus {
				t.Fatalf("got resolution %+v, want status %s", r, tt.wantStatus)
			}
			if r.ResolvedAt == "" {
				t.Errorf("got no resolvedAt")
			}
			if tt.wantError != "" {
				if r.Error == nil || !strings.Contains(r.Error.Message, tt.wantError) || r.Error.Retryable {
					t.Errorf("got error %+v, want a non-retryable one containing %q", r.Error, tt.wantError)
				}
				if r.Content != nil && strings.Contains(*r.Content, "secret") {
					t.Errorf("content leaked: %q", *r.Content)
				}
				return
			}
			if r.Content == nil || *r.Content != tt.wantContent || r.Truncated != tt.wantTruncated {
				t.Errorf("got content %q truncated %v, want %q truncated %v", deref(r.Content), r.Truncated, tt.wantContent, tt.wantTruncated)
			}
			// The outcome is stored: reading the message again gives the same.
			var again struct{ Message fileRefNode }
			e.MustDo(t, `query($m: ID!) { message(id: $m) { ... on FileReferenceMessage { id resolution { status content } } } }`,
				map[string]any{"m": id}, &again)
			if again.Message.Resolution == nil || deref(again.Message.Resolution.Content) != tt.wantContent {
				t.Errorf("stored resolution: got %+v, want the content", again.Message.Resolution)
			}
		})
	}
}

func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}

func TestResolveFileReferenceRefusals(t *testing.T) {
	t.Parallel()
	ws := t.TempDir()
	if err := os.WriteFile(filepath.Join(ws, "a.txt"), []byte("a\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	e := start(t, fmt.Sprintf("workspace: {root: %q}\nagents: {PLANNER: [read_files], REVIEWER: []}\n", ws))
	conv := e.CreateConversation(t, "refusals")
	ref := e.fileRef(t, conv, "a.txt", nil, nil)
	text := e.AddMessage(t, conv, map[string]any{"text": map[string]any{"role": "USER", "content": "hi"}}).ID

	tests := []struct {
		name, id string
		agent    any
		want     string
	}{
		{"no read permission", ref, "REVIEWER", "FORBIDDEN"},
		{"role with no entry", ref, "EXECUTOR", "FORBIDDEN"},
		{"not a file reference", text, nil, "BAD_USER_INPUT"},
		{"no such message", "msg_00000000-0000-0000-0000-000000000000", nil, "NOT_FOUND"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := e.Do(t, resolveMutation, map[string]any{"m": tt.id, "a": tt.agent})
			if got := r.ErrorCode(t); got != tt.want {
				t.Errorf("got %s, want %s", got, tt.want)
			}
		})
	}
	// Nothing was read for the refused agents.
	var out struct{ Message fileRefNode }
	e.MustDo(t, `query($m: ID!) { message(id: $m) { ... on FileReferenceMessage { resolution { status } } } }`, map[string]any{"m": ref}, &out)
	if out.Message.Resolution != nil {
		t.Errorf("got resolution %+v after refusals, want none", out.Message.Resolution)
	}
}

func TestResolveWithoutWorkspaceRoot(t *testing.T) {
	t.Parallel()
	e := start(t, "{}")
	conv := e.CreateConversation(t, "no root")
	id := e.fileRef(t, conv, "a.txt", nil, nil)
	var out struct{ ResolveFileReference fileRefNode }
	e.MustDo(t, resolveMutation, map[string]any{"m": id}, &out)
	r := out.ResolveFileReference.Resolution
	if r == nil || r.Status != "FAILED" || r.Error == nil || !strings.Contains(r.Error.Message, "no workspace root is configured") {
		t.Errorf("got %+v, want a failure saying no workspace root is configured", r)
	}
}

// A resolution is streamed by messageUpdated, and a retry replaces a failure.
func TestResolutionIsStreamedAndRetryable(t *testing.T) {
	t.Parallel()
	ws := t.TempDir()
	e := start(t, fmt.Sprintf("workspace: {root: %q}\n", ws))
	conv := e.CreateConversation(t, "stream")
	id := e.fileRef(t, conv, "later.txt", nil, nil)
	sub := e.subscribe(t, `subscription($c: ID!) { messageUpdated(conversationId: $c) { node {
		... on FileReferenceMessage { id resolution { status content error { message } } } } } }`, map[string]any{"c": conv})
	defer sub.close()

	type event struct {
		MessageUpdated struct{ Node fileRefNode }
	}
	// The subscription is registered once the server has run its resolver, which the
	// response headers do not wait for: resolve until an update arrives.
	var ev event
	deadline := time.Now().Add(wait)
	for got := false; !got; {
		if time.Now().After(deadline) {
			t.Fatal("no messageUpdated event for the resolution")
		}
		e.MustDo(t, resolveMutation, map[string]any{"m": id}, nil)
		select {
		case raw, ok := <-sub.events:
			if !ok {
				t.Fatal("subscription ended")
			}
			sub.decode(raw, &ev)
			got = true
		case <-time.After(500 * time.Millisecond):
		}
	}
	if n := ev.MessageUpdated.Node; n.ID != id || n.Resolution == nil || n.Resolution.Status != "FAILED" {
		t.Fatalf("got %+v, want the failed resolution of %s", n, id)
	}

	// The file appears; resolving again replaces the failure, and that is streamed too.
	if err := os.WriteFile(filepath.Join(ws, "later.txt"), []byte("here now\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	e.MustDo(t, resolveMutation, map[string]any{"m": id}, nil)
	for {
		sub.next(&ev)
		if r := ev.MessageUpdated.Node.Resolution; r != nil && r.Status == "COMPLETED" {
			if deref(r.Content) != "here now\n" {
				t.Errorf("got content %q, want the file's", deref(r.Content))
			}
			break
		}
	}
}
