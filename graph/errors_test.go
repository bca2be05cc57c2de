package graph

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/gqlerror"

	"github.com/parley-dev/parley"
	"github.com/parley-dev/parley/graph/transport"
)

// TestErrorPresenter: what each kind of error looks like to a client. Errors from
// resolvers reach the presenter wrapped by gqlgen (graphql.ErrorOnPath); only domain
// errors and gqlgen's own verdicts on the request may show their text.
func TestErrorPresenter(t *testing.T) {
	t.Parallel()
	path := ast.Path{ast.PathName("addMessage")}
	onPath := func(err error) error { return gqlerror.WrapPath(path, err) }
	tests := []struct {
		name      string
		err       error
		code      string
		message   string // "" for: the error's own text
		retryable bool
		logged    bool
	}{
		{"driver error from a resolver", onPath(errors.New(`pq: relation "secret_table" does not exist`)),
			"INTERNAL_SERVER_ERROR", "Internal server error.", false, true},
		{"wrapped driver error", onPath(fmt.Errorf("add message: %w", errors.New("pq: boom"))),
			"INTERNAL_SERVER_ERROR", "Internal server error.", false, true},
		{"domain error", onPath(fmt.Errorf("x: %w", parley.Errorf(parley.EINVALID, "title: too long"))),
			"BAD_USER_INPUT", "title: too long", false, false},
		{"unavailable", onPath(&parley.Error{Code: parley.EUNAVAILABLE, Message: "down"}),
			"SERVICE_UNAVAILABLE", "down", true, false},
		{"internal domain error", onPath(parley.Errorf(parley.EINTERNAL, "secret detail")),
			"INTERNAL_SERVER_ERROR", "Internal server error.", false, true},
		{"cancelled", onPath(fmt.Errorf("%w (pq: canceling statement due to user request)", context.Canceled)),
			"REQUEST_CANCELLED", "The request was cancelled or timed out.", false, false},
		{"gqlgen's validation error", gqlerror.Errorf("Cannot query field \"nope\" on type \"Query\"."),
			"BAD_USER_INPUT", "", false, false},
		{"gqlgen's error on a path", gqlerror.ErrorPathf(path, "must be defined"), "BAD_USER_INPUT", "", false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var logs bytes.Buffer
			present := errorPresenter(slog.New(slog.NewJSONHandler(&logs, nil)))
			ctx := transport.WithRequestID(context.Background(), "req-123")
			got := present(ctx, tt.err)
			want := tt.message
			if want == "" {
				want = tt.err.Error()
				if g, ok := tt.err.(*gqlerror.Error); ok {
					want = g.Message
				}
			}
			if got.Message != want {
				t.Errorf("message: got %q, want %q", got.Message, want)
			}
			if got.Extensions["code"] != tt.code {
				t.Errorf("code: got %v, want %s", got.Extensions["code"], tt.code)
			}
			if got.Extensions["requestId"] != "req-123" {
				t.Errorf("requestId: got %v, want req-123", got.Extensions["requestId"])
			}
			if r, _ := got.Extensions["retryable"].(bool); r != tt.retryable {
				t.Errorf("retryable: got %v, want %v", r, tt.retryable)
			}
			if logged := strings.Contains(logs.String(), `"requestId":"req-123"`); logged != tt.logged {
				t.Errorf("logged with the request id: got %v, want %v (%s)", logged, tt.logged, logs.String())
			}
		})
	}
}
