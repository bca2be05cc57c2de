// Package contentblock holds what the two readers of Anthropic Messages API content share
// (interop/anthropic, and interop/claudecode, whose records carry such messages): the
// content block and the reading of an image block's source.
package contentblock

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	segmentjson "github.com/segmentio/encoding/json"

	"github.com/parley-dev/parley"
	"github.com/parley-dev/parley/interop/internal/jsonerr"
)

// Block is a content block of any type.
type Block struct {
	Type      string          `json:"type"`
	Text      string          `json:"text"`
	Thinking  string          `json:"thinking"`
	Signature string          `json:"signature"`
	Data      string          `json:"data"` // redacted_thinking's encrypted thinking
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Input     json.RawMessage `json:"input"`
	ToolUseID string          `json:"tool_use_id"`
	Content   json.RawMessage `json:"content"`
	IsError   *bool           `json:"is_error"`
	Source    *ImageSource    `json:"source"`
	Citations json.RawMessage `json:"citations"`
	// Raw is the block as given, kept only for a server tool's block (ServerTool).
	Raw json.RawMessage `json:"-"`
}

// UnmarshalJSON decodes a block, keeping a server tool's block as given. It decodes
// with segmentio's drop-in encoding/json, as the readers of the records around it do:
// with the standard library here, decoding blocks was a fifth of the parse of a Claude
// Code session. An error is rare; for it the block is decoded again with the standard
// library, whose errors (the offending value's kind and field) the readers' messages are
// written from.
func (b *Block) UnmarshalJSON(data []byte) error {
	type plain Block
	if err := segmentjson.Unmarshal(data, (*plain)(b)); err != nil {
		*b = Block{}
		if err := json.Unmarshal(data, (*plain)(b)); err != nil {
			return err
		}
	}
	if ServerTool(b.Type) {
		b.Raw = append(json.RawMessage(nil), data...)
	}
	return nil
}

// ServerTool reports whether blocks of type typ are of a tool the provider runs itself
// (server_tool_use, web_search_tool_result, code_execution_tool_result, mcp_tool_use...),
// which Parley keeps as they are, to send back to the provider.
func ServerTool(typ string) bool {
	return typ == "server_tool_use" || typ == "mcp_tool_use" || strings.HasSuffix(typ, "_tool_result") && typ != "tool_result"
}

// ServerToolPart is a server tool's block as a SERVER_TOOL part.
func ServerToolPart(b Block) parley.Part {
	var compact bytes.Buffer
	raw := b.Raw
	if json.Compact(&compact, raw) == nil {
		raw = compact.Bytes()
	}
	return parley.Part{Kind: parley.PartServerTool, Raw: parley.JSON(raw)}
}

// TextPart is a text block as a TEXT part, with its citations when it has some.
func TextPart(b Block) parley.Part {
	p := parley.Part{Kind: parley.PartText, Text: b.Text}
	if c := bytes.TrimSpace(b.Citations); len(c) > 0 && string(c) != "null" {
		p.Citations = parley.JSON(c)
	}
	return p
}

// ImageSource is an image block's source: base64 data or a URL.
type ImageSource struct {
	Type      string `json:"type"`
	MediaType string `json:"media_type"`
	Data      string `json:"data"`
	URL       string `json:"url"`
}

// Problem is what is wrong with an image block: Field is below the block
// (".source.data"), Message says what.
type Problem struct {
	Field, Message string
}

