// Package anthropic moves histories between Parley and Anthropic's Messages API: it
// reads a {system, messages} history into Parley messages, and writes Parley messages
// as one, built with the official SDK's types (github.com/anthropics/anthropic-sdk-go)
// so that the API accepts them.
// MessageStream assembles a streamed Messages reply into a Parley message as it arrives,
// with the SDK's own accumulator.
package anthropic

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/parley-dev/parley"
	"github.com/parley-dev/parley/interop/internal/contentblock"
	"github.com/parley-dev/parley/interop/internal/input"
	"github.com/parley-dev/parley/interop/internal/jsonerr"
	"github.com/parley-dev/parley/interop/internal/sourceid"
)

// MaxInputBytes bounds what Parse reads.
const MaxInputBytes = 256 << 20

type message struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
	// A message object as the API returns it also says who produced it.
	ID         string `json:"id"`
	Model      string `json:"model"`
	StopReason string `json:"stop_reason"`
	Usage      *struct {
		InputTokens              int64 `json:"input_tokens"`
		OutputTokens             int64 `json:"output_tokens"`
		CacheCreationInputTokens int64 `json:"cache_creation_input_tokens"`
		CacheReadInputTokens     int64 `json:"cache_read_input_tokens"`
	} `json:"usage"`
}

// provenance is what an assistant message object says of who produced it (nil when it
// says nothing: a message of a request body has only its role and content).
func (m *message) provenance() *parley.Provenance {
	if m.ID == "" && m.Model == "" && m.StopReason == "" && m.Usage == nil {
		return nil
	}
	p := &parley.Provenance{Provider: Provider, Model: m.Model, ResponseID: m.ID, FinishReason: m.StopReason}
	if u := m.Usage; u != nil {
		p.Usage = parley.Usage{InputTokens: u.InputTokens, OutputTokens: u.OutputTokens,
			CachedInputTokens: u.CacheReadInputTokens, CacheCreationInputTokens: u.CacheCreationInputTokens}
	}
	if parley.CheckProvenance(p) != nil {
		return nil // ids or counts no store would take: kept out, the message kept
	}
	return p
}

// block is a Messages API content block of any type.
type block = contentblock.Block

// Parse reads a Messages API history: an object with messages (and system, as in a
// request body) or a bare messages array. The system prompt is reported, not stored.
// Tool results become one message each, in the order given, ahead of the text and
// images of their turn; thinking keeps its signature. Messages have no ids, so each
// message's source id is a digest of it and of every message before it: importing the
// same history again adds nothing, a longer copy adds only what is new. Errors are
// EINVALID and name the index (messages[2].content[1]) and what is wrong.
func Parse(r io.Reader) (*parley.Import, error) {
	raw, err := input.Read(r, MaxInputBytes)
	if err != nil {
		return nil, err
	}
	t := bytes.TrimSpace(raw)
	if len(t) == 0 {
		return nil, parley.Errorf(parley.EINVALID, "input: empty; want {system, messages} or a messages array")
	}
	if !json.Valid(t) {
		return nil, parley.Errorf(parley.EINVALID, "input: not valid JSON (%s)", jsonerr.SyntaxProblem(t, "input"))
	}
	p := &parser{imp: &parley.Import{}, chain: sourceid.NewChain("anthropic"), calls: make(map[string]string), answered: make(map[string]string)}
	msgs := t
	if t[0] == '{' {
		var body struct {
			System   json.RawMessage `json:"system"`
			Messages json.RawMessage `json:"messages"`
		}
		if err := json.Unmarshal(t, &body); err != nil {
			return nil, parley.Errorf(parley.EINVALID, "input: not valid JSON")
		}
		if err := p.system(body.System); err != nil {
			return nil, err
		}
		if len(body.Messages) == 0 {
			return nil, parley.Errorf(parley.EINVALID, "messages: missing; want an array of messages")
		}
		msgs = bytes.TrimSpace(body.Messages)
	}
	if msgs[0] != '[' {
		return nil, parley.Errorf(parley.EINVALID, "messages: want an array, got %s", jsonerr.Kind(msgs))
	}
	var elems []json.RawMessage
	if err := json.Unmarshal(msgs, &elems); err != nil {
		return nil, parley.Errorf(parley.EINVALID, "messages: not valid JSON")
	}
	for i, e := range elems {
		if err := p.message(i, e); err != nil {
			return nil, err
		}
	}
	return p.imp, nil
}

type parser struct {
	imp      *parley.Import
	chain    *sourceid.Chain
	calls    map[string]string
	answered map[string]string
	warned   map[string]bool
}

func invalid(where, format string, args ...any) error {
	return parley.Errorf(parley.EINVALID, "%s%s", where, fmt.Sprintf(format, args...))
}

