package anthropic

import (
	"encoding/json"
	"fmt"
	"strings"

	sdk "github.com/anthropics/anthropic-sdk-go"
	"github.com/anthropics/anthropic-sdk-go/packages/param"

	"github.com/parley-dev/parley"
	"github.com/parley-dev/parley/interop/internal/jsonlist"
	"github.com/parley-dev/parley/interop/internal/notes"
)

const (
	noteUnsigned     = "thinking without a signature left out: the API refuses it"
	noteServerTool   = "a server tool block this SDK does not know left out"
	noteCitations    = "citations this SDK does not know left out; their text is sent"
	noteBadArguments = "tool call arguments that are not a JSON object (as the model produced them) sent as {}: the API takes only an object"
	noteImageAsText  = "image sent as its recognized text"
	noteStartsWithAI = "the transcript starts with an assistant turn"
)

// turn is one message of the output being assembled.
type turn struct {
	role     sdk.MessageParamRole
	thinking []sdk.ContentBlockParamUnion // first in an assistant turn, as the API requires
	results  []sdk.ContentBlockParamUnion // first in a user turn, as the API requires
	blocks   []sdk.ContentBlockParamUnion
}

type builder struct {
	system []sdk.TextBlockParam
	turns  []*turn
	notes  notes.Notes
}

// current returns the turn to add to for role: the last one when it has that role, as
// the API wants consecutive same-role turns merged, else a new one.
func (b *builder) current(role sdk.MessageParamRole) *turn {
	if n := len(b.turns); n > 0 && b.turns[n-1].role == role {
		return b.turns[n-1]
	}
	t := &turn{role: role}
	b.turns = append(b.turns, t)
	return t
}

func (b *builder) text(role sdk.MessageParamRole, text string) {
	if strings.TrimSpace(text) == "" {
		return // the API refuses empty text blocks
	}
	t := b.current(role)
	t.blocks = append(t.blocks, sdk.NewTextBlock(text))
}

// body adds a message's parts: signed and redacted thinking, unmodified and in their
// order (the API refuses a tool loop's next turn otherwise), then text. An assistant's
// parts that are more than text and thinking (server tool blocks, citations) go each
// as its own block, in order.
func (b *builder) body(role sdk.MessageParamRole, body parley.Body) {
	if role == sdk.MessageParamRoleAssistant && rich(body) {
		b.inOrder(&parley.ToolRequestMessage{Body: body})
		return
	}
	var thinking []sdk.ContentBlockParamUnion
	for _, p := range body.Parts {
		switch {
		case p.Kind == parley.PartRedactedThinking:
			thinking = append(thinking, sdk.NewRedactedThinkingBlock(p.Signature))
		case p.Kind != parley.PartThinking:
		case p.Signature == "":
			b.notes.Add(noteUnsigned)
		default:
			// Signed thinking is sent even with no text: models that omit the display
			// of their thinking sign an empty one.
			thinking = append(thinking, sdk.NewThinkingBlock(p.Signature, p.Text))
		}
	}
	if len(thinking) > 0 {
		t := b.current(role)
		t.thinking = append(t.thinking, thinking...)
	}
	b.text(role, body.Text())
}

// Options tune an export.
type Options struct {
	// System is the system prompt.
	System string
	// Continuation says msgs follow a transcript exported before (an incremental export):
	// SUPERVISOR text at their start is then in the middle of the conversation.
	Continuation bool
	// CacheBreakpoints is how many cache_control breakpoints to place (see
	// placeBreakpoints), at most parley.MaxCacheBreakpoints.
	CacheBreakpoints int
}

// toolUse is a call as a tool_use block, its input as the model produced it.
func (b *builder) toolUse(c *parley.ToolCall) sdk.ContentBlockParamUnion {
	args := json.RawMessage(c.Arguments)
	switch {
	case c.ArgumentsInvalid:
		b.notes.Add(noteBadArguments)
		args = json.RawMessage("{}")
	case c.ArgumentsRaw != nil:
		args = json.RawMessage(*c.ArgumentsRaw) // key order and numbers as produced
	case c.Arguments.IsNull():
		args = json.RawMessage("{}")
	}
	return sdk.NewToolUseBlock(c.ID, args, c.Name)
}

