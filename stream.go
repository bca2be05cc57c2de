package parley

import (
	"bytes"
	"encoding/json"
	"strconv"
)

// The rules here say how a message that is still being written grows: by deltas, each
// extending one part or one tool call. The provider adapters (interop/openai,
// interop/anthropic) report deltas in these terms, and a store appends them by the same
// rule, so that a message rebuilt from its stored deltas is the message the provider's
// SDK assembled.

// DeltaKind names what a delta extends.
type DeltaKind string

// The delta kinds.
const (
	// DeltaText appends to the text of a TEXT part.
	DeltaText DeltaKind = "TEXT"
	// DeltaThinking appends to the text of a THINKING part.
	DeltaThinking DeltaKind = "THINKING"
	// DeltaSignature appends to the signature of a THINKING part.
	DeltaSignature DeltaKind = "SIGNATURE"
	// DeltaToolArguments appends to the arguments of a tool call, as the provider sends
	// them: JSON only once the call is complete.
	DeltaToolArguments DeltaKind = "TOOL_ARGUMENTS"
	// DeltaRedactedThinking appends to the encrypted data of a REDACTED_THINKING part
	// (its Signature). Anthropic sends it whole, in one delta.
	DeltaRedactedThinking DeltaKind = "REDACTED_THINKING"
	// DeltaServerTool appends to the block of a SERVER_TOOL part (its Raw), the
	// provider's JSON: an object once complete. Adapters send it whole, once the block
	// has ended.
	DeltaServerTool DeltaKind = "SERVER_TOOL"
	// DeltaCitation adds one citation, a JSON object, to a TEXT part's citations.
	DeltaCitation DeltaKind = "CITATION"
)

// DeltaKinds lists every delta kind.
var DeltaKinds = []DeltaKind{DeltaText, DeltaThinking, DeltaSignature, DeltaToolArguments, DeltaRedactedThinking, DeltaServerTool, DeltaCitation}

// Delta is one piece of a message being written. Index is the position of the part
// (Body.Parts) or, for DeltaToolArguments, of the tool call (ToolCalls) it extends; a
// delta whose Index is one past the last opens a new part or call, even with no Text
// (an empty thinking part that only carries a signature is opened so).
type Delta struct {
	Kind  DeltaKind
	Index int
	// Text is what is appended: text, thinking, signature or arguments.
	Text string
	// ToolCallID is the call's id: required on the delta that opens a call, and when
	// given later, the same id.
	ToolCallID string
	// ToolName is appended to the call's name; the delta that opens a call needs one.
	// Providers send the name whole on the opening delta.
	ToolName string
	// PartIndex, on the delta that opens a tool call, is how many of the message's
	// parts came before the call (ToolCall.PartIndex): at most the parts opened so far,
	// and not before the call ahead of it. Nil: the call comes after all the parts, as
	// in a format that cannot interleave them (OpenAI Chat). Given later, the same.
	PartIndex *int
	// ItemID, on the delta that opens a part or a tool call, is the provider's id of
	// the item it is (OpenAI Responses' rs_… or fc_…: Part.ItemID, ToolCall.ItemID).
	// Given later, the same.
	ItemID string
}

// Draft is the content of an assistant message while it is written: its parts and tool
// calls so far. The zero value is an empty draft.
type Draft struct {
	Body
	ToolCalls []ToolCall
	// textBytes and argBytes count what the draft holds, for CheckLimits, even once
	// Shape has dropped the text: its parts' text, thinking and signatures together,
	// and each call's arguments.
	textBytes int
	argBytes  []int
}

