package openai

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/openai/openai-go/v3/responses"

	"github.com/parley-dev/parley"
	"github.com/parley-dev/parley/interop/internal/jsonerr"
)

// ResponsesStream assembles one streamed Responses API reply (POST /v1/responses with
// stream: true) into a Parley message, event by event. openai-go has no accumulator for
// Responses streams (it has one for Chat Completions only), so each event is decoded
// with the SDK's own union type, responses.ResponseStreamEventUnion, and the few that
// carry the reply are assembled here, into what the importer (ParseResponses) makes of
// the same items in a finished response:
//
//   - response.output_text.delta and response.refusal.delta: a TEXT part per content
//     part of an output message (output_index, content_index), opened at its first
//     text that is not blank (the importer keeps no blank text);
//   - response.output_item.added of a reasoning item: a THINKING part with the item's
//     id, grown by response.reasoning_summary_text.delta (each further summary part a
//     further THINKING part of the same item, opened by its
//     response.reasoning_summary_part.added or first delta); the item's
//     encrypted_content, complete only in its response.output_item.done, is the first
//     part's signature;
//   - response.reasoning_text.delta: a THINKING part per reasoning content part, without
//     an item id (raw reasoning is not a summary, and goes back to no provider);
//   - response.output_item.added of a function_call: a tool call (its call_id, name and
//     item id, placed after the parts so far), grown by
//     response.function_call_arguments.delta;
//   - response.created, response.in_progress, response.completed, response.incomplete,
//     response.failed: the response's id, model, status and usage (Provenance).
//
// Parts open in the order the items and their parts start; applied in order to an empty
// parley.Draft, the deltas give the message an OPENAI_RESPONSES import of the
// response.completed event's output gives (reasoning with its ids and encrypted
// content, output text and refusals, function calls with their item ids, each where it
// came). The other *.done events, whose text repeats the deltas, and the events of
// built-in tools (web search, file search, code interpreter...) add nothing.
//
// A refused event changes nothing; the stream can go on with the next one. A
// ResponsesStream is not safe for concurrent use.
type ResponsesStream struct {
	events int
	id     string
	model  string
	status string
	reason string // incomplete_details.reason
	usage  responses.ResponseUsage
	parts  map[partKey]int // the parts opened, by what they hold
	nparts int
	// blank holds the text of content parts that is all blank so far: not a part yet.
	blank     map[partKey]string
	calls     map[int64]int // the tool calls opened, by output_index
	callIDs   []string
	reasoning map[int64]*reasoningItem // by output_index
	finished  bool
}

// reasoningItem is what the stream knows of a reasoning item.
type reasoningItem struct {
	id   string
	done bool // its response.output_item.done has come
}

// partKey names what a part holds: a content part of an output message, or a summary
// (or reasoning content) part of a reasoning item.
type partKey struct {
	output int64
	kind   byte // 't' output text, 'r' refusal, 's' reasoning summary, 'c' reasoning content
	index  int64
}

// NewResponsesStream returns a stream that has seen no event yet.
func NewResponsesStream() *ResponsesStream {
	return &ResponsesStream{parts: map[partKey]int{}, blank: map[partKey]string{}, calls: map[int64]int{},
		reasoning: map[int64]*reasoningItem{}}
}

// responsesEventShape is what the stream reads of an event before the SDK decodes it:
// the SDK's decoder accepts any JSON without error, so an event of the wrong shape is
// refused here with the field named.
type responsesEventShape struct {
	Type         string  `json:"type"`
	Object       *string `json:"object"`
	OutputIndex  int64   `json:"output_index"`
	ContentIndex int64   `json:"content_index"`
	SummaryIndex int64   `json:"summary_index"`
	Delta        *string `json:"delta"`
	Item         *struct {
		Type   string `json:"type"`
		ID     string `json:"id"`
		CallID string `json:"call_id"`
		Name   string `json:"name"`
	} `json:"item"`
	Response *struct {
		ID    string `json:"id"`
		Model string `json:"model"`
	} `json:"response"`
}

// AddJSON adds one event as the API sent it: the data of one server-sent event. Errors
// are EINVALID and name the event (counted from 1) and what is wrong with it.
func (s *ResponsesStream) AddJSON(raw []byte) ([]parley.Delta, error) {
	t := bytes.TrimSpace(raw)
	if !json.Valid(t) {
		return nil, s.invalid("not valid JSON (%s)", jsonerr.SyntaxProblem(t, "event"))
	}
	if t[0] != '{' {
		return nil, s.invalid("want an object, got %s", jsonerr.Kind(t))
	}
	var shape responsesEventShape
	if err := json.Unmarshal(t, &shape); err != nil {
		if te := jsonerr.TypeError(err); te != nil {
			return nil, s.invalid("%s: want %s, got %s", te.Field, jsonerr.GoKind(te.Type.Kind().String(), "an object"), te.Value)
		}
		return nil, s.invalid("not valid JSON")
	}
	if shape.Object != nil && *shape.Object == "chat.completion.chunk" {
		return nil, s.invalid("a Chat Completions chunk, not a Responses event: use the format OPENAI_CHAT")
	}
	if shape.Type == "" {
		return nil, s.invalid("type: missing; a Responses stream event has a type such as %q", "response.output_text.delta")
	}
	var ev responses.ResponseStreamEventUnion
	if err := ev.UnmarshalJSON(t); err != nil {
		return nil, s.invalid("not a Responses stream event (%v)", err)
	}
	return s.add(ev, shape)
}

