package realtime_test

import (
	"encoding/json"
	"testing"

	"github.com/parley-dev/parley/internal/testserver"
)

// addToolRequest adds a tool request with one pending call and returns its id.
func addToolRequest(t *testing.T, srv *replica, conv, callID string) string {
	t.Helper()
	m := srv.AddMessage(t, conv, map[string]any{"toolRequest": map[string]any{
		"toolCalls": []any{map[string]any{"id": callID, "name": "search", "arguments": map[string]any{"q": "x"}}},
	}})
	return m.ID
}

// decide approves or denies a tool call through srv's API.
func decide(t *testing.T, srv *replica, msgID, callID, status string) {
	t.Helper()
	srv.MustDo(t, `mutation($m: ID!, $c: String!, $s: ApprovalStatus!) {
		setToolCallApproval(messageId: $m, toolCallId: $c, status: $s) { id } }`,
		map[string]any{"m": msgID, "c": callID, "s": status}, nil)
}

// Decisions made through one replica reach messageUpdated subscribers on another, each
// message with its calls as decided, in the order of the decisions, once each; added
// messages do not show up as updates, and updates do not show up as added messages.
func TestMessageUpdatedAcrossReplicas(t *testing.T) {
	t.Parallel()
	a := newReplica(t, "", replicaOptions{})
	b := newReplica(t, a.DSN, replicaOptions{})
	conv := b.CreateConversation(t, "updates")
	first := addToolRequest(t, b, conv, "call_1")
	decide(t, b, first, "call_1", "DENIED") // before subscribing: not delivered

	for _, proto := range []string{transportWS, legacyWS, "sse"} {
		t.Run(proto, func(t *testing.T) {
			second := addToolRequest(t, b, conv, "second_"+proto)
			var updated, added *sub
			var end func()
			if proto == "sse" {
				us := subscribeSSE(t, a.URL, updatedQuery, map[string]any{"c": conv})
				as := subscribeSSE(t, a.URL, addedQuery(false), map[string]any{"c": conv})
				updated, added, end = us.sub, as.sub, func() { us.cancel(); as.cancel() }
			} else {
				c := dial(t, a.URL, proto)
				updated = c.subscribe(t, updatedQuery, map[string]any{"c": conv})
				added = c.subscribe(t, addedQuery(false), map[string]any{"c": conv})
				end = func() { c.conn.CloseNow() }
			}
			pollUntil(t, "the subscriptions to start", func() bool { return a.Hub.Stats().Subscribers == 2 })
			third := addToolRequest(t, b, conv, "third_"+proto)
			decide(t, b, second, "second_"+proto, "APPROVED")
			decide(t, b, third, "third_"+proto, "DENIED")
			ev := updated.waitCount(t, 2)
			if ev[0].Node.ID != second || ev[1].Node.ID != third {
				t.Fatalf("updates: got %s then %s, want %s then %s", ev[0].Node.ID, ev[1].Node.ID, second, third)
			}
			if got := ev[0].Node.ToolCalls[0].ApprovalStatus; got != "APPROVED" {
				t.Errorf("second request: call status %s, want APPROVED", got)
			}
			if got := ev[1].Node.ToolCalls[0].ApprovalStatus; got != "DENIED" {
				t.Errorf("third request: call status %s, want DENIED", got)
			}
			if ev[1].Node.Position != ev[0].Node.Position+1 {
				t.Errorf("positions %d, %d: want consecutive", ev[0].Node.Position, ev[1].Node.Position)
			}
			if got := added.waitCount(t, 1); got[0].Node.ID != third {
				t.Errorf("added: got %s, want %s", got[0].Node.ID, third)
			}
			eventsDone(t, "updated", updated, 2)
			eventsDone(t, "added", added, 1)
			end()
			pollUntil(t, "the subscriptions to end", func() bool { return a.Hub.Stats().Subscribers == 0 })
		})
	}
}

// eventsDone checks that a subscription received exactly n events and no error.
func eventsDone(t *testing.T, what string, s *sub, n int) {
	t.Helper()
	if ev, errs, _ := s.snapshot(); len(ev) != n || len(errs) > 0 {
		b, _ := json.Marshal(ev)
		t.Errorf("%s: got %d events (%s), errors %s; want %d", what, len(ev), b, errs, n)
	}
}

// An update to a message the subscriber has not been told about yet is still delivered,
// and a conversation's deletion completes both kinds of subscriptions.
func TestDeletedConversationCompletes(t *testing.T) {
	t.Parallel()
	a := newReplica(t, "", replicaOptions{})
	b := newReplica(t, a.DSN, replicaOptions{})
	conv := b.CreateConversation(t, "doomed")
	b.AddMessage(t, conv, testserver.Text("USER", "hi"))
	c := dial(t, a.URL, transportWS)
	added := c.subscribe(t, addedQuery(false), map[string]any{"c": conv})
	updated := c.subscribe(t, updatedQuery, map[string]any{"c": conv})
	sse := subscribeSSE(t, a.URL, addedQuery(false), map[string]any{"c": conv})
	pollUntil(t, "the subscriptions to register", func() bool { return a.Hub.Stats().Subscribers == 3 })
	b.MustDo(t, `mutation($c: ID!) { deleteConversation(id: $c) }`, map[string]any{"c": conv}, nil)
	for name, s := range map[string]*sub{"added": added, "updated": updated, "sse": sse.sub} {
		if errs, completed := s.waitEnd(t); !completed || len(errs) > 0 {
			t.Errorf("%s: completed %v, errors %s; want completed without errors", name, completed, errs)
		}
	}
	pollUntil(t, "the subscriptions to be released", func() bool { return a.Hub.Stats().Subscribers == 0 })
}