// Apply extends the draft by d. It returns EINVALID, naming what is wrong, for a delta
// that skips a part or call, does not fit the kind of the part it extends, opens a tool
// call without an id or name or out of order among the parts, or changes the id of a
// call or the item id of a part or call; the draft is then unchanged.
func (dr *Draft) Apply(d Delta) error {
	if d.ItemID != "" {
		if err := checkItemID("delta.itemId", d.ItemID); err != nil {
			return err
		}
	}
	if d.PartIndex != nil && d.Kind != DeltaToolArguments {
		return Errorf(EINVALID, "delta.partIndex: a %s delta has none; partIndex places a tool call (TOOL_ARGUMENTS) among the parts", d.Kind)
	}
	switch d.Kind {
	case DeltaText, DeltaThinking:
		kind := PartText
		if d.Kind == DeltaThinking {
			kind = PartThinking
		}
		switch {
		case d.Index == len(dr.Parts):
			dr.Parts = append(dr.Parts, Part{Kind: kind, Text: d.Text, ItemID: d.ItemID})
			dr.textBytes += len(d.Text)
			return nil
		case d.Index < 0 || d.Index > len(dr.Parts):
			return dr.noPart(d)
		case dr.Parts[d.Index].Kind != kind:
			return Errorf(EINVALID, "delta: a %s delta for part %d, a %s part", d.Kind, d.Index, dr.Parts[d.Index].Kind)
		}
		if err := dr.samePartItem(d); err != nil {
			return err
		}
		dr.Parts[d.Index].Text += d.Text
		dr.textBytes += len(d.Text)
	case DeltaSignature:
		if d.Index < 0 || d.Index >= len(dr.Parts) {
			return dr.noPart(d)
		}
		if k := dr.Parts[d.Index].Kind; k != PartThinking {
			return Errorf(EINVALID, "delta: a SIGNATURE delta for part %d, a %s part; only THINKING parts are signed", d.Index, k)
		}
		if err := dr.samePartItem(d); err != nil {
			return err
		}
		dr.Parts[d.Index].Signature += d.Text
		dr.textBytes += len(d.Text)
	case DeltaRedactedThinking, DeltaServerTool:
		kind := PartRedactedThinking
		if d.Kind == DeltaServerTool {
			kind = PartServerTool
		}
		switch {
		case d.Index == len(dr.Parts):
			dr.Parts = append(dr.Parts, Part{Kind: kind, ItemID: d.ItemID})
		case d.Index < 0 || d.Index > len(dr.Parts):
			return dr.noPart(d)
		case dr.Parts[d.Index].Kind != kind:
			return Errorf(EINVALID, "delta: a %s delta for part %d, a %s part", d.Kind, d.Index, dr.Parts[d.Index].Kind)
		default:
			if err := dr.samePartItem(d); err != nil {
				return err
			}
		}
		p := &dr.Parts[d.Index]
		if kind == PartServerTool {
			p.Raw = append(p.Raw, d.Text...)
		} else {
			p.Signature += d.Text
		}
		dr.textBytes += len(d.Text)
	case DeltaCitation:
		if d.Index < 0 || d.Index >= len(dr.Parts) {
			return Errorf(EINVALID, "delta: a CITATION delta for part %d, but the message has %d parts", d.Index, len(dr.Parts))
		}
		p := &dr.Parts[d.Index]
		if p.Kind != PartText {
			return Errorf(EINVALID, "delta: a CITATION delta for part %d, a %s part; only TEXT parts cite", d.Index, p.Kind)
		}
		if !JSON(d.Text).IsObject() || !json.Valid([]byte(d.Text)) {
			return Errorf(EINVALID, "delta.text: a CITATION delta's text is one citation, a JSON object")
		}
		if err := dr.samePartItem(d); err != nil {
			return err
		}
		if len(p.Citations) == 0 {
			p.Citations = JSON("[" + d.Text + "]")
		} else {
			p.Citations = append(append(p.Citations[:len(p.Citations)-1:len(p.Citations)-1], ","+d.Text...), ']')
		}
		dr.textBytes += len(d.Text)
	case DeltaToolArguments:
		return dr.applyToolArguments(d)
	default:
		return Errorf(EINVALID, "delta.kind: %q is not TEXT, THINKING, SIGNATURE, TOOL_ARGUMENTS, REDACTED_THINKING, SERVER_TOOL or CITATION", d.Kind)
	}
	return nil
}

// samePartItem refuses a delta for part d.Index that names another item than the part's.
func (dr *Draft) samePartItem(d Delta) error {
	if have := dr.Parts[d.Index].ItemID; d.ItemID != "" && d.ItemID != have {
		if have == "" {
			return Errorf(EINVALID, "delta.itemId: part %d opened without an item id; give it on the delta that opens the part", d.Index)
		}
		return Errorf(EINVALID, "delta.itemId: part %d is item %q, not %q", d.Index, have, truncateForError(d.ItemID))
	}
	return nil
}

