// Package openai moves histories between Parley and OpenAI's APIs: it reads a Chat
// Completions messages array into Parley messages, and writes Parley messages as Chat
// Completions messages or as Responses API input items, built with the official SDK's
// types (github.com/openai/openai-go/v3) so that the API accepts them.
// ChatStream assembles a streamed Chat Completions reply into a Parley message as it
// arrives, with the SDK's own accumulator.
package openai

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/parley-dev/parley"
	"github.com/parley-dev/parley/interop/internal/input"
	"github.com/parley-dev/parley/interop/internal/jsonerr"
	"github.com/parley-dev/parley/interop/internal/sourceid"
)

// MaxInputBytes bounds what ParseChat reads.
const MaxInputBytes = 256 << 20

// chatMessage is a Chat Completions message of any role: only the fields Parley keeps.
type chatMessage struct {
	Role         string          `json:"role"`
	Content      json.RawMessage `json:"content"`
	Refusal      *string         `json:"refusal"`
	ToolCalls    []chatToolCall  `json:"tool_calls"`
	ToolCallID   *string         `json:"tool_call_id"`
	FunctionCall json.RawMessage `json:"function_call"`
}

type chatToolCall struct {
	ID       string `json:"id"`
	Type     string `json:"type"`
	Function *struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"function"`
	// ExtraContent is where Gemini's OpenAI-compatible API puts a call's thought signature.
	ExtraContent struct {
		Google struct {
			ThoughtSignature string `json:"thought_signature"`
		} `json:"google"`
	} `json:"extra_content"`
}

type contentPart struct {
	Type     string `json:"type"`
	Text     string `json:"text"`
	Refusal  string `json:"refusal"`
	ImageURL *struct {
		URL string `json:"url"`
	} `json:"image_url"`
}

// ParseChat reads a Chat Completions history: a messages array, or an object with a
// messages array (a request body). System and developer messages are the system prompt:
// reported, not stored. Chat messages have no ids, so each message's source id is a
// digest of it and of every stored message before it: importing the same history again
// adds nothing, and a longer copy adds only what is new. Errors are EINVALID and name the
// index (messages[3]) and what is wrong.
func ParseChat(r io.Reader) (*parley.Import, error) {
	raw, err := input.Read(r, MaxInputBytes)
	if err != nil {
		return nil, err
	}
	elems, err := messagesArray(raw)
	if err != nil {
		return nil, err
	}
	p := &chatParser{imp: &parley.Import{}, chain: sourceid.NewChain("openai-chat"), calls: make(map[string]string), answered: make(map[string]string)}
	for i, e := range elems {
		if err := p.message(i, e); err != nil {
			return nil, err
		}
	}
	return p.imp, nil
}

// messagesArray finds the messages of an input: the array itself, or its "messages".
func messagesArray(raw []byte) ([]json.RawMessage, error) {
	t := bytes.TrimSpace(raw)
	if len(t) == 0 {
		return nil, parley.Errorf(parley.EINVALID, "input: empty; want a messages array or an object with messages")
	}
	if !json.Valid(t) {
		return nil, parley.Errorf(parley.EINVALID, "input: not valid JSON (%s)", jsonerr.SyntaxProblem(t, "input"))
	}
	if t[0] == '{' {
		var body struct {
			Messages json.RawMessage `json:"messages"`
		}
		if err := json.Unmarshal(t, &body); err != nil {
			return nil, parley.Errorf(parley.EINVALID, "input: not valid JSON")
		}
		if len(body.Messages) == 0 {
			return nil, parley.Errorf(parley.EINVALID, "input: an object needs a messages array")
		}
		t = bytes.TrimSpace(body.Messages)
	}
	if t[0] != '[' {
		return nil, parley.Errorf(parley.EINVALID, "messages: want an array, got %s", jsonerr.Kind(t))
	}
	var elems []json.RawMessage
	if err := json.Unmarshal(t, &elems); err != nil {
		return nil, parley.Errorf(parley.EINVALID, "messages: not valid JSON")
	}
	return elems, nil
}

type chatParser struct {
	imp      *parley.Import
	chain    *sourceid.Chain   // source ids of the input messages so far
	calls    map[string]string // tool call id -> where it was made
	answered map[string]string // tool call id -> where it was answered
}

func invalid(where, format string, args ...any) error {
	return parley.Errorf(parley.EINVALID, "%s%s", where, fmt.Sprintf(format, args...))
}

func (p *chatParser) message(i int, raw json.RawMessage) error {
	where := fmt.Sprintf("messages[%d]", i)
	if t := bytes.TrimSpace(raw); len(t) == 0 || t[0] != '{' {
		return invalid(where, ": want a message object, got %s", jsonerr.Kind(raw))
	}
	var m chatMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		return invalid(where, "%s", jsonerr.FieldProblem(err, "an object"))
	}
	switch m.Role {
	case "system", "developer":
		text, err := p.plainText(where, m.Content)
		if err != nil {
			return err
		}
		if p.imp.SystemPrompt != "" {
			p.imp.SystemPrompt += "\n\n"
		}
		p.imp.SystemPrompt += text
		p.imp.Skip("system prompt (reported, not stored)", where)
		return nil
	case "user":
		return p.user(where, raw, m.Content)
	case "assistant":
		return p.assistant(where, raw, &m)
	case "tool":
		return p.tool(where, raw, &m)
	case "function":
		return invalid(where, ".role: \"function\" messages (the deprecated functions API) have no call id to link them; use tool messages")
	case "":
		return invalid(where, ".role: missing; want system, developer, user, assistant or tool")
	}
	return invalid(where, ".role: %q is not system, developer, user, assistant or tool", jsonerr.Truncate(m.Role))
}

func (p *chatParser) user(where string, raw, content json.RawMessage) error {
	parts, err := decodeParts(where, content)
	if err != nil {
		return err
	}
	o := p.chain.Start(p.imp, where, raw)
	var text []parley.Part
	flush := func() {
		if len(text) > 0 {
			o.Add(&parley.TextMessage{MessageMeta: parley.MessageMeta{Role: parley.RoleUser}, Body: parley.Body{Parts: text}})
			text = nil
		}
	}
	for j, part := range parts {
		field := fmt.Sprintf("%s.content[%d]", where, j)
		switch part.Type {
		case "text":
			if strings.TrimSpace(part.Text) != "" {
				text = append(text, parley.Part{Kind: parley.PartText, Text: part.Text})
			}
		case "image_url":
			if part.ImageURL == nil || part.ImageURL.URL == "" {
				return invalid(field, ".image_url.url: an image_url part needs a url")
			}
			src, err := imageSource(field+".image_url.url", part.ImageURL.URL)
			if err != nil {
				return err
			}
			flush()
			o.Add(&parley.ImageMessage{MessageMeta: parley.MessageMeta{Role: parley.RoleUser}, Source: src})
		default:
			p.imp.Warn("%s: %q content parts are not kept", field, jsonerr.Truncate(part.Type))
		}
	}
	flush()
	if o.Len() == 0 {
		p.imp.Skip("message with no content", where)
	}
	return nil
}

// imageSource reads an image_url: a data: URL with base64 data, or an http(s) URL.
func imageSource(field, u string) (parley.ImageSource, error) {
	if rest, ok := strings.CutPrefix(u, "data:"); ok {
		meta, data, ok := strings.Cut(rest, ",")
		media, isBase64 := strings.CutSuffix(meta, ";base64")
		if !ok || !isBase64 {
			return parley.ImageSource{}, invalid(field, ": a data URL must be data:<media type>;base64,<data>")
		}
		if _, err := base64.StdEncoding.DecodeString(data); err != nil {
			return parley.ImageSource{}, invalid(field, ": the data URL's data is not valid base64")
		}
		return parley.ImageSource{Data: data, MediaType: media}, nil
	}
	return parley.ImageSource{URL: u}, nil
}

func (p *chatParser) assistant(where string, raw json.RawMessage, m *chatMessage) error {
	parts, err := decodeParts(where, m.Content)
	if err != nil {
		return err
	}
	var body []parley.Part
	for j, part := range parts {
		switch part.Type {
		case "text":
			if strings.TrimSpace(part.Text) != "" {
				body = append(body, parley.Part{Kind: parley.PartText, Text: part.Text})
			}
		case "refusal":
			if strings.TrimSpace(part.Refusal) != "" {
				body = append(body, parley.Part{Kind: parley.PartText, Text: part.Refusal})
			}
		default:
			p.imp.Warn("%s.content[%d]: %q content parts are not kept", where, j, jsonerr.Truncate(part.Type))
		}
	}
	if m.Refusal != nil && strings.TrimSpace(*m.Refusal) != "" {
		body = append(body, parley.Part{Kind: parley.PartText, Text: *m.Refusal})
	}
	if len(bytes.TrimSpace(m.FunctionCall)) > 0 && string(bytes.TrimSpace(m.FunctionCall)) != "null" {
		return invalid(where, ".function_call: the deprecated functions API has no call ids; use tool_calls")
	}
	calls := make([]parley.ToolCall, 0, len(m.ToolCalls))
	for j, c := range m.ToolCalls {
		field := fmt.Sprintf("%s.tool_calls[%d]", where, j)
		if c.Type != "" && c.Type != "function" {
			return invalid(field, ".type: %q tool calls are not supported; only function", jsonerr.Truncate(c.Type))
		}
		if c.ID == "" {
			return invalid(field, ".id: a tool call needs an id")
		}
		if c.Function == nil || c.Function.Name == "" {
			return invalid(field, ".function.name: a tool call needs a function name")
		}
		if prev, dup := p.calls[c.ID]; dup {
			return invalid(field, ".id: %q is already the id of a call in %s", jsonerr.Truncate(c.ID), prev)
		}
		// Kept byte for byte, as produced: arguments that are not a JSON object (cut
		// short by finish_reason "length", "", an array) are stored flagged invalid.
		raw := c.Function.Arguments
		p.calls[c.ID] = field
		calls = append(calls, parley.ToolCall{ID: c.ID, Name: c.Function.Name, ArgumentsRaw: &raw,
			ThoughtSignature: c.ExtraContent.Google.ThoughtSignature})
	}
	o := p.chain.Start(p.imp, where, raw)
	switch {
	case len(calls) > 0:
		o.Add(&parley.ToolRequestMessage{MessageMeta: parley.MessageMeta{Role: parley.RoleInvocation}, Body: parley.Body{Parts: body}, ToolCalls: calls})
	case len(body) > 0:
		o.Add(&parley.TextMessage{MessageMeta: parley.MessageMeta{Role: parley.RoleAssistant}, Body: parley.Body{Parts: body}})
	default:
		p.imp.Skip("message with no content", where)
	}
	return nil
}

func (p *chatParser) tool(where string, raw json.RawMessage, m *chatMessage) error {
	if m.ToolCallID == nil || *m.ToolCallID == "" {
		return invalid(where, ".tool_call_id: a tool message must name the call it answers")
	}
	id := *m.ToolCallID
	if _, ok := p.calls[id]; !ok {
		return invalid(where, ".tool_call_id: %q names no tool call of an earlier assistant message", jsonerr.Truncate(id))
	}
	if prev, done := p.answered[id]; done {
		return invalid(where, ".tool_call_id: call %q was already answered in %s", jsonerr.Truncate(id), prev)
	}
	p.answered[id] = where
	text, err := p.plainText(where, m.Content)
	if err != nil {
		return err
	}
	o := p.chain.Start(p.imp, where, raw)
	o.Add(&parley.ToolResultMessage{
		MessageMeta: parley.MessageMeta{Role: parley.RoleResult},
		ToolCallID:  id, Status: parley.ToolSuccess, Body: parley.TextBody(text),
	})
	return nil
}

// decodeParts reads a Chat Completions content that is a string (one text part), an
// array of parts, or null (no parts).
func decodeParts(where string, raw json.RawMessage) ([]contentPart, error) {
	return decodeContent(where, raw, func(s string) contentPart { return contentPart{Type: "text", Text: s} },
		func(p *contentPart) string { return p.Type })
}

// decodeContent reads a content in either API's shape: a string (the one part text
// makes), an array of part objects, each with a type (typ reads it), or null (no parts).
func decodeContent[P any](where string, raw json.RawMessage, text func(string) P, typ func(*P) string) ([]P, error) {
	t := bytes.TrimSpace(raw)
	switch {
	case len(t) == 0 || string(t) == "null":
		return nil, nil
	case t[0] == '"':
		var s string
		if err := json.Unmarshal(t, &s); err != nil {
			return nil, invalid(where, ".content: not valid JSON")
		}
		return []P{text(s)}, nil
	case t[0] != '[':
		return nil, invalid(where, ".content: want a string or an array of content parts, got %s", jsonerr.Kind(t))
	}
	var elems []json.RawMessage
	if err := json.Unmarshal(t, &elems); err != nil {
		return nil, invalid(where, ".content: not valid JSON")
	}
	parts := make([]P, len(elems))
	for j, e := range elems {
		field := fmt.Sprintf("%s.content[%d]", where, j)
		if et := bytes.TrimSpace(e); len(et) == 0 || et[0] != '{' {
			return nil, invalid(field, ": want a content part object, got %s", jsonerr.Kind(e))
		}
		if err := json.Unmarshal(e, &parts[j]); err != nil {
			return nil, invalid(field, "%s", jsonerr.FieldProblem(err, "an object"))
		}
		if typ(&parts[j]) == "" {
			return nil, invalid(field, ".type: a content part needs a type")
		}
	}
	return parts, nil
}

// plainText reads a content that may only hold text: a string or text parts.
func (p *chatParser) plainText(where string, raw json.RawMessage) (string, error) {
	parts, err := decodeParts(where, raw)
	if err != nil {
		return "", err
	}
	var texts []string
	for j, part := range parts {
		if part.Type != "text" {
			return "", invalid(fmt.Sprintf("%s.content[%d]", where, j), ".type: %q parts are not allowed here; only text", jsonerr.Truncate(part.Type))
		}
		texts = append(texts, part.Text)
	}
	return strings.Join(texts, "\n\n"), nil
}