func (s *ResponsesStream) invalid(format string, args ...any) error {
	return parley.Errorf(parley.EINVALID, "event %d: %s", s.events+1, fmt.Sprintf(format, args...))
}

// add checks an event against the stream so far and reports its deltas. Nothing is
// taken from an event that is refused.
func (s *ResponsesStream) add(ev responses.ResponseStreamEventUnion, shape responsesEventShape) ([]parley.Delta, error) {
	if s.finished {
		return nil, s.invalid("%s after the response ended (%s)", jsonerr.Truncate(ev.Type), s.status)
	}
	var deltas []parley.Delta
	switch ev.Type {
	case "response.created", "response.in_progress", "response.queued",
		"response.completed", "response.incomplete", "response.failed":
		if shape.Response == nil {
			return nil, s.invalid("%s without its response", ev.Type)
		}
		r := ev.Response
		if s.id != "" && r.ID != s.id {
			return nil, s.invalid("response.id: %q, but the stream is response %q; one stream is one response", jsonerr.Truncate(r.ID), s.id)
		}
		s.id, s.model, s.status = r.ID, string(r.Model), string(r.Status)
		switch ev.Type {
		case "response.completed", "response.incomplete", "response.failed":
			s.usage, s.reason, s.finished = r.Usage, r.IncompleteDetails.Reason, true
		}
	case "response.output_text.delta", "response.refusal.delta", "response.reasoning_summary_text.delta", "response.reasoning_text.delta":
		if shape.Delta == nil {
			return nil, s.invalid("%s without a delta", ev.Type)
		}
		if ev.Delta == "" {
			break
		}
		key, kind := partKey{output: ev.OutputIndex, index: ev.ContentIndex}, parley.DeltaText
		switch ev.Type {
		case "response.output_text.delta":
			key.kind = 't'
		case "response.refusal.delta":
			key.kind = 'r'
		case "response.reasoning_summary_text.delta":
			key.kind, key.index, kind = 's', ev.SummaryIndex, parley.DeltaThinking
		default:
			key.kind, kind = 'c', parley.DeltaThinking
		}
		text := ev.Delta
		if _, ok := s.parts[key]; !ok && kind == parley.DeltaText {
			// The importer keeps no blank text: a part opens with its first other text.
			text = s.blank[key] + text
			if strings.TrimSpace(text) == "" {
				s.blank[key] = text
				break
			}
			delete(s.blank, key)
		}
		deltas = append(deltas, s.toPart(key, kind, text))
	case "response.reasoning_summary_part.added":
		key := partKey{output: ev.OutputIndex, kind: 's', index: ev.SummaryIndex}
		if _, ok := s.parts[key]; !ok {
			deltas = append(deltas, s.toPart(key, parley.DeltaThinking, ""))
		}
	case "response.output_item.added", "response.output_item.done":
		if shape.Item == nil {
			return nil, s.invalid("%s without its item", ev.Type)
		}
		if shape.Item.ID != "" && len(shape.Item.ID) > parley.MaxItemIDLength {
			return nil, s.invalid("item.id: %d bytes, at most %d", len(shape.Item.ID), parley.MaxItemIDLength)
		}
		var err error
		switch {
		case shape.Item.Type == "reasoning" && ev.Type == "response.output_item.added":
			deltas, err = s.reasoningAdded(ev)
		case shape.Item.Type == "reasoning":
			deltas, err = s.reasoningDone(ev)
		case shape.Item.Type == "function_call" && ev.Type == "response.output_item.added":
			deltas, err = s.callAdded(ev)
		}
		if err != nil {
			return nil, err
		}
	case "response.function_call_arguments.delta":
		i, ok := s.calls[ev.OutputIndex]
		if !ok {
			return nil, s.invalid("output_index: %d, where no function call was added (response.output_item.added)", ev.OutputIndex)
		}
		if ev.Delta != "" {
			deltas = append(deltas, parley.Delta{Kind: parley.DeltaToolArguments, Index: i, Text: ev.Delta})
		}
	}
	s.events++
	return deltas, nil
}

// toPart returns the delta that appends text to the part key names, opening the part
// when it has none yet: a reasoning summary's part with its item's id.
func (s *ResponsesStream) toPart(key partKey, kind parley.DeltaKind, text string) parley.Delta {
	if i, ok := s.parts[key]; ok {
		return parley.Delta{Kind: kind, Index: i, Text: text}
	}
	d := parley.Delta{Kind: kind, Index: s.nparts, Text: text}
	if r := s.reasoning[key.output]; r != nil && key.kind == 's' {
		d.ItemID = r.id
	}
	s.parts[key] = s.nparts
	s.nparts++
	return d
}