func (dr *Draft) noPart(d Delta) error {
	if d.Kind == DeltaSignature {
		return Errorf(EINVALID, "delta: a SIGNATURE delta for part %d, but the message has %d parts", d.Index, len(dr.Parts))
	}
	return Errorf(EINVALID, "delta: a %s delta for part %d, but the message has %d parts; a new part is number %d",
		d.Kind, d.Index, len(dr.Parts), len(dr.Parts))
}

func (dr *Draft) applyToolArguments(d Delta) error {
	n := len(dr.ToolCalls)
	switch {
	case d.Index == n:
		if d.ToolCallID == "" {
			return Errorf(EINVALID, "delta: tool call %d opens without an id", d.Index)
		}
		if d.ToolName == "" {
			return Errorf(EINVALID, "delta: tool call %d (%s) opens without a name", d.Index, d.ToolCallID)
		}
		for i, c := range dr.ToolCalls {
			if c.ID == d.ToolCallID {
				return Errorf(EINVALID, "delta: tool call %d opens with id %q, already the id of tool call %d", d.Index, d.ToolCallID, i)
			}
		}
		var at *int
		if d.PartIndex != nil {
			if err := dr.checkPartIndex(d.Index, *d.PartIndex); err != nil {
				return err
			}
			at = new(int)
			*at = *d.PartIndex
		}
		dr.ToolCalls = append(dr.ToolCalls, ToolCall{ID: d.ToolCallID, Name: d.ToolName, Arguments: JSON(d.Text), ItemID: d.ItemID, PartIndex: at})
		dr.argBytes = append(dr.argBytes, len(d.Text))
		return nil
	case d.Index < 0 || d.Index > n:
		return Errorf(EINVALID, "delta: a TOOL_ARGUMENTS delta for tool call %d, but the message has %d calls; a new call is number %d",
			d.Index, n, n)
	}
	c := &dr.ToolCalls[d.Index]
	if d.ToolCallID != "" && d.ToolCallID != c.ID {
		return Errorf(EINVALID, "delta: tool call %d has id %q, not %q", d.Index, c.ID, d.ToolCallID)
	}
	if d.ItemID != "" && d.ItemID != c.ItemID {
		if c.ItemID == "" {
			return Errorf(EINVALID, "delta.itemId: tool call %d opened without an item id; give it on the delta that opens the call", d.Index)
		}
		return Errorf(EINVALID, "delta.itemId: tool call %d is item %q, not %q", d.Index, c.ItemID, truncateForError(d.ItemID))
	}
	if d.PartIndex != nil && (c.PartIndex == nil || *c.PartIndex != *d.PartIndex) {
		return Errorf(EINVALID, "delta.partIndex: tool call %d opened %s, not at part %d; a call's place is given when it opens",
			d.Index, placeOf(c.PartIndex), *d.PartIndex)
	}
	c.Name += d.ToolName
	c.Arguments = append(c.Arguments, d.Text...)
	dr.argBytes[d.Index] += len(d.Text)
	return nil
}

// checkPartIndex checks the place of call i, opening now after the first at parts: no
// further than the parts so far, and not before the call ahead of it.
func (dr *Draft) checkPartIndex(i, at int) error {
	if at < 0 || at > len(dr.Parts) {
		return Errorf(EINVALID, "delta.partIndex: %d, but the message has %d parts so far; tool call %d opens after 0 to %d of them",
			at, len(dr.Parts), i, len(dr.Parts))
	}
	if i > 0 {
		prev := dr.ToolCalls[i-1].PartIndex
		if prev == nil || *prev > at {
			return Errorf(EINVALID, "delta.partIndex: tool call %d at part %d, but tool call %d ahead of it came %s; calls keep their order",
				i, at, i-1, placeOf(prev))
		}
	}
	return nil
}

// placeOf says where a call came among the parts, for errors.
func placeOf(at *int) string {
	if at == nil {
		return "after all the parts (no partIndex)"
	}
	return "at part " + strconv.Itoa(*at)
}

