package openai

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/parley-dev/parley"
	"github.com/parley-dev/parley/interop/internal/contentblock"
	"github.com/parley-dev/parley/interop/internal/input"
	"github.com/parley-dev/parley/interop/internal/jsonerr"
	"github.com/parley-dev/parley/interop/internal/sourceid"
)

// responseItem is a Responses API input or output item of any type: only the fields
// Parley keeps.
type responseItem struct {
	Type             string          `json:"type"`
	ID               string          `json:"id"`
	Role             string          `json:"role"`
	Content          json.RawMessage `json:"content"`
	CallID           string          `json:"call_id"`
	Name             string          `json:"name"`
	Arguments        *string         `json:"arguments"`
	Output           json.RawMessage `json:"output"`
	Summary          []summaryPart   `json:"summary"`
	EncryptedContent string          `json:"encrypted_content"`
}

type summaryPart struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

// responseContent is a part of a message item's content.
type responseContent struct {
	Type     string `json:"type"`
	Text     string `json:"text"`
	Refusal  string `json:"refusal"`
	ImageURL string `json:"image_url"`
}

// ParseResponses reads a Responses API history: an array of input items, or an object
// with one (a request body's input, or a response's output). Messages of the system
// and developer roles are the system prompt: reported, not stored. An assistant turn's
// reasoning items, messages and function calls are one message, in the order they came:
// reasoning as THINKING parts keeping the item id and encrypted_content, a call's
// arguments as the model produced them and its item id beside its call id. Items have
// no ids of their own in a request, so each message's source id is a digest of the
// items so far, as for Chat Completions. Errors are EINVALID and name the index
// (input[3]) and what is wrong.
func ParseResponses(r io.Reader) (*parley.Import, error) {
	raw, err := input.Read(r, MaxInputBytes)
	if err != nil {
		return nil, err
	}
	elems, prov, err := itemsArray(raw)
	if err != nil {
		return nil, err
	}
	if prov == nil {
		prov = &parley.Provenance{Provider: Provider}
	}
	p := &responsesParser{imp: &parley.Import{}, chain: sourceid.NewChain("openai-responses"),
		calls: make(map[string]string), answered: make(map[string]string), prov: prov}
	for i, e := range elems {
		if err := p.item(i, e); err != nil {
			return nil, err
		}
	}
	p.flush()
	return p.imp, nil
}

// itemsArray finds the items of an input: the array itself, or an object's input (a
// request body) or output (a response).
// A response also says who produced its output (prov; nil for anything else).
func itemsArray(raw []byte) (elems []json.RawMessage, prov *parley.Provenance, err error) {
	t := bytes.TrimSpace(raw)
	if len(t) == 0 {
		return nil, nil, parley.Errorf(parley.EINVALID, "input: empty; want an array of Responses items or an object with input")
	}
	if !json.Valid(t) {
		return nil, nil, parley.Errorf(parley.EINVALID, "input: not valid JSON (%s)", jsonerr.SyntaxProblem(t, "input"))
	}
	if t[0] == '{' {
		var body struct {
			Input  json.RawMessage `json:"input"`
			Output json.RawMessage `json:"output"`
		}
		if err := json.Unmarshal(t, &body); err != nil {
			return nil, nil, parley.Errorf(parley.EINVALID, "input: not valid JSON")
		}
		switch {
		case len(body.Input) > 0:
			t = bytes.TrimSpace(body.Input)
		case len(body.Output) > 0:
			t = bytes.TrimSpace(body.Output)
			prov = responseProvenance(raw)
		default:
			return nil, nil, parley.Errorf(parley.EINVALID, "input: an object needs an input (a request) or output (a response) array")
		}
		if len(t) > 0 && t[0] == '"' {
			t = []byte(`[{"role":"user","content":` + string(t) + `}]`) // input may be a string
		}
	}
	if t[0] != '[' {
		return nil, nil, parley.Errorf(parley.EINVALID, "input: want an array of items, got %s", jsonerr.Kind(t))
	}
	if err := json.Unmarshal(t, &elems); err != nil {
		return nil, nil, parley.Errorf(parley.EINVALID, "input: not valid JSON")
	}
	return elems, prov, nil
}

