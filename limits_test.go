package parley_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/parley-dev/parley"
)

// TestPrepareSizeLimits: Prepare refuses messages over the size limits with each
// limit's code, takes DefaultLimits for zero fields, and honours smaller limits.
func TestPrepareSizeLimits(t *testing.T) {
	t.Parallel()
	calls := func(n int, args string) []parley.ToolCall {
		out := make([]parley.ToolCall, n)
		for i := range out {
			out[i] = parley.ToolCall{ID: fmt.Sprint("c", i), Name: "t", Arguments: parley.JSON(args)}
		}
		return out
	}
	small := parley.Limits{MaxMessageTextBytes: 10, MaxToolCallsPerMessage: 2, MaxToolArgumentsBytes: 12}
	tests := []struct {
		name string
		m    parley.Message
		lim  parley.Limits
		code string // "" when accepted
	}{
		{"default text limit", &parley.TextMessage{MessageMeta: parley.MessageMeta{Role: parley.RoleUser}, Body: parley.TextBody(strings.Repeat("x", 1<<20))}, parley.Limits{}, ""},
		{"over the default text limit", &parley.TextMessage{MessageMeta: parley.MessageMeta{Role: parley.RoleUser}, Body: parley.TextBody(strings.Repeat("x", 1<<20+1))}, parley.Limits{}, parley.EMESSAGETOOLARGE},
		{"small text limit", &parley.TextMessage{MessageMeta: parley.MessageMeta{Role: parley.RoleUser}, Body: parley.TextBody("01234567890")}, small, parley.EMESSAGETOOLARGE},
		{"signature counts", &parley.TextMessage{MessageMeta: parley.MessageMeta{Role: parley.RoleAssistant}, Body: parley.Body{Parts: []parley.Part{
			{Kind: parley.PartThinking, Text: "hmm", Signature: "sig-sig-sig"}, {Kind: parley.PartText, Text: "ok"}}}}, small, parley.EMESSAGETOOLARGE},
		{"tool request text", &parley.ToolRequestMessage{Body: parley.TextBody("01234567890"), ToolCalls: calls(1, `{}`)}, small, parley.EMESSAGETOOLARGE},
		{"calls at the limit", &parley.ToolRequestMessage{ToolCalls: calls(2, `{}`)}, small, ""},
		{"too many calls", &parley.ToolRequestMessage{ToolCalls: calls(3, `{}`)}, small, parley.ETOOMANYTOOLCALLS},
		{"129 calls by default", &parley.ToolRequestMessage{ToolCalls: calls(129, `{}`)}, parley.Limits{}, parley.ETOOMANYTOOLCALLS},
		{"arguments at the limit", &parley.ToolRequestMessage{ToolCalls: calls(1, `{"a":"1234"}`)}, small, ""},
		{"arguments over the limit", &parley.ToolRequestMessage{ToolCalls: calls(1, `{"a":"12345"}`)}, small, parley.EARGUMENTSTOOLARGE},
		{"mcp resource text", &parley.MCPResourceMessage{ServerName: "s", ResourceURI: "file:///a", Body: parley.TextBody("01234567890")}, small, parley.EMESSAGETOOLARGE},
		{"unknown message", &parley.UnknownMessage{MessageMeta: parley.MessageMeta{Role: parley.RoleUser}, TypeTag: "x", Raw: parley.JSON(`{"a":"0123456789"}`)}, small, parley.EMESSAGETOOLARGE},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := parley.Prepare(tt.m, tt.lim)
			if got := parley.ErrorCode(err); got != tt.code {
				t.Errorf("got %q (%v), want %q", got, err, tt.code)
			}
		})
	}
}

// TestToolResultTextBudget: a tool result's parts share one truncation budget, so many
// parts of the maximum size each are cut to the maximum in all, and flagged.
func TestToolResultTextBudget(t *testing.T) {
	t.Parallel()
	parts := make([]parley.Part, 30)
	for i := range parts {
		parts[i] = parley.Part{Kind: parley.PartText, Text: strings.Repeat("x", 1<<20)}
	}
	m := &parley.ToolResultMessage{ToolCallID: "c", Status: parley.ToolSuccess, Body: parley.Body{Parts: parts}}
	if err := parley.Prepare(m, parley.Limits{}); err != nil {
		t.Fatal(err)
	}
	size := 0
	for _, p := range m.Parts {
		size += len(p.Text)
	}
	if size != 1<<20 || len(m.Parts) != 1 || !m.Truncated || m.OriginalSize == nil || *m.OriginalSize != 30<<20 {
		t.Errorf("got %d parts of %d bytes in all, truncated %v, original size %v; want 1 MiB in 1 part, truncated, from 30 MiB",
			len(m.Parts), size, m.Truncated, m.OriginalSize)
	}
}
