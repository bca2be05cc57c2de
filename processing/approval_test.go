package processing_test

import (
	"fmt"
	"sync"
	"testing"

	"github.com/parley-dev/parley/internal/poll"
)

type awaitingNode struct {
	ConversationID string
	Message        struct{ ID string }
	ToolCall       struct {
		ID, Name, ApprovalStatus string
		Decision                 *struct{ DecidedBy string }
	}
	ClaimedBy *string
}

const awaitingQuery = `query($c: ID, $n: [String!], $u: Boolean) { toolCallsAwaitingResult(conversationId: $c, names: $n, unclaimed: $u) {
	conversationId message { id } toolCall { id: callId name approvalStatus decision { decidedBy } } claimedBy } }`

const claimMutation = `mutation($m: ID!, $id: String!, $w: String!) { claimToolCall(messageId: $m, toolCallId: $id, worker: $w, leaseSeconds: 60) {
	toolCall { id: callId } claimedBy claimExpiresAt } }`

func (e *env) awaiting(t *testing.T, vars map[string]any) []awaitingNode {
	t.Helper()
	var out struct{ ToolCallsAwaitingResult []awaitingNode }
	e.MustDo(t, awaitingQuery, vars, &out)
	return out.ToolCallsAwaitingResult
}

func ids(nodes []awaitingNode) []string {
	out := make([]string, len(nodes))
	for i, n := range nodes {
		out[i] = n.ToolCall.ID
	}
	return out
}

func toolRequest(calls ...map[string]any) map[string]any {
	list := make([]any, len(calls))
	for i, c := range calls {
		list[i] = c
	}
	return map[string]any{"toolRequest": map[string]any{"toolCalls": list}}
}

func call(id, name string) map[string]any {
	return map[string]any{"id": id, "name": name, "arguments": map[string]any{}}
}

func TestAwaitingAndClaims(t *testing.T) {
	t.Parallel()
	e := start(t, "tools:\n  policies:\n    ls: AUTO_APPROVE\n    \"git_*\": AUTO_APPROVE\n    rm: DENY\n")
	conv := e.CreateConversation(t, "work")
	other := e.CreateConversation(t, "other")
	req := e.AddMessage(t, conv, toolRequest(call("a", "ls"), call("b", "git_status"), call("c", "rm"), call("d", "edit"))).ID
	e.AddMessage(t, other, toolRequest(call("z", "ls")))

	got := ids(e.awaiting(t, map[string]any{"c": conv}))
	if len(got) != 2 || got[0] != "a" || got[1] != "b" {
		t.Fatalf("awaiting in conv: got %v, want [a b] (auto-approved; c denied, d pending)", got)
	}
	if got := ids(e.awaiting(t, map[string]any{"n": []string{"ls"}})); len(got) != 2 {
		t.Errorf("awaiting ls everywhere: got %v, want a and z", got)
	}
	if got := ids(e.awaiting(t, map[string]any{"c": conv, "n": []string{"git_status"}})); len(got) != 1 || got[0] != "b" {
		t.Errorf("awaiting git_status: got %v, want [b]", got)
	}

	// Approving d by hand puts it in the queue, with who decided.
	e.MustDo(t, `mutation($m: ID!) { setToolCallApproval(messageId: $m, toolCallId: "d", status: APPROVED, decidedBy: "carol") { id } }`,
		map[string]any{"m": req}, nil)
	nodes := e.awaiting(t, map[string]any{"c": conv})
	if len(nodes) != 3 || nodes[2].ToolCall.ID != "d" || nodes[2].ToolCall.Decision.DecidedBy != "carol" {
		t.Fatalf("after approving d: got %+v, want a, b, d (d by carol)", nodes)
	}

	// Claims keep other workers off a call; the same worker may renew.
	e.MustDo(t, claimMutation, map[string]any{"m": req, "id": "a", "w": "w1"}, nil)
	e.MustDo(t, claimMutation, map[string]any{"m": req, "id": "a", "w": "w1"}, nil)
	tests := []struct {
		name, id, worker, want string
	}{
		{"claimed by another", "a", "w2", "CONFLICT"},
		{"denied", "c", "w2", "CONFLICT"},
		{"no such call", "nope", "w2", "NOT_FOUND"},
		{"no worker name", "b", "", "BAD_USER_INPUT"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := e.Do(t, claimMutation, map[string]any{"m": req, "id": tt.id, "w": tt.worker})
			if got := r.ErrorCode(t); got != tt.want {
				t.Errorf("got %s, want %s", got, tt.want)
			}
		})
	}
	if got := ids(e.awaiting(t, map[string]any{"c": conv, "u": true})); len(got) != 2 || got[0] != "b" {
		t.Errorf("unclaimed: got %v, want [b d]", got)
	}
	// A lapsed lease frees the call.
	if _, err := e.Store.SQL().Exec(`UPDATE tool_calls SET claim_expires_at = now() - interval '1 second' WHERE call_id = 'a'`); err != nil {
		t.Fatal(err)
	}
	e.MustDo(t, claimMutation, map[string]any{"m": req, "id": "a", "w": "w2"}, nil)

	// A result takes the call out of the queue; claiming it then is a conflict.
	e.AddMessage(t, conv, map[string]any{"toolResult": map[string]any{"toolCallId": "a", "status": "SUCCESS", "output": map[string]any{"ok": true}, "worker": "w2"}})
	if got := ids(e.awaiting(t, map[string]any{"c": conv})); len(got) != 2 || got[0] != "b" {
		t.Errorf("after a's result: got %v, want [b d]", got)
	}
	if got := e.Do(t, claimMutation, map[string]any{"m": req, "id": "a", "w": "w2"}).ErrorCode(t); got != "CONFLICT" {
		t.Errorf("claiming an answered call: got %s, want CONFLICT", got)
	}
}

