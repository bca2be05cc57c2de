package parley

import (
	"reflect"
	"strings"
	"testing"
)

func TestDraftApply(t *testing.T) {
	t.Parallel()
	text := func(i int, s string) Delta { return Delta{Kind: DeltaText, Index: i, Text: s} }
	think := func(i int, s string) Delta { return Delta{Kind: DeltaThinking, Index: i, Text: s} }
	sig := func(i int, s string) Delta { return Delta{Kind: DeltaSignature, Index: i, Text: s} }
	args := func(i int, id, name, s string) Delta {
		return Delta{Kind: DeltaToolArguments, Index: i, ToolCallID: id, ToolName: name, Text: s}
	}
	at := func(d Delta, n int) Delta { d.PartIndex = &n; return d }
	item := func(d Delta, id string) Delta { d.ItemID = id; return d }
	tests := []struct {
		name   string
		deltas []Delta
		want   Message
	}{
		{"nothing", nil, &TextMessage{MessageMeta: MessageMeta{Role: RoleAssistant}}},
		{"text in pieces", []Delta{text(0, "Hel"), text(0, "lo")},
			&TextMessage{MessageMeta: MessageMeta{Role: RoleAssistant}, Body: TextBody("Hello")}},
		{"an empty signed thinking part, then text",
			[]Delta{think(0, ""), sig(0, "Ev"), sig(0, "Mc"), text(1, "Hi")},
			&TextMessage{MessageMeta: MessageMeta{Role: RoleAssistant}, Body: Body{Parts: []Part{
				{Kind: PartThinking, Signature: "EvMc"}, {Kind: PartText, Text: "Hi"}}}}},
		{"two calls, arguments interleaved",
			[]Delta{text(0, "ok"), args(0, "a", "f", ""), args(1, "b", "g", `{"x"`), args(0, "", "", `{}`), args(1, "b", "", `:1}`)},
			&ToolRequestMessage{MessageMeta: MessageMeta{Role: RoleAssistant}, Body: TextBody("ok"), ToolCalls: []ToolCall{
				{ID: "a", Name: "f", Arguments: JSON(`{}`)}, {ID: "b", Name: "g", Arguments: JSON(`{"x":1}`)}}}},
		{"redacted thinking, a server tool's block, cited text",
			[]Delta{{Kind: DeltaRedactedThinking, Index: 0, Text: "Em"}, {Kind: DeltaRedactedThinking, Index: 0, Text: "wK"},
				{Kind: DeltaServerTool, Index: 1, Text: `{"type":"server_tool_use",`}, {Kind: DeltaServerTool, Index: 1, Text: `"id":"s1"}`},
				text(2, "Sunny."), {Kind: DeltaCitation, Index: 2, Text: `{"n":1}`}, {Kind: DeltaCitation, Index: 2, Text: `{"n":2}`}},
			&TextMessage{MessageMeta: MessageMeta{Role: RoleAssistant}, Body: Body{Parts: []Part{
				{Kind: PartRedactedThinking, Signature: "EmwK"},
				{Kind: PartServerTool, Raw: JSON(`{"type":"server_tool_use","id":"s1"}`)},
				{Kind: PartText, Text: "Sunny.", Citations: JSON(`[{"n":1},{"n":2}]`)}}}}},
		{"text, a call, text, a call: each call keeps its place",
			[]Delta{text(0, "Let me look."), at(args(0, "c1", "read", `{"p":1}`), 1), text(1, "Now the other."), at(args(1, "c2", "read", `{}`), 2)},
			&ToolRequestMessage{MessageMeta: MessageMeta{Role: RoleAssistant},
				Body: Body{Parts: []Part{{Kind: PartText, Text: "Let me look."}, {Kind: PartText, Text: "Now the other."}}},
				ToolCalls: []ToolCall{{ID: "c1", Name: "read", Arguments: JSON(`{"p":1}`), PartIndex: intp(1)},
					{ID: "c2", Name: "read", Arguments: JSON(`{}`), PartIndex: intp(2)}}}},
		{"calls placed after every part have no place, as an import has it",
			[]Delta{text(0, "ok"), at(args(0, "c1", "f", `{}`), 1), at(args(1, "c2", "f", `{}`), 1)},
			&ToolRequestMessage{MessageMeta: MessageMeta{Role: RoleAssistant}, Body: TextBody("ok"), ToolCalls: []ToolCall{
				{ID: "c1", Name: "f", Arguments: JSON(`{}`)}, {ID: "c2", Name: "f", Arguments: JSON(`{}`)}}}},
		{"a call first, then text, then a call without a place: it comes after every part",
			[]Delta{at(args(0, "c1", "f", `{}`), 0), text(0, "done"), args(1, "c2", "g", `{}`)},
			&ToolRequestMessage{MessageMeta: MessageMeta{Role: RoleAssistant}, Body: TextBody("done"), ToolCalls: []ToolCall{
				{ID: "c1", Name: "f", Arguments: JSON(`{}`), PartIndex: intp(0)}, {ID: "c2", Name: "g", Arguments: JSON(`{}`), PartIndex: intp(1)}}}},
		{"item ids and encrypted reasoning (OpenAI Responses)",
			[]Delta{item(think(0, ""), "rs_1"), think(0, "First."), item(think(1, "Second."), "rs_1"), item(sig(0, "gAAA"), "rs_1"), sig(0, "AB=="),
				text(2, "Hi"), item(at(args(0, "call_1", "f", `{}`), 3), "fc_1"), item(args(0, "", "", ""), "fc_1")},
			&ToolRequestMessage{MessageMeta: MessageMeta{Role: RoleAssistant}, Body: Body{Parts: []Part{
				{Kind: PartThinking, Text: "First.", Signature: "gAAAAB==", ItemID: "rs_1"}, {Kind: PartThinking, Text: "Second.", ItemID: "rs_1"},
				{Kind: PartText, Text: "Hi"}}},
				ToolCalls: []ToolCall{{ID: "call_1", Name: "f", Arguments: JSON(`{}`), ItemID: "fc_1"}}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var dr Draft
			for i, d := range tc.deltas {
				if err := dr.Apply(d); err != nil {
					t.Fatalf("delta %d: %v", i, err)
				}
			}
			if got := dr.Message(); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %#v, want %#v", got, tc.want)
			}
		})
	}
}

