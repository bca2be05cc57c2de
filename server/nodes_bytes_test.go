package server_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/parley-dev/parley/internal/testserver"
)

// nodes(ids:) spends the response's --max-page-bytes: messages holding more together
// are refused with NODES_TOO_LARGE before any is read, one id never is, and ids whose
// messages fit are returned.
func TestNodesBytesBounded(t *testing.T) {
	t.Parallel()
	const budget = 1 << 20
	srv := testserver.NewWired(t, fmt.Sprintf("limits:\n  max_page_bytes: %d\n", budget))
	conv := srv.CreateConversation(t, "nodes")
	var big, small []string
	for i := range 3 {
		big = append(big, srv.AddMessage(t, conv, testserver.Text("USER", fmt.Sprintf("%d:%s", i, strings.Repeat("x", 400<<10)))).ID)
		small = append(small, srv.AddMessage(t, conv, testserver.Text("USER", fmt.Sprintf("%d:small", i))).ID)
	}
	const query = `query($ids: [ID!]!) { nodes(ids: $ids) { id } }`
	for _, tt := range []struct {
		name string
		ids  []string
		want string // the error code, "" for the nodes
	}{
		{"three large", big, "NODES_TOO_LARGE"},
		{"large and small over the budget", append(append([]string{}, small...), big...), "NODES_TOO_LARGE"},
		{"one large", big[:1], ""},
		{"small ones", small, ""},
		{"small ones and a conversation", append(append([]string{}, small...), conv), ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := srv.Do(t, query, map[string]any{"ids": tt.ids})
			if tt.want != "" {
				if code := r.ErrorCode(t); code != tt.want {
					t.Fatalf("got %s (%s), want %s", code, r.Errors[0].Message, tt.want)
				}
				if msg := r.Errors[0].Message; !strings.Contains(msg, "--max-page-bytes") {
					t.Errorf("message %q does not name --max-page-bytes", msg)
				}
				return
			}
			if len(r.Errors) > 0 {
				t.Fatalf("got errors %+v, want none", r.Errors)
			}
			if got := strings.Count(string(r.Data), `"id"`); got != len(tt.ids) {
				t.Errorf("got %d nodes (%s), want %d", got, r.Data, len(tt.ids))
			}
		})
	}
}
