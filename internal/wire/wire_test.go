package wire_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/parley-dev/parley"
	"github.com/parley-dev/parley/config"
	"github.com/parley-dev/parley/internal/pgtest"
	"github.com/parley-dev/parley/internal/wire"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// New wires the listener to the hub: a commit wakes a watcher of every conversation of
// its owner.
func TestNewWiresTheListenerToTheHub(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := wire.New(ctx, wire.Config{DSN: pgtest.NewDatabase(t), Config: config.Default()})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	wake, release, err := s.Hub.Watch(parley.WithOwner(ctx, parley.LocalOwner), "")
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	hs := httptest.NewServer(s.Handler)
	defer hs.Close()
	var created struct {
		Data struct {
			CreateConversation struct{ ID string }
		}
	}
	post(t, hs.URL, `{"query":"mutation { createConversation(title: \"w\") { id } }"}`, &created)
	select { // creating a conversation wakes no one: drain in case it does
	case <-wake:
	default:
	}
	post(t, hs.URL, `{"query":"mutation($c: ID!) { addMessage(conversationId: $c, input: {text: {role: USER, content: \"hi\"}}) { cursor } }",`+
		`"variables":{"c":"`+created.Data.CreateConversation.ID+`"}}`, nil)
	select {
	case <-wake:
	case <-ctx.Done():
		t.Fatal("no wake-up from the listener after a commit")
	}
}

// A configuration New cannot build from is refused, naming what is wrong, and what was
// opened is closed again.
func TestNewRefusesBadAuth(t *testing.T) {
	t.Parallel()
	cfg := config.Default()
	cfg.Auth.JWKSFile = filepath.Join(t.TempDir(), "missing.json")
	_, err := wire.New(context.Background(), wire.Config{DSN: pgtest.NewDatabase(t), Config: cfg})
	if err == nil || !strings.Contains(err.Error(), "missing.json") {
		t.Errorf("got %v, want an error naming the JWKS file", err)
	}
}

// post sends a GraphQL request and decodes its response into v.
func post(t *testing.T, url, body string, v any) {
	t.Helper()
	resp, err := http.Post(url+"/graphql", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK || strings.Contains(string(raw), `"errors"`) {
		t.Fatalf("got status %d: %s", resp.StatusCode, raw)
	}
	if v != nil {
		if err := json.Unmarshal(raw, v); err != nil {
			t.Fatal(err)
		}
	}
}
