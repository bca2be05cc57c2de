package server_test

import (
	"encoding/base64"
	"strings"
	"testing"

	"github.com/parley-dev/parley/internal/testserver"
)

// TestCursorOutOfRange: cursors that decode to positions past a Postgres integer
// (2^31 and beyond, up to and past int64) or to times outside years 1 to 9999 are
// refused as BAD_USER_INPUT naming the argument, before they reach the database (they
// surfaced as its error before); the largest valid position still reads.
func TestCursorOutOfRange(t *testing.T) {
	t.Parallel()
	srv := testserver.New(t)
	conv := srv.CreateConversation(t, "cursors")
	srv.AddMessage(t, conv, testserver.Text("USER", "one"))
	cursor := func(s string) string { return base64.RawURLEncoding.EncodeToString([]byte(s)) }
	const messages = `query($c: ID!, $after: String, $before: String) { conversation(id: $c) {
		messages(first: 5, after: $after, before: $before) { edges { cursor } } } }`
	const conversations = `query($after: String) { conversations(first: 5, after: $after) { edges { cursor } } }`
	key := strings.TrimPrefix(conv, "conv_")
	tests := []struct {
		name    string
		query   string
		vars    map[string]any
		message string // part of the error's message
	}{
		{"after 2^31", messages, map[string]any{"c": conv, "after": cursor("m:2147483648")}, "after: cursor"},
		{"before 2^31", messages, map[string]any{"c": conv, "before": cursor("m:2147483648")}, "before: cursor"},
		{"after 2^63-1", messages, map[string]any{"c": conv, "after": cursor("m:9223372036854775807")}, "past the largest position"},
		{"after past int64", messages, map[string]any{"c": conv, "after": cursor("m:99999999999999999999999")}, "past the largest position"},
		{"conversation after year 9999", conversations, map[string]any{"after": cursor("c:9223372036854775807:" + key)}, "not a conversation cursor"},
		{"conversation before year 1", conversations, map[string]any{"after": cursor("c:-9223372036854775808:" + key)}, "not a conversation cursor"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := srv.Do(t, tt.query, tt.vars)
			if code := r.ErrorCode(t); code != "BAD_USER_INPUT" || !strings.Contains(r.Errors[0].Message, tt.message) {
				t.Errorf("got %s %q, want BAD_USER_INPUT saying %q", code, r.Errors[0].Message, tt.message)
			}
		})
	}
	var out struct {
		Conversation struct {
			Messages struct{ Edges []struct{ Cursor string } }
		}
	}
	srv.MustDo(t, messages, map[string]any{"c": conv, "before": cursor("m:2147483647")}, &out)
	if n := len(out.Conversation.Messages.Edges); n != 1 {
		t.Errorf("before the largest position: got %d messages, want 1", n)
	}
}
