package realtime_test

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
)

const streamQuery = `subscription($c: ID!, $a: String) { messageStream(conversationId: $c, after: $a) {
	cursor
	message { ... on MessageBase { id position messageStatus } ... on TextMessage { text } }
	delta { messageId position seq deltas { kind index text } } } }`

// streamEvent is one messageStream event as received.
type streamEvent struct {
	Cursor  string
	Message *struct {
		ID            string
		Position      int
		MessageStatus string
		Text          string
	}
	Delta *struct {
		MessageID string
		Position  int
		Seq       int
		Deltas    []struct {
			Kind  string
			Index int
			Text  string
		}
	}
}

// streamEvents decodes what s received.
func streamEvents(t *testing.T, s *sub) []streamEvent {
	t.Helper()
	s.mu.Lock()
	raw := slices.Clone(s.raw)
	s.mu.Unlock()
	out := make([]streamEvent, len(raw))
	for i, r := range raw {
		if err := json.Unmarshal(r, &out[i]); err != nil {
			t.Fatalf("event %d: %v: %s", i, err, r)
		}
	}
	return out
}

// waitStream waits until s has received an event for which done holds.
func waitStream(t *testing.T, s *sub, done func(streamEvent) bool) []streamEvent {
	t.Helper()
	var evs []streamEvent
	waitUntil(t, "the stream's event", s.changed, func() bool {
		evs = streamEvents(t, s)
		_, errs, completed := s.snapshot()
		if len(errs) > 0 || completed {
			t.Fatalf("subscription ended: errors %s", errs)
		}
		return slices.ContainsFunc(evs, done)
	})
	return evs
}

// checkStream checks that evs is one message delivered whole, then its appends after the
// number it was delivered at, exactly once and in order, then the message whole again,
// COMPLETED, beginning with the text the deltas make; it returns the completed text. A
// subscriber still behind when the message ends gets the completed message instead of
// the appends it had not had (they are folded into it), so the appends may stop short.
func checkStream(t *testing.T, name string, evs []streamEvent) string {
	t.Helper()
	if len(evs) == 0 || evs[0].Message == nil || evs[0].Message.MessageStatus != "STREAMING" {
		t.Fatalf("%s: the first event is not the streaming message: %+v", name, evs[:min(1, len(evs))])
	}
	text := evs[0].Message.Text
	seq := -1
	for i, ev := range evs[1 : len(evs)-1] {
		if ev.Delta == nil {
			t.Fatalf("%s: event %d is not a delta: %+v", name, i+1, ev)
		}
		if seq >= 0 && ev.Delta.Seq != seq+1 {
			t.Fatalf("%s: event %d has seq %d after %d", name, i+1, ev.Delta.Seq, seq)
		}
		seq = ev.Delta.Seq
		for _, d := range ev.Delta.Deltas {
			text += d.Text
		}
	}
	last := evs[len(evs)-1]
	if last.Message == nil || last.Message.MessageStatus != "COMPLETED" {
		t.Fatalf("%s: the last event is not the completed message: %+v", name, last)
	}
	if !strings.HasPrefix(last.Message.Text, text) {
		t.Errorf("%s: the deltas make %d bytes that do not begin the completed message's %d", name, len(text), len(last.Message.Text))
	}
	t.Logf("%s: %d deltas before the completed message", name, len(evs)-2)
	return last.Message.Text
}

