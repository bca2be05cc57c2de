package anthropic

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	sdk "github.com/anthropics/anthropic-sdk-go"

	"github.com/parley-dev/parley"
	"github.com/parley-dev/parley/interop/internal/contentblock"
	"github.com/parley-dev/parley/interop/internal/jsonerr"
)

// Provider is the provider name a MessageStream's Provenance gives.
const Provider = "anthropic"

// MessageStream assembles one streamed Messages API reply (stream: true) into a Parley
// message, event by event, with the SDK's own sdk.Message.Accumulate: the message is what
// the SDK assembles from the same events. Each event added reports the deltas it
// brought, in the terms of parley.Delta, so that a store can append them to a message
// that is still streaming; applied in order to an empty parley.Draft, the deltas so far
// give Message() at every point.
//
// Blocks become what the importer (Parse) makes of the same blocks in a finished reply,
// so that a streamed message equals the imported one: a text block a TEXT part with its
// citations, a thinking block a THINKING part with its signature (kept even when the
// thinking is empty), a redacted_thinking block a REDACTED_THINKING part, a tool_use
// block a tool call with its input exactly as sent, placed among the parts where it
// came (the delta that opens it says how many parts came before), and the blocks of
// tools the provider runs itself (server_tool_use, web_search_tool_result and kin) a
// SERVER_TOOL part holding the block as the SDK assembles it, opened once the block has
// ended.
//
// An event that is refused changes nothing; the stream can go on with the next one. A
// MessageStream is not safe for concurrent use.
type MessageStream struct {
	acc     sdk.Message
	events  int
	started bool
	stopped bool
	blocks  []streamBlock
	parts   int
	calls   int
}

// streamBlock is what the stream knows of one content block: which part or tool call
// it is, and whether it has ended.
type streamBlock struct {
	kind  string // the block's type
	index int    // the part or tool call
	done  bool
	// args says that the arguments have started: until then the SDK holds the start's
	// placeholder {}, which the first input_json_delta replaces.
	args bool
	// input is the arguments as streamed, the text of the block's deltas. Not the SDK's
	// Input: at content_block_stop the SDK re-encodes the block, and arguments that are
	// not JSON (cut short, or a lone ",") come back as {}, which the deltas do not say.
	input []byte
	// server is a server tool block's SERVER_TOOL part, taken once at its
	// content_block_stop: the SDK's copy of the block may still be re-encoded by later
	// events (an input that is not JSON comes back with "input":{} added), and the part
	// must stay what the delta said.
	server string
}

// NewMessageStream returns a stream that has seen no event yet.
func NewMessageStream() *MessageStream { return &MessageStream{} }

// eventShape is the part of an event that the stream reads, with the types the API
// documents: the SDK's decoder accepts any JSON (even a truncated one) without error,
// so that an event of the wrong shape is refused here with the field named.
type eventShape struct {
	Type    string `json:"type"`
	Index   *int64 `json:"index"`
	Message *struct {
		ID      string            `json:"id"`
		Model   string            `json:"model"`
		Content []json.RawMessage `json:"content"`
		Usage   *usageShape       `json:"usage"`
	} `json:"message"`
	ContentBlock *struct {
		Type      string          `json:"type"`
		Text      string          `json:"text"`
		Thinking  string          `json:"thinking"`
		Signature string          `json:"signature"`
		ID        string          `json:"id"`
		Name      string          `json:"name"`
		Input     json.RawMessage `json:"input"`
	} `json:"content_block"`
	Delta *struct {
		Type         string  `json:"type"`
		Text         string  `json:"text"`
		Thinking     string  `json:"thinking"`
		Signature    string  `json:"signature"`
		PartialJSON  string  `json:"partial_json"`
		StopReason   *string `json:"stop_reason"`
		StopSequence *string `json:"stop_sequence"`
	} `json:"delta"`
	Usage *usageShape `json:"usage"`
	Error *struct {
		Type    string `json:"type"`
		Message string `json:"message"`
	} `json:"error"`
}

