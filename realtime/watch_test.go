package realtime_test

import (
	"context"
	"testing"

	"github.com/parley-dev/parley"
	"github.com/parley-dev/parley/realtime"
)

// Watch registers in the same hub as the message streams: a watcher of one
// conversation wakes for its events only, a watcher of every conversation for all of
// its owner's (and for events that name no owner, from older replicas), not another
// owner's, and both for a resync; a released watcher is gone.
func TestWatch(t *testing.T) {
	t.Parallel()
	hub := realtime.NewHub(nil, realtime.Config{}) // Watch never reads the store
	a, b := parley.ConversationID("6f1c0a52-3c4e-4b7a-9a43-0d5a3c1e0001"), parley.ConversationID("6f1c0a52-3c4e-4b7a-9a43-0d5a3c1e0002")
	c := parley.ConversationID("6f1c0a52-3c4e-4b7a-9a43-0d5a3c1e0003")
	ctx := context.Background()
	wa, releaseA, err := hub.Watch(ctx, a)
	if err != nil {
		t.Fatal(err)
	}
	wall, releaseAll, err := hub.Watch(parley.WithOwner(ctx, "alice"), "")
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := hub.Watch(ctx, ""); err == nil {
		t.Error("a watcher of every conversation without an owner: got no error, want one")
	}
	if got := hub.Stats(); got.Watchers != 2 || got.Conversations != 1 || got.Subscribers != 0 {
		t.Fatalf("got %+v, want 2 watchers of 1 conversation", got)
	}
	woken := func(c <-chan struct{}) bool {
		select {
		case <-c:
			return true
		default:
			return false
		}
	}
	tests := []struct {
		name           string
		publish        func()
		wantA, wantAll bool
	}{
		{"added to a", func() { hub.Publish(parley.MessageEvent{Kind: parley.MessageAdded, ConversationID: a, Owner: "alice"}) }, true, true},
		{"updated in a", func() {
			hub.Publish(parley.MessageEvent{Kind: parley.MessageUpdated, ConversationID: a, Owner: "alice"})
		}, true, true},
		{"added to b", func() { hub.Publish(parley.MessageEvent{Kind: parley.MessageAdded, ConversationID: b, Owner: "alice"}) }, false, true},
		{"b deleted", func() {
			hub.Publish(parley.MessageEvent{Kind: parley.ConversationDeleted, ConversationID: b, Owner: "alice"})
		}, false, true},
		{"added to bob's c", func() { hub.Publish(parley.MessageEvent{Kind: parley.MessageAdded, ConversationID: c, Owner: "bob"}) }, false, false},
		{"added to c, owner unknown", func() { hub.Publish(parley.MessageEvent{Kind: parley.MessageAdded, ConversationID: c}) }, false, true},
		{"resync", hub.Resync, true, true},
	}
	for _, tt := range tests {
		tt.publish()
		if got := woken(wa); got != tt.wantA {
			t.Errorf("%s: watcher of a woken %v, want %v", tt.name, got, tt.wantA)
		}
		if got := woken(wall); got != tt.wantAll {
			t.Errorf("%s: watcher of all woken %v, want %v", tt.name, got, tt.wantAll)
		}
	}
	// Two events while a wake-up is pending leave one.
	hub.Publish(parley.MessageEvent{Kind: parley.MessageAdded, ConversationID: a})
	hub.Publish(parley.MessageEvent{Kind: parley.MessageAdded, ConversationID: a})
	if !woken(wa) || woken(wa) {
		t.Error("two events: want exactly one pending wake-up")
	}
	releaseA()
	releaseAll()
	if got := hub.Stats(); got != (realtime.Stats{}) {
		t.Errorf("after release: got %+v, want nothing registered", got)
	}
	if _, _, err := hub.Watch(ctx, "not-an-id"); parley.ErrorCode(err) != parley.ENOTFOUND {
		t.Errorf("bad id: got %v, want ENOTFOUND", err)
	}
}

// A watcher is released when its context ends.
func TestWatchReleasedWithContext(t *testing.T) {
	t.Parallel()
	hub := realtime.NewHub(nil, realtime.Config{})
	ctx, cancel := context.WithCancel(context.Background())
	if _, _, err := hub.Watch(ctx, parley.ConversationID("6f1c0a52-3c4e-4b7a-9a43-0d5a3c1e0007")); err != nil {
		t.Fatal(err)
	}
	cancel()
	pollUntil(t, "the watcher to be released", func() bool { return hub.Stats() == realtime.Stats{} })
}
