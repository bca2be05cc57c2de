package anthropic_test

import (
	"encoding/json"
	"testing"

	sdk "github.com/anthropics/anthropic-sdk-go"

	"github.com/parley-dev/parley"
	"github.com/parley-dev/parley/interop/anthropic"
)

const png = "iVBORw0KGgoAAAANSUhEUgAAAAIAAAACCAIAAAD91JpzAAAAEElEQVR4nGP4z8AARAwQCgAf7gP9i18U1AAAAABJRU5ErkJggg=="

// TestExportIsWhatTheSDKTakes decodes the export into the SDK's request types: turns
// alternate, each block lands in the variant it was meant as (thinking first, tool
// results first in their user turn), and the SDK encodes it back the same.
func TestExportIsWhatTheSDKTakes(t *testing.T) {
	meta := func(r parley.Role) parley.MessageMeta { return parley.MessageMeta{Role: r} }
	msgs := []parley.Message{
		&parley.TextMessage{MessageMeta: meta(parley.RoleUser), Body: parley.TextBody("Read a.txt")},
		&parley.ImageMessage{MessageMeta: meta(parley.RoleUser), Source: parley.ImageSource{Kind: parley.ImageBase64, Data: png, MediaType: "image/png"}},
		&parley.TextMessage{MessageMeta: meta(parley.RoleSupervisor), Body: parley.TextBody("Be brief.")},
		&parley.TextMessage{MessageMeta: meta(parley.RoleAssistant), Body: parley.TextBody("Sure.")},
		&parley.ToolRequestMessage{MessageMeta: meta(parley.RoleInvocation),
			Body:      parley.Body{Parts: []parley.Part{{Kind: parley.PartThinking, Text: "read it", Signature: "sig"}, {Kind: parley.PartThinking, Text: "unsigned"}}},
			ToolCalls: []parley.ToolCall{{ID: "toolu_1", Name: "read", Arguments: parley.JSON(`{"path":"a.txt"}`)}}},
		&parley.ToolResultMessage{MessageMeta: meta(parley.RoleResult), ToolCallID: "toolu_1", Status: parley.ToolError,
			Body: parley.TextBody("no such file"), Error: &parley.ToolErrorDetail{Message: "no such file"}},
		&parley.FileReferenceMessage{MessageMeta: meta(parley.RoleDocument), Path: "b.txt",
			Resolution: &parley.FileResolution{Status: parley.ProcessingCompleted, Content: "beta"}},
		&parley.TextMessage{MessageMeta: meta(parley.RoleAssistant), Body: parley.TextBody("a.txt is missing; b.txt says beta.")},
	}
	out, notes, err := anthropic.Export(msgs, "You are helpful.")
	if err != nil {
		t.Fatal(err)
	}
	var body struct {
		System   []sdk.TextBlockParam `json:"system"`
		Messages []sdk.MessageParam   `json:"messages"`
	}
	if err := json.Unmarshal(out, &body); err != nil {
		t.Fatalf("the SDK cannot read the export: %v\n%s", err, out)
	}
	// The SUPERVISOR text after the first turn stays where it is, as user-side text.
	if len(body.System) != 1 || body.System[0].Text != "You are helpful." {
		t.Errorf("system: got %+v", body.System)
	}
	var shape []string
	for _, m := range body.Messages {
		s := string(m.Role) + ":"
		for _, b := range m.Content {
			switch {
			case b.OfText != nil:
				s += " text"
			case b.OfImage != nil:
				s += " image"
			case b.OfThinking != nil:
				s += " thinking"
			case b.OfToolUse != nil:
				s += " tool_use"
			case b.OfToolResult != nil:
				s += " tool_result"
				if !b.OfToolResult.IsError.Value {
					s += "(not an error!)"
				}
			default:
				s += " other"
			}
		}
		shape = append(shape, s)
	}
	want := `["user: text image text","assistant: thinking text tool_use","user: tool_result text","assistant: text"]`
	if got, _ := json.Marshal(shape); string(got) != want {
		t.Errorf("turns: got %s, want %s", got, want)
	}
	again, err := json.Marshal(body)
	if err != nil || !sameJSON(again, out) {
		t.Errorf("re-encoded by the SDK:\n%s\nwant\n%s", again, out)
	}
	if len(notes) != 1 {
		t.Errorf("notes: got %q, want the unsigned thinking left out", notes)
	}
}

func sameJSON(a, b []byte) bool {
	var va, vb any
	if json.Unmarshal(a, &va) != nil || json.Unmarshal(b, &vb) != nil {
		return false
	}
	x, _ := json.Marshal(va)
	y, _ := json.Marshal(vb)
	return string(x) == string(y)
}