type usageShape struct {
	InputTokens              *int64 `json:"input_tokens"`
	OutputTokens             *int64 `json:"output_tokens"`
	CacheCreationInputTokens *int64 `json:"cache_creation_input_tokens"`
	CacheReadInputTokens     *int64 `json:"cache_read_input_tokens"`
}

// AddJSON adds one event as the API sent it: the data of one server-sent event. A ping
// is accepted and brings nothing; an error event is returned as an error. Errors are
// EINVALID and name the event (counted from 1), its type and what is wrong with it.
func (s *MessageStream) AddJSON(raw []byte) ([]parley.Delta, error) {
	t := bytes.TrimSpace(raw)
	shape, err := s.checkShape(t)
	if err != nil {
		return nil, err
	}
	var ev sdk.MessageStreamEventUnion
	if err := ev.UnmarshalJSON(t); err != nil {
		return nil, s.invalid(shape.Type, "not a Messages stream event (%v)", err)
	}
	return s.add(ev, shape)
}

// Add adds one event as the SDK's stream decoded it (sdk.MessageStreamEventUnion, from
// client.Messages.NewStreaming), checked as AddJSON checks it. The SDK's accumulator
// reads a content block from its JSON, so an event must come from JSON.
func (s *MessageStream) Add(ev sdk.MessageStreamEventUnion) ([]parley.Delta, error) {
	shape, err := s.checkShape([]byte(ev.RawJSON()))
	if err != nil {
		return nil, err
	}
	return s.add(ev, shape)
}

func (s *MessageStream) invalid(typ, format string, args ...any) error {
	where := fmt.Sprintf("event %d", s.events+1)
	if typ != "" {
		where += " (" + jsonerr.Truncate(typ) + ")"
	}
	return parley.Errorf(parley.EINVALID, "%s: %s", where, fmt.Sprintf(format, args...))
}

func (s *MessageStream) checkShape(raw []byte) (*eventShape, error) {
	if len(raw) == 0 {
		return nil, s.invalid("", "empty; want an event's JSON")
	}
	if !json.Valid(raw) {
		return nil, s.invalid("", "not valid JSON (%s)", jsonerr.SyntaxProblem(raw, "event"))
	}
	if raw[0] != '{' {
		return nil, s.invalid("", "want an object, got %s", jsonerr.Kind(raw))
	}
	var shape eventShape
	if err := json.Unmarshal(raw, &shape); err != nil {
		if te := jsonerr.TypeError(err); te != nil {
			return nil, s.invalid(shape.Type, "%s: want %s, got %s", te.Field, jsonerr.GoKind(te.Type.Kind().String(), "an object"), te.Value)
		}
		return nil, s.invalid("", "not valid JSON")
	}
	if shape.Type == "" {
		return nil, s.invalid("", "type: missing; want a Messages stream event such as %q", "content_block_delta")
	}
	return &shape, nil
}