func TestDraftApplyRefuses(t *testing.T) {
	t.Parallel()
	start := []Delta{
		{Kind: DeltaThinking, Index: 0, Text: "t"},
		{Kind: DeltaText, Index: 1, Text: "a"},
		{Kind: DeltaToolArguments, Index: 0, ToolCallID: "c1", ToolName: "f"},
	}
	tests := []struct {
		name  string
		delta Delta
		want  string
	}{
		{"a part skipped", Delta{Kind: DeltaText, Index: 3, Text: "x"}, "a TEXT delta for part 3, but the message has 2 parts; a new part is number 2"},
		{"a negative part", Delta{Kind: DeltaText, Index: -1}, "a TEXT delta for part -1"},
		{"text into thinking", Delta{Kind: DeltaText, Index: 0, Text: "x"}, "a TEXT delta for part 0, a THINKING part"},
		{"thinking into text", Delta{Kind: DeltaThinking, Index: 1, Text: "x"}, "a THINKING delta for part 1, a TEXT part"},
		{"a signature on text", Delta{Kind: DeltaSignature, Index: 1, Text: "s"}, "part 1, a TEXT part; only THINKING parts are signed"},
		{"a signature opening a part", Delta{Kind: DeltaSignature, Index: 2, Text: "s"}, "a SIGNATURE delta for part 2, but the message has 2 parts"},
		{"a call skipped", Delta{Kind: DeltaToolArguments, Index: 2, ToolCallID: "c3", ToolName: "f"}, "tool call 2, but the message has 1 calls"},
		{"a call without id", Delta{Kind: DeltaToolArguments, Index: 1, ToolName: "f"}, "tool call 1 opens without an id"},
		{"a call without name", Delta{Kind: DeltaToolArguments, Index: 1, ToolCallID: "c2"}, "tool call 1 (c2) opens without a name"},
		{"a call changing id", Delta{Kind: DeltaToolArguments, Index: 0, ToolCallID: "c9", Text: "{"}, `tool call 0 has id "c1", not "c9"`},
		{"an unknown kind", Delta{Kind: "IMAGE"}, `delta.kind: "IMAGE" is not TEXT, THINKING, SIGNATURE, TOOL_ARGUMENTS, REDACTED_THINKING, SERVER_TOOL or CITATION`},
		{"redacted thinking into text", Delta{Kind: DeltaRedactedThinking, Index: 1, Text: "x"}, "a REDACTED_THINKING delta for part 1, a TEXT part"},
		{"a server tool's block into thinking", Delta{Kind: DeltaServerTool, Index: 0, Text: "{}"}, "a SERVER_TOOL delta for part 0, a THINKING part"},
		{"a server tool's block skipping a part", Delta{Kind: DeltaServerTool, Index: 5, Text: "{}"}, "a SERVER_TOOL delta for part 5, but the message has 2 parts"},
		{"a citation on thinking", Delta{Kind: DeltaCitation, Index: 0, Text: "{}"}, "a CITATION delta for part 0, a THINKING part; only TEXT parts cite"},
		{"a citation that is not an object", Delta{Kind: DeltaCitation, Index: 1, Text: `{"a":`}, "a CITATION delta's text is one citation, a JSON object"},
		{"a citation opening a part", Delta{Kind: DeltaCitation, Index: 2, Text: "{}"}, "a CITATION delta for part 2, but the message has 2 parts"},
		{"a place on text", Delta{Kind: DeltaText, Index: 1, Text: "x", PartIndex: intp(0)}, "delta.partIndex: a TEXT delta has none"},
		{"a call placed past the parts so far", Delta{Kind: DeltaToolArguments, Index: 1, ToolCallID: "c2", ToolName: "f", PartIndex: intp(3)},
			"delta.partIndex: 3, but the message has 2 parts so far; tool call 1 opens after 0 to 2 of them"},
		{"a call placed at a negative part", Delta{Kind: DeltaToolArguments, Index: 1, ToolCallID: "c2", ToolName: "f", PartIndex: intp(-1)},
			"delta.partIndex: -1, but the message has 2 parts so far"},
		{"a call placed before one that came after all the parts", Delta{Kind: DeltaToolArguments, Index: 1, ToolCallID: "c2", ToolName: "f", PartIndex: intp(1)},
			"delta.partIndex: tool call 1 at part 1, but tool call 0 ahead of it came after all the parts (no partIndex); calls keep their order"},
		{"a call's place given late", Delta{Kind: DeltaToolArguments, Index: 0, Text: "{", PartIndex: intp(2)},
			"delta.partIndex: tool call 0 opened after all the parts (no partIndex), not at part 2"},
		{"a part's item id given late", Delta{Kind: DeltaText, Index: 1, Text: "x", ItemID: "msg_1"},
			"delta.itemId: part 1 opened without an item id; give it on the delta that opens the part"},
		{"a call's item id given late", Delta{Kind: DeltaToolArguments, Index: 0, Text: "{", ItemID: "fc_1"},
			"delta.itemId: tool call 0 opened without an item id"},
		{"an item id with a control character", Delta{Kind: DeltaText, Index: 2, Text: "x", ItemID: "msg\a1"},
			"delta.itemId: \"msg\\a1\" has control characters"},
		{"an item id too long", Delta{Kind: DeltaThinking, Index: 2, ItemID: strings.Repeat("r", MaxItemIDLength+1)},
			"delta.itemId: 257 bytes, at most 256 allowed"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var dr Draft
			for _, d := range start {
				if err := dr.Apply(d); err != nil {
					t.Fatal(err)
				}
			}
			before := dr.Message()
			// A store checks appends against the draft's shape: it refuses the same.
			shape := dr.Shape()
			if err := shape.Apply(tc.delta); ErrorCode(err) != EINVALID || !strings.Contains(ErrorMessage(err), tc.want) {
				t.Errorf("shape: got %v, want EINVALID containing %q", err, tc.want)
			}
			err := dr.Apply(tc.delta)
			if ErrorCode(err) != EINVALID || !strings.Contains(ErrorMessage(err), tc.want) {
				t.Fatalf("got %v, want EINVALID containing %q", err, tc.want)
			}
			if after := dr.Message(); !reflect.DeepEqual(after, before) {
				t.Errorf("got draft %#v after a refused delta, want it unchanged: %#v", after, before)
			}
		})
	}
}

