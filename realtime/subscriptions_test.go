package realtime_test

import (
	"testing"

	"github.com/parley-dev/parley"
	"github.com/parley-dev/parley/internal/testserver"
	"github.com/parley-dev/parley/realtime"
)

// A subscriber on one replica, writers on another: replay from a cursor, then live
// messages from 20 concurrent writers, gives every position after the cursor exactly
// once and in order, over both websocket protocols and SSE. A small page size makes the
// replay take several reads, racing the writers.
func TestReplayThenLiveAcrossReplicas(t *testing.T) {
	t.Parallel()
	a := newReplica(t, "", replicaOptions{hub: realtime.Config{PageSize: 7}})
	b := newReplica(t, a.DSN, replicaOptions{})
	conv := b.CreateConversation(t, "replay")
	const stored, from, writers, live = 40, 12, 20, 200
	var cursor string
	for i := 1; i <= stored; i++ {
		m := b.AddMessage(t, conv, testserver.Text("USER", "stored"))
		if m.Position == from {
			cursor = m.Cursor
		}
	}

	ws := dial(t, a.URL, transportWS)
	legacy := dial(t, a.URL, legacyWS)
	vars := map[string]any{"c": conv, "a": cursor}
	subs := map[string]*sub{
		transportWS: ws.subscribe(t, addedQuery(true), vars),
		legacyWS:    legacy.subscribe(t, addedQuery(true), vars),
		"sse":       subscribeSSE(t, a.URL, addedQuery(true), vars).sub,
	}
	// And one from the very start: every position, 1..N.
	all := ws.subscribe(t, addedQuery(true), map[string]any{"c": conv, "a": parley.MessageCursor(0)})
	writeConcurrently(t, b.URL, conv, writers, live)

	total := stored + live
	checkSequence(t, "from the start", positions(all.waitCount(t, total)), 1, total)
	for name, s := range subs {
		events := s.waitCount(t, total-from)
		var got []int
		for _, e := range events {
			got = append(got, e.Node.Position)
			if want := parley.MessageCursor(e.Node.Position); e.Cursor != want {
				t.Errorf("%s: position %d has cursor %q, want %q", name, e.Node.Position, e.Cursor, want)
			}
		}
		checkSequence(t, name, got, from+1, total)
	}
}

// Without after, a subscription gets only the messages added after it started.
func TestWithoutAfterOnlyNewMessages(t *testing.T) {
	t.Parallel()
	a := newReplica(t, "", replicaOptions{})
	b := newReplica(t, a.DSN, replicaOptions{})
	conv := b.CreateConversation(t, "new only")
	for range 5 {
		b.AddMessage(t, conv, testserver.Text("USER", "before"))
	}
	c := dial(t, a.URL, transportWS)
	s := c.subscribe(t, addedQuery(false), map[string]any{"c": conv})
	// The subscription is registered once the server counts it; a message added before
	// that may or may not be delivered, so wait.
	pollUntil(t, "the subscription to register", func() bool { return a.Hub.Stats().Subscribers == 1 })
	for range 3 {
		b.AddMessage(t, conv, testserver.Text("USER", "after"))
	}
	checkSequence(t, "without after", positions(s.waitCount(t, 3)), 6, 8)
}

func positions(events []event) []int {
	out := make([]int, len(events))
	for i, e := range events {
		out[i] = e.Node.Position
	}
	return out
}

// Subscribers of one event share its encoded result only with operations alike: the
// same document and variables get the same event, another selection or another
// conversation gets its own, over both protocols.
func TestSharedResultsKeepEachOperationsOwn(t *testing.T) {
	t.Parallel()
	a := newReplica(t, "", replicaOptions{})
	conv := a.CreateConversation(t, "shared")
	other := a.CreateConversation(t, "other")
	const narrow = `subscription($c: ID!) { messageAdded(conversationId: $c) { cursor node { ... on MessageBase { position } } } }`
	ws, legacy := dial(t, a.URL, transportWS), dial(t, a.URL, legacyWS)
	subs := map[string]*sub{
		"same 1":             ws.subscribe(t, addedQuery(false), map[string]any{"c": conv}),
		"same 2":             ws.subscribe(t, addedQuery(false), map[string]any{"c": conv}),
		"same, legacy":       legacy.subscribe(t, addedQuery(false), map[string]any{"c": conv}),
		"narrow selection":   ws.subscribe(t, narrow, map[string]any{"c": conv}),
		"other conversation": ws.subscribe(t, addedQuery(false), map[string]any{"c": other}),
	}
	pollUntil(t, "the subscriptions to register", func() bool { return a.Hub.Stats().Subscribers == len(subs) })
	const n = 5
	var ids []string
	for range n {
		ids = append(ids, a.AddMessage(t, conv, testserver.Text("USER", "to all")).ID)
	}
	otherID := a.AddMessage(t, other, testserver.Text("USER", "elsewhere")).ID
	for name, s := range subs {
		want := n
		if name == "other conversation" {
			want = 1
		}
		events := s.waitCount(t, want)
		if len(events) != want {
			t.Errorf("%s: got %d events, want %d", name, len(events), want)
			continue
		}
		for i, e := range events {
			wantID, wantPos := "", i+1
			switch name {
			case "narrow selection": // no id selected
			case "other conversation":
				wantID = otherID
			default:
				wantID = ids[i]
			}
			if e.Node.ID != wantID || e.Node.Position != wantPos || e.Cursor != parley.MessageCursor(wantPos) ||
				(name == "narrow selection") != (e.Node.Typename == "") {
				t.Errorf("%s: event %d is %+v, want id %q at position %d", name, i, e, wantID, wantPos)
			}
		}
	}
}