// add checks ev against the stream so far, hands it to the SDK's accumulator and
// reports its deltas. Nothing is accumulated from an event that is refused.
func (s *MessageStream) add(ev sdk.MessageStreamEventUnion, shape *eventShape) ([]parley.Delta, error) {
	typ := shape.Type
	switch {
	case typ == "ping":
		return nil, nil
	case typ == "error":
		var e struct{ Type, Message string }
		if shape.Error != nil {
			e.Type, e.Message = shape.Error.Type, shape.Error.Message
		}
		return nil, s.invalid(typ, "the provider reported an error: %s: %s", jsonerr.Truncate(e.Type), e.Message)
	case s.stopped:
		return nil, s.invalid(typ, "after message_stop, which ends the stream")
	case !s.started && typ != "message_start":
		return nil, s.invalid(typ, "before message_start, which opens the stream")
	}
	deltas, err := s.check(ev, shape)
	if err != nil {
		return nil, err
	}
	if err := s.acc.Accumulate(ev); err != nil {
		return nil, fmt.Errorf("event %d (%s): the SDK's accumulator refused an event that was checked: %w", s.events+1, typ, err)
	}
	s.events++
	switch typ {
	case "message_start":
		s.started = true
	case "message_stop":
		s.stopped = true
	case "content_block_start":
		deltas = s.start(shape.ContentBlock.Type)
	case "content_block_delta":
		if len(deltas) > 0 && deltas[0].Kind == parley.DeltaToolArguments {
			b := &s.blocks[len(s.blocks)-1]
			b.args = true
			b.input = append(b.input, deltas[0].Text...)
		}
	case "content_block_stop":
		b := &s.blocks[len(s.blocks)-1]
		b.done = true
		if contentblock.ServerTool(b.kind) {
			// The block whole, as the SDK assembled it (its input in place).
			b.index, s.parts = s.parts, s.parts+1
			b.server = s.serverTool(len(s.blocks) - 1)
			deltas = []parley.Delta{{Kind: parley.DeltaServerTool, Index: b.index, Text: b.server}}
		}
		if b.kind == "tool_use" && !b.args {
			// No input_json_delta came: the input is the start's {}, complete.
			b.args = true
			b.input = bytes.Clone(s.acc.Content[len(s.acc.Content)-1].Input)
			deltas = []parley.Delta{{Kind: parley.DeltaToolArguments, Index: b.index, Text: string(b.input)}}
		}
	}
	return deltas, nil
}