// resultContent is a tool result's text and images, in the order the tool gave them.
func resultContent(body parley.Body) []sdk.ToolResultBlockParamContentUnion {
	var out []sdk.ToolResultBlockParamContentUnion
	for _, p := range body.Parts {
		switch p.Kind {
		case parley.PartText:
			if strings.TrimSpace(p.Text) != "" {
				out = append(out, sdk.ToolResultBlockParamContentUnion{OfText: &sdk.TextBlockParam{Text: p.Text}})
			}
		case parley.PartImage:
			var c sdk.ToolResultBlockParamContentUnion
			if json.Unmarshal(p.Raw, &c) == nil && c.OfImage != nil {
				out = append(out, c)
			}
		}
	}
	return out
}

// inOrder adds a tool request whose calls came between its parts as the model produced
// it: each part its own block and each call where it was ([text, tool_use, text,
// tool_use]), thinking that opens the message first in the turn.
func (b *builder) inOrder(m *parley.ToolRequestMessage) {
	t := b.current(sdk.MessageParamRoleAssistant)
	opening := true
	m.InOrder(func(p *parley.Part, c *parley.ToolCall) {
		var block sdk.ContentBlockParamUnion
		switch {
		case c != nil:
			block = b.toolUse(c)
		case p.Kind == parley.PartRedactedThinking:
			block = sdk.NewRedactedThinkingBlock(p.Signature)
		case p.Kind == parley.PartThinking && p.Signature == "":
			b.notes.Add(noteUnsigned)
			return
		case p.Kind == parley.PartThinking:
			block = sdk.NewThinkingBlock(p.Signature, p.Text)
		case p.Kind == parley.PartServerTool:
			if err := json.Unmarshal(p.Raw, &block); err != nil || param.IsOmitted(block) {
				b.notes.Add(noteServerTool)
				return
			}
		case strings.TrimSpace(p.Text) == "":
			return // the API refuses empty text blocks
		default:
			text := sdk.TextBlockParam{Text: p.Text}
			if len(p.Citations) > 0 && json.Unmarshal(p.Citations, &text.Citations) != nil {
				b.notes.Add(noteCitations)
			}
			block = sdk.ContentBlockParamUnion{OfText: &text}
		}
		if opening && c == nil && (p.Kind == parley.PartThinking || p.Kind == parley.PartRedactedThinking) {
			t.thinking = append(t.thinking, block)
			return
		}
		opening = false
		t.blocks = append(t.blocks, block)
	})
}

// rich reports whether body has parts that only go as blocks of their own: server tool
// blocks and text with citations.
func rich(body parley.Body) bool {
	for _, p := range body.Parts {
		if p.Kind == parley.PartServerTool || len(p.Citations) > 0 {
			return true
		}
	}
	return false
}

// Export is ExportWith with only a system prompt.
func Export(msgs []parley.Message, system string) (parley.JSON, []string, error) {
	return ExportWith(msgs, Options{System: system})
}

