package realtime_test

import (
	"encoding/json"
	"slices"
	"testing"

	"github.com/parley-dev/parley"
)

// TestSubscriptionsToALinkedFork: a fork shares its path (db/fork.go); a subscription to
// it replays the shared messages as the fork's (its ids, positions 1..n) from any
// cursor, then delivers what the fork adds, written on another replica.
func TestSubscriptionsToALinkedFork(t *testing.T) {
	t.Parallel()
	a := newReplica(t, "", replicaOptions{})
	b := newReplica(t, a.DSN, replicaOptions{})
	src := b.CreateConversation(t, "source")
	var last string
	for _, text := range []string{"m1", "m2", "m3", "m4"} {
		id, err := addOn(b.URL, src, text, "", "")
		if err != nil {
			t.Fatal(err)
		}
		if text == "m3" {
			last = id
		}
	}
	data, err := post(b.URL, `mutation($m: ID!) { forkConversation(messageId: $m) { id } }`, map[string]any{"m": last})
	if err != nil {
		t.Fatal(err)
	}
	var f struct{ ForkConversation struct{ ID string } }
	if err := json.Unmarshal(data, &f); err != nil {
		t.Fatal(err)
	}
	fork := f.ForkConversation.ID

	ws := dial(t, a.URL, transportWS)
	all := ws.subscribe(t, addedQuery(true), map[string]any{"c": fork, "a": parley.MessageCursor(0)})
	tail := ws.subscribe(t, addedQuery(true), map[string]any{"c": fork, "a": parley.MessageCursor(2)})
	replay := all.waitCount(t, 3)
	for i, e := range replay {
		if e.Node.Position != i+1 || e.Node.ID == last {
			t.Errorf("replayed shared message %d: %+v, want position %d under an id of the fork's", i+1, e.Node, i+1)
		}
	}
	f4, err := addOn(b.URL, fork, "f4", "", "")
	if err != nil {
		t.Fatal(err)
	}
	got := all.waitCount(t, 4)
	if e := got[3].Node; e.ID != f4 || e.Position != 4 {
		t.Errorf("the fork's own message: %+v, want %s at position 4", e, f4)
	}
	if got, want := ids(tail.waitCount(t, 2)), []string{replay[2].Node.ID, f4}; !slices.Equal(got, want) {
		t.Errorf("from position 2: got %v, want %v", got, want)
	}
}