// check refuses an event that the accumulator would assemble into something other than
// one message, and returns the deltas of a content_block_delta.
func (s *MessageStream) check(ev sdk.MessageStreamEventUnion, shape *eventShape) ([]parley.Delta, error) {
	typ := shape.Type
	switch typ {
	case "message_start":
		if s.started {
			return nil, s.invalid(typ, "a second message_start; one stream is one message")
		}
		if shape.Message == nil {
			return nil, s.invalid(typ, "message: missing")
		}
		if n := len(shape.Message.Content); n > 0 {
			return nil, s.invalid(typ, "message.content: %d blocks; a stream starts with none and sends them as content_block_start", n)
		}
		return nil, nil
	case "message_delta", "message_stop":
		return nil, nil
	case "content_block_start", "content_block_delta", "content_block_stop":
	default:
		return nil, s.invalid(typ, "type: %q is not a Messages stream event", jsonerr.Truncate(typ))
	}
	if shape.Index == nil {
		return nil, s.invalid(typ, "index: missing; want the content block's index")
	}
	idx := int(*shape.Index)
	if typ == "content_block_start" {
		cb := shape.ContentBlock
		switch {
		case idx != len(s.blocks):
			return nil, s.invalid(typ, "index: %d, but the next block is %d", idx, len(s.blocks))
		case cb == nil || cb.Type == "":
			return nil, s.invalid(typ, "content_block.type: missing")
		case cb.Type == "tool_use" && cb.ID == "":
			return nil, s.invalid(typ, "content_block.id: a tool_use needs an id")
		case cb.Type == "tool_use" && cb.Name == "":
			return nil, s.invalid(typ, "content_block.name: tool_use %s needs a name", jsonerr.Truncate(cb.ID))
		}
		if cb.Type == "tool_use" {
			call := 0
			for _, b := range s.acc.Content {
				if b.Type != "tool_use" {
					continue
				}
				if b.ID == cb.ID {
					return nil, s.invalid(typ, "content_block.id: %q is already the id of tool_use %d", jsonerr.Truncate(cb.ID), call)
				}
				call++
			}
		}
		if n := len(s.blocks); n > 0 && contentblock.ServerTool(s.blocks[n-1].kind) && !s.blocks[n-1].done {
			// Its part opens when it ends, before the parts of the blocks after it.
			return nil, s.invalid(typ, "index: %d, but block %d (%s) has not ended (content_block_stop)", idx, n-1, jsonerr.Truncate(s.blocks[n-1].kind))
		}
		return nil, nil
	}
	last := len(s.blocks) - 1
	switch {
	case last < 0:
		return nil, s.invalid(typ, "index: %d, but no content block has started", idx)
	case idx != last:
		return nil, s.invalid(typ, "index: %d, but the block streaming is %d", idx, last)
	case s.blocks[last].done:
		return nil, s.invalid(typ, "index: %d, but block %d has ended (content_block_stop)", idx, last)
	case typ == "content_block_stop":
		return nil, nil
	}
	b := s.blocks[last]
	if shape.Delta == nil || shape.Delta.Type == "" {
		return nil, s.invalid(typ, "delta.type: missing")
	}
	d := ev.Delta
	var fits string
	var delta parley.Delta
	switch shape.Delta.Type {
	case "text_delta":
		fits, delta = "text", parley.Delta{Kind: parley.DeltaText, Text: d.Text}
	case "citations_delta":
		fits = "text"
		if c := compact(d.Citation.RawJSON()); c != "" {
			delta = parley.Delta{Kind: parley.DeltaCitation, Text: c}
		}
	case "thinking_delta":
		fits, delta = "thinking", parley.Delta{Kind: parley.DeltaThinking, Text: d.Thinking}
	case "signature_delta":
		fits, delta = "thinking", parley.Delta{Kind: parley.DeltaSignature, Text: d.Signature}
	case "input_json_delta":
		fits, delta = "tool_use", parley.Delta{Kind: parley.DeltaToolArguments, Text: d.PartialJSON}
		if contentblock.ServerTool(b.kind) {
			// A server tool's input: the SDK assembles it into the block, which the
			// SERVER_TOOL part holds once the block ends.
			fits, delta = b.kind, parley.Delta{}
		}
	default:
		return nil, s.invalid(typ, "delta.type: %q is not a content block delta", jsonerr.Truncate(shape.Delta.Type))
	}
	if !kept(b.kind) {
		return nil, nil // a block left out: whatever it streams is left out with it
	}
	if fits != b.kind {
		return nil, s.invalid(typ, "delta.type: a %s does not fit block %d, a %s block", shape.Delta.Type, idx, b.kind)
	}
	if delta.Kind == "" || delta.Text == "" {
		return nil, nil
	}
	if delta.Kind == parley.DeltaToolArguments {
		if b.args && string(s.acc.Content[last].Input) == "{}" {
			// The SDK would take the complete {} for the start's placeholder and replace it.
			return nil, s.invalid(typ, "delta.partial_json: more input after tool_use %d's complete {}", b.index)
		}
	}
	delta.Index = b.index
	return []parley.Delta{delta}, nil
}

// kept reports whether blocks of type kind become part of the message.
func kept(kind string) bool {
	switch kind {
	case "text", "thinking", "redacted_thinking", "tool_use":
		return true
	}
	return contentblock.ServerTool(kind)
}

// compact is raw without insignificant whitespace, "" when it is not JSON.
func compact(raw string) string {
	var b bytes.Buffer
	if json.Compact(&b, []byte(raw)) != nil {
		return ""
	}
	return b.String()
}

