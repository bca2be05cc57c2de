package realtime_test

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/parley-dev/parley/internal/testserver"
	"github.com/parley-dev/parley/realtime"
)

const listSelection = `{ cursor kind conversationId conversation { id title messageCount updatedAt } }`

func listQuery(withAfter bool) string {
	if withAfter {
		return `subscription($a: String) { conversationsChanged(after: $a) ` + listSelection + ` }`
	}
	return `subscription { conversationsChanged ` + listSelection + ` }`
}

// listEvent is one event of conversationsChanged.
type listEvent struct {
	Cursor         string
	Kind           string
	ConversationID string
	Conversation   *struct {
		ID, Title    string
		MessageCount int
		UpdatedAt    string
	}
}

// listEvents decodes what a conversationsChanged subscription received, waiting for at
// least n events.
func (s *sub) listEvents(t *testing.T, n int) []listEvent {
	t.Helper()
	deadline := time.NewTimer(wait)
	defer deadline.Stop()
	for done := false; !done; {
		s.mu.Lock()
		done = len(s.raw) >= n || s.completed || len(s.errors) > 0
		s.mu.Unlock()
		if !done {
			select {
			case <-s.changed:
			case <-deadline.C:
				done = true
			}
		}
	}
	s.mu.Lock()
	if len(s.raw) < n {
		defer s.mu.Unlock()
		t.Fatalf("got %d of %d events (completed %v, errors %s): %s", len(s.raw), n, s.completed, s.errors, s.raw)
	}
	defer s.mu.Unlock()
	out := make([]listEvent, len(s.raw))
	for i, r := range s.raw {
		if err := json.Unmarshal(r, &out[i]); err != nil {
			t.Fatalf("event %s: %v", r, err)
		}
	}
	return out
}

// mustPost is post that fails the test on an error, decoding the data into v.
func mustPost(t *testing.T, baseURL, query string, vars map[string]any, v any) {
	t.Helper()
	data, err := post(baseURL, query, vars)
	if err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	if v != nil {
		if err := json.Unmarshal(data, v); err != nil {
			t.Fatal(err)
		}
	}
}

// The live list across replicas: changes made on one replica reach a subscriber on the
// other in commit order, each kind as it happened (each change is waited for before the
// next, since a conversation changed twice before the subscriber reads it comes once);
// addMessage's answer carries the conversation's new count and updatedAt; a subscriber
// resuming from an event's cursor, on the other replica, gets exactly what followed it,
// a conversation renamed and deleted since coming once, deleted.
func TestConversationListAcrossReplicas(t *testing.T) {
	t.Parallel()
	a := newReplica(t, "", replicaOptions{})
	b := newReplica(t, a.DSN, replicaOptions{})
	c := dial(t, a.URL, transportWS)
	s := c.subscribe(t, listQuery(false), nil)
	pollUntil(t, "the subscription to register", func() bool { return a.Hub.Stats().Subscribers == 1 })

	x := b.CreateConversation(t, "x")
	s.listEvents(t, 1)
	y := b.CreateConversation(t, "y")
	s.listEvents(t, 2)
	mustPost(t, b.URL, `mutation($c: ID!) { renameConversation(id: $c, title: "x2") { id } }`, map[string]any{"c": x}, nil)
	s.listEvents(t, 3)
	var added struct {
		AddMessage struct {
			Conversation struct {
				ID           string
				MessageCount int
				UpdatedAt    string
			}
		}
	}
	mustPost(t, b.URL, `mutation($c: ID!, $i: MessageInput!) { addMessage(conversationId: $c, input: $i) {
		conversation { id messageCount updatedAt } } }`, map[string]any{"c": y, "i": testserver.Text("USER", "hi")}, &added)
	s.listEvents(t, 4)
	mustPost(t, b.URL, `mutation($c: ID!) { deleteConversation(id: $c) }`, map[string]any{"c": x}, nil)

	if got := added.AddMessage.Conversation; got.ID != y || got.MessageCount != 1 {
		t.Errorf("addMessage's conversation: got %+v, want %s with messageCount 1", got, y)
	}
	events := s.listEvents(t, 5)
	want := []struct{ kind, id string }{{"CREATED", x}, {"CREATED", y}, {"RENAMED", x}, {"BUMPED", y}, {"DELETED", x}}
	if len(events) != len(want) {
		t.Fatalf("got %d events, want %d: %+v", len(events), len(want), events)
	}
	for i, w := range want {
		e := events[i]
		if e.Kind != w.kind || e.ConversationID != w.id {
			t.Errorf("event %d: got %s %s, want %s %s", i, e.Kind, e.ConversationID, w.kind, w.id)
		}
		if (e.Conversation == nil) != (w.kind == "DELETED") {
			t.Errorf("event %d (%s): conversation %+v", i, e.Kind, e.Conversation)
		}
		if i > 0 && e.Cursor == events[i-1].Cursor {
			t.Errorf("event %d repeats the cursor of the one before", i)
		}
	}
	if e := events[2]; e.Conversation != nil && e.Conversation.Title != "x2" {
		t.Errorf("RENAMED: title %q, want x2", e.Conversation.Title)
	}
	if e := events[3]; e.Conversation != nil && (e.Conversation.MessageCount != 1 || e.Conversation.UpdatedAt != added.AddMessage.Conversation.UpdatedAt) {
		t.Errorf("BUMPED: %+v, want messageCount 1 and updatedAt %s as addMessage answered", e.Conversation, added.AddMessage.Conversation.UpdatedAt)
	}

	// Resume on the other replica after the second event: what followed, then what
	// comes next, nothing twice. x, renamed and then deleted, comes once, as deleted: a
	// conversation comes with its latest change.
	r := dial(t, b.URL, transportWS).subscribe(t, listQuery(true), map[string]any{"a": events[1].Cursor})
	z := a.CreateConversation(t, "z")
	resumed := r.listEvents(t, 3)
	var got []string
	for _, e := range resumed {
		got = append(got, e.Kind+" "+e.ConversationID)
	}
	if wantResumed := []string{"BUMPED " + y, "DELETED " + x, "CREATED " + z}; !slices.Equal(got, wantResumed) {
		t.Errorf("resumed: got %v, want %v", got, wantResumed)
	}
	// A bad cursor is the caller's error, named.
	bad := c.subscribe(t, listQuery(true), map[string]any{"a": "nope"})
	if errs, _ := bad.waitEnd(t); len(errs) == 0 || !strings.Contains(string(errs[0]), "BAD_USER_INPUT") || !strings.Contains(string(errs[0]), "after") {
		t.Errorf("bad cursor: got %s, want BAD_USER_INPUT naming after", errs)
	}
}

