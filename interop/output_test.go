package interop_test

import (
	"encoding/base64"
	"encoding/json"
	"strconv"
	"strings"
	"testing"

	anthropicsdk "github.com/anthropics/anthropic-sdk-go"
	openaisdk "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/responses"

	"github.com/parley-dev/parley/internal/testserver"
	"github.com/parley-dev/parley/internal/textimage"
)

// rawOutput is a JSON tool output whose key order, spacing and number spelling jsonb
// would change.
const rawOutput = "{\"z\": 1,  \"a\": 1e2, \"n\": -0, \"s\": \"\\u00e9\"}"

// exportedOutputs exports conv to each provider format, decoding each with the official
// SDK, and returns the tool output text each sends for the one call.
func exportedOutputs(t *testing.T, srv *testserver.Server, conv string) map[string]string {
	t.Helper()
	got := make(map[string]string)
	chat, _ := transcript(t, srv, conv, "OPENAI_CHAT", transcriptOpts{})
	var chatMsgs []openaisdk.ChatCompletionMessageParamUnion
	if err := json.Unmarshal(chat, &chatMsgs); err != nil {
		t.Fatalf("the SDK cannot read the chat export: %v", err)
	}
	for _, m := range chatMsgs {
		if m.OfTool != nil {
			got["OPENAI_CHAT"] = m.OfTool.Content.OfString.Value
		}
	}
	resp, _ := transcript(t, srv, conv, "OPENAI_RESPONSES", transcriptOpts{})
	var items []responses.ResponseInputItemUnionParam
	if err := json.Unmarshal(resp, &items); err != nil {
		t.Fatalf("the SDK cannot read the responses export: %v", err)
	}
	for _, it := range items {
		if it.OfFunctionCallOutput != nil {
			got["OPENAI_RESPONSES"] = it.OfFunctionCallOutput.Output.OfString.Value
		}
	}
	msgs, _ := transcript(t, srv, conv, "ANTHROPIC_MESSAGES", transcriptOpts{})
	var body struct{ Messages []anthropicsdk.MessageParam }
	if err := json.Unmarshal(msgs, &body); err != nil {
		t.Fatalf("the SDK cannot read the messages export: %v", err)
	}
	for _, m := range body.Messages {
		for _, b := range m.Content {
			if r := b.OfToolResult; r != nil {
				for _, c := range r.Content {
					if c.OfText != nil {
						got["ANTHROPIC_MESSAGES"] += c.OfText.Text
					}
				}
			}
		}
	}
	return got
}