// start records the block that the accumulator has just opened, and returns the deltas
// that open its part or tool call with what the start carries.
func (s *MessageStream) start(kind string) []parley.Delta {
	cb := s.acc.Content[len(s.acc.Content)-1]
	b := streamBlock{kind: kind}
	var deltas []parley.Delta
	switch kind {
	case "text":
		b.index, s.parts = s.parts, s.parts+1
		deltas = []parley.Delta{{Kind: parley.DeltaText, Index: b.index, Text: cb.Text}}
	case "thinking":
		b.index, s.parts = s.parts, s.parts+1
		deltas = []parley.Delta{{Kind: parley.DeltaThinking, Index: b.index, Text: cb.Thinking}}
		if cb.Signature != "" {
			deltas = append(deltas, parley.Delta{Kind: parley.DeltaSignature, Index: b.index, Text: cb.Signature})
		}
	case "redacted_thinking":
		b.index, s.parts = s.parts, s.parts+1
		deltas = []parley.Delta{{Kind: parley.DeltaRedactedThinking, Index: b.index, Text: cb.Data}}
	case "tool_use":
		b.index, s.calls = s.calls, s.calls+1
		at := s.parts // the parts before it: where it goes back among them
		d := parley.Delta{Kind: parley.DeltaToolArguments, Index: b.index, ToolCallID: cb.ID, ToolName: cb.Name, PartIndex: &at}
		if in := string(cb.Input); in != "{}" {
			// Not the placeholder: the SDK appends to it, so it is the arguments' start.
			d.Text, b.args = in, true
		}
		deltas = []parley.Delta{d}
	}
	s.blocks = append(s.blocks, b)
	return deltas
}

// Message returns the message as assembled so far: a ToolRequestMessage once a
// tool_use has started, else a TextMessage, with the assistant's role. While the
// stream runs, tool call arguments may be incomplete JSON; a tool_use whose input has
// not started has none yet (the SDK holds a placeholder {} until then).
func (s *MessageStream) Message() parley.Message {
	var dr parley.Draft
	for i, b := range s.blocks {
		cb := s.acc.Content[i]
		switch b.kind {
		case "text":
			p := parley.Part{Kind: parley.PartText, Text: cb.Text}
			var cs []string
			for _, c := range cb.Citations {
				if t := compact(c.RawJSON()); t != "" {
					cs = append(cs, t)
				}
			}
			if len(cs) > 0 {
				p.Citations = parley.JSON("[" + strings.Join(cs, ",") + "]")
			}
			dr.Parts = append(dr.Parts, p)
		case "thinking":
			dr.Parts = append(dr.Parts, parley.Part{Kind: parley.PartThinking, Text: cb.Thinking, Signature: cb.Signature})
		case "redacted_thinking":
			dr.Parts = append(dr.Parts, parley.Part{Kind: parley.PartRedactedThinking, Signature: cb.Data})
		case "tool_use":
			at := len(dr.Parts)
			c := parley.ToolCall{ID: cb.ID, Name: cb.Name, PartIndex: &at}
			if b.args {
				c.Arguments = parley.JSON(bytes.Clone(b.input))
			}
			dr.ToolCalls = append(dr.ToolCalls, c)
		default:
			if contentblock.ServerTool(b.kind) && b.done {
				dr.Parts = append(dr.Parts, parley.Part{Kind: parley.PartServerTool, Raw: parley.JSON(b.server)})
			}
		}
	}
	return dr.Message()
}

// serverTool is the i'th block, a server tool's that has ended, as its SERVER_TOOL part
// holds it: the block the SDK assembled, compacted as the importer compacts it.
func (s *MessageStream) serverTool(i int) string {
	return string(contentblock.ServerToolPart(contentblock.Block{Raw: json.RawMessage(s.acc.Content[i].RawJSON())}).Raw)
}

// Provenance returns who produced the reply and what it cost, as far as the events so
// far say, as the SDK's accumulator reads them: the input and cache counts of
// message_start, the output count of the last message_delta.
func (s *MessageStream) Provenance() parley.Provenance {
	u := s.acc.Usage
	return parley.Provenance{
		Provider:     Provider,
		Model:        string(s.acc.Model),
		ResponseID:   s.acc.ID,
		FinishReason: string(s.acc.StopReason),
		Usage: parley.Usage{
			InputTokens:              u.InputTokens,
			OutputTokens:             u.OutputTokens,
			CachedInputTokens:        u.CacheReadInputTokens,
			CacheCreationInputTokens: u.CacheCreationInputTokens,
		},
	}
}
