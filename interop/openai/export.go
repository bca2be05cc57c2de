package openai

import (
	"encoding/json"
	"fmt"
	"strings"

	sdk "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/packages/param"
	"github.com/openai/openai-go/v3/responses"

	"github.com/parley-dev/parley"
	"github.com/parley-dev/parley/interop/internal/jsonlist"
	"github.com/parley-dev/parley/interop/internal/notes"
)

// The exporters take a history that is ready to send: every tool call answered by the
// results right after it, no system control or unknown message, nothing without content
// (the interop package's planner makes it so). They map roles as seed 002 says:
// SUPERVISOR text and the ephemeral system prompt are system instructions, documents and
// MCP resources are user messages with a header naming their source, tool requests and
// results are the API's tool-call shapes, linked by call id.

const (
	noteThinking    = "thinking left out: the API takes no reasoning text back"
	noteImageAsText = "image sent as its recognized text"
	noteNoOutput    = "empty tool result sent as \"(no output)\""
	noteToolImages  = "images in tool results sent as a user message after the results: a tool message takes only text"
)

// resultImages returns the image URLs (data: URLs for inline images) of a tool result's
// IMAGE parts.
func resultImages(body parley.Body) []string {
	var urls []string
	for _, p := range body.Parts {
		if src, ok := p.ImageSource(); ok {
			urls = append(urls, src.DataURL())
		}
	}
	return urls
}

// outputItems is a tool result's text and images as function_call_output items, in the
// order the tool gave them.
func outputItems(body parley.Body) responses.ResponseFunctionCallOutputItemListParam {
	var items responses.ResponseFunctionCallOutputItemListParam
	for _, p := range body.Parts {
		if src, ok := p.ImageSource(); ok {
			items = append(items, responses.ResponseFunctionCallOutputItemUnionParam{OfInputImage: &responses.ResponseInputImageContentParam{
				ImageURL: param.NewOpt(src.DataURL()), Detail: responses.ResponseInputImageContentDetailAuto,
			}})
		} else if p.Kind == parley.PartText && strings.TrimSpace(p.Text) != "" {
			items = append(items, responses.ResponseFunctionCallOutputItemUnionParam{OfInputText: &responses.ResponseInputTextContentParam{Text: p.Text}})
		}
	}
	return items
}

// ExportChat writes msgs as a Chat Completions messages array, system first.
func ExportChat(msgs []parley.Message, system string) (parley.JSON, []string, error) {
	out, notes, err := chatMessages(msgs, system)
	if err != nil {
		return nil, nil, err
	}
	b, err := appendChat(make([]byte, 0, chatSize(out)), out, false)
	if err != nil {
		return nil, nil, fmt.Errorf("encode chat messages: %w", err)
	}
	return b, notes, nil
}

// chatSize is about what appendChat writes of msgs, a little more when their text needs
// escapes: a transcript of thousands of messages is megabytes, and growing the buffer as
// it was written took a quarter of writing it (each step a new allocation, zeroed, and
// a copy).
func chatSize(msgs []chatOut) int {
	n := 2
	for i := range msgs {
		m := &msgs[i]
		n += 48 + len(m.role) + len(m.toolCallID) + jsonlist.EscapedSize(m.content)
		for _, c := range m.calls {
			n += 96 + len(c.ID) + len(c.Name) + 2*len(c.Arguments)
		}
	}
	return n
}

