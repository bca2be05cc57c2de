package openai

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/openai/openai-go/v3"

	"github.com/parley-dev/parley"
	"github.com/parley-dev/parley/interop/internal/jsonerr"
)

// Provider is the provider name a ChatStream's Provenance gives.
const Provider = "openai"

// ChatStream assembles one streamed Chat Completions reply (stream: true) into a Parley
// message, chunk by chunk, with the SDK's own openai.ChatCompletionAccumulator: the
// message is what the SDK assembles from the same chunks. Each chunk added reports the
// deltas it brought, in the terms of parley.Delta, so that a store can append them to a
// message that is still streaming; applied in order to an empty parley.Draft, the deltas
// so far give Message() at every point.
//
// The content becomes a TEXT part, a refusal a TEXT part of its own (in the order they
// start), each tool call a tool call with its arguments exactly as sent. Only choice 0
// is assembled: a stream of several choices (n > 1) is refused.
//
// A chunk that is refused changes nothing; the stream can go on with the next one. A
// ChatStream is not safe for concurrent use.
type ChatStream struct {
	acc      openai.ChatCompletionAccumulator
	chunks   int
	parts    int // the parts opened so far
	content  int // the part the content goes to, -1 until it starts
	refusal  int // the part the refusal goes to, -1 until it starts
	finished string
	done     bool
}

// NewChatStream returns a stream that has seen no chunk yet.
func NewChatStream() *ChatStream {
	return &ChatStream{content: -1, refusal: -1}
}

// chunkShape is the part of a chunk that the stream reads, with the types the API
// documents: the SDK's decoder accepts any JSON (even a truncated one) without error,
// so that a chunk of the wrong shape is refused here with the field named.
type chunkShape struct {
	Type    *string `json:"type"`
	ID      string  `json:"id"`
	Object  string  `json:"object"`
	Model   string  `json:"model"`
	Choices []struct {
		Index int64 `json:"index"`
		Delta struct {
			Content   *string `json:"content"`
			Refusal   *string `json:"refusal"`
			Role      *string `json:"role"`
			ToolCalls []struct {
				Index    int64  `json:"index"`
				ID       string `json:"id"`
				Type     string `json:"type"`
				Function struct {
					Name      string `json:"name"`
					Arguments string `json:"arguments"`
				} `json:"function"`
			} `json:"tool_calls"`
		} `json:"delta"`
		FinishReason *string `json:"finish_reason"`
	} `json:"choices"`
	Usage *struct {
		PromptTokens        int64 `json:"prompt_tokens"`
		CompletionTokens    int64 `json:"completion_tokens"`
		PromptTokensDetails *struct {
			CachedTokens int64 `json:"cached_tokens"`
		} `json:"prompt_tokens_details"`
		CompletionTokensDetails *struct {
			ReasoningTokens int64 `json:"reasoning_tokens"`
		} `json:"completion_tokens_details"`
	} `json:"usage"`
}

// AddJSON adds one chunk as the API sent it: the data of one server-sent event. The
// terminating "[DONE]" is accepted and ends the stream. Errors are EINVALID and name
// the chunk (counted from 1) and what is wrong with it.
func (s *ChatStream) AddJSON(raw []byte) ([]parley.Delta, error) {
	t := bytes.TrimSpace(raw)
	if string(t) == "[DONE]" {
		s.done = true
		return nil, nil
	}
	if err := s.checkShape(t); err != nil {
		return nil, err
	}
	var chunk openai.ChatCompletionChunk
	if err := chunk.UnmarshalJSON(t); err != nil {
		return nil, s.invalid("not a Chat Completions chunk (%v)", err)
	}
	return s.add(chunk)
}

