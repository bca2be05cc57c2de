package realtime_test

import (
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/parley-dev/parley"
	"github.com/parley-dev/parley/internal/testserver"
)

// addOn adds a text message as a child of parent ("": on the active branch) through
// baseURL's API and returns its id.
func addOn(baseURL, conv, text, parent, sibling string) (string, error) {
	vars := map[string]any{"c": conv, "i": testserver.Text("USER", text)}
	if parent != "" {
		vars["p"] = parent
	}
	if sibling != "" {
		vars["s"] = sibling
	}
	data, err := post(baseURL, `mutation($c: ID!, $i: MessageInput!, $p: ID, $s: ID) {
		addMessage(conversationId: $c, input: $i, parentId: $p, siblingOf: $s) { node { ... on MessageBase { id } } } }`, vars)
	if err != nil {
		return "", err
	}
	var out struct {
		AddMessage struct{ Node struct{ ID string } }
	}
	if err := json.Unmarshal(data, &out); err != nil {
		return "", err
	}
	return out.AddMessage.Node.ID, nil
}

func ids(events []event) []string {
	out := make([]string, len(events))
	for i, e := range events {
		out[i] = e.Node.ID
	}
	return out
}

// Subscriptions on one branch see only that branch, its replay included, while writers
// add to two branches at once on another replica.
func TestSubscriptionsFollowOneBranch(t *testing.T) {
	t.Parallel()
	a := newReplica(t, "", replicaOptions{})
	b := newReplica(t, a.DSN, replicaOptions{})
	conv := b.CreateConversation(t, "branches")
	must := func(id string, err error) string {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return id
	}
	m1 := must(addOn(b.URL, conv, "m1", "", ""))
	m2 := must(addOn(b.URL, conv, "m2", "", ""))
	m3 := must(addOn(b.URL, conv, "m3", "", ""))
	m4 := must(addOn(b.URL, conv, "m4", "", ""))
	e3 := must(addOn(b.URL, conv, "m3, edited", "", m3)) // the active branch: m1 m2 e3

	const q = `subscription($c: ID!, $a: String, $b: ID) { messageAdded(conversationId: $c, after: $a, branch: $b) ` + edgeSelection + ` }`
	ws := dial(t, a.URL, transportWS)
	// (Subscribing returns before the server has read the branch: a subscription from
	// now could start after the writers' first messages, so each one starts from a cursor.)
	active := ws.subscribe(t, q, map[string]any{"c": conv, "a": parley.MessageCursor(3)})
	activeAll := ws.subscribe(t, q, map[string]any{"c": conv, "a": parley.MessageCursor(0)})
	first := subscribeSSE(t, a.URL, q, map[string]any{"c": conv, "a": parley.MessageCursor(2), "b": m4}).sub

	const n = 12
	added := make([][]string, 2) // 0: the first branch, by parent; 1: the active branch
	var wg sync.WaitGroup
	errs := make(chan error, 2)
	for w := range added {
		wg.Go(func() {
			parent := ""
			if w == 0 {
				parent = m4
			}
			for i := range n {
				id, err := addOn(b.URL, conv, fmt.Sprintf("writer %d, %d", w, i), parent, "")
				if err != nil {
					errs <- err
					return
				}
				added[w] = append(added[w], id)
				if w == 0 {
					parent = id
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	check := func(name string, s *sub, want []string, from int) {
		t.Helper()
		events := s.waitCount(t, len(want))
		if got := ids(events); !slices.Equal(got, want) {
			t.Errorf("%s: got %v, want %v", name, got, want)
		}
		checkSequence(t, name, positions(events), from, from+len(want)-1)
	}
	check("active branch, after its leaf", active, added[1], 4)
	check("active branch, from the start", activeAll, append([]string{m1, m2, e3}, added[1]...), 1)
	check("first branch, after position 2", first, append([]string{m3, m4}, added[0]...), 3)
	// Nothing else comes: one more message on each branch, and each gets only its own.
	other := must(addOn(b.URL, conv, "last on the first", added[0][n-1], ""))
	mine := must(addOn(b.URL, conv, "last on the active", "", ""))
	if got := ids(active.waitCount(t, n+1)); got[n] != mine || len(got) != n+1 {
		t.Errorf("active branch at the end: got %v, want it to end with %s", got, mine)
	}
	if got := ids(first.waitCount(t, n+3)); got[n+2] != other || len(got) != n+3 {
		t.Errorf("first branch at the end: got %v, want it to end with %s", got, other)
	}
}

// Deleting a message streams its tombstone to messageUpdated subscribers on every
// replica.
func TestDeletionStreamedToSubscribers(t *testing.T) {
	t.Parallel()
	a := newReplica(t, "", replicaOptions{})
	b := newReplica(t, a.DSN, replicaOptions{})
	conv := b.CreateConversation(t, "tombstones")
	m := b.AddMessage(t, conv, testserver.Text("USER", "secret"))
	const q = `subscription($c: ID!) { messageUpdated(conversationId: $c) { node { ... on MessageBase { id position deletedAt } ... on TextMessage { text } } } }`
	other := b.AddMessage(t, conv, testserver.Text("USER", "other"))
	s := dial(t, a.URL, transportWS).subscribe(t, q, map[string]any{"c": conv})
	// The subscription delivers changes from when it is registered: change another
	// message until it does, then delete.
	pollUntil(t, "the subscription to deliver a change", func() bool {
		if _, err := post(b.URL, `mutation($m: ID!) { setMessageHidden(messageId: $m, hidden: true) { __typename } }`, map[string]any{"m": other.ID}); err != nil {
			t.Fatal(err)
		}
		ev, _, _ := s.snapshot()
		return len(ev) > 0
	})
	if _, err := post(b.URL, `mutation($m: ID!) { deleteMessage(messageId: $m) { __typename } }`, map[string]any{"m": m.ID}); err != nil {
		t.Fatal(err)
	}
	var raw string
	pollUntil(t, "the tombstone", func() bool {
		s.mu.Lock()
		defer s.mu.Unlock()
		for i, e := range s.events {
			if e.Node.ID == m.ID {
				raw = string(s.raw[i])
				return true
			}
		}
		return false
	})
	var got struct {
		Node struct {
			ID, Text  string
			Position  int
			DeletedAt *string
		}
	}
	if err := json.Unmarshal([]byte(raw), &got); err != nil {
		t.Fatalf("decode %s: %v", raw, err)
	}
	if n := got.Node; n.ID != m.ID || n.Text != "" || n.DeletedAt == nil || n.Position != 1 {
		t.Errorf("the update: got %+v, want the tombstone of %s at position 1", n, m.ID)
	}
}

// streamOn starts a streaming message as a child of parent, appends two deltas and
// completes it, through baseURL; it returns the message's id. The subscriber s has the
// message before the appends and the appends before it ends, so it gets them as appends
// (a subscriber behind gets them folded into the message).
func streamOn(t *testing.T, baseURL, conv, parent, text string, s *sub) string {
	t.Helper()
	id := startMessage(t, baseURL, conv, parent)
	waitStream(t, s, func(ev streamEvent) bool { return ev.Message != nil && ev.Message.ID == id })
	for i, piece := range []string{text, " and more"} {
		if _, err := post(baseURL, `mutation($m: ID!, $s: Int!, $d: [MessageDeltaInput!]!) { appendMessageDeltas(messageId: $m, seq: $s, deltas: $d) { seq } }`,
			map[string]any{"m": id, "s": i + 1, "d": []map[string]any{{"kind": "TEXT", "index": 0, "text": piece}}}); err != nil {
			t.Fatal(err)
		}
	}
	waitStream(t, s, func(ev streamEvent) bool { return ev.Delta != nil && ev.Delta.MessageID == id && ev.Delta.Seq == 2 })
	if _, err := post(baseURL, `mutation($m: ID!) { completeMessage(messageId: $m) { __typename } }`, map[string]any{"m": id}); err != nil {
		t.Fatal(err)
	}
	return id
}

// messageStream and messageUpdated follow one branch each, as messageAdded does: two
// subscribers of each, one on the active branch and one on another, see the messages,
// the appends and the changes of their own branch only; an append's position is the
// message's depth on its branch, not its store number. Written through another replica
// (the subscribers' read the database after each notification) and through theirs (the
// appends reach them from memory, served without waiting: a streamed message's first
// event waits for a Poll that may wait to look its branch up).
func TestStreamAndUpdatesFollowOneBranch(t *testing.T) {
	t.Parallel()
	for _, writer := range []string{"another replica", "the subscribers' replica"} {
		t.Run(writer, func(t *testing.T) {
			t.Parallel()
			a := newReplica(t, "", replicaOptions{})
			b := a
			if writer == "another replica" {
				b = newReplica(t, a.DSN, replicaOptions{})
			}
			streamAndUpdatesFollowOneBranch(t, a, b)
		})
	}
}

// streamAndUpdatesFollowOneBranch is TestStreamAndUpdatesFollowOneBranch with
// subscribers on a and writes through b.
func streamAndUpdatesFollowOneBranch(t *testing.T, a, b *replica) {
	conv := b.CreateConversation(t, "branches")
	must := func(id string, err error) string {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return id
	}
	m1 := must(addOn(b.URL, conv, "m1", "", ""))
	m2 := must(addOn(b.URL, conv, "m2", "", ""))
	m3 := must(addOn(b.URL, conv, "m3", "", ""))
	e3 := must(addOn(b.URL, conv, "m3, edited", "", m3)) // the active branch: m1 m2 e3

	ws := dial(t, a.URL, transportWS)
	const updated = `subscription($c: ID!, $b: ID) { messageUpdated(conversationId: $c, branch: $b) ` + edgeSelection + ` }`
	const streamed = `subscription($c: ID!, $a: String, $b: ID) { messageStream(conversationId: $c, after: $a, branch: $b) {
		cursor message { ... on MessageBase { id position messageStatus } ... on TextMessage { text } }
		delta { messageId position seq deltas { kind index text } } } }`
	streamActive := ws.subscribe(t, streamed, map[string]any{"c": conv, "a": parley.MessageCursor(0)})
	streamOther := ws.subscribe(t, streamed, map[string]any{"c": conv, "a": parley.MessageCursor(0), "b": m3})
	updActive := ws.subscribe(t, updated, map[string]any{"c": conv})
	updOther := ws.subscribe(t, updated, map[string]any{"c": conv, "b": m3})

	// The update subscriptions deliver changes from when they are registered: change a
	// message both branches share until both have it.
	pollUntil(t, "the update subscriptions to start", func() bool {
		if _, err := post(b.URL, `mutation($m: ID!) { setMessageHidden(messageId: $m, hidden: true) { __typename } }`, map[string]any{"m": m2}); err != nil {
			t.Fatal(err)
		}
		x, _, _ := updActive.snapshot()
		y, _, _ := updOther.snapshot()
		return len(x) > 0 && len(y) > 0
	})

	s1 := streamOn(t, b.URL, conv, e3, "on the active branch", streamActive) // depth 4, store number 5
	s2 := streamOn(t, b.URL, conv, m3, "on the other branch", streamOther)   // depth 4, store number 6
	for _, m := range []string{m3, e3, s1, s2, m1} {
		if _, err := post(b.URL, `mutation($m: ID!) { setMessageHidden(messageId: $m, hidden: true) { __typename } }`, map[string]any{"m": m}); err != nil {
			t.Fatal(err)
		}
	}

	checkStreamed := func(name string, s *sub, want []string, streamedID string) {
		t.Helper()
		t.Cleanup(func() {
			if t.Failed() {
				raw, _, _ := s.snapshot()
				t.Logf("%s: received %d events: %s", name, len(raw), s.raw)
			}
		})
		evs := waitStream(t, s, func(ev streamEvent) bool {
			return ev.Message != nil && ev.Message.ID == streamedID && ev.Message.MessageStatus == "COMPLETED"
		})
		var got []string
		deltas := 0
		for _, ev := range evs {
			switch {
			case ev.Message != nil && ev.Message.MessageStatus != "STREAMING":
				if ev.Message.ID != streamedID || len(got) == 0 || got[len(got)-1] != ev.Message.ID {
					got = append(got, ev.Message.ID)
				}
			case ev.Message != nil:
				got = append(got, ev.Message.ID)
			case ev.Delta != nil:
				deltas++
				if ev.Delta.MessageID != streamedID || ev.Delta.Position != 4 {
					t.Errorf("%s: a delta of %s at position %d, want %s's at its depth 4", name, ev.Delta.MessageID, ev.Delta.Position, streamedID)
				}
			}
		}
		if deltas != 2 {
			t.Errorf("%s: got %d deltas, want 2", name, deltas)
		}
		if !slices.Equal(got, want) {
			t.Errorf("%s: got messages %v, want %v", name, got, want)
		}
	}
	checkStreamed("messageStream, active branch", streamActive, []string{m1, m2, e3, s1}, s1)
	checkStreamed("messageStream, the other branch", streamOther, []string{m1, m2, m3, s2}, s2)

	checkUpdated := func(name string, s *sub, want []string) {
		t.Helper()
		var got []string
		waitUntil(t, name, s.changed, func() bool {
			evs, errs, _ := s.snapshot()
			if len(errs) > 0 {
				t.Fatalf("%s: %s", name, errs)
			}
			got = got[:0]
			for _, e := range evs {
				if e.Node.ID != m2 {
					got = append(got, e.Node.ID)
				}
			}
			return slices.Contains(got, m1)
		})
		// (A streamed message's end is a change too: the set of messages matters.)
		slices.Sort(got)
		got = slices.Compact(got)
		slices.Sort(want)
		if !slices.Equal(got, want) {
			t.Errorf("%s: got changes of %v, want %v", name, got, want)
		}
	}
	checkUpdated("messageUpdated, active branch", updActive, []string{e3, s1, m1})
	checkUpdated("messageUpdated, the other branch", updOther, []string{m3, s2, m1})
}