// responseProvenance reads what a Responses API response object says of who produced
// its output: its id, model, status (or why it is incomplete) and usage.
func responseProvenance(raw []byte) *parley.Provenance {
	var r struct {
		ID                string `json:"id"`
		Model             string `json:"model"`
		Status            string `json:"status"`
		IncompleteDetails *struct {
			Reason string `json:"reason"`
		} `json:"incomplete_details"`
		Usage *struct {
			InputTokens        int64 `json:"input_tokens"`
			OutputTokens       int64 `json:"output_tokens"`
			InputTokensDetails struct {
				CachedTokens int64 `json:"cached_tokens"`
			} `json:"input_tokens_details"`
			OutputTokensDetails struct {
				ReasoningTokens int64 `json:"reasoning_tokens"`
			} `json:"output_tokens_details"`
		} `json:"usage"`
	}
	if json.Unmarshal(raw, &r) != nil {
		return nil // fields of unexpected types say nothing; the items are read regardless
	}
	p := &parley.Provenance{Provider: Provider, Model: r.Model, ResponseID: r.ID, FinishReason: r.Status}
	if r.IncompleteDetails != nil && r.IncompleteDetails.Reason != "" {
		p.FinishReason = r.IncompleteDetails.Reason
	}
	if u := r.Usage; u != nil {
		p.Usage = parley.Usage{InputTokens: u.InputTokens, OutputTokens: u.OutputTokens,
			CachedInputTokens: u.InputTokensDetails.CachedTokens, ReasoningTokens: u.OutputTokensDetails.ReasoningTokens}
	}
	if parley.CheckProvenance(p) != nil {
		return &parley.Provenance{Provider: Provider} // ids or counts no store would take: kept out
	}
	return p
}

type responsesParser struct {
	imp *parley.Import
	// prov is who produced the assistant turns: the provider, and for a response's
	// output its model, id, status and usage.
	prov     *parley.Provenance
	chain    *sourceid.Chain
	calls    map[string]string // call id -> where it was made
	answered map[string]string // call id -> where it was answered
	warned   map[string]bool
	// The assistant turn being read: its parts and calls in order, and the last item's
	// source.
	turn  *sourceid.Message
	parts []parley.Part
	tcs   []parley.ToolCall
	at    []int
	where string
}

func (p *responsesParser) item(i int, raw json.RawMessage) error {
	where := fmt.Sprintf("input[%d]", i)
	if t := bytes.TrimSpace(raw); len(t) == 0 || t[0] != '{' {
		return invalid(where, ": want an item object, got %s", jsonerr.Kind(raw))
	}
	var it responseItem
	if err := json.Unmarshal(raw, &it); err != nil {
		return invalid(where, "%s", jsonerr.FieldProblem(err, "an object"))
	}
	typ := it.Type
	if typ == "" && it.Role != "" {
		typ = "message" // an easy input message
	}
	switch typ {
	case "message":
		if it.Role == "assistant" {
			return p.assistantMessage(where, raw, &it)
		}
		p.flush()
		return p.message(where, raw, &it)
	case "reasoning":
		p.reasoning(where, raw, &it)
		return nil
	case "function_call":
		return p.functionCall(where, raw, &it)
	case "function_call_output":
		p.flush()
		return p.functionOutput(where, raw, &it)
	case "":
		return invalid(where, ".type: an item needs a type (or a role, for a message)")
	}
	p.flush()
	p.chain.Start(p.imp, where, raw)
	if p.warned == nil {
		p.warned = make(map[string]bool)
	}
	if !p.warned[typ] {
		p.warned[typ] = true
		p.imp.Warn("%s: %q items are not kept (here and later)", where, jsonerr.Truncate(typ))
	}
	return nil
}

// open starts or continues the assistant turn with the item at where.
func (p *responsesParser) open(where string, raw json.RawMessage) {
	p.turn = p.chain.Start(p.imp, where, raw)
	if p.where == "" {
		p.where = where
	}
}