// ExportWith writes msgs as a Messages API {system, messages} object: the system prompt
// and the SUPERVISOR text that comes before the first turn in system (left out when
// empty); SUPERVISOR text after it stays where it is, as user-side text (the API has no
// system role mid-conversation, and hoisting it would change the start of every request
// after it, which the provider caches); documents and MCP resources as user text with a
// header naming their source, tool requests as tool_use blocks and results as
// tool_result blocks in the user turn right after them, consecutive same-role turns
// merged. The history must be ready to send (see the interop package's planner).
func ExportWith(msgs []parley.Message, opts Options) (parley.JSON, []string, error) {
	b := &builder{}
	if strings.TrimSpace(opts.System) != "" {
		b.system = append(b.system, sdk.TextBlockParam{Text: opts.System})
	}
	for _, m := range msgs {
		switch m := m.(type) {
		case *parley.TextMessage:
			switch m.Role {
			case parley.RoleUser:
				b.body(sdk.MessageParamRoleUser, m.Body)
			case parley.RoleAssistant:
				b.body(sdk.MessageParamRoleAssistant, m.Body)
			case parley.RoleSupervisor:
				t := m.Text()
				switch {
				case len(b.turns) > 0 || opts.Continuation:
					b.text(sdk.MessageParamRoleUser, t)
				case strings.TrimSpace(t) != "":
					b.system = append(b.system, sdk.TextBlockParam{Text: t})
				}
			}
		case *parley.ImageMessage:
			asImage, text := m.LLMContent()
			role := sdk.MessageParamRoleUser
			if m.Role == parley.RoleAssistant {
				role = sdk.MessageParamRoleAssistant
			}
			if !asImage {
				b.notes.Add(noteImageAsText)
				b.text(role, text)
				continue
			}
			t := b.current(sdk.MessageParamRoleUser)
			if m.Source.Data != "" {
				t.blocks = append(t.blocks, sdk.NewImageBlockBase64(m.Source.MediaType, m.Source.Data))
			} else {
				t.blocks = append(t.blocks, sdk.NewImageBlock(sdk.URLImageSourceParam{URL: m.Source.URL}))
			}
		case *parley.FileReferenceMessage, *parley.MCPResourceMessage:
			text, _ := parley.ContextText(m)
			b.text(sdk.MessageParamRoleUser, text)
		case *parley.ToolRequestMessage:
			if m.Anchored() || rich(m.Body) {
				b.inOrder(m)
				continue
			}
			b.body(sdk.MessageParamRoleAssistant, m.Body)
			t := b.current(sdk.MessageParamRoleAssistant)
			for i := range m.ToolCalls {
				t.blocks = append(t.blocks, b.toolUse(&m.ToolCalls[i]))
			}
		case *parley.ToolResultMessage:
			r := sdk.ToolResultBlockParam{ToolUseID: m.ToolCallID}
			if parley.HasImages(m.Body) {
				r.Content = resultContent(m.Body)
			} else if text := m.ResultText(); strings.TrimSpace(text) != "" {
				r.Content = []sdk.ToolResultBlockParamContentUnion{{OfText: &sdk.TextBlockParam{Text: text}}}
			}
			if m.Status == parley.ToolError {
				r.IsError = param.NewOpt(true)
			}
			t := b.current(sdk.MessageParamRoleUser)
			t.results = append(t.results, sdk.ContentBlockParamUnion{OfToolResult: &r})
		case *parley.CompactionMessage:
			if m.Provider == parley.CompactionAnthropic {
				// The API's own block, sent back as it came, in the assistant turn it came in.
				t := b.current(sdk.MessageParamRoleAssistant)
				t.blocks = append(t.blocks, param.Override[sdk.ContentBlockParamUnion](json.RawMessage(m.Data)))
				continue
			}
			b.text(sdk.MessageParamRoleUser, m.Text())
		default:
			return nil, nil, fmt.Errorf("anthropic: cannot export a %T", m)
		}
	}
	out := struct {
		System   []sdk.TextBlockParam `json:"system,omitempty"`
		Messages []sdk.MessageParam   `json:"messages"`
	}{System: b.system, Messages: make([]sdk.MessageParam, 0, len(b.turns))}
	for _, t := range b.turns {
		content := append(append(append([]sdk.ContentBlockParamUnion{}, t.thinking...), t.results...), t.blocks...)
		if len(content) == 0 {
			continue
		}
		out.Messages = append(out.Messages, sdk.MessageParam{Role: t.role, Content: content})
	}
	if len(out.Messages) > 0 && out.Messages[0].Role == sdk.MessageParamRoleAssistant && !opts.Continuation && !startsWithCompaction(msgs) {
		b.notes.Add(noteStartsWithAI)
	}
	placeBreakpoints(out.System, out.Messages, opts.CacheBreakpoints)
	// As json.Marshal(out) would write it, without checking each message's output again.
	raw := []byte{'{'}
	if len(out.System) > 0 {
		raw = append(raw, `"system":`...)
		var err error
		if raw, err = jsonlist.Append(raw, out.System); err != nil {
			return nil, nil, fmt.Errorf("encode system: %w", err)
		}
		raw = append(raw, ',')
	}
	raw = append(raw, `"messages":`...)
	raw, err := jsonlist.Append(raw, out.Messages)
	if err != nil {
		return nil, nil, fmt.Errorf("encode messages: %w", err)
	}
	raw = append(raw, '}')
	return raw, b.notes.List(), nil
}

// startsWithCompaction reports whether msgs start with an Anthropic compaction block,
// which comes in an assistant turn: the API drops what came before it.
func startsWithCompaction(msgs []parley.Message) bool {
	c, ok := msgs[0].(*parley.CompactionMessage)
	return ok && c.Provider == parley.CompactionAnthropic
}