// TestStreamAcrossReplicas: a 500-append stream written through one replica reaches
// subscribers of another, and of the writer's own, exactly once and in order, and the
// stored text is the deltas concatenated; a subscriber that resumes from the cursor of
// its 200th delta gets the rest, and nothing twice. The other replica's subscribers read
// the database after each append's notification; the writer's take the appends from
// its hub's tail, reading the database only for the message's start and end (and
// whenever they fall behind the tail).
func TestStreamAcrossReplicas(t *testing.T) {
	t.Parallel()
	const appends = 500
	a := newReplica(t, "", replicaOptions{})
	b := newReplica(t, a.DSN, replicaOptions{})
	conv := a.CreateConversation(t, "live")
	c := dial(t, b.URL, transportWS)
	local := dial(t, a.URL, transportWS)
	subs := []*sub{
		c.subscribe(t, streamQuery, map[string]any{"c": conv}),
		c.subscribe(t, streamQuery, map[string]any{"c": conv}),
		local.subscribe(t, streamQuery, map[string]any{"c": conv}),
		local.subscribe(t, streamQuery, map[string]any{"c": conv}),
	}
	pollUntil(t, "the subscribers to start", func() bool {
		return b.Hub.Stats().Subscribers == 2 && a.Hub.Stats().Subscribers == 2
	})
	before := a.Hub.Stats()

	id := startMessage(t, a.URL, conv, "")
	var want strings.Builder
	var resumed *sub
	for i := 1; i <= appends; i++ {
		piece := fmt.Sprintf("d%d ", i)
		want.WriteString(piece)
		if _, err := post(a.URL, `mutation($m: ID!, $s: Int!, $d: [MessageDeltaInput!]!) { appendMessageDeltas(messageId: $m, seq: $s, deltas: $d) { seq } }`,
			map[string]any{"m": id, "s": i, "d": []map[string]any{{"kind": "TEXT", "index": 0, "text": piece}}}); err != nil {
			t.Fatalf("append %d: %v", i, err)
		}
		if i == 250 {
			// A subscriber that dropped after its 200th delta resumes from its cursor.
			evs := waitStream(t, subs[0], func(ev streamEvent) bool { return ev.Delta != nil && ev.Delta.Seq == 200 })
			k := slices.IndexFunc(evs, func(ev streamEvent) bool { return ev.Delta != nil && ev.Delta.Seq == 200 })
			resumed = c.subscribe(t, streamQuery, map[string]any{"c": conv, "a": evs[k].Cursor})
		}
	}
	if _, err := post(a.URL, `mutation($m: ID!) { completeMessage(messageId: $m) { __typename } }`, map[string]any{"m": id}); err != nil {
		t.Fatal(err)
	}
	done := func(ev streamEvent) bool { return ev.Message != nil && ev.Message.MessageStatus == "COMPLETED" }
	for i, s := range subs {
		evs := waitStream(t, s, done)
		if got := checkStream(t, fmt.Sprintf("subscriber %d", i), evs); got != want.String() {
			t.Errorf("subscriber %d: got %d bytes of text, want %d", i, len(got), want.Len())
		}
	}
	// The other replica reads the appends from the database: they were written through
	// a, so its tail holds none (a wake that was not an append's notification finds that
	// empty tail and takes nothing from it: a handful at most). How many database reads
	// depends on how its notifications bunch up: the two subscribers at one cursor share
	// a read, one read may take several appends, and the resumed subscriber reads at its
	// own cursor, so on an idle machine (one notification per append) it is up to one
	// read per append for the pair plus one per append after the resume for the third.
	if st := b.Hub.Stats(); st.StreamStoreReads == 0 || st.StreamStoreReads > 2*appends || st.StreamTailReads > 5 {
		t.Errorf("the other replica read the database %d times and its tail %d times for %d appends; want between 1 and %d database reads and at most 5 (empty) tail reads",
			st.StreamStoreReads, st.StreamTailReads, appends, 2*appends)
	}
	st := a.Hub.Stats()
	if reads := st.StreamStoreReads - before.StreamStoreReads; reads > appends/10 || st.StreamTailReads < appends/2 {
		t.Errorf("the writer's replica read the database %d times and its tail %d times for %d appends; want the appends from the tail",
			reads, st.StreamTailReads-before.StreamTailReads, appends)
	}
	evs := waitStream(t, resumed, done)
	if len(evs) == 0 || evs[0].Delta == nil || evs[0].Delta.Seq != 201 {
		t.Fatalf("the resumed subscriber starts with %+v, want delta 201", evs[:min(1, len(evs))])
	}
	text := ""
	for i, ev := range evs[:len(evs)-1] {
		if ev.Delta == nil || ev.Delta.Seq != 201+i {
			t.Fatalf("resumed: event %d is %+v, want delta %d", i, ev, 201+i)
		}
		text += ev.Delta.Deltas[0].Text
	}
	if rest := want.String()[strings.Index(want.String(), "d201 "):]; !strings.HasPrefix(rest, text) || !strings.HasPrefix(text, "d201 ") {
		t.Errorf("resumed: got %q..., which does not continue the text from delta 201", text[:min(40, len(text))])
	}
	if evs[len(evs)-1].Message.Text != want.String() {
		t.Errorf("resumed: the completed message differs from the deltas sent")
	}
	// The subscriptions, driven by their websocket operations, let go of the hub when
	// the socket closes.
	c.conn.CloseNow()
	pollUntil(t, "the subscribers to be released", func() bool { return b.Hub.Stats().Subscribers == 0 })
}

