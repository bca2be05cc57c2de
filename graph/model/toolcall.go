package model

import "github.com/parley-dev/parley"

// ToolCall is a tool call as the schema shows it: the stored call and the public id of
// the tool request message holding it, which together make its globally unique id (a
// call's own id is unique within its conversation only, and normalized caches that key
// objects by id merged calls of different conversations).
type ToolCall struct {
	Call      *parley.ToolCall
	MessageID string
}

// ToolCalls wraps the calls of a tool request message.
func ToolCalls(m *parley.ToolRequestMessage) []*ToolCall {
	out := make([]*ToolCall, len(m.ToolCalls))
	for i := range m.ToolCalls {
		out[i] = &ToolCall{Call: &m.ToolCalls[i], MessageID: m.ID}
	}
	return out
}

// ID is the call's globally unique id (parley.ToolCallID).
func (c *ToolCall) ID() string { return parley.ToolCallID(c.MessageID, c.Call.ID) }

// CallID is the id the provider gave the call.
func (c *ToolCall) CallID() string { return c.Call.ID }

// Name is the tool's name.
func (c *ToolCall) Name() string { return c.Call.Name }

// Arguments are the call's arguments.
func (c *ToolCall) Arguments() parley.JSON { return c.Call.Arguments }

// ArgumentsRaw is the arguments as the model produced them, nil when given as JSON only.
func (c *ToolCall) ArgumentsRaw() *string { return c.Call.ArgumentsRaw }

// ArgumentsValid says the arguments are a JSON object.
func (c *ToolCall) ArgumentsValid() bool { return !c.Call.ArgumentsInvalid }

// PartIndex is where the call came among its message's parts, nil after all of them.
func (c *ToolCall) PartIndex() *int { return c.Call.PartIndex }

// ItemID is the provider's id of the item that made the call, nil when none.
func (c *ToolCall) ItemID() *string {
	if c.Call.ItemID == "" {
		return nil
	}
	return &c.Call.ItemID
}

// ThoughtSignature is Gemini's thought signature for the call, nil when none.
func (c *ToolCall) ThoughtSignature() *string {
	if c.Call.ThoughtSignature == "" {
		return nil
	}
	return &c.Call.ThoughtSignature
}

// ApprovalStatus is where the call stands.
func (c *ToolCall) ApprovalStatus() parley.ApprovalStatus { return c.Call.ApprovalStatus }

// Decision is who decided the call, nil while it is pending.
func (c *ToolCall) Decision() *parley.ApprovalDecision { return c.Call.Decision }

// Imported says the call came with an import and was not decided here since.
func (c *ToolCall) Imported() bool { return c.Call.Imported }
