package parley_test

import (
	"strings"
	"testing"

	"github.com/parley-dev/parley"
)

// TestPrepareArguments: arguments given as produced are kept byte for byte, flagged
// invalid (with {} as the parsed form) when they are not a JSON object, and refused
// only when they cannot be stored; arguments given as JSON must still be an object.
func TestPrepareArguments(t *testing.T) {
	t.Parallel()
	raw := func(s string) *string { return &s }
	tests := []struct {
		name        string
		call        parley.ToolCall
		code        string // "" when accepted
		wantArgs    string
		wantInvalid bool
	}{
		{"raw object keeps its spelling", parley.ToolCall{ArgumentsRaw: raw(`{"b":1e2, "a":-0}`)}, "", `{"b":1e2, "a":-0}`, false},
		{"raw truncated", parley.ToolCall{ArgumentsRaw: raw(`{"a":"x`)}, "", `{}`, true},
		{"raw empty", parley.ToolCall{ArgumentsRaw: raw(``)}, "", `{}`, true},
		{"raw array", parley.ToolCall{ArgumentsRaw: raw(`[1]`)}, "", `{}`, true},
		{"raw string", parley.ToolCall{ArgumentsRaw: raw(`"x"`)}, "", `{}`, true},
		{"raw and JSON both", parley.ToolCall{ArgumentsRaw: raw(`{}`), Arguments: parley.JSON(`{}`)}, parley.EINVALID, "", false},
		{"neither", parley.ToolCall{}, parley.EINVALID, "", false},
		{"raw NUL byte", parley.ToolCall{ArgumentsRaw: raw("{\"a\":\"\x00\"}")}, parley.EINVALID, "", false},
		{"raw invalid UTF-8", parley.ToolCall{ArgumentsRaw: raw("{\"a\":\"\xff\"}")}, parley.EINVALID, "", false},
		{"raw escaped NUL in an object", parley.ToolCall{ArgumentsRaw: raw(`{"a":"\u0000"}`)}, parley.EINVALID, "", false},
		{"raw over the limit", parley.ToolCall{ArgumentsRaw: raw(`{"a":"` + strings.Repeat("x", 1<<20) + `"}`)}, parley.EARGUMENTSTOOLARGE, "", false},
		{"raw too deep", parley.ToolCall{ArgumentsRaw: raw(`{"a":` + strings.Repeat("[", 200) + strings.Repeat("]", 200) + `}`)}, parley.EINVALID, "", false},
		{"JSON object", parley.ToolCall{Arguments: parley.JSON(`{"a":1}`)}, "", `{"a":1}`, false},
		{"JSON array", parley.ToolCall{Arguments: parley.JSON(`[1]`)}, parley.EINVALID, "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c := tt.call
			c.ID, c.Name = "call_1", "tool"
			m := &parley.ToolRequestMessage{ToolCalls: []parley.ToolCall{c}}
			err := parley.Prepare(m, parley.Limits{})
			if got := parley.ErrorCode(err); got != tt.code {
				t.Fatalf("got %q (%v), want %q", got, err, tt.code)
			}
			if err != nil {
				return
			}
			got := m.ToolCalls[0]
			if string(got.Arguments) != tt.wantArgs || got.ArgumentsInvalid != tt.wantInvalid {
				t.Errorf("got arguments %s invalid %v, want %s %v", got.Arguments, got.ArgumentsInvalid, tt.wantArgs, tt.wantInvalid)
			}
			if tt.call.ArgumentsRaw != nil && (got.ArgumentsRaw == nil || *got.ArgumentsRaw != *tt.call.ArgumentsRaw) {
				t.Errorf("argumentsRaw changed: %v", got.ArgumentsRaw)
			}
			if tt.call.ArgumentsRaw != nil && got.ArgumentsText() != *tt.call.ArgumentsRaw {
				t.Errorf("ArgumentsText %q, want %q", got.ArgumentsText(), *tt.call.ArgumentsRaw)
			}
		})
	}
}

// TestPrepareRedactedThinking: a REDACTED_THINKING part carries data and no text.
func TestPrepareRedactedThinking(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		part parley.Part
		code string
	}{
		{"data", parley.Part{Kind: parley.PartRedactedThinking, Signature: "EncRypted=="}, ""},
		{"no data", parley.Part{Kind: parley.PartRedactedThinking}, parley.EINVALID},
		{"text", parley.Part{Kind: parley.PartRedactedThinking, Text: "x", Signature: "d"}, parley.EINVALID},
		{"signed thinking with empty text", parley.Part{Kind: parley.PartThinking, Signature: "sig"}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			m := &parley.TextMessage{MessageMeta: parley.MessageMeta{Role: parley.RoleAssistant},
				Body: parley.Body{Parts: []parley.Part{tt.part, {Kind: parley.PartText, Text: "ok"}}}}
			if got := parley.ErrorCode(parley.Prepare(m, parley.Limits{})); got != tt.code {
				t.Errorf("got %q, want %q", got, tt.code)
			}
		})
	}
}