// TestOutputRawThroughAddMessage stores a JSON tool output as given through addMessage,
// reads it back, exports its bytes to every provider, and refuses what is not JSON or
// gives both forms.
func TestOutputRawThroughAddMessage(t *testing.T) {
	t.Parallel()
	srv := testserver.New(t)
	conv := createConversation(t, srv)
	add := func(in map[string]any) *testserver.Response {
		return srv.Do(t, `mutation($c: ID!, $in: MessageInput!) { addMessage(conversationId: $c, input: $in) { cursor } }`,
			map[string]any{"c": conv, "in": in})
	}
	for _, in := range []map[string]any{
		{"text": map[string]any{"role": "USER", "content": "Look."}},
		{"toolRequest": map[string]any{"toolCalls": []any{map[string]any{"id": "c1", "name": "t", "argumentsRaw": "{}"}}}},
	} {
		if r := add(in); len(r.Errors) != 0 {
			t.Fatalf("add %v: %+v", in, r.Errors)
		}
	}
	for _, tc := range []struct {
		name   string
		result map[string]any
	}{
		{"both forms", map[string]any{"output": map[string]any{"a": 1}, "outputRaw": "{}"}},
		{"not JSON", map[string]any{"outputRaw": `{"a":`}},
	} {
		tc.result["toolCallId"], tc.result["status"] = "c1", "SUCCESS"
		if r := add(map[string]any{"toolResult": tc.result}); len(r.Errors) == 0 || r.ErrorCode(t) != "BAD_USER_INPUT" {
			t.Errorf("%s: got errors %+v, want BAD_USER_INPUT", tc.name, r.Errors)
		}
	}
	if r := add(map[string]any{"toolResult": map[string]any{"toolCallId": "c1", "status": "SUCCESS", "outputRaw": rawOutput}}); len(r.Errors) != 0 {
		t.Fatalf("raw output refused: %+v", r.Errors)
	}

	var out struct {
		Conversation struct {
			Messages struct {
				Edges []struct {
					Node struct {
						Output    json.RawMessage
						OutputRaw *string
					}
				}
			}
		}
	}
	srv.MustDo(t, `query($id: ID!) { conversation(id: $id) { messages(first: 10) { edges { node {
		... on ToolResultMessage { output outputRaw } } } } } }`, map[string]any{"id": conv}, &out)
	edges := out.Conversation.Messages.Edges
	if len(edges) != 3 {
		t.Fatalf("stored %d messages, want 3 (the refused results left nothing)", len(edges))
	}
	res := edges[2].Node
	if res.OutputRaw == nil || *res.OutputRaw != rawOutput {
		t.Errorf("outputRaw %v, want %q", res.OutputRaw, rawOutput)
	}
	// output is the raw text parsed (the response compacts it), not jsonb's normal form.
	if want := `{"z":1,"a":1e2,"n":-0,"s":"\u00e9"}`; string(res.Output) != want {
		t.Errorf("output %s, want %s", res.Output, want)
	}
	for format, got := range exportedOutputs(t, srv, conv) {
		if got != rawOutput {
			t.Errorf("%s: tool output %q, want %q", format, got, rawOutput)
		}
	}

	// Parley's own export carries it too: imported elsewhere, it exports the same.
	lossless, _ := transcript(t, srv, conv, "PARLEY_JSON", transcriptOpts{})
	other := testserver.New(t)
	rep := importData(t, other, "PARLEY_JSON", string(lossless), "", "")
	if got := exportedOutputs(t, other, rep.Conversation.ID)["OPENAI_CHAT"]; got != rawOutput {
		t.Errorf("after PARLEY_JSON: tool output %q, want %q", got, rawOutput)
	}
}

// TestImportedJSONOutputKept imports a JSON tool output from each provider format and
// exports it back to the same format byte for byte: imports keep tool output text as a
// string, never through jsonb.
func TestImportedJSONOutputKept(t *testing.T) {
	t.Parallel()
	quoted, err := json.Marshal(rawOutput)
	if err != nil {
		t.Fatal(err)
	}
	q := string(quoted)
	for _, tc := range []struct{ format, data string }{
		{"OPENAI_CHAT", `[{"role":"user","content":"Go."},
			{"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"t","arguments":"{}"}}]},
			{"role":"tool","tool_call_id":"call_1","content":` + q + `}]`},
		{"OPENAI_RESPONSES", `[{"type":"message","role":"user","content":"Go."},
			{"type":"function_call","call_id":"call_1","name":"t","arguments":"{}"},
			{"type":"function_call_output","call_id":"call_1","output":` + q + `}]`},
		{"ANTHROPIC_MESSAGES", `{"messages":[{"role":"user","content":"Go."},
			{"role":"assistant","content":[{"type":"tool_use","id":"toolu_1","name":"t","input":{}}]},
			{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":` + q + `}]}]}`},
	} {
		t.Run(tc.format, func(t *testing.T) {
			t.Parallel()
			srv := testserver.New(t)
			rep := importData(t, srv, tc.format, tc.data, "", "")
			if got := exportedOutputs(t, srv, rep.Conversation.ID)[tc.format]; got != rawOutput {
				t.Errorf("%s: tool output %q, want %q", tc.format, got, rawOutput)
			}
		})
	}
}