// The subscription replays what awaits, then delivers each call as it is approved by a
// person or by a policy, once.
func TestAwaitingSubscription(t *testing.T) {
	t.Parallel()
	e := start(t, "tools:\n  policies:\n    ls: AUTO_APPROVE\n")
	conv := e.CreateConversation(t, "sub")
	req := e.AddMessage(t, conv, toolRequest(call("first", "ls"), call("later", "edit"))).ID

	sub := e.subscribe(t, `subscription($c: ID) { toolCallAwaitingResult(conversationId: $c) { toolCall { id: callId name } } }`,
		map[string]any{"c": conv})
	defer sub.close()
	type event struct {
		ToolCallAwaitingResult struct{ ToolCall struct{ ID, Name string } }
	}
	var ev event
	sub.next(&ev)
	if ev.ToolCallAwaitingResult.ToolCall.ID != "first" {
		t.Fatalf("replay: got %+v, want first", ev)
	}
	e.MustDo(t, `mutation($m: ID!) { setToolCallApproval(messageId: $m, toolCallId: "later", status: APPROVED) { id } }`,
		map[string]any{"m": req}, nil)
	sub.next(&ev)
	if ev.ToolCallAwaitingResult.ToolCall.ID != "later" {
		t.Fatalf("after approval: got %+v, want later", ev)
	}
	e.AddMessage(t, conv, toolRequest(call("auto", "ls")))
	sub.next(&ev)
	if ev.ToolCallAwaitingResult.ToolCall.ID != "auto" {
		t.Fatalf("after an auto-approved request: got %+v, want auto", ev)
	}
	select {
	case raw := <-sub.events:
		t.Errorf("got an extra event %s, want each call once", raw)
	default:
	}

	// Closing the subscription releases it: its goroutine ends and unregisters.
	if n := e.Hub.Stats().Watchers; n != 1 {
		t.Errorf("got %d subscribers while subscribed, want 1", n)
	}
	sub.close()
	poll.Until(t, "no subscriber after closing", wait, func() error {
		if n := e.Hub.Stats().Watchers; n != 0 {
			return fmt.Errorf("%d subscribers", n)
		}
		return nil
	})
}

// Deciding calls and adding results for other calls of the same request at the same
// time must not deadlock: every writer takes the conversation's lock before tool_calls.
func TestDecisionsAndResultsConcurrently(t *testing.T) {
	t.Parallel()
	e := start(t, "{}")
	conv := e.CreateConversation(t, "concurrent")
	const n = 16
	calls := make([]map[string]any, n)
	for i := range calls {
		calls[i] = call(fmt.Sprintf("c%d", i), "edit")
	}
	req := e.AddMessage(t, conv, toolRequest(calls...)).ID
	approve := `mutation($m: ID!, $id: String!) { setToolCallApproval(messageId: $m, toolCallId: $id, status: APPROVED) { id } }`
	for i := 0; i < n; i += 2 {
		e.MustDo(t, approve, map[string]any{"m": req, "id": fmt.Sprintf("c%d", i)}, nil)
	}
	var wg sync.WaitGroup
	for i := 0; i < n; i += 2 {
		wg.Add(2)
		go func() {
			defer wg.Done()
			e.MustDo(t, approve, map[string]any{"m": req, "id": fmt.Sprintf("c%d", i+1)}, nil)
		}()
		go func() {
			defer wg.Done()
			e.AddMessage(t, conv, map[string]any{"toolResult": map[string]any{"toolCallId": fmt.Sprintf("c%d", i), "status": "SUCCESS"}})
		}()
	}
	wg.Wait()
	if got := ids(e.awaiting(t, map[string]any{"c": conv})); len(got) != n/2 {
		t.Errorf("got %d awaiting, want the %d odd calls", len(got), n/2)
	}
}