func (p *responsesParser) reasoning(where string, raw json.RawMessage, it *responseItem) {
	p.open(where, raw)
	// Each summary is a part; the first carries the encrypted content. A reasoning item
	// with neither is still kept when it has an id: the API may want it back.
	first := len(p.parts)
	for _, s := range it.Summary {
		p.parts = append(p.parts, parley.Part{Kind: parley.PartThinking, Text: s.Text, ItemID: it.ID})
	}
	if len(p.parts) == first && (it.ID != "" || it.EncryptedContent != "") {
		p.parts = append(p.parts, parley.Part{Kind: parley.PartThinking, ItemID: it.ID})
	}
	if len(p.parts) > first {
		p.parts[first].Signature = it.EncryptedContent
	}
}

func (p *responsesParser) assistantMessage(where string, raw json.RawMessage, it *responseItem) error {
	parts, err := responseParts(where, it.Content)
	if err != nil {
		return err
	}
	p.open(where, raw)
	for _, c := range parts {
		text := c.Text
		if c.Type == "refusal" {
			text = c.Refusal
		}
		if strings.TrimSpace(text) != "" {
			p.parts = append(p.parts, parley.Part{Kind: parley.PartText, Text: text})
		}
	}
	return nil
}

func (p *responsesParser) functionCall(where string, raw json.RawMessage, it *responseItem) error {
	switch {
	case it.CallID == "":
		return invalid(where, ".call_id: a function_call needs a call_id")
	case it.Name == "":
		return invalid(where, ".name: a function_call needs a name")
	case it.Arguments == nil:
		return invalid(where, ".arguments: a function_call needs its arguments string")
	}
	if prev, dup := p.calls[it.CallID]; dup {
		return invalid(where, ".call_id: %q is already the id of a call in %s", jsonerr.Truncate(it.CallID), prev)
	}
	p.calls[it.CallID] = where
	p.open(where, raw)
	args := *it.Arguments // as produced, byte for byte
	p.tcs = append(p.tcs, parley.ToolCall{ID: it.CallID, Name: it.Name, ArgumentsRaw: &args, ItemID: it.ID})
	p.at = append(p.at, len(p.parts))
	return nil
}

// flush adds the assistant turn read so far.
func (p *responsesParser) flush() {
	if p.turn == nil {
		return
	}
	prov := *p.prov
	meta := parley.MessageMeta{Role: parley.RoleAssistant, Live: parley.Live{Provenance: &prov}}
	switch {
	case len(p.tcs) > 0:
		meta.Role = parley.RoleInvocation
		parley.AnchorCalls(p.tcs, p.at, len(p.parts))
		p.turn.Add(&parley.ToolRequestMessage{MessageMeta: meta, Body: parley.Body{Parts: p.parts}, ToolCalls: p.tcs})
	case strings.TrimSpace(parley.Body{Parts: p.parts}.Text()) != "":
		p.turn.Add(&parley.TextMessage{MessageMeta: meta, Body: parley.Body{Parts: p.parts}})
	case len(p.parts) > 0:
		p.imp.Skip("assistant turn with only reasoning (no text or call)", p.where)
	default:
		p.imp.Skip("message with no content", p.where)
	}
	p.turn, p.parts, p.tcs, p.at, p.where = nil, nil, nil, nil, ""
}

