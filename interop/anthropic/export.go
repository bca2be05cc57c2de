package anthropic

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	sdk "github.com/anthropics/anthropic-sdk-go"
	"github.com/anthropics/anthropic-sdk-go/packages/param"

	"github.com/parley-dev/parley"
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
	thinking []outBlock // first in an assistant turn, as the API requires
	results  []outBlock // first in a user turn, as the API requires
	blocks   []outBlock
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
	t.blocks = append(t.blocks, outBlock{kind: textBlock, text: text})
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
	var thinking []outBlock
	for _, p := range body.Parts {
		switch {
		case p.Kind == parley.PartRedactedThinking:
			thinking = append(thinking, outBlock{kind: redactedBlock, signature: p.Signature})
		case p.Kind != parley.PartThinking:
		case p.Signature == "":
			b.notes.Add(noteUnsigned)
		default:
			// Signed thinking is sent even with no text: models that omit the display
			// of their thinking sign an empty one.
			thinking = append(thinking, outBlock{kind: thinkingBlock, signature: p.Signature, text: p.Text})
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
func (b *builder) toolUse(c *parley.ToolCall) outBlock {
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
	return outBlock{kind: toolUseBlock, id: c.ID, name: c.Name, input: args}
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
		var blk outBlock
		switch {
		case c != nil:
			blk = b.toolUse(c)
		case p.Kind == parley.PartRedactedThinking:
			blk = outBlock{kind: redactedBlock, signature: p.Signature}
		case p.Kind == parley.PartThinking && p.Signature == "":
			b.notes.Add(noteUnsigned)
			return
		case p.Kind == parley.PartThinking:
			blk = outBlock{kind: thinkingBlock, signature: p.Signature, text: p.Text}
		case p.Kind == parley.PartServerTool:
			var u sdk.ContentBlockParamUnion
			if err := json.Unmarshal(p.Raw, &u); err != nil || param.IsOmitted(u) {
				b.notes.Add(noteServerTool)
				return
			}
			blk = outBlock{kind: sdkBlock, sdk: &u}
		case strings.TrimSpace(p.Text) == "":
			return // the API refuses empty text blocks
		case len(p.Citations) > 0:
			text := sdk.TextBlockParam{Text: p.Text}
			if json.Unmarshal(p.Citations, &text.Citations) != nil {
				b.notes.Add(noteCitations)
			}
			blk = outBlock{kind: sdkBlock, sdk: &sdk.ContentBlockParamUnion{OfText: &text}}
		default:
			blk = outBlock{kind: textBlock, text: p.Text}
		}
		if opening && c == nil && (p.Kind == parley.PartThinking || p.Kind == parley.PartRedactedThinking) {
			t.thinking = append(t.thinking, blk)
			return
		}
		opening = false
		t.blocks = append(t.blocks, blk)
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
	system, out, notes, err := request(msgs, opts)
	if err != nil {
		return nil, nil, err
	}
	raw, err := appendRequest(make([]byte, 0, requestSize(system, out)), system, out, false)
	if err != nil {
		return nil, nil, err
	}
	return raw, notes, nil
}

// request maps msgs to the system blocks and messages of a request, and its notes.
func request(msgs []parley.Message, opts Options) ([]sdk.TextBlockParam, []outMessage, []string, error) {
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
			img := sdk.NewImageBlock(sdk.URLImageSourceParam{URL: m.Source.URL})
			if m.Source.Data != "" {
				img = sdk.NewImageBlockBase64(m.Source.MediaType, m.Source.Data)
			}
			t.blocks = append(t.blocks, outBlock{kind: sdkBlock, sdk: &img})
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
			r := outBlock{kind: toolResultBlock, id: m.ToolCallID, isError: m.Status == parley.ToolError}
			if parley.HasImages(m.Body) {
				u := r.param()
				u.OfToolResult.Content = resultContent(m.Body)
				r = outBlock{kind: sdkBlock, sdk: &u}
			} else if text := m.ResultText(); strings.TrimSpace(text) != "" {
				r.text, r.hasText = text, true
			}
			t := b.current(sdk.MessageParamRoleUser)
			t.results = append(t.results, r)
		case *parley.CompactionMessage:
			if m.Provider == parley.CompactionAnthropic {
				// The API's own block, sent back as it came, in the assistant turn it came in.
				t := b.current(sdk.MessageParamRoleAssistant)
				u := param.Override[sdk.ContentBlockParamUnion](json.RawMessage(m.Data))
				t.blocks = append(t.blocks, outBlock{kind: sdkBlock, sdk: &u})
				continue
			}
			b.text(sdk.MessageParamRoleUser, m.Text())
		default:
			return nil, nil, nil, fmt.Errorf("anthropic: cannot export a %T", m)
		}
	}
	system := b.system
	out := make([]outMessage, 0, len(b.turns))
	for _, t := range b.turns {
		// Most turns have one kind of block: those are sent as they are, not copied.
		var content []outBlock
		switch {
		case len(t.thinking) == 0 && len(t.results) == 0:
			content = t.blocks
		case len(t.thinking) == 0 && len(t.blocks) == 0:
			content = t.results
		default:
			content = slices.Concat(t.thinking, t.results, t.blocks)
		}
		if len(content) == 0 {
			continue
		}
		out = append(out, outMessage{role: t.role, content: content})
	}
	if len(out) > 0 && out[0].role == sdk.MessageParamRoleAssistant && !opts.Continuation && !startsWithCompaction(msgs) {
		b.notes.Add(noteStartsWithAI)
	}
	placeBreakpoints(system, out, opts.CacheBreakpoints)
	return system, out, b.notes.List(), nil
}

// startsWithCompaction reports whether msgs start with an Anthropic compaction block,
// which comes in an assistant turn: the API drops what came before it.
func startsWithCompaction(msgs []parley.Message) bool {
	c, ok := msgs[0].(*parley.CompactionMessage)
	return ok && c.Provider == parley.CompactionAnthropic
}
