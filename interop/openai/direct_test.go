package openai

import (
	"bytes"
	"os"
	"testing"

	"github.com/parley-dev/parley"
)

// tricky are texts whose JSON encoding has every escape: HTML, the line and paragraph
// separators, control characters, invalid UTF-8, quotes and backslashes.
var tricky = []string{"", "plain", "<b>a & b</b>", "line\u2028para\u2029", "\b\f\n\r\t\x01\x1f\x7f", "bad \xff utf8 \xed\xa0\x80", `"quoted" \back\`, "日本語 é"}

// directCorpus is a history of every shape chatMessages writes directly, and of those
// the SDK writes, with tricky texts everywhere.
func directCorpus(t *testing.T) []parley.Message {
	t.Helper()
	meta := func(r parley.Role) parley.MessageMeta { return parley.MessageMeta{Role: r} }
	var msgs []parley.Message
	for i, s := range tricky {
		raw := `{"q": "` + "x" + `", "n": 1.50}`
		msgs = append(msgs,
			&parley.TextMessage{MessageMeta: meta(parley.RoleSupervisor), Body: parley.TextBody("sup " + s)},
			&parley.TextMessage{MessageMeta: meta(parley.RoleUser), Body: parley.TextBody(s)},
			&parley.TextMessage{MessageMeta: meta(parley.RoleAssistant), Body: parley.TextBody(s)},
			&parley.ImageMessage{MessageMeta: meta(parley.RoleUser), Source: parley.ImageSource{Kind: parley.ImageURL, URL: "https://example.com/a.png?" + s}},
			&parley.MCPResourceMessage{MessageMeta: meta(parley.RoleDocument), ServerName: "fs", ResourceURI: "file:///" + s, Body: parley.TextBody(s)},
			&parley.FileReferenceMessage{MessageMeta: meta(parley.RoleDocument), Path: "a/" + s + ".go"},
			&parley.ToolRequestMessage{MessageMeta: meta(parley.RoleInvocation), Body: parley.TextBody(s),
				ToolCalls: []parley.ToolCall{
					{ID: "call_" + s, Name: "read" + s, Arguments: parley.JSON(`{"path":"a.txt"}`), ArgumentsRaw: &raw},
					{ID: "call_b", Name: "bad", Arguments: parley.JSON(`{}`), ArgumentsRaw: &tricky[i], ArgumentsInvalid: true}}},
			&parley.ToolRequestMessage{MessageMeta: meta(parley.RoleInvocation),
				ToolCalls: []parley.ToolCall{{ID: "call_c", Name: "none", Arguments: parley.JSON(`{"a":[1,"<x>"]}`)}}},
			&parley.ToolRequestMessage{MessageMeta: meta(parley.RoleInvocation), Body: parley.TextBody(s),
				ToolCalls: []parley.ToolCall{{ID: "call_g", Name: "gemini", Arguments: parley.JSON(`{}`), ThoughtSignature: "sig" + s}}},
			&parley.ToolResultMessage{MessageMeta: meta(parley.RoleResult), ToolCallID: "call_" + s, Status: parley.ToolSuccess, Body: parley.TextBody(s)},
			&parley.ToolResultMessage{MessageMeta: meta(parley.RoleResult), ToolCallID: "call_i", Status: parley.ToolError,
				Body: parley.Body{Parts: []parley.Part{{Kind: parley.PartText, Text: s}, {Kind: parley.PartImage, Raw: parley.JSON(
					`{"type":"image","source":{"type":"url","url":"https://example.com/b.png"}}`)}}}},
			&parley.CompactionMessage{MessageMeta: meta(parley.RoleUser), Body: parley.TextBody("summary " + s)},
		)
	}
	f, err := os.Open("testdata/chat.json")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	imp, err := ParseChat(f)
	if err != nil {
		t.Fatal(err)
	}
	for _, im := range imp.Messages {
		msgs = append(msgs, im.Message)
	}
	return msgs
}

// TestChatDirectIsTheSDKs: the messages written directly are byte for byte what the
// SDK's params marshal to (with encoding/json's HTML escaping), for every shape and
// escape, and the corpus has shapes of both kinds.
func TestChatDirectIsTheSDKs(t *testing.T) {
	t.Parallel()
	out, _, err := chatMessages(directCorpus(t), "system <&> \u2028")
	if err != nil {
		t.Fatal(err)
	}
	direct, viaSDK := 0, 0
	for i := range out {
		if out[i].sdk != nil {
			viaSDK++
		} else {
			direct++
		}
		got, err := out[i].appendJSON(nil, false)
		if err != nil {
			t.Fatal(err)
		}
		want, err := out[i].appendJSON(nil, true)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("message %d:\ngot  %s\nwant %s", i, got, want)
		}
	}
	if direct == 0 || viaSDK == 0 {
		t.Errorf("the corpus has %d messages written directly and %d by the SDK: it needs both", direct, viaSDK)
	}
}