// TestDraftCheckLimits: a draft, and its shape (which has dropped the text), are held to
// the limits of a finished message.
func TestDraftCheckLimits(t *testing.T) {
	t.Parallel()
	lim := Limits{MaxMessageTextBytes: 10, MaxToolCallsPerMessage: 2, MaxToolArgumentsBytes: 4}
	args := func(i int, id, s string) Delta {
		return Delta{Kind: DeltaToolArguments, Index: i, ToolCallID: id, ToolName: "f", Text: s}
	}
	tests := []struct {
		name   string
		deltas []Delta
		code   string
	}{
		{"at every limit", []Delta{{Kind: DeltaText, Text: "12345"}, {Kind: DeltaThinking, Index: 1, Text: "123"},
			{Kind: DeltaSignature, Index: 1, Text: "12"}, args(0, "a", "1234"), args(1, "b", "")}, ""},
		{"text, thinking and signatures count together", []Delta{{Kind: DeltaText, Text: "12345"},
			{Kind: DeltaThinking, Index: 1, Text: "123"}, {Kind: DeltaSignature, Index: 1, Text: "123"}}, EMESSAGETOOLARGE},
		{"text over in pieces", []Delta{{Kind: DeltaText, Text: "123456"}, {Kind: DeltaText, Text: "12345"}}, EMESSAGETOOLARGE},
		{"calls over", []Delta{args(0, "a", ""), args(1, "b", ""), args(2, "c", "")}, ETOOMANYTOOLCALLS},
		{"arguments over in pieces", []Delta{args(0, "a", "12"), args(1, "b", "1"), args(0, "", "123")}, EARGUMENTSTOOLARGE},
		{"default limits", []Delta{{Kind: DeltaText, Text: strings.Repeat("x", DefaultLimits.MaxMessageTextBytes+1)}}, EMESSAGETOOLARGE},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var dr Draft
			if err := dr.ApplyAll(tc.deltas); err != nil {
				t.Fatal(err)
			}
			l := lim
			if tc.name == "default limits" {
				l = Limits{}
			}
			shape := dr.Shape()
			for what, d := range map[string]*Draft{"draft": &dr, "shape": &shape} {
				if got := ErrorCode(d.CheckLimits(l)); got != tc.code {
					t.Errorf("%s: got %q, want %q", what, got, tc.code)
				}
			}
		})
	}
}