// TestToolResultImagesStayInside imports Anthropic tool results with images among their
// text and keeps them there: stored as IMAGE parts of the result (no image message),
// exported inside the tool_result for Anthropic in order, and for OpenAI, whose tool
// messages take only text, as one user message after the run of tool messages.
func TestToolResultImagesStayInside(t *testing.T) {
	t.Parallel()
	png := base64.StdEncoding.EncodeToString(textimage.PNG("chart"))
	image := `{"type":"image","source":{"type":"base64","media_type":"image/png","data":"` + png + `"}}`
	history := `{"messages":[{"role":"user","content":"Plot both."},
		{"role":"assistant","content":[{"type":"tool_use","id":"toolu_1","name":"plot","input":{}},{"type":"tool_use","id":"toolu_2","name":"plot","input":{}}]},
		{"role":"user","content":[
			{"type":"tool_result","tool_use_id":"toolu_1","content":[{"type":"text","text":"before"},` + image + `,{"type":"text","text":"after"}]},
			{"type":"tool_result","tool_use_id":"toolu_2","content":[{"type":"image","source":{"type":"url","url":"https://example.com/b.png"}}]}]},
		{"role":"assistant","content":"Done."}]}`
	srv := testserver.New(t)
	rep := importData(t, srv, "ANTHROPIC_MESSAGES", history, "", "")
	if v := rep.variants(); v["ImageMessage"] != 0 || v["ToolResultMessage"] != 2 {
		t.Fatalf("added %v, want 2 tool results and no image message", v)
	}
	conv := rep.Conversation.ID

	var out struct {
		Conversation struct {
			Messages struct {
				Edges []struct {
					Node struct {
						ToolCallID string
						Text       string
						Parts      []struct{ Kind string }
					}
				}
			}
		}
	}
	srv.MustDo(t, `query($id: ID!) { conversation(id: $id) { messages(first: 10) { edges { node {
		... on ToolResultMessage { toolCallId text parts { kind } } } } } } }`, map[string]any{"id": conv}, &out)
	kinds := make(map[string]string)
	for _, e := range out.Conversation.Messages.Edges {
		if e.Node.ToolCallID == "" {
			continue
		}
		var ks []string
		for _, p := range e.Node.Parts {
			ks = append(ks, p.Kind)
		}
		kinds[e.Node.ToolCallID] = strings.Join(ks, ",")
		if e.Node.ToolCallID == "toolu_1" && e.Node.Text != "before\n\nafter" {
			t.Errorf("toolu_1 text %q, want %q", e.Node.Text, "before\n\nafter")
		}
	}
	if got, want := kinds["toolu_1"], "TEXT,IMAGE,TEXT"; got != want {
		t.Errorf("toolu_1 parts %s, want %s", got, want)
	}
	if got, want := kinds["toolu_2"], "IMAGE"; got != want {
		t.Errorf("toolu_2 parts %s, want %s", got, want)
	}

	msgs, _ := transcript(t, srv, conv, "ANTHROPIC_MESSAGES", transcriptOpts{})
	got := anthropicResultContent(t, msgs, png)
	want := []string{"toolu_1:before", "toolu_1:base64 image/png true", "toolu_1:after", "toolu_2:url https://example.com/b.png"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("tool_result content %q, want %q", got, want)
	}

	chat, rep2 := transcript(t, srv, conv, "OPENAI_CHAT", transcriptOpts{})
	var chatMsgs []openaisdk.ChatCompletionMessageParamUnion
	if err := json.Unmarshal(chat, &chatMsgs); err != nil {
		t.Fatalf("the SDK cannot read the chat export: %v", err)
	}
	var shape []string
	for _, m := range chatMsgs {
		switch {
		case m.OfTool != nil:
			shape = append(shape, "tool")
		case m.OfUser != nil && len(m.OfUser.Content.OfArrayOfContentParts) > 0:
			var urls []string
			for _, p := range m.OfUser.Content.OfArrayOfContentParts {
				if p.OfImageURL != nil {
					urls = append(urls, p.OfImageURL.ImageURL.URL)
				}
			}
			shape = append(shape, "user images "+strings.Join(urls, " "))
		case m.OfUser != nil:
			shape = append(shape, "user")
		case m.OfAssistant != nil:
			shape = append(shape, "assistant")
		}
	}
	wantShape := []string{"user", "assistant", "tool", "tool", "user images data:image/png;base64," + png + " https://example.com/b.png", "assistant"}
	if strings.Join(shape, "|") != strings.Join(wantShape, "|") {
		t.Errorf("chat export %q, want %q", shape, wantShape)
	}
	if !containsPrefix(rep2.Notes, "images in tool results") {
		t.Errorf("notes %q, want one saying where the tool results' images went", rep2.Notes)
	}

	// The Responses API takes images in a function_call_output (an array of input_text
	// and input_image items): they go there, in order, and nowhere else.
	resp, rep3 := transcript(t, srv, conv, "OPENAI_RESPONSES", transcriptOpts{})
	outputs := responsesOutputs(t, resp)
	wantOutputs := []string{"toolu_1:text before", "toolu_1:image data:image/png;base64," + png, "toolu_1:text after", "toolu_2:image https://example.com/b.png"}
	if strings.Join(outputs, "|") != strings.Join(wantOutputs, "|") {
		t.Errorf("function_call_output content %q, want %q", outputs, wantOutputs)
	}
	if strings.Count(string(resp), png) != 1 || containsPrefix(rep3.Notes, "images in tool results") {
		t.Errorf("the image is sent %d times (notes %q); want once, inside the output, and no note", strings.Count(string(resp), png), rep3.Notes)
	}

	// A Responses history with such outputs imports them as IMAGE parts, and exports
	// them back as they came.
	other := testserver.New(t)
	back := importData(t, other, "OPENAI_RESPONSES", string(resp), "", "")
	if v := back.variants(); v["ImageMessage"] != 0 || v["ToolResultMessage"] != 2 || len(back.Warnings) != 0 {
		t.Fatalf("re-import added %v, warnings %q; want 2 tool results, no image message, no warning", v, back.Warnings)
	}
	again, _ := transcript(t, other, back.Conversation.ID, "OPENAI_RESPONSES", transcriptOpts{})
	if got := responsesOutputs(t, again); strings.Join(got, "|") != strings.Join(wantOutputs, "|") {
		t.Errorf("after a re-import: function_call_output content %q, want %q", got, wantOutputs)
	}
	if msgs, _ := transcript(t, other, back.Conversation.ID, "ANTHROPIC_MESSAGES", transcriptOpts{}); strings.Join(anthropicResultContent(t, msgs, png), "|") != strings.Join(want, "|") {
		t.Errorf("after a re-import: tool_result content %q, want %q", anthropicResultContent(t, msgs, png), want)
	}
}

