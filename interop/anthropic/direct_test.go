package anthropic

import (
	"bytes"
	"fmt"
	"os"
	"testing"

	"github.com/parley-dev/parley"
)

// tricky are texts whose JSON encoding has every escape: HTML, the line and paragraph
// separators, control characters, invalid UTF-8, quotes and backslashes.
var tricky = []string{"plain", "<b>a & b</b>", "line\u2028para\u2029", "\b\f\n\r\t\x01\x1f\x7f", "bad \xff utf8 \xed\xa0\x80", `"quoted" \back\`, "日本語 é"}

// directCorpus is a history of every block the exporter writes directly and of those the
// SDK writes, with tricky texts everywhere, and the sample history of testdata.
func directCorpus(t *testing.T) []parley.Message {
	t.Helper()
	meta := func(r parley.Role) parley.MessageMeta { return parley.MessageMeta{Role: r} }
	one := 1
	var msgs []parley.Message
	for _, s := range tricky {
		raw := `{"q": "` + "<x>" + `",  "n": 1.50}`
		msgs = append(msgs,
			&parley.TextMessage{MessageMeta: meta(parley.RoleSupervisor), Body: parley.TextBody("sup " + s)},
			&parley.TextMessage{MessageMeta: meta(parley.RoleUser), Body: parley.TextBody(s)},
			&parley.ImageMessage{MessageMeta: meta(parley.RoleUser), Source: parley.ImageSource{Kind: parley.ImageURL, URL: "https://example.com/a.png?" + s}},
			&parley.MCPResourceMessage{MessageMeta: meta(parley.RoleDocument), ServerName: "fs", ResourceURI: "file:///" + s, Body: parley.TextBody(s)},
			&parley.TextMessage{MessageMeta: meta(parley.RoleAssistant), Body: parley.Body{Parts: []parley.Part{
				{Kind: parley.PartThinking, Text: "think " + s, Signature: "sig" + s},
				{Kind: parley.PartRedactedThinking, Signature: "data" + s},
				{Kind: parley.PartText, Text: s}}}},
			&parley.ToolRequestMessage{MessageMeta: meta(parley.RoleInvocation), Body: parley.TextBody("calling " + s),
				ToolCalls: []parley.ToolCall{
					{ID: "toolu_" + s, Name: "read" + s, Arguments: parley.JSON(`{"path":"a.txt"}`), ArgumentsRaw: &raw},
					{ID: "toolu_b", Name: "bad", Arguments: parley.JSON(`{}`), ArgumentsInvalid: true},
					{ID: "toolu_n", Name: "null", Arguments: parley.JSON(`null`)},
					{ID: "toolu_c", Name: "spaced", Arguments: parley.JSON("{\"a\" : [1, \"<\u2028>\"]}")}}},
			&parley.ToolResultMessage{MessageMeta: meta(parley.RoleResult), ToolCallID: "toolu_" + s, Status: parley.ToolSuccess, Body: parley.TextBody(s)},
			&parley.ToolResultMessage{MessageMeta: meta(parley.RoleResult), ToolCallID: "toolu_b", Status: parley.ToolError, Body: parley.TextBody("")},
			&parley.ToolResultMessage{MessageMeta: meta(parley.RoleResult), ToolCallID: "toolu_n", Status: parley.ToolError,
				Body: parley.Body{Parts: []parley.Part{{Kind: parley.PartText, Text: s}, {Kind: parley.PartImage, Raw: parley.JSON(
					`{"type":"image","source":{"type":"url","url":"https://example.com/b.png"}}`)}}}},
			&parley.ToolResultMessage{MessageMeta: meta(parley.RoleResult), ToolCallID: "toolu_c", Status: parley.ToolSuccess, Body: parley.TextBody(s)},
			// Calls between parts, a server tool block and citations: blocks in order.
			&parley.ToolRequestMessage{MessageMeta: meta(parley.RoleInvocation), Body: parley.Body{Parts: []parley.Part{
				{Kind: parley.PartThinking, Text: s, Signature: "sig"},
				{Kind: parley.PartText, Text: "before " + s},
				{Kind: parley.PartServerTool, Raw: parley.JSON(`{"type":"server_tool_use","id":"srvtoolu_1","name":"web_search","input":{"query":"x"}}`)},
				{Kind: parley.PartText, Text: "cited " + s, Citations: parley.JSON(
					`[{"type":"char_location","cited_text":"x","document_index":0,"document_title":"d","start_char_index":0,"end_char_index":1}]`)},
				{Kind: parley.PartText, Text: "after " + s}}},
				ToolCalls: []parley.ToolCall{{ID: "toolu_o", Name: "ordered", Arguments: parley.JSON(`{}`), PartIndex: &one}}},
			&parley.ToolResultMessage{MessageMeta: meta(parley.RoleResult), ToolCallID: "toolu_o", Status: parley.ToolSuccess, Body: parley.TextBody("ok")},
			&parley.CompactionMessage{MessageMeta: meta(parley.RoleAssistant), Provider: parley.CompactionAnthropic,
				Data: parley.JSON(`{"type":"compaction","content":"summary ` + "<x>" + `"}`)},
			&parley.CompactionMessage{MessageMeta: meta(parley.RoleUser), Body: parley.TextBody("summary " + s)},
		)
	}
	f, err := os.Open("testdata/messages.json")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	imp, err := Parse(f)
	if err != nil {
		t.Fatal(err)
	}
	for _, im := range imp.Messages {
		msgs = append(msgs, im.Message)
	}
	return msgs
}

// TestDirectIsTheSDKs: the request written directly is byte for byte what the SDK's
// params marshal to (with encoding/json's HTML escaping), for every block and escape,
// with and without cache breakpoints, and the corpus has blocks of every kind.
func TestDirectIsTheSDKs(t *testing.T) {
	t.Parallel()
	msgs := directCorpus(t)
	for _, opts := range []Options{{System: "system <&> \u2028"}, {Continuation: true}, {System: "s", CacheBreakpoints: 1},
		{System: "s", CacheBreakpoints: 4}, {CacheBreakpoints: 3, Continuation: true}} {
		t.Run(fmt.Sprintf("%+v", opts), func(t *testing.T) {
			t.Parallel()
			system, out, _, err := request(msgs, opts)
			if err != nil {
				t.Fatal(err)
			}
			kinds := map[blockKind]int{}
			for _, m := range out {
				for _, b := range m.content {
					kinds[b.kind]++
				}
			}
			for k := sdkBlock; k <= toolResultBlock; k++ {
				if kinds[k] == 0 {
					t.Errorf("the corpus has no block of kind %d", k)
				}
			}
			got, err := appendRequest(nil, system, out, false)
			if err != nil {
				t.Fatal(err)
			}
			want, err := appendRequest(nil, system, out, true)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want) {
				i := 0
				for i < len(got) && i < len(want) && got[i] == want[i] {
					i++
				}
				t.Errorf("differs at byte %d:\ngot  %.300s\nwant %.300s", i, got[max(i-100, 0):], want[max(i-100, 0):])
			}
		})
	}
}