// chatMessages maps msgs to the messages of a Chat Completions request.
func chatMessages(msgs []parley.Message, system string) ([]chatOut, []string, error) {
	var n notes.Notes
	out := make([]chatOut, 0, len(msgs)+1)
	text := func(role, content string) {
		out = append(out, chatOut{role: role, content: content, hasContent: true})
	}
	if strings.TrimSpace(system) != "" {
		text("system", system)
	}
	// A tool result's images follow the run of tool messages they came in, so that the
	// calls' results stay together after the assistant message, as the API requires.
	var images []string
	flushImages := func() {
		if len(images) == 0 {
			return
		}
		parts := make([]sdk.ChatCompletionContentPartUnionParam, len(images))
		for i, u := range images {
			parts[i] = sdk.ImageContentPart(sdk.ChatCompletionContentPartImageImageURLParam{URL: u})
		}
		m := sdk.UserMessage(parts)
		out, images = append(out, chatOut{sdk: &m}), nil
	}
	for _, m := range msgs {
		if _, ok := m.(*parley.ToolResultMessage); !ok {
			flushImages()
		}
		switch m := m.(type) {
		case *parley.TextMessage:
			if m.Thinking() != "" {
				n.Add(noteThinking)
			}
			switch m.Role {
			case parley.RoleUser:
				text("user", m.Text())
			case parley.RoleAssistant:
				text("assistant", m.Text())
			case parley.RoleSupervisor:
				text("system", m.Text())
			}
		case *parley.ImageMessage:
			asImage, content := m.LLMContent()
			switch {
			case asImage:
				u := sdk.UserMessage([]sdk.ChatCompletionContentPartUnionParam{
					sdk.ImageContentPart(sdk.ChatCompletionContentPartImageImageURLParam{URL: m.Source.DataURL()}),
				})
				out = append(out, chatOut{sdk: &u})
			case m.Role == parley.RoleAssistant:
				n.Add(noteImageAsText)
				text("assistant", content)
			default:
				n.Add(noteImageAsText)
				text("user", content)
			}
		case *parley.FileReferenceMessage, *parley.MCPResourceMessage:
			content, _ := parley.ContextText(m)
			text("user", content)
		case *parley.ToolRequestMessage:
			if m.Thinking() != "" {
				n.Add(noteThinking)
			}
			a := chatOut{role: "assistant", calls: m.ToolCalls}
			if t := m.Text(); strings.TrimSpace(t) != "" {
				a.content, a.hasContent = t, true
			}
			for _, c := range m.ToolCalls {
				if c.ThoughtSignature != "" {
					// Where Gemini's OpenAI-compatible API gave it (replay sends it only
					// there): an extra field, which the SDK writes.
					p := a.param()
					a = chatOut{sdk: &p}
					break
				}
			}
			out = append(out, a)
		case *parley.ToolResultMessage:
			content := m.ResultText()
			if strings.TrimSpace(content) == "" {
				n.Add(noteNoOutput)
				content = "(no output)"
			}
			out = append(out, chatOut{role: "tool", content: content, hasContent: true, toolCallID: m.ToolCallID})
			if urls := resultImages(m.Body); len(urls) > 0 {
				n.Add(noteToolImages)
				images = append(images, urls...)
			}
		case *parley.CompactionMessage:
			// Only a client's summary reaches Chat Completions (the planner sees to it).
			text("user", m.Text())
		default:
			return nil, nil, fmt.Errorf("openai: cannot export a %T", m)
		}
	}
	flushImages()
	return out, n.List(), nil
}

// chatOut is a message of a Chat Completions request: a text message of a role, a
// tool message (toolCallID) or an assistant message with calls, which appendJSON
// writes directly, or another shape, which the SDK writes (sdk). Writing the common
// shapes directly spares encoding/json's reflection over the SDK's params, most of an
// export's CPU; param builds the same message as the SDK's param, and the tests hold
// appendJSON's bytes to the SDK's.
type chatOut struct {
	role       string
	content    string
	hasContent bool
	toolCallID string
	calls      []parley.ToolCall
	sdk        *sdk.ChatCompletionMessageParamUnion
}

// param is m as the SDK's param.
func (m *chatOut) param() sdk.ChatCompletionMessageParamUnion {
	switch {
	case m.sdk != nil:
		return *m.sdk
	case m.role == "system":
		return sdk.SystemMessage(m.content)
	case m.role == "user":
		return sdk.UserMessage(m.content)
	case m.role == "tool":
		return sdk.ToolMessage(m.content, m.toolCallID)
	}
	a := sdk.ChatCompletionAssistantMessageParam{}
	if m.hasContent {
		a.Content.OfString = param.NewOpt(m.content)
	}
	for _, c := range m.calls {
		call := &sdk.ChatCompletionMessageFunctionToolCallParam{
			ID:       c.ID,
			Function: sdk.ChatCompletionMessageFunctionToolCallFunctionParam{Name: c.Name, Arguments: c.ArgumentsText()},
		}
		if c.ThoughtSignature != "" {
			call.SetExtraFields(map[string]any{"extra_content": map[string]any{
				"google": map[string]any{"thought_signature": c.ThoughtSignature}}})
		}
		a.ToolCalls = append(a.ToolCalls, sdk.ChatCompletionMessageToolCallUnionParam{OfFunction: call})
	}
	return sdk.ChatCompletionMessageParamUnion{OfAssistant: &a}
}