// Add adds one chunk as the SDK's stream decoded it (openai.ChatCompletionChunk, from
// client.Chat.Completions.NewStreaming). A chunk decoded from JSON is checked as AddJSON
// checks it.
func (s *ChatStream) Add(chunk openai.ChatCompletionChunk) ([]parley.Delta, error) {
	if raw := chunk.RawJSON(); raw != "" {
		if err := s.checkShape([]byte(raw)); err != nil {
			return nil, err
		}
	}
	return s.add(chunk)
}

func (s *ChatStream) invalid(format string, args ...any) error {
	return parley.Errorf(parley.EINVALID, "chunk %d: %s", s.chunks+1, fmt.Sprintf(format, args...))
}

func (s *ChatStream) checkShape(raw []byte) error {
	if !json.Valid(raw) {
		return s.invalid("not valid JSON (%s)", jsonerr.SyntaxProblem(raw, "chunk"))
	}
	if raw[0] != '{' {
		return s.invalid("want an object, got %s", jsonerr.Kind(raw))
	}
	var shape chunkShape
	if err := json.Unmarshal(raw, &shape); err != nil {
		if te := jsonerr.TypeError(err); te != nil {
			return s.invalid("%s: want %s, got %s", te.Field, jsonerr.GoKind(te.Type.Kind().String(), "an object"), te.Value)
		}
		return s.invalid("not valid JSON")
	}
	if shape.Type != nil {
		return s.invalid("type: %q is not a Chat Completions chunk (those have object %q)",
			jsonerr.Truncate(*shape.Type), "chat.completion.chunk")
	}
	if shape.Object != "chat.completion.chunk" {
		return s.invalid("object: %q, want %q", jsonerr.Truncate(shape.Object), "chat.completion.chunk")
	}
	return nil
}

// add checks chunk against the stream so far, hands it to the SDK's accumulator and
// reports its deltas. Nothing is accumulated from a chunk that is refused.
func (s *ChatStream) add(chunk openai.ChatCompletionChunk) ([]parley.Delta, error) {
	if err := s.check(chunk); err != nil {
		return nil, err
	}
	if !s.acc.AddChunk(chunk) {
		return nil, fmt.Errorf("chunk %d: the SDK's accumulator refused a chunk that was checked", s.chunks+1)
	}
	s.chunks++
	var deltas []parley.Delta
	for _, c := range chunk.Choices {
		d := c.Delta
		if d.Content != "" {
			deltas = append(deltas, parley.Delta{Kind: parley.DeltaText, Index: s.open(&s.content), Text: d.Content})
		}
		if d.Refusal != "" {
			deltas = append(deltas, parley.Delta{Kind: parley.DeltaText, Index: s.open(&s.refusal), Text: d.Refusal})
		}
		for _, tc := range d.ToolCalls {
			if tc.ID == "" && tc.Function.Name == "" && tc.Function.Arguments == "" {
				continue
			}
			deltas = append(deltas, parley.Delta{
				Kind: parley.DeltaToolArguments, Index: callIndex(tc.Index),
				ToolCallID: tc.ID, ToolName: tc.Function.Name, Text: tc.Function.Arguments,
			})
		}
		if c.FinishReason != "" {
			s.finished = c.FinishReason
		}
	}
	return deltas, nil
}

// open returns the part *at, opening it as the next part if it has not started.
func (s *ChatStream) open(at *int) int {
	if *at < 0 {
		*at = s.parts
		s.parts++
	}
	return *at
}

// callIndex is the SDK's reading of a tool call's index: some providers send -1 for a
// single call.
func callIndex(i int64) int { return int(max(i, 0)) }