// reasoningAdded starts a reasoning item: with an id, its first part opens at once, so
// that an item with no summary is kept (the API wants it back by id).
func (s *ResponsesStream) reasoningAdded(ev responses.ResponseStreamEventUnion) ([]parley.Delta, error) {
	if _, ok := s.reasoning[ev.OutputIndex]; ok {
		return nil, s.invalid("output_index: %d already holds a reasoning item", ev.OutputIndex)
	}
	if _, ok := s.calls[ev.OutputIndex]; ok {
		return nil, s.invalid("output_index: %d already holds a function call", ev.OutputIndex)
	}
	s.reasoning[ev.OutputIndex] = &reasoningItem{id: ev.Item.ID}
	if ev.Item.ID == "" {
		return nil, nil
	}
	return []parley.Delta{s.toPart(partKey{output: ev.OutputIndex, kind: 's'}, parley.DeltaThinking, "")}, nil
}

// reasoningDone ends a reasoning item with what its done event holds whole: its
// encrypted content, the first part's signature, and any summary that no delta brought.
func (s *ResponsesStream) reasoningDone(ev responses.ResponseStreamEventUnion) ([]parley.Delta, error) {
	r := s.reasoning[ev.OutputIndex]
	item := ev.Item.AsReasoning()
	switch {
	case r == nil:
		return nil, s.invalid("output_index: %d, where no reasoning item was added (response.output_item.added)", ev.OutputIndex)
	case r.done:
		return nil, s.invalid("output_index: %d, whose reasoning item has ended already", ev.OutputIndex)
	case item.ID != r.id:
		return nil, s.invalid("item.id: %q, but the reasoning item at output_index %d is %q", jsonerr.Truncate(item.ID), ev.OutputIndex, jsonerr.Truncate(r.id))
	}
	var deltas []parley.Delta
	for k, sum := range item.Summary {
		if _, ok := s.parts[partKey{output: ev.OutputIndex, kind: 's', index: int64(k)}]; !ok {
			deltas = append(deltas, s.toPart(partKey{output: ev.OutputIndex, kind: 's', index: int64(k)}, parley.DeltaThinking, sum.Text))
		}
	}
	if item.EncryptedContent != "" {
		first := partKey{output: ev.OutputIndex, kind: 's'}
		if _, ok := s.parts[first]; !ok {
			deltas = append(deltas, s.toPart(first, parley.DeltaThinking, ""))
		}
		deltas = append(deltas, parley.Delta{Kind: parley.DeltaSignature, Index: s.parts[first], Text: item.EncryptedContent})
	}
	r.done = true
	return deltas, nil
}

// callAdded opens a function call's tool call, with its item id, after the parts so far.
func (s *ResponsesStream) callAdded(ev responses.ResponseStreamEventUnion) ([]parley.Delta, error) {
	if _, ok := s.calls[ev.OutputIndex]; ok {
		return nil, s.invalid("output_index: %d already holds a function call", ev.OutputIndex)
	}
	if _, ok := s.reasoning[ev.OutputIndex]; ok {
		return nil, s.invalid("output_index: %d already holds a reasoning item", ev.OutputIndex)
	}
	fc := ev.Item.AsFunctionCall()
	if fc.CallID == "" {
		return nil, s.invalid("item.call_id: a function call without a call_id")
	}
	if fc.Name == "" {
		return nil, s.invalid("item.name: function call %s without a name", jsonerr.Truncate(fc.CallID))
	}
	for j, id := range s.callIDs {
		if id == fc.CallID {
			return nil, s.invalid("item.call_id: %q is already the id of tool call %d", jsonerr.Truncate(fc.CallID), j)
		}
	}
	i, at := len(s.callIDs), s.nparts
	s.calls[ev.OutputIndex] = i
	s.callIDs = append(s.callIDs, fc.CallID)
	return []parley.Delta{{Kind: parley.DeltaToolArguments, Index: i, ToolCallID: fc.CallID,
		ToolName: fc.Name, Text: fc.Arguments, ItemID: fc.ID, PartIndex: &at}}, nil
}

// Provenance returns who produced the reply and what it cost, as far as the events so
// far say: the usage arrives with the response's end (response.completed). The finish
// reason is the response's status ("completed", "incomplete", "failed"), or for an
// incomplete one the reason ("max_output_tokens", "content_filter").
func (s *ResponsesStream) Provenance() parley.Provenance {
	p := parley.Provenance{
		Provider:   Provider,
		Model:      s.model,
		ResponseID: s.id,
		Usage: parley.Usage{
			InputTokens:       s.usage.InputTokens,
			OutputTokens:      s.usage.OutputTokens,
			CachedInputTokens: s.usage.InputTokensDetails.CachedTokens,
			ReasoningTokens:   s.usage.OutputTokensDetails.ReasoningTokens,
		},
	}
	if s.finished {
		p.FinishReason = s.status
		if s.reason != "" {
			p.FinishReason = s.reason
		}
	}
	return p
}