// Paging the list while conversations are bumped: the pages never repeat a
// conversation, and the subscription started from the first page's changesCursor
// delivers every conversation the pages skipped (bumped above the cursor while paging),
// so pages and subscription together hold every conversation, as README says.
func TestConversationListPagingWhileBumped(t *testing.T) {
	t.Parallel()
	a := newReplica(t, "", replicaOptions{hub: realtime.Config{PageSize: 4}})
	b := newReplica(t, a.DSN, replicaOptions{})
	const n, pageSize = 40, 3
	all := map[string]bool{}
	for i := range n {
		all[b.CreateConversation(t, fmt.Sprint("c", i))] = true
	}
	ids := make([]string, 0, n)
	for id := range all {
		ids = append(ids, id)
	}

	type page struct {
		Conversations struct {
			ChangesCursor string
			PageInfo      struct {
				HasNextPage bool
				EndCursor   string
			}
			Edges []struct{ Node struct{ ID string } }
		}
	}
	const pageQuery = `query($n: Int!, $after: String) { conversations(first: $n, after: $after) {
		changesCursor pageInfo { hasNextPage endCursor } edges { node { id } } } }`
	var first page
	mustPost(t, a.URL, pageQuery, map[string]any{"n": pageSize}, &first)
	s := dial(t, a.URL, transportWS).subscribe(t, listQuery(true), map[string]any{"a": first.Conversations.ChangesCursor})

	// Bump conversations on the other replica while paging.
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var mu sync.Mutex
	bumped := map[string]bool{}
	bump := func(id string) {
		if _, err := addText(b.URL, id, "bump"); err != nil {
			t.Errorf("bump: %v", err)
			return
		}
		mu.Lock()
		bumped[id] = true
		mu.Unlock()
	}
	wg.Go(func() {
		rng := rand.New(rand.NewPCG(1, 2))
		for {
			select {
			case <-stop:
				return
			default:
			}
			bump(ids[rng.IntN(len(ids))])
		}
	})
	seen := map[string]int{}
	p := first
	pages := 1
	for {
		for _, e := range p.Conversations.Edges {
			seen[e.Node.ID]++
		}
		if !p.Conversations.PageInfo.HasNextPage {
			break
		}
		// Besides the random bumps: one of the conversations already read (it must not
		// come again) and one not yet read (it moves above the cursor: the pages skip it).
		for _, id := range ids {
			if seen[id] > 0 {
				bump(id)
				break
			}
		}
		for _, id := range ids {
			if seen[id] == 0 {
				bump(id)
				break
			}
		}
		var next page
		mustPost(t, a.URL, pageQuery, map[string]any{"n": pageSize, "after": p.Conversations.PageInfo.EndCursor}, &next)
		p = next
		pages++
	}
	close(stop)
	wg.Wait()

	for id, k := range seen {
		if k > 1 {
			t.Errorf("the pages hold %s %d times", id, k)
		}
	}
	// Wait until the subscription has every change made (the list's head now).
	var head page
	mustPost(t, a.URL, `{ conversations(first: 1) { changesCursor } }`, nil, &head)
	waitUntil(t, "the subscription to reach the list's head", s.changed, func() bool {
		s.mu.Lock()
		defer s.mu.Unlock()
		if len(s.raw) == 0 {
			return false
		}
		var e listEvent
		json.Unmarshal(s.raw[len(s.raw)-1], &e)
		return e.Cursor == head.Conversations.ChangesCursor
	})
	events := s.listEvents(t, 1)
	fromSub := map[string]bool{}
	for i, e := range events {
		if e.Kind != "BUMPED" {
			t.Errorf("event %d: %s, want only BUMPED", i, e.Kind)
		}
		fromSub[e.ConversationID] = true
	}
	skipped := 0
	for id := range all {
		if seen[id] == 0 {
			skipped++
			if !fromSub[id] {
				t.Errorf("%s is in neither the pages nor the subscription", id)
			}
			if !bumped[id] {
				t.Errorf("%s was skipped by the pages though it was never bumped", id)
			}
		}
	}
	for id := range bumped {
		if !fromSub[id] {
			t.Errorf("%s was bumped while paging but the subscription did not say so", id)
		}
	}
	if skipped == 0 {
		t.Errorf("the pages skipped no conversation, though one not yet read was bumped after each page")
	}
	t.Logf("%d pages, %d bumped conversations, %d skipped by the pages and delivered by the subscription, %d events",
		pages, len(bumped), skipped, len(events))
}
