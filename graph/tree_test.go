package graph

import (
	"context"
	"testing"

	"github.com/parley-dev/parley"
)

// eventsOf is a StreamSubscription of the events given, one a Poll.
type eventsOf struct {
	parley.StreamSubscription
	evs []parley.StreamEvent
}

func (s *eventsOf) Poll(context.Context) (parley.StreamEvent, any, bool, error) {
	if len(s.evs) == 0 {
		return parley.StreamEvent{}, nil, false, nil
	}
	ev := s.evs[0]
	s.evs = s.evs[1:]
	return ev, ev.Delta.Seq, true, nil
}

func (s *eventsOf) OnWake(func()) {}

// onBranch says which messages are on the branch: those in on.
type onBranch struct {
	parley.TreeService
	on     map[string]bool
	lookUp int
}

func (t *onBranch) BranchContains(_ context.Context, _, _, id string) (bool, error) {
	t.lookUp++
	return t.on[id], nil
}

// A branch-following messageStream served without waiting (parley.NoWaiting, as the
// appends this replica commits are) keeps an event whose message it must look up for
// the next Poll that may wait, after waking the stream: it is delivered then, in order,
// and an event of a message it knows is kept or dropped at once.
func TestBranchStreamEventsWaitToLookUp(t *testing.T) {
	t.Parallel()
	delta := func(msg string, seq int) parley.StreamEvent {
		return parley.StreamEvent{Delta: &parley.DeltaBatch{MessageID: msg, Seq: seq}}
	}
	tree := &onBranch{on: map[string]bool{"on": true}}
	woken := 0
	s := &branchStreamEvents{
		inner: &eventsOf{evs: []parley.StreamEvent{delta("on", 1), delta("off", 2), delta("on", 3), delta("off", 4)}},
		f:     &branchFilter{tree: tree, known: map[string]bool{}},
	}
	s.OnWake(func() { woken++ })
	ctx := context.Background()
	noWait, wait := parley.NoWaiting(ctx), parley.Waiting(ctx)
	var got []any
	poll := func(ctx context.Context) bool {
		ev, id, ok, err := s.Poll(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if ok {
			if ev.Delta.Seq != id {
				t.Fatalf("got event %d with the identity %v", ev.Delta.Seq, id)
			}
			got = append(got, id)
		}
		return ok
	}
	if poll(noWait) || woken != 1 || tree.lookUp != 0 {
		t.Fatalf("a Poll that may not wait, of an unknown message: delivered %v, woke %d times, looked up %d; want nothing, 1, 0", got, woken, tree.lookUp)
	}
	if !poll(wait) {
		t.Fatalf("got %v, want the kept event once the Poll may wait", got)
	}
	if poll(noWait) || woken != 2 { // seq 2, of "off": unknown
		t.Fatalf("got %v, woke %d times: want the unknown message's event kept for a Poll that may wait", got, woken)
	}
	if !poll(wait) { // seq 2 dropped, seq 3 of "on", known
		t.Fatalf("got %v, want the next event on the branch", got)
	}
	if poll(noWait) || woken != 2 { // seq 4, of "off", known: dropped at once
		t.Fatalf("got %v, woke %d times: want the known message's event dropped without waking", got, woken)
	}
	if want := []any{1, 3}; len(got) != len(want) || got[0] != want[0] || got[1] != want[1] {
		t.Errorf("got events %v, want %v", got, want)
	}
	if tree.lookUp != 2 {
		t.Errorf("looked up %d messages, want 2", tree.lookUp)
	}
}
