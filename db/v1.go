package db

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/parley-dev/parley"
)

// Schema version 1 is the flat record of seeds 000 and 001: role user, assistant or tool,
// content (sanitized, HTML-escaped), tool_calls on assistant records and, on tool records,
// the tool_call_id (in the payload, or on the tool_results entry) with tool_results. It is
// read as the typed variant it means (seeds/README.md, "Version migration"):
// user -> TextMessage USER; assistant -> TextMessage ASSISTANT, or ToolRequestMessage when
// it carries tool calls; tool -> ToolResultMessage. Missing fields take their defaults.

// v1ToolCall accepts both the OpenAI shape ({id, type, function: {name, arguments}},
// arguments being a JSON string) and a flat one ({id, name, arguments}).
type v1ToolCall struct {
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments"`
	Function  *struct {
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
	} `json:"function"`
}

type v1ToolResult struct {
	ToolCallID string          `json:"tool_call_id"`
	Output     json.RawMessage `json:"output"`
	Result     json.RawMessage `json:"result"`
	Content    json.RawMessage `json:"content"`
	IsError    bool            `json:"is_error"`
	Error      string          `json:"error"`
}

type v1Payload struct {
	ToolCallID string `json:"tool_call_id"`
}

func decodeV1(row *messageRow, meta parley.MessageMeta) (parley.Message, error) {
	text := parley.UnescapeHTML(row.Content)
	var payload v1Payload
	if len(row.Payload) > 0 {
		if err := json.Unmarshal(row.Payload, &payload); err != nil {
			return nil, fmt.Errorf("decode v1 message %s payload: %w", row.ID, err)
		}
	}
	switch row.Role {
	case "user":
		meta.Role = parley.RoleUser
		return &parley.TextMessage{MessageMeta: meta, Body: parley.TextBody(text)}, nil
	case "assistant":
		var calls []v1ToolCall
		if len(row.ToolCalls) > 0 {
			if err := json.Unmarshal(row.ToolCalls, &calls); err != nil {
				return nil, fmt.Errorf("decode v1 message %s tool_calls: %w", row.ID, err)
			}
		}
		if len(calls) == 0 {
			meta.Role = parley.RoleAssistant
			return &parley.TextMessage{MessageMeta: meta, Body: parley.TextBody(text)}, nil
		}
		meta.Role = parley.RoleInvocation
		m := &parley.ToolRequestMessage{MessageMeta: meta, Body: parley.TextBody(text)}
		for _, c := range calls {
			name, args := c.Name, c.Arguments
			if c.Function != nil {
				name, args = c.Function.Name, c.Function.Arguments
			}
			m.ToolCalls = append(m.ToolCalls, parley.ToolCall{
				ID: c.ID, Name: name, Arguments: v1Arguments(args), ApprovalStatus: parley.ApprovalPending,
			})
		}
		return m, nil
	case "tool":
		meta.Role = parley.RoleResult
		m := &parley.ToolResultMessage{MessageMeta: meta, Body: parley.TextBody(text), Status: parley.ToolSuccess,
			ToolCallID: payload.ToolCallID}
		var results []v1ToolResult
		if len(row.ToolResults) > 0 {
			if err := json.Unmarshal(row.ToolResults, &results); err != nil {
				// A single object instead of a list.
				var one v1ToolResult
				if err2 := json.Unmarshal(row.ToolResults, &one); err2 != nil {
					return nil, fmt.Errorf("decode v1 message %s tool_results: %w", row.ID, err)
				}
				results = []v1ToolResult{one}
			}
		}
		if len(results) > 0 {
			r := results[0]
			if m.ToolCallID == "" {
				m.ToolCallID = r.ToolCallID
			}
			for _, out := range []json.RawMessage{r.Output, r.Result, r.Content} {
				if len(out) > 0 {
					m.Output = parley.JSON(out)
					break
				}
			}
			if r.IsError || r.Error != "" {
				m.Status = parley.ToolError
				msg := r.Error
				if msg == "" {
					msg = text
				}
				m.Error = &parley.ToolErrorDetail{Message: msg}
			}
		}
		return m, nil
	}
	return nil, fmt.Errorf("decode v1 message %s: unknown role %q", row.ID, row.Role)
}

// v1Arguments turns OpenAI's string-encoded arguments into the object they encode.
func v1Arguments(raw json.RawMessage) parley.JSON {
	var s string
	if len(raw) > 0 && raw[0] == '"' && json.Unmarshal(raw, &s) == nil && json.Valid([]byte(s)) {
		raw = json.RawMessage(s)
	}
	if len(strings.TrimSpace(string(raw))) == 0 {
		return parley.JSON("{}")
	}
	return parley.JSON(raw)
}
