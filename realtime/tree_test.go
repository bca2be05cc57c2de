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