// system reads the system prompt: a string or an array of text blocks.
func (p *parser) system(raw json.RawMessage) error {
	t := bytes.TrimSpace(raw)
	if len(t) == 0 || string(t) == "null" {
		return nil
	}
	blocks, text, isString, err := decodeBlocks("system", t)
	if err != nil {
		return err
	}
	if !isString {
		var texts []string
		for i, b := range blocks {
			if b.Type != "text" {
				return invalid(fmt.Sprintf("system[%d]", i), ".type: %q blocks are not allowed in system; only text", jsonerr.Truncate(b.Type))
			}
			texts = append(texts, b.Text)
		}
		text = strings.Join(texts, "\n\n")
	}
	if strings.TrimSpace(text) != "" {
		p.imp.SystemPrompt = text
		p.imp.Skip("system prompt (reported, not stored)", "system")
	}
	return nil
}

// decodeBlocks reads a content: a string, or an array of blocks.
func decodeBlocks(where string, raw json.RawMessage) (blocks []block, text string, isString bool, err error) {
	t := bytes.TrimSpace(raw)
	switch {
	case len(t) == 0 || string(t) == "null":
		return nil, "", true, nil
	case t[0] == '"':
		if err := json.Unmarshal(t, &text); err != nil {
			return nil, "", false, invalid(where, ": not valid JSON")
		}
		return nil, text, true, nil
	case t[0] != '[':
		return nil, "", false, invalid(where, ": want a string or an array of content blocks, got %s", jsonerr.Kind(t))
	}
	var elems []json.RawMessage
	if err := json.Unmarshal(t, &elems); err != nil {
		return nil, "", false, invalid(where, ": not valid JSON")
	}
	blocks = make([]block, len(elems))
	for i, e := range elems {
		field := fmt.Sprintf("%s[%d]", where, i)
		if et := bytes.TrimSpace(e); len(et) == 0 || et[0] != '{' {
			return nil, "", false, invalid(field, ": want a content block object, got %s", jsonerr.Kind(e))
		}
		if err := json.Unmarshal(e, &blocks[i]); err != nil {
			return nil, "", false, invalid(field, "%s", jsonerr.FieldProblem(err, "an object"))
		}
		if blocks[i].Type == "" {
			return nil, "", false, invalid(field, ".type: a content block needs a type")
		}
	}
	return blocks, "", false, nil
}

func (p *parser) message(i int, raw json.RawMessage) error {
	where := fmt.Sprintf("messages[%d]", i)
	if t := bytes.TrimSpace(raw); len(t) == 0 || t[0] != '{' {
		return invalid(where, ": want a message object, got %s", jsonerr.Kind(raw))
	}
	var m message
	if err := json.Unmarshal(raw, &m); err != nil {
		return invalid(where, "%s", jsonerr.FieldProblem(err, "an object"))
	}
	blocks, text, isString, err := decodeBlocks(where+".content", m.Content)
	if err != nil {
		return err
	}
	if isString {
		blocks = []block{{Type: "text", Text: text}}
	}
	switch m.Role {
	case "user":
		return p.user(where, raw, blocks)
	case "assistant":
		return p.assistant(where, raw, blocks, m.provenance())
	case "system":
		return invalid(where, ".role: \"system\" is not a message role here; the system prompt goes in the top-level system field")
	case "":
		return invalid(where, ".role: missing; want user or assistant")
	}
	return invalid(where, ".role: %q is not user or assistant", jsonerr.Truncate(m.Role))
}

func (p *parser) user(where string, raw json.RawMessage, blocks []block) error {
	o := p.chain.Start(p.imp, where, raw)
	// The API puts a turn's tool results first; each becomes its own message, and the
	// turn's text and images follow as user messages.
	for i, b := range blocks {
		if b.Type != "tool_result" {
			continue
		}
		field := fmt.Sprintf("%s.content[%d]", where, i)
		if b.ToolUseID == "" {
			return invalid(field, ".tool_use_id: a tool_result must name the tool_use it answers")
		}
		if _, ok := p.calls[b.ToolUseID]; !ok {
			return invalid(field, ".tool_use_id: %q names no tool_use of an earlier assistant message", jsonerr.Truncate(b.ToolUseID))
		}
		if prev, done := p.answered[b.ToolUseID]; done {
			return invalid(field, ".tool_use_id: tool_use %q was already answered in %s", jsonerr.Truncate(b.ToolUseID), prev)
		}
		p.answered[b.ToolUseID] = field
		inner, text, isString, err := decodeBlocks(field+".content", b.Content)
		if err != nil {
			return err
		}
		// Images stay inside the result, in order among its text.
		var parts []parley.Part
		if !isString {
			for j, ib := range inner {
				switch ib.Type {
				case "text":
					parts = append(parts, parley.Part{Kind: parley.PartText, Text: ib.Text})
				case "image":
					img, err := p.image(fmt.Sprintf("%s.content[%d]", field, j), ib, parley.RoleUser)
					if err != nil {
						return err
					}
					parts = append(parts, contentblock.ImagePart(img.Source))
				default:
					p.drop(fmt.Sprintf("%s.content[%d]", field, j), ib.Type)
				}
			}
			text = parley.Body{Parts: parts}.Text()
		}
		res := contentblock.ToolResult(parley.MessageMeta{Role: parley.RoleResult}, b, text)
		if slices.ContainsFunc(parts, func(p parley.Part) bool { return p.Kind == parley.PartImage }) {
			res.Body = parley.Body{Parts: parts}
		}
		o.Add(res)
	}
	var parts []parley.Part
	flush := func() {
		if len(parts) > 0 {
			o.Add(&parley.TextMessage{MessageMeta: parley.MessageMeta{Role: parley.RoleUser}, Body: parley.Body{Parts: parts}})
			parts = nil
		}
	}
	for i, b := range blocks {
		field := fmt.Sprintf("%s.content[%d]", where, i)
		switch b.Type {
		case "tool_result":
		case "text":
			if strings.TrimSpace(b.Text) != "" {
				parts = append(parts, parley.Part{Kind: parley.PartText, Text: b.Text})
			}
		case "image":
			img, err := p.image(field, b, parley.RoleUser)
			if err != nil {
				return err
			}
			flush()
			o.Add(img)
		case "tool_use":
			return invalid(field, ".type: tool_use blocks belong in assistant messages")
		default:
			p.drop(field, b.Type)
		}
	}
	flush()
	if o.Len() == 0 {
		p.imp.Skip("message with no content", where)
	}
	return nil
}

