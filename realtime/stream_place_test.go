package realtime_test

import (
	"encoding/json"
	"slices"
	"testing"
)

// TestStreamDeliversCallPlaces: messageStream delivers the delta that opens a tool call
// with its partIndex and itemId as appended, and the ended message with the call at that
// place among the parts.
func TestStreamDeliversCallPlaces(t *testing.T) {
	t.Parallel()
	a := newReplica(t, "", replicaOptions{})
	conv := a.CreateConversation(t, "places")
	c := dial(t, a.URL, transportWS)
	s := c.subscribe(t, `subscription($c: ID!) { messageStream(conversationId: $c) {
		message { ... on MessageBase { messageStatus } ... on ToolRequestMessage { toolCalls { callId partIndex itemId } } }
		delta { seq deltas { kind index text toolCallId partIndex itemId } } } }`, map[string]any{"c": conv})
	pollUntil(t, "the subscriber to start", func() bool { return a.Hub.Stats().Subscribers == 1 })

	id := startMessage(t, a.URL, conv, "")
	type call struct {
		CallID    string
		PartIndex *int
		ItemID    *string
	}
	type event struct {
		Message *struct {
			MessageStatus string
			ToolCalls     []call
		}
		Delta *struct {
			Seq    int
			Deltas []struct {
				Kind       string
				ToolCallID *string
				PartIndex  *int
				ItemID     *string
			}
		}
	}
	var evs []event
	wait := func(what string, done func(event) bool) {
		waitUntil(t, what, s.changed, func() bool {
			s.mu.Lock()
			raw := slices.Clone(s.raw)
			s.mu.Unlock()
			evs = make([]event, len(raw))
			for i, r := range raw {
				if err := json.Unmarshal(r, &evs[i]); err != nil {
					t.Fatal(err)
				}
			}
			return slices.ContainsFunc(evs, done)
		})
	}
	// The started message first: an append after it is delivered as a delta (a
	// subscriber that reads the message later gets it whole, so far).
	wait("the started message", func(ev event) bool { return ev.Message != nil && ev.Message.MessageStatus == "STREAMING" })
	if _, err := post(a.URL, `mutation($m: ID!, $d: [MessageDeltaInput!]!) { appendMessageDeltas(messageId: $m, seq: 1, deltas: $d) { seq } }`,
		map[string]any{"m": id, "d": []map[string]any{{"kind": "TEXT", "index": 0, "text": "First:"},
			{"kind": "TOOL_ARGUMENTS", "index": 0, "toolCallId": "c1", "toolName": "read", "text": "{}", "partIndex": 1, "itemId": "fc_1"},
			{"kind": "TEXT", "index": 1, "text": "then more."}}}); err != nil {
		t.Fatal(err)
	}
	// Delivered before the message ends (a subscriber still behind at the end gets the
	// message whole instead).
	wait("the append", func(ev event) bool { return ev.Delta != nil })
	if _, err := post(a.URL, `mutation($m: ID!) { completeMessage(messageId: $m) { __typename } }`, map[string]any{"m": id}); err != nil {
		t.Fatal(err)
	}
	wait("the completed message", func(ev event) bool { return ev.Message != nil && ev.Message.MessageStatus == "COMPLETED" })
	k := slices.IndexFunc(evs, func(ev event) bool { return ev.Delta != nil })
	d := evs[k].Delta.Deltas
	if len(d) != 3 || d[1].PartIndex == nil || *d[1].PartIndex != 1 || d[1].ItemID == nil || *d[1].ItemID != "fc_1" ||
		d[0].PartIndex != nil || d[0].ItemID != nil {
		t.Errorf("delivered deltas %+v, want the call's opening delta at part 1, item fc_1, and nothing on the text", d)
	}
	last := evs[len(evs)-1].Message
	if last == nil || len(last.ToolCalls) != 1 || last.ToolCalls[0].PartIndex == nil || *last.ToolCalls[0].PartIndex != 1 ||
		last.ToolCalls[0].ItemID == nil || *last.ToolCalls[0].ItemID != "fc_1" {
		t.Errorf("the completed message: got %+v, want call c1 at part 1, item fc_1", last)
	}
	c.conn.CloseNow()
	pollUntil(t, "the subscriber to be released", func() bool { return a.Hub.Stats().Subscribers == 0 })
}
