package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/parley-dev/parley/internal/pgtest"
	"github.com/parley-dev/parley/internal/poll"
	"github.com/parley-dev/parley/internal/testserver"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

type decision struct {
	Status, DecidedBy, Reason, DecidedAt string
}

type toolCall struct {
	ID             string `json:"callId"`
	ApprovalStatus string
	Decision       *decision
}

type historyNode struct {
	Typename   string `json:"__typename"`
	Position   int
	CreatedAt  string
	ToolCalls  []toolCall
	ToolCallID string
	Status     string
	Output     json.RawMessage
	DurationMs *int
	ExecutedAt *string
	Error      *struct {
		Message     string
		Recoverable bool
	}
}

func history(t *testing.T, srv *testserver.Wired, conv string) []historyNode {
	t.Helper()
	var out struct {
		Conversation struct {
			Messages struct{ Edges []struct{ Node historyNode } }
		}
	}
	srv.MustDo(t, `query($c: ID!) { conversation(id: $c) { messages(first: 100) { edges { node { __typename
		... on MessageBase { position createdAt }
		... on ToolRequestMessage { toolCalls { callId approvalStatus decision { status decidedBy reason decidedAt } } }
		... on ToolResultMessage { toolCallId status output durationMs executedAt error { message recoverable } } } } } } }`,
		map[string]any{"c": conv}, &out)
	nodes := make([]historyNode, len(out.Conversation.Messages.Edges))
	for i, e := range out.Conversation.Messages.Edges {
		nodes[i] = e.Node
	}
	return nodes
}

func ts(t *testing.T, s string) time.Time {
	t.Helper()
	v, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		t.Fatalf("time %q: %v", s, err)
	}
	return v
}