// TestDraftCallsKeepTheirOrder: a call placed before the call ahead of it is refused,
// and a place the same as the one given when the call opened is accepted again.
func TestDraftCallsKeepTheirOrder(t *testing.T) {
	t.Parallel()
	var dr Draft
	err := dr.ApplyAll([]Delta{{Kind: DeltaText, Text: "a"},
		{Kind: DeltaToolArguments, ToolCallID: "c1", ToolName: "f", PartIndex: intp(1)},
		{Kind: DeltaText, Index: 1, Text: "b"},
		{Kind: DeltaToolArguments, Index: 0, Text: "{}", PartIndex: intp(1)}})
	if err != nil {
		t.Fatal(err)
	}
	err = dr.Apply(Delta{Kind: DeltaToolArguments, Index: 1, ToolCallID: "c2", ToolName: "f", PartIndex: intp(0)})
	if want := "deltas: tool call 1 at part 0, but tool call 0 ahead of it came at part 1; calls keep their order"; ErrorCode(err) != EINVALID ||
		!strings.Contains(ErrorMessage(err), strings.TrimPrefix(want, "deltas: ")) {
		t.Fatalf("got %v, want EINVALID %q", err, want)
	}
	m := dr.Message().(*ToolRequestMessage)
	if len(m.ToolCalls) != 1 || m.ToolCalls[0].PartIndex == nil || *m.ToolCalls[0].PartIndex != 1 {
		t.Errorf("got calls %+v, want c1 alone at part 1", m.ToolCalls)
	}
	if err := Prepare(dr.Final(), DefaultLimits); err != nil {
		t.Errorf("the draft does not prepare: %v", err)
	}
}

func intp(n int) *int { return &n }