func (p *parser) assistant(where string, raw json.RawMessage, blocks []block, prov *parley.Provenance) error {
	var parts []parley.Part
	var calls []parley.ToolCall
	var at []int // how many parts came before each call
	var images []parley.Message
	for i, b := range blocks {
		field := fmt.Sprintf("%s.content[%d]", where, i)
		switch b.Type {
		case "text":
			if strings.TrimSpace(b.Text) != "" {
				parts = append(parts, contentblock.TextPart(b))
			}
		case "thinking", "redacted_thinking":
			if part, ok := contentblock.Thinking(b); ok {
				parts = append(parts, part)
			}
		case "tool_use":
			if b.ID == "" {
				return invalid(field, ".id: a tool_use needs an id")
			}
			if b.Name == "" {
				return invalid(field, ".name: a tool_use needs a name")
			}
			if prev, dup := p.calls[b.ID]; dup {
				return invalid(field, ".id: %q is already the id of a tool_use in %s", jsonerr.Truncate(b.ID), prev)
			}
			args, raw := contentblock.Arguments(b.Input)
			p.calls[b.ID] = field
			calls = append(calls, parley.ToolCall{ID: b.ID, Name: b.Name, Arguments: args, ArgumentsRaw: raw})
			at = append(at, len(parts))
		case "image":
			img, err := p.image(field, b, parley.RoleAssistant)
			if err != nil {
				return err
			}
			images = append(images, img)
		case "tool_result":
			return invalid(field, ".type: tool_result blocks belong in user messages")
		default:
			if contentblock.ServerTool(b.Type) {
				parts = append(parts, contentblock.ServerToolPart(b))
				continue
			}
			p.drop(field, b.Type)
		}
	}
	o := p.chain.Start(p.imp, where, raw)
	meta := parley.MessageMeta{Role: parley.RoleAssistant, Live: parley.Live{Provenance: prov}}
	switch {
	case len(calls) > 0:
		meta.Role = parley.RoleInvocation
		parley.AnchorCalls(calls, at, len(parts))
		o.Add(&parley.ToolRequestMessage{MessageMeta: meta, Body: parley.Body{Parts: parts}, ToolCalls: calls})
	case strings.TrimSpace(parley.Body{Parts: parts}.Text()) != "":
		o.Add(&parley.TextMessage{MessageMeta: meta, Body: parley.Body{Parts: parts}})
	case len(parts) > 0:
		p.imp.Skip("assistant message with only thinking (no text or tool call)", where)
	case len(images) == 0:
		p.imp.Skip("message with no content", where)
	}
	for _, img := range images {
		o.Add(img)
	}
	return nil
}

func (p *parser) image(field string, b block, role parley.Role) (*parley.ImageMessage, error) {
	m, sniffed, problem := contentblock.Image(b.Source, role)
	if problem != nil {
		return nil, invalid(field, "%s: %s", problem.Field, problem.Message)
	}
	if sniffed != "" {
		p.imp.Warn("%s: the image is %s, not the %s it claims; kept as %s", field, sniffed, b.Source.MediaType, sniffed)
	}
	return m, nil
}

// drop warns, once per block type, that blocks of that type are not kept.
func (p *parser) drop(field, typ string) {
	if p.warned == nil {
		p.warned = make(map[string]bool)
	}
	if p.warned[typ] {
		return
	}
	p.warned[typ] = true
	p.imp.Warn("%s: %q blocks are not kept (here and later)", field, jsonerr.Truncate(typ))
}