// CheckLimits refuses a draft over the limits of a finished message (lim, zero fields:
// DefaultLimits), with their codes: EMESSAGETOOLARGE for its text (all parts, thinking
// and signatures together), ETOOMANYTOOLCALLS, EARGUMENTSTOOLARGE for a call's
// arguments. A store checks it on every append, so that a message that streams never
// holds more than a finished one may, however it ends (an aborted or interrupted one
// is not checked again).
func (dr *Draft) CheckLimits(lim Limits) error {
	lim = lim.orDefaults()
	if dr.textBytes > lim.MaxMessageTextBytes {
		return Errorf(EMESSAGETOOLARGE, "deltas: the message's text would be %d bytes, more than the %d allowed in one message",
			dr.textBytes, lim.MaxMessageTextBytes)
	}
	if len(dr.ToolCalls) > lim.MaxToolCallsPerMessage {
		return Errorf(ETOOMANYTOOLCALLS, "deltas: the message would have %d tool calls, at most %d allowed in one message",
			len(dr.ToolCalls), lim.MaxToolCallsPerMessage)
	}
	for i, n := range dr.argBytes {
		if n > lim.MaxToolArgumentsBytes {
			return Errorf(EARGUMENTSTOOLARGE, "deltas: tool call %d's arguments would be %d bytes, at most %d allowed",
				i, n, lim.MaxToolArgumentsBytes)
		}
	}
	return nil
}

// Message returns the draft as an assistant message: a ToolRequestMessage when it has
// tool calls, else a TextMessage. The message shares nothing with the draft. Its calls
// have a PartIndex only when one came before some of the parts (AnchorCalls), as an
// import of the same reply has them.
func (dr *Draft) Message() Message {
	body := Body{Parts: append([]Part(nil), dr.Parts...)}
	for i := range body.Parts {
		p := &body.Parts[i]
		p.Raw, p.Citations = bytes.Clone(p.Raw), bytes.Clone(p.Citations)
	}
	if len(dr.ToolCalls) == 0 {
		return &TextMessage{MessageMeta: MessageMeta{Role: RoleAssistant}, Body: body}
	}
	calls := make([]ToolCall, len(dr.ToolCalls))
	at := make([]int, len(dr.ToolCalls))
	for i, c := range dr.ToolCalls {
		c.Arguments = append(JSON(nil), c.Arguments...)
		at[i] = len(body.Parts)
		if c.PartIndex != nil {
			at[i] = *c.PartIndex
		}
		c.PartIndex = nil
		calls[i] = c
	}
	// As an import places them: every call anchored once one came before a part.
	AnchorCalls(calls, at, len(body.Parts))
	return &ToolRequestMessage{MessageMeta: MessageMeta{Role: RoleAssistant}, Body: body, ToolCalls: calls}
}

// Final returns the draft as the message to store once it ends: Message, with each
// tool call's arguments kept exactly as they were streamed (ArgumentsRaw), so that
// arguments cut short are recorded as produced and flagged invalid by Prepare.
func (dr *Draft) Final() Message {
	m := dr.Message()
	if req, ok := m.(*ToolRequestMessage); ok {
		for i := range req.ToolCalls {
			c := &req.ToolCalls[i]
			raw := string(c.Arguments)
			c.ArgumentsRaw, c.Arguments = &raw, nil
		}
	}
	return m
}

// Usage is what a reply cost, in tokens, as the provider counts them. Providers count
// differently: OpenAI's InputTokens include the cached ones, Anthropic's exclude both
// the cache reads (CachedInputTokens) and the cache writes (CacheCreationInputTokens).
type Usage struct {
	InputTokens              int64
	OutputTokens             int64
	CachedInputTokens        int64
	CacheCreationInputTokens int64
	// ReasoningTokens are the output tokens spent thinking, where the provider says
	// (OpenAI); they are part of OutputTokens.
	ReasoningTokens int64
}

// Provenance says who produced a message: the provider, its model and response id, why
// the reply ended (the provider's own word: "stop", "tool_calls", "end_turn"...; "" while
// it streams) and what it cost.
type Provenance struct {
	Provider     string
	Model        string
	ResponseID   string
	FinishReason string
	Usage        Usage
	// TimeToFirstTokenMs and DurationMs time a streamed reply: from its start to its
	// first delta, and to its end (0 when unknown).
	TimeToFirstTokenMs int64
	DurationMs         int64
}