// appendJSON appends m as encoding/json.Marshal(m.param()) writes it; viaSDK writes it
// with the SDK (the reference the tests compare with).
func (m *chatOut) appendJSON(dst []byte, viaSDK bool) ([]byte, error) {
	if viaSDK || m.sdk != nil {
		return jsonlist.AppendMarshaler(dst, m.param())
	}
	dst = append(dst, '{')
	if m.hasContent {
		dst = append(dst, `"content":`...)
		dst = jsonlist.AppendString(dst, m.content)
		dst = append(dst, ',')
	}
	if m.role == "tool" {
		dst = append(dst, `"tool_call_id":`...)
		dst = jsonlist.AppendString(dst, m.toolCallID)
		dst = append(dst, ',')
	}
	if len(m.calls) > 0 {
		dst = append(dst, `"tool_calls":[`...)
		for i := range m.calls {
			c := &m.calls[i]
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = append(dst, `{"id":`...)
			dst = jsonlist.AppendString(dst, c.ID)
			dst = append(dst, `,"function":{"arguments":`...)
			dst = jsonlist.AppendString(dst, c.ArgumentsText())
			dst = append(dst, `,"name":`...)
			dst = jsonlist.AppendString(dst, c.Name)
			dst = append(dst, `},"type":"function"}`...)
		}
		dst = append(dst, "],"...)
	}
	dst = append(dst, `"role":"`...)
	dst = append(dst, m.role...)
	return append(dst, `"}`...), nil
}

// appendChat appends msgs as a JSON array (viaSDK: as appendJSON says).
func appendChat(dst []byte, msgs []chatOut, viaSDK bool) ([]byte, error) {
	dst = append(dst, '[')
	for i := range msgs {
		if i > 0 {
			dst = append(dst, ',')
		}
		var err error
		if dst, err = msgs[i].appendJSON(dst, viaSDK); err != nil {
			return nil, err
		}
	}
	return append(dst, ']'), nil
}