// TestStreamWriterMovesBetweenReplicas: a writer whose appends go to one replica, then
// the other, then back (as behind a load balancer) leaves gaps in each replica's
// memory of the stream; every subscriber, on either replica, still gets every append
// exactly once and in order, reading the database for what its replica did not write.
func TestStreamWriterMovesBetweenReplicas(t *testing.T) {
	t.Parallel()
	const appends, block = 300, 40
	a := newReplica(t, "", replicaOptions{})
	b := newReplica(t, a.DSN, replicaOptions{})
	conv := a.CreateConversation(t, "moving writer")
	ca, cb := dial(t, a.URL, transportWS), dial(t, b.URL, transportWS)
	subs := []*sub{
		ca.subscribe(t, streamQuery, map[string]any{"c": conv}),
		cb.subscribe(t, streamQuery, map[string]any{"c": conv}),
	}
	pollUntil(t, "the subscribers to start", func() bool {
		return a.Hub.Stats().Subscribers == 1 && b.Hub.Stats().Subscribers == 1
	})
	id := startMessage(t, a.URL, conv, "")
	var want strings.Builder
	for i := 1; i <= appends; i++ {
		url := a.URL
		if (i-1)/block%2 == 1 {
			url = b.URL
		}
		piece := fmt.Sprintf("m%d ", i)
		want.WriteString(piece)
		if _, err := post(url, `mutation($m: ID!, $s: Int!, $d: [MessageDeltaInput!]!) { appendMessageDeltas(messageId: $m, seq: $s, deltas: $d) { seq } }`,
			map[string]any{"m": id, "s": i, "d": []map[string]any{{"kind": "TEXT", "index": 0, "text": piece}}}); err != nil {
			t.Fatalf("append %d: %v", i, err)
		}
	}
	// Every append reaches both before the message ends (else the end would fold the
	// rest into the completed message and hide a lost append).
	for i, s := range subs {
		waitStream(t, s, func(ev streamEvent) bool { return ev.Delta != nil && ev.Delta.Seq == appends })
		evs := streamEvents(t, s)
		if evs[0].Message == nil {
			t.Fatalf("subscriber %d: the first event is %+v, want the message", i, evs[0])
		}
		text := evs[0].Message.Text // so far, when it was delivered
		for k, ev := range evs[1:] {
			if ev.Delta == nil || (k > 0 && ev.Delta.Seq != evs[k].Delta.Seq+1) {
				t.Fatalf("subscriber %d: event %d is %+v, not the next append", i, k+1, ev)
			}
			text += ev.Delta.Deltas[0].Text
		}
		if text != want.String() {
			t.Errorf("subscriber %d: the message and its appends make %d bytes, want the %d sent", i, len(text), want.Len())
		}
	}
	if _, err := post(a.URL, `mutation($m: ID!) { completeMessage(messageId: $m) { __typename } }`, map[string]any{"m": id}); err != nil {
		t.Fatal(err)
	}
	for i, s := range subs {
		evs := waitStream(t, s, func(ev streamEvent) bool { return ev.Message != nil && ev.Message.MessageStatus == "COMPLETED" })
		if got := checkStream(t, fmt.Sprintf("subscriber %d", i), evs); got != want.String() {
			t.Errorf("subscriber %d: got %d bytes of text, want %d", i, len(got), want.Len())
		}
	}
	if st := a.Hub.Stats(); st.StreamTailReads == 0 {
		t.Errorf("the first replica took no append from its tail (%+v)", st)
	}
}