// The whole approval loop: a request whose calls the policies decide or leave pending,
// people deciding the pending ones, the worker running the approved calls concurrently
// and posting each result with its duration, in that order; denied calls never run.
func TestApprovalLoop(t *testing.T) {
	t.Parallel()
	srv := testserver.NewWired(t, `
tools:
  default: REQUIRE_APPROVAL
  policies:
    now: AUTO_APPROVE
    "rm*": DENY
`)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	t.Cleanup(func() { cancel(); wg.Wait() })
	w := &Worker{URL: srv.URL + "/graphql", Name: "test-worker", Concurrency: 3, Lease: time.Minute,
		Tools: BuiltinTools(), Log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	wg.Add(1)
	go func() { defer wg.Done(); w.Run(ctx) }()

	conv := srv.CreateConversation(t, "loop")
	req := srv.AddMessage(t, conv, map[string]any{"toolRequest": map[string]any{
		"content": "Let me check.",
		"toolCalls": []any{
			map[string]any{"id": "c-echo", "name": "echo", "arguments": map[string]any{"text": "hi"}},
			map[string]any{"id": "c-now", "name": "now", "arguments": map[string]any{}},
			map[string]any{"id": "c-rm", "name": "rm_rf", "arguments": map[string]any{"path": "/"}},
			map[string]any{"id": "c-add", "name": "add", "arguments": map[string]any{"a": 2, "b": 3}},
			map[string]any{"id": "c-bad", "name": "add", "arguments": map[string]any{"a": "two"}},
			map[string]any{"id": "c-wc", "name": "word_count", "arguments": map[string]any{"text": "a b c"}},
		},
	}})

	// The policies decided as the request was stored.
	calls := map[string]toolCall{}
	for _, c := range history(t, srv, conv)[0].ToolCalls {
		calls[c.ID] = c
	}
	for id, want := range map[string]string{"c-echo": "PENDING", "c-now": "APPROVED", "c-rm": "DENIED", "c-add": "PENDING", "c-bad": "PENDING", "c-wc": "PENDING"} {
		c := calls[id]
		if c.ApprovalStatus != want {
			t.Errorf("%s: got %s, want %s", id, c.ApprovalStatus, want)
		}
		if want != "PENDING" && (c.Decision == nil || c.Decision.DecidedBy != "policy" || c.Decision.Reason == "") {
			t.Errorf("%s: got decision %+v, want one by policy with a reason", id, c.Decision)
		}
	}

	// People decide the pending calls; deciding one twice is a conflict.
	decide := func(id, status, by string) {
		srv.MustDo(t, `mutation($m: ID!, $id: String!, $s: ApprovalStatus!, $by: String) {
			setToolCallApproval(messageId: $m, toolCallId: $id, status: $s, reason: "looks safe", decidedBy: $by) { id } }`,
			map[string]any{"m": req.ID, "id": id, "s": status, "by": by}, nil)
	}
	decide("c-echo", "APPROVED", "alice")
	decide("c-add", "APPROVED", "alice")
	decide("c-bad", "APPROVED", "alice")
	decide("c-wc", "DENIED", "bob")
	r := srv.Do(t, `mutation($m: ID!) { setToolCallApproval(messageId: $m, toolCallId: "c-echo", status: DENIED) { id } }`,
		map[string]any{"m": req.ID})
	if got := r.ErrorCode(t); got != "CONFLICT" {
		t.Errorf("deciding twice: got %s, want CONFLICT", got)
	}

	// The worker runs the four approved calls; poll the history until their results are in.
	var nodes []historyNode
	results := map[string]historyNode{}
	poll.Until(t, "results for the 4 decided calls", 30*time.Second, func() error {
		nodes = history(t, srv, conv)
		for _, n := range nodes {
			if n.Typename == "ToolResultMessage" {
				results[n.ToolCallID] = n
			}
		}
		if len(results) < 4 {
			return fmt.Errorf("results for %d: %+v", len(results), results)
		}
		return nil
	})
	request := nodes[0]
	decided := map[string]time.Time{}
	for _, c := range request.ToolCalls {
		if c.Decision != nil {
			decided[c.ID] = ts(t, c.Decision.DecidedAt)
		}
		if c.ID == "c-echo" && (c.Decision.DecidedBy != "alice" || c.Decision.Reason != "looks safe") {
			t.Errorf("c-echo: got decision %+v, want alice's with her reason", c.Decision)
		}
	}
	for id, res := range results {
		switch {
		case res.Position <= request.Position:
			t.Errorf("%s: result at %d, before its request at %d", id, res.Position, request.Position)
		case res.DurationMs == nil || res.ExecutedAt == nil:
			t.Errorf("%s: got no duration or execution time: %+v", id, res)
		case ts(t, *res.ExecutedAt).Before(decided[id]):
			t.Errorf("%s: executed at %s, before its approval at %s", id, *res.ExecutedAt, decided[id])
		case ts(t, res.CreatedAt).Before(ts(t, *res.ExecutedAt).Add(-time.Second)):
			t.Errorf("%s: stored at %s, before it ran at %s", id, res.CreatedAt, *res.ExecutedAt)
		}
	}
	for id, want := range map[string]string{"c-echo": `{"text": "hi"}`, "c-add": `{"sum": 5}`} {
		if res := results[id]; res.Status != "SUCCESS" || !jsonEqual(res.Output, want) {
			t.Errorf("%s: got %s %s, want SUCCESS %s", id, res.Status, res.Output, want)
		}
	}
	if res := results["c-now"]; res.Status != "SUCCESS" {
		t.Errorf("c-now: got %s, want SUCCESS", res.Status)
	}
	if res := results["c-bad"]; res.Status != "ERROR" || res.Error == nil || !res.Error.Recoverable || res.Error.Message == "" {
		t.Errorf("c-bad: got %+v, want a recoverable ERROR with a message", res)
	}
	for _, id := range []string{"c-rm", "c-wc"} {
		if _, ran := results[id]; ran {
			t.Errorf("%s was denied but has a result", id)
		}
	}

	// Nothing is left awaiting a result.
	var awaiting struct {
		ToolCallsAwaitingResult []struct{ ToolCall struct{ ID string } }
	}
	srv.MustDo(t, `query($c: ID) { toolCallsAwaitingResult(conversationId: $c) { toolCall { id } } }`, map[string]any{"c": conv}, &awaiting)
	if len(awaiting.ToolCallsAwaitingResult) != 0 {
		t.Errorf("got %+v still awaiting, want none", awaiting.ToolCallsAwaitingResult)
	}
}

func jsonEqual(a json.RawMessage, b string) bool {
	var x, y any
	return json.Unmarshal(a, &x) == nil && json.Unmarshal([]byte(b), &y) == nil && equal(x, y)
}

func equal(x, y any) bool {
	bx, _ := json.Marshal(x)
	by, _ := json.Marshal(y)
	return string(bx) == string(by)
}

// lockedBuffer is a log destination the test reads while the worker writes.
type lockedBuffer struct {
	mu  sync.Mutex
	buf []byte
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.buf = append(b.buf, p...)
	return len(p), nil
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return string(b.buf)
}

// A call whose claimant died is offered again to a worker already waiting, once the
// claim lapses: the running worker, refused while the claim lasted, runs it without a
// restart.
func TestLapsedClaimIsOfferedAgain(t *testing.T) {
	t.Parallel()
	srv := testserver.NewWired(t, "tools:\n  policies:\n    echo: AUTO_APPROVE\n")
	conv := srv.CreateConversation(t, "lapse")
	req := srv.AddMessage(t, conv, map[string]any{"toolRequest": map[string]any{"toolCalls": []any{
		map[string]any{"id": "c-echo", "name": "echo", "arguments": map[string]any{"text": "again"}},
	}}})
	claim := func(lease int) {
		srv.MustDo(t, `mutation($m: ID!, $l: Int) { claimToolCall(messageId: $m, toolCallId: "c-echo", worker: "dead-worker", leaseSeconds: $l) { claimedBy } }`,
			map[string]any{"m": req.ID, "l": lease}, nil)
	}
	claim(3600) // a worker claims the call, and dies

	logs := &lockedBuffer{}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	t.Cleanup(func() { cancel(); wg.Wait() })
	w := &Worker{URL: srv.URL + "/graphql", Name: "live-worker", Concurrency: 1, Lease: time.Minute,
		Tools: BuiltinTools(), Log: slog.New(slog.NewTextHandler(logs, nil))}
	wg.Add(1)
	go func() { defer wg.Done(); w.Run(ctx) }()

	// The waiting worker is offered the call, and refused while the claim lasts.
	poll.Until(t, "the worker to be refused the claimed call", 30*time.Second, func() error {
		if !strings.Contains(logs.String(), "not claimed; leaving it") {
			return fmt.Errorf("its log:\n%s", logs.String())
		}
		return nil
	})
	// The dead worker's last renewal lapses in a second: nothing is written then.
	claim(1)

	var result *historyNode
	poll.Until(t, "the waiting worker to take up the lapsed claim", 30*time.Second, func() error {
		for _, n := range history(t, srv, conv) {
			if n.Typename == "ToolResultMessage" && n.ToolCallID == "c-echo" {
				result = &n
			}
		}
		if result == nil {
			return fmt.Errorf("its log:\n%s", logs.String())
		}
		return nil
	})
	if result.Status != "SUCCESS" || !jsonEqual(result.Output, `{"text": "again"}`) {
		t.Errorf("got %s %s, want SUCCESS {\"text\": \"again\"}", result.Status, result.Output)
	}
	if n := strings.Count(logs.String(), "not claimed; leaving it"); n != 1 {
		t.Errorf("the worker was refused %d times, want once (offered again only when the claim lapsed); its log:\n%s", n, logs.String())
	}
}
