package openai_test

import (
	"encoding/json"
	"testing"

	sdk "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/responses"

	"github.com/parley-dev/parley"
	"github.com/parley-dev/parley/interop/openai"
)

const png = "iVBORw0KGgoAAAANSUhEUgAAAAIAAAACCAIAAAD91JpzAAAAEElEQVR4nGP4z8AARAwQCgAf7gP9i18U1AAAAABJRU5ErkJggg=="

// history has one message of each kind the exporters take.
func history() []parley.Message {
	meta := func(r parley.Role) parley.MessageMeta { return parley.MessageMeta{Role: r} }
	return []parley.Message{
		&parley.TextMessage{MessageMeta: meta(parley.RoleSupervisor), Body: parley.TextBody("Be brief.")},
		&parley.TextMessage{MessageMeta: meta(parley.RoleUser), Body: parley.TextBody("What is in the file?")},
		&parley.ImageMessage{MessageMeta: meta(parley.RoleUser), Source: parley.ImageSource{Kind: parley.ImageBase64, Data: png, MediaType: "image/png"}},
		&parley.MCPResourceMessage{MessageMeta: meta(parley.RoleDocument), ServerName: "fs", ResourceURI: "file:///a.txt", Body: parley.TextBody("alpha")},
		&parley.ToolRequestMessage{MessageMeta: meta(parley.RoleInvocation),
			Body:      parley.Body{Parts: []parley.Part{{Kind: parley.PartThinking, Text: "read it", Signature: "s"}, {Kind: parley.PartText, Text: "Reading."}}},
			ToolCalls: []parley.ToolCall{{ID: "call_1", Name: "read", Arguments: parley.JSON(`{"path": "a.txt"}`)}}},
		&parley.ToolResultMessage{MessageMeta: meta(parley.RoleResult), ToolCallID: "call_1", Status: parley.ToolSuccess, Body: parley.TextBody("alpha")},
		&parley.TextMessage{MessageMeta: meta(parley.RoleAssistant), Body: parley.TextBody("It says alpha.")},
	}
}

// TestExportChatIsWhatTheSDKTakes decodes the export into the SDK's request types:
// every message must land in the variant it was meant as, and encode back the same.
func TestExportChatIsWhatTheSDKTakes(t *testing.T) {
	out, notes, err := openai.ExportChat(history(), "You are helpful.")
	if err != nil {
		t.Fatal(err)
	}
	var msgs []sdk.ChatCompletionMessageParamUnion
	if err := json.Unmarshal(out, &msgs); err != nil {
		t.Fatalf("the SDK cannot read the export: %v\n%s", err, out)
	}
	checks := []func(m sdk.ChatCompletionMessageParamUnion) bool{
		func(m sdk.ChatCompletionMessageParamUnion) bool { return m.OfSystem != nil },
		func(m sdk.ChatCompletionMessageParamUnion) bool { return m.OfSystem != nil },
		func(m sdk.ChatCompletionMessageParamUnion) bool { return m.OfUser != nil },
		func(m sdk.ChatCompletionMessageParamUnion) bool {
			return m.OfUser != nil && len(m.OfUser.Content.OfArrayOfContentParts) == 1 && m.OfUser.Content.OfArrayOfContentParts[0].OfImageURL != nil
		},
		func(m sdk.ChatCompletionMessageParamUnion) bool { return m.OfUser != nil },
		func(m sdk.ChatCompletionMessageParamUnion) bool {
			return m.OfAssistant != nil && len(m.OfAssistant.ToolCalls) == 1 &&
				m.OfAssistant.ToolCalls[0].OfFunction.Function.Arguments == `{"path":"a.txt"}`
		},
		func(m sdk.ChatCompletionMessageParamUnion) bool {
			return m.OfTool != nil && m.OfTool.ToolCallID == "call_1"
		},
		func(m sdk.ChatCompletionMessageParamUnion) bool { return m.OfAssistant != nil },
	}
	if len(msgs) != len(checks) {
		t.Fatalf("got %d messages, want %d:\n%s", len(msgs), len(checks), out)
	}
	for i, ok := range checks {
		if !ok(msgs[i]) {
			raw, _ := json.Marshal(msgs[i])
			t.Errorf("message %d is not what it should be: %s", i, raw)
		}
	}
	again, err := json.Marshal(msgs)
	if err != nil || string(again) != string(out) {
		t.Errorf("re-encoded by the SDK:\n%s\nwant\n%s", again, out)
	}
	if len(notes) != 1 {
		t.Errorf("notes: got %q, want the thinking left out", notes)
	}
}

// TestExportResponsesIsWhatTheSDKTakes does the same for Responses input items.
func TestExportResponsesIsWhatTheSDKTakes(t *testing.T) {
	out, _, err := openai.ExportResponses(history(), "You are helpful.")
	if err != nil {
		t.Fatal(err)
	}
	var items []responses.ResponseInputItemUnionParam
	if err := json.Unmarshal(out, &items); err != nil {
		t.Fatalf("the SDK cannot read the export: %v\n%s", err, out)
	}
	var kinds []string
	for _, it := range items {
		switch {
		case it.OfMessage != nil:
			kinds = append(kinds, "message:"+string(it.OfMessage.Role))
		case it.OfFunctionCall != nil:
			kinds = append(kinds, "function_call:"+it.OfFunctionCall.CallID)
		case it.OfFunctionCallOutput != nil:
			kinds = append(kinds, "function_call_output:"+it.OfFunctionCallOutput.CallID)
		default:
			raw, _ := json.Marshal(it)
			kinds = append(kinds, "other:"+string(raw))
		}
	}
	want := "[message:developer message:developer message:user message:user message:user message:assistant function_call:call_1 function_call_output:call_1 message:assistant]"
	if got := jsonString(kinds); got != want {
		t.Errorf("items: got %s, want %s", got, want)
	}
	again, err := json.Marshal(items)
	if err != nil || string(again) != string(out) {
		t.Errorf("re-encoded by the SDK:\n%s\nwant\n%s", again, out)
	}
}

func jsonString(s []string) string {
	out := "["
	for i, e := range s {
		if i > 0 {
			out += " "
		}
		out += e
	}
	return out + "]"
}