func (p *responsesParser) message(where string, raw json.RawMessage, it *responseItem) error {
	parts, err := responseParts(where, it.Content)
	if err != nil {
		return err
	}
	switch it.Role {
	case "system", "developer":
		var texts []string
		for j, c := range parts {
			if c.Type != "input_text" && c.Type != "text" {
				return invalid(fmt.Sprintf("%s.content[%d]", where, j), ".type: %q parts are not allowed here; only input_text", jsonerr.Truncate(c.Type))
			}
			texts = append(texts, c.Text)
		}
		p.chain.Start(p.imp, where, raw)
		if p.imp.SystemPrompt != "" {
			p.imp.SystemPrompt += "\n\n"
		}
		p.imp.SystemPrompt += strings.Join(texts, "\n\n")
		p.imp.Skip("system prompt (reported, not stored)", where)
		return nil
	case "user":
	case "":
		return invalid(where, ".role: missing; want user, assistant, system or developer")
	default:
		return invalid(where, ".role: %q is not user, assistant, system or developer", jsonerr.Truncate(it.Role))
	}
	o := p.chain.Start(p.imp, where, raw)
	var text []parley.Part
	flush := func() {
		if len(text) > 0 {
			o.Add(&parley.TextMessage{MessageMeta: parley.MessageMeta{Role: parley.RoleUser}, Body: parley.Body{Parts: text}})
			text = nil
		}
	}
	for j, c := range parts {
		field := fmt.Sprintf("%s.content[%d]", where, j)
		switch c.Type {
		case "input_text", "text":
			if strings.TrimSpace(c.Text) != "" {
				text = append(text, parley.Part{Kind: parley.PartText, Text: c.Text})
			}
		case "input_image":
			if c.ImageURL == "" {
				return invalid(field, ".image_url: an input_image needs an image_url (file ids are not kept)")
			}
			src, err := imageSource(field+".image_url", c.ImageURL)
			if err != nil {
				return err
			}
			flush()
			o.Add(&parley.ImageMessage{MessageMeta: parley.MessageMeta{Role: parley.RoleUser}, Source: src})
		default:
			p.imp.Warn("%s: %q content parts are not kept", field, jsonerr.Truncate(c.Type))
		}
	}
	flush()
	if o.Len() == 0 {
		p.imp.Skip("message with no content", where)
	}
	return nil
}

func (p *responsesParser) functionOutput(where string, raw json.RawMessage, it *responseItem) error {
	if it.CallID == "" {
		return invalid(where, ".call_id: a function_call_output must name the call it answers")
	}
	if _, ok := p.calls[it.CallID]; !ok {
		return invalid(where, ".call_id: %q names no function_call of an earlier item", jsonerr.Truncate(it.CallID))
	}
	if prev, done := p.answered[it.CallID]; done {
		return invalid(where, ".call_id: call %q was already answered in %s", jsonerr.Truncate(it.CallID), prev)
	}
	p.answered[it.CallID] = where
	var body parley.Body
	images := false
	out := bytes.TrimSpace(it.Output)
	switch {
	case len(out) == 0 || string(out) == "null":
	case out[0] == '"':
		var text string
		if err := json.Unmarshal(out, &text); err != nil {
			return invalid(where, ".output: not valid JSON")
		}
		body = parley.TextBody(text)
	default:
		parts, err := responseParts(where+".output", out)
		if err != nil {
			return err
		}
		// Images stay inside the result, as IMAGE parts in order among its text.
		for j, c := range parts {
			field := fmt.Sprintf("%s.output[%d]", where, j)
			switch {
			case c.Type == "input_text" || c.Type == "output_text" || c.Type == "text":
				body.Parts = append(body.Parts, parley.Part{Kind: parley.PartText, Text: c.Text})
			case c.Type == "input_image" && c.ImageURL != "":
				src, err := imageSource(field+".image_url", c.ImageURL)
				if err != nil {
					return err
				}
				body.Parts = append(body.Parts, contentblock.ImagePart(src))
				images = true
			default:
				p.imp.Warn("%s: %q output parts are not kept", field, jsonerr.Truncate(c.Type))
			}
		}
	}
	res := &parley.ToolResultMessage{MessageMeta: parley.MessageMeta{Role: parley.RoleResult},
		ToolCallID: it.CallID, Status: parley.ToolSuccess, Body: parley.TextBody(body.Text())}
	if images {
		res.Body = body
	}
	p.chain.Start(p.imp, where, raw).Add(res)
	return nil
}

// responseParts reads a Responses message's content: a string (one input_text part) or
// an array of parts.
func responseParts(where string, raw json.RawMessage) ([]responseContent, error) {
	return decodeContent(where, raw, func(s string) responseContent { return responseContent{Type: "input_text", Text: s} },
		func(p *responseContent) string { return p.Type })
}
