package anthropic

import (
	"encoding/json"
	"fmt"

	sdk "github.com/anthropics/anthropic-sdk-go"
	"github.com/anthropics/anthropic-sdk-go/packages/param"

	"github.com/parley-dev/parley/interop/internal/jsonlist"
)

// blockKind says how a block is written: the common kinds directly, the rest (images,
// server tool blocks, citations, compaction blocks) by the SDK.
type blockKind uint8

const (
	sdkBlock blockKind = iota
	textBlock
	thinkingBlock
	redactedBlock
	toolUseBlock
	toolResultBlock
)

// outBlock is a content block of a Messages API request. Writing the common kinds directly
// spares encoding/json's reflection over the SDK's params (ContentBlockParamUnion has a
// field per block type), most of an export's CPU; param builds the same block as the
// SDK's param, and the tests hold appendJSON's bytes to the SDK's.
type outBlock struct {
	kind blockKind
	// text is a text block's text, a thinking block's thinking, a tool result's text
	// (when hasText); signature is thinking's signature, redacted thinking's data.
	text, signature string
	hasText         bool
	// id is a tool_use's id or the tool_use_id of a tool_result.
	id, name string
	input    json.RawMessage
	isError  bool
	// cache marks the block with cache_control (placeBreakpoints).
	cache bool
	sdk   *sdk.ContentBlockParamUnion
}

// outMessage is a message of the request: its role and blocks.
type outMessage struct {
	role    sdk.MessageParamRole
	content []outBlock
}

// param is b as the SDK's param.
func (b *outBlock) param() sdk.ContentBlockParamUnion {
	var u sdk.ContentBlockParamUnion
	switch b.kind {
	case sdkBlock:
		u = *b.sdk
	case textBlock:
		u = sdk.NewTextBlock(b.text)
	case thinkingBlock:
		u = sdk.NewThinkingBlock(b.signature, b.text)
	case redactedBlock:
		u = sdk.NewRedactedThinkingBlock(b.signature)
	case toolUseBlock:
		u = sdk.NewToolUseBlock(b.id, b.input, b.name)
	case toolResultBlock:
		r := sdk.ToolResultBlockParam{ToolUseID: b.id}
		if b.hasText {
			r.Content = []sdk.ToolResultBlockParamContentUnion{{OfText: &sdk.TextBlockParam{Text: b.text}}}
		}
		if b.isError {
			r.IsError = param.NewOpt(true)
		}
		u = sdk.ContentBlockParamUnion{OfToolResult: &r}
	}
	if b.cache {
		if cc := u.GetCacheControl(); cc != nil {
			*cc = sdk.NewCacheControlEphemeralParam()
		}
	}
	return u
}

// cacheable reports whether b can carry cache_control (thinking cannot).
func (b *outBlock) cacheable() bool {
	switch b.kind {
	case textBlock, toolUseBlock, toolResultBlock:
		return true
	case sdkBlock:
		return b.sdk.GetCacheControl() != nil
	}
	return false
}

// appendJSON appends b as encoding/json.Marshal(b.param()) writes it; viaSDK writes it
// with the SDK (the reference the tests compare with), as are the blocks the SDK
// writes and the few marked for the cache.
func (b *outBlock) appendJSON(dst []byte, viaSDK bool) ([]byte, error) {
	if viaSDK || b.kind == sdkBlock || b.cache {
		u := b.param()
		return jsonlist.AppendMarshaler(dst, u)
	}
	switch b.kind {
	case textBlock:
		dst = append(dst, `{"text":`...)
		dst = jsonlist.AppendString(dst, b.text)
		return append(dst, `,"type":"text"}`...), nil
	case thinkingBlock:
		dst = append(dst, `{"signature":`...)
		dst = jsonlist.AppendString(dst, b.signature)
		dst = append(dst, `,"thinking":`...)
		dst = jsonlist.AppendString(dst, b.text)
		return append(dst, `,"type":"thinking"}`...), nil
	case redactedBlock:
		dst = append(dst, `{"data":`...)
		dst = jsonlist.AppendString(dst, b.signature)
		return append(dst, `,"type":"redacted_thinking"}`...), nil
	case toolUseBlock:
		dst = append(dst, `{"id":`...)
		dst = jsonlist.AppendString(dst, b.id)
		dst = append(dst, `,"input":`...)
		var err error
		if dst, err = jsonlist.AppendRaw(dst, b.input); err != nil {
			return nil, fmt.Errorf("tool_use %s: input: %w", b.id, err)
		}
		dst = append(dst, `,"name":`...)
		dst = jsonlist.AppendString(dst, b.name)
		return append(dst, `,"type":"tool_use"}`...), nil
	default: // toolResultBlock
		dst = append(dst, `{"tool_use_id":`...)
		dst = jsonlist.AppendString(dst, b.id)
		if b.isError {
			dst = append(dst, `,"is_error":true`...)
		}
		if b.hasText {
			dst = append(dst, `,"content":[{"text":`...)
			dst = jsonlist.AppendString(dst, b.text)
			dst = append(dst, `,"type":"text"}]`...)
		}
		return append(dst, `,"type":"tool_result"}`...), nil
	}
}

// requestSize is about what appendRequest writes of system and msgs, a little more when
// their text needs escapes: a transcript of thousands of messages is megabytes, and
// growing the buffer as it was written took a quarter of writing it (each step a new
// allocation, zeroed, and a copy).
func requestSize(system []sdk.TextBlockParam, msgs []outMessage) int {
	n := 32
	for _, b := range system {
		n += 32 + jsonlist.EscapedSize(b.Text)
	}
	for i := range msgs {
		n += 32
		for j := range msgs[i].content {
			b := &msgs[i].content[j]
			n += 64 + jsonlist.EscapedSize(b.text) + len(b.signature) + len(b.id) + len(b.name) + 2*len(b.input)
		}
	}
	return n
}

// appendRequest appends the {system, messages} object, as encoding/json.Marshal writes
// it with the SDK's params; viaSDK writes it from those params (the reference).
func appendRequest(dst []byte, system []sdk.TextBlockParam, msgs []outMessage, viaSDK bool) ([]byte, error) {
	dst = append(dst, '{')
	if len(system) > 0 {
		dst = append(dst, `"system":`...)
		var err error
		if dst, err = jsonlist.Append(dst, system); err != nil {
			return nil, fmt.Errorf("encode system: %w", err)
		}
		dst = append(dst, ',')
	}
	dst = append(dst, `"messages":`...)
	if viaSDK {
		params := make([]sdk.MessageParam, len(msgs))
		for i, m := range msgs {
			params[i] = sdk.MessageParam{Role: m.role, Content: make([]sdk.ContentBlockParamUnion, len(m.content))}
			for j := range m.content {
				params[i].Content[j] = m.content[j].param()
			}
		}
		var err error
		if dst, err = jsonlist.Append(dst, params); err != nil {
			return nil, fmt.Errorf("encode messages: %w", err)
		}
		return append(dst, '}'), nil
	}
	dst = append(dst, '[')
	for i := range msgs {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, `{"content":[`...)
		for j := range msgs[i].content {
			if j > 0 {
				dst = append(dst, ',')
			}
			var err error
			if dst, err = msgs[i].content[j].appendJSON(dst, false); err != nil {
				return nil, fmt.Errorf("encode messages: %w", err)
			}
		}
		dst = append(dst, `],"role":`...)
		dst = jsonlist.AppendString(dst, string(msgs[i].role))
		dst = append(dst, '}')
	}
	return append(dst, "]}"...), nil
}