// Image reads an image block's source into an image message of role. Base64 data whose
// bytes are an image of another type than the one claimed (screenshots are at times
// labelled wrongly; providers check) is kept with the type its bytes have, and sniffed
// says which (else it is "").
func Image(src *ImageSource, role parley.Role) (m *parley.ImageMessage, sniffed string, p *Problem) {
	if src == nil {
		return nil, "", &Problem{".source", "an image needs a source"}
	}
	m = &parley.ImageMessage{MessageMeta: parley.MessageMeta{Role: role}}
	switch src.Type {
	case "base64":
		raw, err := base64.StdEncoding.DecodeString(src.Data)
		if err != nil {
			return nil, "", &Problem{".source.data", "not valid base64"}
		}
		media := src.MediaType
		if s := http.DetectContentType(raw); strings.HasPrefix(s, "image/") && s != media {
			sniffed, media = s, s
		}
		m.Source = parley.ImageSource{Data: src.Data, MediaType: media}
	case "url":
		m.Source = parley.ImageSource{URL: src.URL}
	default:
		return nil, "", &Problem{".source.type", fmt.Sprintf("%q is not base64 or url", jsonerr.Truncate(src.Type))}
	}
	return m, sniffed, nil
}

// Thinking reads a thinking or redacted_thinking block into a part. Thinking is kept
// when it has text or a signature: current Claude models sign thinking whose display
// is omitted ({"thinking":"","signature":"..."}), and the API refuses the next turn of a
// tool loop unless it is sent back unmodified, as it does redacted thinking. ok is false
// for a block with nothing to keep.
func Thinking(b Block) (part parley.Part, ok bool) {
	switch b.Type {
	case "thinking":
		if strings.TrimSpace(b.Thinking) == "" && b.Signature == "" {
			return parley.Part{}, false
		}
		return parley.Part{Kind: parley.PartThinking, Text: b.Thinking, Signature: b.Signature}, true
	case "redacted_thinking":
		if b.Data == "" {
			return parley.Part{}, false
		}
		return parley.Part{Kind: parley.PartRedactedThinking, Signature: b.Data}, true
	}
	return parley.Part{}, false
}

// Arguments reads a tool_use block's input into a call's arguments: {} when it is
// missing or null, else the input as given (ArgumentsRaw), which Prepare parses, and
// flags invalid when it is not an object, rather than refusing the turn. The API sends
// input as JSON, not as text, so only the whitespace of the file around it is not the
// model's: it is compacted away; key order, number spelling and escapes stay.
func Arguments(input json.RawMessage) (args parley.JSON, raw *string) {
	t := bytes.TrimSpace(input)
	if parley.JSON(t).IsNull() {
		return parley.JSON("{}"), nil
	}
	var compact bytes.Buffer
	if err := json.Compact(&compact, t); err == nil {
		t = compact.Bytes()
	}
	s := string(t)
	return nil, &s
}

// ToolResult is the tool result message a tool_result block b answers with, its content
// read as text: an error result (is_error) carries the text as its error's message.
func ToolResult(meta parley.MessageMeta, b Block, text string) *parley.ToolResultMessage {
	res := &parley.ToolResultMessage{MessageMeta: meta, ToolCallID: b.ToolUseID, Status: parley.ToolSuccess, Body: parley.TextBody(text)}
	if b.IsError != nil && *b.IsError {
		res.Status = parley.ToolError
		msg := strings.TrimSpace(text)
		if msg == "" {
			msg = "The tool reported an error."
		}
		res.Error = &parley.ToolErrorDetail{Message: msg, Recoverable: true}
	}
	return res
}

// ImagePart is an image inside a tool_result as an IMAGE part: its block as the API
// takes it back, from the source Image read (its media type checked).
func ImagePart(src parley.ImageSource) parley.Part {
	type source struct {
		Type      string `json:"type"`
		MediaType string `json:"media_type,omitempty"`
		Data      string `json:"data,omitempty"`
		URL       string `json:"url,omitempty"`
	}
	s := source{Type: "url", URL: src.URL}
	if src.Data != "" {
		s = source{Type: "base64", MediaType: src.MediaType, Data: src.Data}
	}
	raw, _ := json.Marshal(struct {
		Type   string `json:"type"`
		Source source `json:"source"`
	}{"image", s})
	return parley.Part{Kind: parley.PartImage, Raw: parley.JSON(raw)}
}
