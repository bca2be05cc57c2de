package parley

import (
	"encoding/json"
	"fmt"
	"strings"
)

// The rules here say how a stored message reads to an LLM. They are the domain's, not
// an exporter's, so that every provider format sends the same words.

// ContextText is how a DOCUMENT message reads to an LLM: a header naming its source, a
// newline, and its content (seed 002: documents go as user-side context with a
// supplemental header). It returns false when there is nothing to send: a file that has
// not been read, or could not be.
func ContextText(m Message) (string, bool) {
	switch m := m.(type) {
	case *MCPResourceMessage:
		var h strings.Builder
		fmt.Fprintf(&h, "[MCP resource %s from server %s", m.ResourceURI, m.ServerName)
		if m.MimeType != "" {
			fmt.Fprintf(&h, ", %s", m.MimeType)
		}
		if m.Truncated {
			h.WriteString(", truncated")
		}
		h.WriteString("]\n")
		return h.String() + m.Text(), true
	case *FileReferenceMessage:
		r := m.Resolution
		if r == nil || r.Status != ProcessingCompleted {
			return "", false
		}
		var h strings.Builder
		fmt.Fprintf(&h, "[File %s", m.Path)
		switch {
		case m.StartLine != nil && m.EndLine != nil:
			fmt.Fprintf(&h, ", lines %d-%d", *m.StartLine, *m.EndLine)
		case m.StartLine != nil:
			fmt.Fprintf(&h, ", from line %d", *m.StartLine)
		case m.EndLine != nil:
			fmt.Fprintf(&h, ", lines 1-%d", *m.EndLine)
		}
		if r.Truncated {
			h.WriteString(", truncated")
		}
		h.WriteString("]\n")
		return h.String() + r.Content, true
	}
	return "", false
}

// RecognizedContent is the text recognizing an image found: its OCR text, else its
// vision analysis; "" when it has not been recognized.
func (m *ImageMessage) RecognizedContent() string {
	r := m.Recognition
	if r == nil || r.Status != ProcessingCompleted {
		return ""
	}
	if strings.TrimSpace(r.RecognizedText) != "" {
		return r.RecognizedText
	}
	return r.VisionAnalysis
}

// LLMContent says how an image reaches an LLM by default (ImagesAsSent). asImage: as
// the image itself, in the provider's multimodal block, whenever the provider can be
// given it: from the user's side (providers take no images from the assistant), with
// bytes or a URL the provider can reach (not a file path on the author's machine).
// Recognizing the image does not change this, so an image exports the same way before
// and after it is read, and a provider's cached prefix stays valid. Otherwise it goes
// as text (its recognized text, with a header saying so), or, when text is "" too,
// not at all. An export asked for text instead uses LLMText.
func (m *ImageMessage) LLMContent() (asImage bool, text string) {
	reachable := m.Source.URL != "" || m.Source.Data != ""
	if m.Role == RoleUser && reachable {
		return true, ""
	}
	return false, m.LLMText()
}

// LLMText is the image as text for an LLM: its recognized text under a header
// saying so, "" when it has not been recognized.
func (m *ImageMessage) LLMText() string {
	if rec := m.RecognizedContent(); strings.TrimSpace(rec) != "" {
		return "[Image, as recognized text]\n" + rec
	}
	return ""
}

// DataURL is an inline image as a data: URL, or its URL; "" for a file path.
func (s ImageSource) DataURL() string {
	if s.Data != "" {
		return "data:" + s.MediaType + ";base64," + s.Data
	}
	return s.URL
}

// ResultText is what a tool result says to an LLM: its text, else its error message,
// else its output as JSON.
func (m *ToolResultMessage) ResultText() string {
	if t := m.Text(); strings.TrimSpace(t) != "" {
		return t
	}
	if m.Error != nil && m.Error.Message != "" {
		return m.Error.Message
	}
	if !m.Output.IsNull() {
		var s string
		if json.Unmarshal(m.Output, &s) == nil {
			return s
		}
		return string(m.Output)
	}
	return ""
}