// responsesOutputs reads an OPENAI_RESPONSES export with the SDK's types and returns
// each function_call_output's items in order: "call:text T" or "call:image URL" ("call:T"
// for a string output).
func responsesOutputs(t *testing.T, export json.RawMessage) []string {
	t.Helper()
	var items []responses.ResponseInputItemUnionParam
	if err := json.Unmarshal(export, &items); err != nil {
		t.Fatalf("the SDK cannot read the responses export: %v", err)
	}
	var got []string
	for _, it := range items {
		o := it.OfFunctionCallOutput
		if o == nil {
			continue
		}
		if o.Output.OfString.Valid() {
			got = append(got, o.CallID+":"+o.Output.OfString.Value)
			continue
		}
		for _, c := range o.Output.OfResponseFunctionCallOutputItemArray {
			switch {
			case c.OfInputText != nil:
				got = append(got, o.CallID+":text "+c.OfInputText.Text)
			case c.OfInputImage != nil:
				got = append(got, o.CallID+":image "+c.OfInputImage.ImageURL.Value)
			default:
				got = append(got, o.CallID+":unexpected")
			}
		}
	}
	return got
}

// anthropicResultContent reads an ANTHROPIC_MESSAGES export with the SDK and returns
// what each tool_result holds, in order: "id:text", "id:base64 MEDIA_TYPE IS_PNG" (is
// its data png) or "id:url URL".
func anthropicResultContent(t *testing.T, export json.RawMessage, png string) []string {
	t.Helper()
	var body struct{ Messages []anthropicsdk.MessageParam }
	if err := json.Unmarshal(export, &body); err != nil {
		t.Fatalf("the SDK cannot read the messages export: %v", err)
	}
	var got []string
	for _, m := range body.Messages {
		for _, b := range m.Content {
			if r := b.OfToolResult; r != nil {
				for _, c := range r.Content {
					switch {
					case c.OfText != nil:
						got = append(got, r.ToolUseID+":"+c.OfText.Text)
					case c.OfImage != nil && c.OfImage.Source.OfBase64 != nil:
						got = append(got, r.ToolUseID+":base64 "+string(c.OfImage.Source.OfBase64.MediaType)+" "+strconv.FormatBool(c.OfImage.Source.OfBase64.Data == png))
					case c.OfImage != nil && c.OfImage.Source.OfURL != nil:
						got = append(got, r.ToolUseID+":url "+c.OfImage.Source.OfURL.URL)
					}
				}
			}
		}
	}
	return got
}