// ExportResponses writes msgs as Responses API input items: messages (the system
// prompt and SUPERVISOR text as developer messages), function_call and
// function_call_output items, a result's images inside its output (an array of
// input_text and input_image items, in the tool's order).
func ExportResponses(msgs []parley.Message, system string) (parley.JSON, []string, error) {
	var n notes.Notes
	out := make([]responses.ResponseInputItemUnionParam, 0, len(msgs)+1)
	// Items carry their type, "message" included, so that they say what they are.
	message := func(text string, role responses.EasyInputMessageRole) {
		item := responses.ResponseInputItemParamOfMessage(text, role)
		item.OfMessage.Type = responses.EasyInputMessageTypeMessage
		out = append(out, item)
	}
	if strings.TrimSpace(system) != "" {
		message(system, responses.EasyInputMessageRoleDeveloper)
	}
	for _, m := range msgs {
		switch m := m.(type) {
		case *parley.TextMessage:
			if unsent(m.Parts) {
				n.Add(noteThinking)
			}
			switch m.Role {
			case parley.RoleUser:
				message(m.Text(), responses.EasyInputMessageRoleUser)
			case parley.RoleAssistant:
				out = append(out, reasoningItems(m.Parts)...)
				message(m.Text(), responses.EasyInputMessageRoleAssistant)
			case parley.RoleSupervisor:
				message(m.Text(), responses.EasyInputMessageRoleDeveloper)
			}
		case *parley.ImageMessage:
			asImage, text := m.LLMContent()
			switch {
			case asImage:
				item := responses.ResponseInputItemParamOfMessage(responses.ResponseInputMessageContentListParam{{
					OfInputImage: &responses.ResponseInputImageParam{
						ImageURL: param.NewOpt(m.Source.DataURL()), Detail: responses.ResponseInputImageDetailAuto,
					},
				}}, responses.EasyInputMessageRoleUser)
				item.OfMessage.Type = responses.EasyInputMessageTypeMessage
				out = append(out, item)
			case m.Role == parley.RoleAssistant:
				n.Add(noteImageAsText)
				message(text, responses.EasyInputMessageRoleAssistant)
			default:
				n.Add(noteImageAsText)
				message(text, responses.EasyInputMessageRoleUser)
			}
		case *parley.FileReferenceMessage, *parley.MCPResourceMessage:
			text, _ := parley.ContextText(m)
			message(text, responses.EasyInputMessageRoleUser)
		case *parley.ToolRequestMessage:
			if unsent(m.Parts) {
				n.Add(noteThinking)
			}
			if m.Anchored() {
				// Items keep the order the model produced: reasoning, a message, a call...
				var run []parley.Part // consecutive thinking parts
				m.InOrder(func(p *parley.Part, c *parley.ToolCall) {
					if p != nil && p.Kind == parley.PartThinking {
						run = append(run, *p)
						return
					}
					out = append(out, reasoningItems(run)...)
					run = nil
					switch {
					case c != nil:
						out = append(out, functionCall(c))
					case p.Kind == parley.PartText && strings.TrimSpace(p.Text) != "":
						message(p.Text, responses.EasyInputMessageRoleAssistant)
					}
				})
				out = append(out, reasoningItems(run)...)
				continue
			}
			out = append(out, reasoningItems(m.Parts)...)
			if t := m.Text(); strings.TrimSpace(t) != "" {
				message(t, responses.EasyInputMessageRoleAssistant)
			}
			for i := range m.ToolCalls {
				out = append(out, functionCall(&m.ToolCalls[i]))
			}
		case *parley.ToolResultMessage:
			if parley.HasImages(m.Body) {
				// The API takes a function_call_output's images in it, among its text.
				out = append(out, responses.ResponseInputItemUnionParam{OfFunctionCallOutput: &responses.ResponseInputItemFunctionCallOutputParam{
					CallID: m.ToolCallID,
					Output: responses.ResponseInputItemFunctionCallOutputOutputUnionParam{OfResponseFunctionCallOutputItemArray: outputItems(m.Body)},
				}})
				continue
			}
			text := m.ResultText()
			if strings.TrimSpace(text) == "" {
				n.Add(noteNoOutput)
				text = "(no output)"
			}
			out = append(out, responses.ResponseInputItemParamOfFunctionCallOutput(m.ToolCallID, text))
		case *parley.CompactionMessage:
			if m.Provider == parley.CompactionOpenAI {
				// The API's own item, sent back as it came.
				out = append(out, param.Override[responses.ResponseInputItemUnionParam](json.RawMessage(m.Data)))
				continue
			}
			message(m.Text(), responses.EasyInputMessageRoleUser)
		default:
			return nil, nil, fmt.Errorf("openai: cannot export a %T", m)
		}
	}
	b, err := jsonlist.Append(nil, out)
	if err != nil {
		return nil, nil, fmt.Errorf("encode response input items: %w", err)
	}
	return b, n.List(), nil
}

// functionCall is a call as a function_call item: its arguments as produced, its item
// id when it has one.
func functionCall(c *parley.ToolCall) responses.ResponseInputItemUnionParam {
	item := responses.ResponseInputItemParamOfFunctionCall(c.ArgumentsText(), c.ID, c.Name)
	if c.ItemID != "" {
		item.OfFunctionCall.ID = param.NewOpt(c.ItemID)
	}
	return item
}

// reasoningItems are the reasoning items of parts: each run of THINKING parts with the
// same item id is one item, its texts the summaries, the first one's signature its
// encrypted_content. Thinking without an item id is not OpenAI's: it is left out.
func reasoningItems(parts []parley.Part) []responses.ResponseInputItemUnionParam {
	var out []responses.ResponseInputItemUnionParam
	var cur *responses.ResponseReasoningItemParam
	for _, p := range parts {
		if p.Kind != parley.PartThinking || p.ItemID == "" {
			cur = nil
			continue
		}
		if cur == nil || cur.ID != p.ItemID {
			item := responses.ResponseInputItemUnionParam{OfReasoning: &responses.ResponseReasoningItemParam{
				ID: p.ItemID, Summary: []responses.ResponseReasoningItemSummaryParam{}}}
			if p.Signature != "" {
				item.OfReasoning.EncryptedContent = param.NewOpt(p.Signature)
			}
			out = append(out, item)
			cur = item.OfReasoning
		}
		if p.Text != "" {
			cur.Summary = append(cur.Summary, responses.ResponseReasoningItemSummaryParam{Text: p.Text})
		}
	}
	return out
}

// unsent reports whether parts have thinking that the Responses export leaves out:
// thinking that is not an OpenAI reasoning item.
func unsent(parts []parley.Part) bool {
	for _, p := range parts {
		if p.Kind == parley.PartThinking && p.ItemID == "" && p.Text != "" {
			return true
		}
	}
	return false
}