// check refuses a chunk that the accumulator would assemble into something other than
// one message: another completion's chunk, a second choice, a delta after the finish, a
// tool call that skips an index, opens without an id or name or with another call's id,
// or changes its id.
func (s *ChatStream) check(chunk openai.ChatCompletionChunk) error {
	if s.done {
		return s.invalid("after [DONE], which ends the stream")
	}
	if s.acc.ID != "" && chunk.ID != s.acc.ID {
		return s.invalid("id: %q, but the stream is completion %q; one stream is one completion",
			jsonerr.Truncate(chunk.ID), s.acc.ID)
	}
	var ids []string // the tool calls' ids, with those this chunk opens
	if len(s.acc.Choices) > 0 {
		for _, c := range s.acc.Choices[0].Message.ToolCalls {
			ids = append(ids, c.ID)
		}
	}
	for i, c := range chunk.Choices {
		if c.Index != 0 {
			return s.invalid("choices[%d].index: %d; only choice 0 is assembled into a message (ask for n=1)", i, c.Index)
		}
		if s.finished != "" {
			return s.invalid("choices[%d]: a delta after finish_reason %q, which ends the choice", i, s.finished)
		}
		for j, tc := range c.Delta.ToolCalls {
			field := fmt.Sprintf("choices[%d].delta.tool_calls[%d]", i, j)
			idx := callIndex(tc.Index)
			if tc.Type != "" && tc.Type != "function" {
				return s.invalid("%s.type: %q, want \"function\"", field, jsonerr.Truncate(tc.Type))
			}
			switch n := len(ids); {
			case idx > n:
				return s.invalid("%s.index: %d, but the message has %d tool calls; a new call is number %d", field, idx, n, n)
			case idx == n:
				if tc.ID == "" {
					return s.invalid("%s: tool call %d opens without an id", field, idx)
				}
				if tc.Function.Name == "" {
					return s.invalid("%s.function.name: tool call %d (%s) opens without a name", field, idx, jsonerr.Truncate(tc.ID))
				}
				if k := slices.Index(ids, tc.ID); k >= 0 {
					return s.invalid("%s.id: %q is already the id of tool call %d", field, jsonerr.Truncate(tc.ID), k)
				}
				ids = append(ids, tc.ID)
			case tc.ID != "" && tc.ID != ids[idx]:
				return s.invalid("%s.id: %q, but tool call %d is %q", field, jsonerr.Truncate(tc.ID), idx, ids[idx])
			}
		}
	}
	return nil
}

// Message returns the message as assembled so far: a ToolRequestMessage once a tool
// call has started, else a TextMessage, with the assistant's role. While the stream
// runs, tool call arguments may be incomplete JSON.
func (s *ChatStream) Message() parley.Message {
	var dr parley.Draft
	if len(s.acc.Choices) > 0 {
		m := s.acc.Choices[0].Message
		dr.Parts = make([]parley.Part, s.parts)
		if s.content >= 0 {
			dr.Parts[s.content] = parley.Part{Kind: parley.PartText, Text: m.Content}
		}
		if s.refusal >= 0 {
			dr.Parts[s.refusal] = parley.Part{Kind: parley.PartText, Text: m.Refusal}
		}
		for _, c := range m.ToolCalls {
			dr.ToolCalls = append(dr.ToolCalls, parley.ToolCall{
				ID: c.ID, Name: c.Function.Name, Arguments: parley.JSON(c.Function.Arguments),
			})
		}
	}
	return dr.Message()
}

// Provenance returns who produced the reply and what it cost, as far as the chunks so
// far say: the usage arrives in the last chunk, when the request asked for it
// (stream_options.include_usage).
func (s *ChatStream) Provenance() parley.Provenance {
	p := parley.Provenance{
		Provider:   Provider,
		Model:      s.acc.Model,
		ResponseID: s.acc.ID,
		Usage: parley.Usage{
			InputTokens:       s.acc.Usage.PromptTokens,
			OutputTokens:      s.acc.Usage.CompletionTokens,
			CachedInputTokens: s.acc.Usage.PromptTokensDetails.CachedTokens,
			ReasoningTokens:   s.acc.Usage.CompletionTokensDetails.ReasoningTokens,
		},
	}
	if len(s.acc.Choices) > 0 {
		p.FinishReason = s.acc.Choices[0].FinishReason
	}
	return p
}
