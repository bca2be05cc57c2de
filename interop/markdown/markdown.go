// Package markdown writes a conversation as Markdown for people to read: each message a
// section under its seed 004 label ([User], [Assistant], [Tool Call], [Tool Result],
// [Supervisor], [Document], [System]...), with tool calls and results shown readably.
package markdown

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/parley-dev/parley"
)

// Export writes the conversation. The text of each message is the author's, as written
// (it is usually Markdown itself); tool arguments and outputs are fenced code blocks.
// System control events and messages of unknown types are shown too: this is a record,
// not a prompt.
func Export(conv *parley.Conversation, msgs []parley.Message) string {
	var b strings.Builder
	if conv != nil && strings.TrimSpace(conv.Title) != "" {
		fmt.Fprintf(&b, "# %s\n\n", oneLine(conv.Title))
	}
	// Results name their call by tool name and id; the request has the name.
	names := make(map[string]string)
	for _, m := range msgs {
		if r, ok := m.(*parley.ToolRequestMessage); ok {
			for _, c := range r.ToolCalls {
				names[c.ID] = c.Name
			}
		}
	}
	for i, m := range msgs {
		if i > 0 {
			b.WriteString("\n")
		}
		fmt.Fprintf(&b, "[%s]\n", m.Label())
		section(&b, m, names)
	}
	return b.String()
}

func section(b *strings.Builder, m parley.Message, names map[string]string) {
	switch m := m.(type) {
	case *parley.TextMessage:
		body(b, m.Body)
	case *parley.ImageMessage:
		image(b, m)
	case *parley.FileReferenceMessage:
		where := "`" + m.Path + "`"
		switch {
		case m.StartLine != nil && m.EndLine != nil:
			where += fmt.Sprintf(", lines %d-%d", *m.StartLine, *m.EndLine)
		case m.StartLine != nil:
			where += fmt.Sprintf(", from line %d", *m.StartLine)
		case m.EndLine != nil:
			where += fmt.Sprintf(", lines 1-%d", *m.EndLine)
		}
		fmt.Fprintf(b, "File %s\n", where)
		switch r := m.Resolution; {
		case r == nil:
			b.WriteString("_(not read yet)_\n")
		case r.Status == parley.ProcessingFailed && r.Error != nil:
			fmt.Fprintf(b, "_(could not be read: %s)_\n", oneLine(r.Error.Message))
		default:
			fence(b, "", r.Content)
		}
	case *parley.ToolRequestMessage:
		body(b, m.Body)
		if m.Text() != "" {
			b.WriteString("\n")
		}
		for _, c := range m.ToolCalls {
			fmt.Fprintf(b, "**%s** `%s`", c.Name, c.ID)
			if c.ApprovalStatus != "" && c.ApprovalStatus != parley.ApprovalPending {
				fmt.Fprintf(b, " (%s)", strings.ToLower(string(c.ApprovalStatus)))
			}
			b.WriteString("\n")
			fence(b, "json", pretty(c.Arguments))
		}
	case *parley.ToolResultMessage:
		name := m.ToolName
		if name == "" {
			name = names[m.ToolCallID]
		}
		if name != "" {
			fmt.Fprintf(b, "**%s** ", name)
		}
		fmt.Fprintf(b, "`%s`", m.ToolCallID)
		if m.Status == parley.ToolError {
			b.WriteString(" failed")
			if m.Error != nil && strings.TrimSpace(m.Error.Message) != "" && m.Error.Message != strings.TrimSpace(m.Text()) {
				fmt.Fprintf(b, ": %s", oneLine(m.Error.Message))
			}
		}
		b.WriteString("\n")
		switch {
		case strings.TrimSpace(m.Text()) != "":
			fence(b, "", m.Text())
		case !m.Output.IsNull():
			fence(b, "json", pretty(m.Output))
		}
		for _, p := range m.Parts {
			if src, ok := p.ImageSource(); ok {
				image(b, &parley.ImageMessage{Source: src})
			}
		}
		if m.Truncated {
			b.WriteString("_(output truncated when it was saved)_\n")
		}
	case *parley.SystemControlMessage:
		kind := strings.ReplaceAll(strings.ToLower(string(m.ControlKind)), "_", " ")
		fmt.Fprintf(b, "%s%s", strings.ToUpper(kind[:1]), kind[1:])
		if m.From != "" || m.To != "" {
			fmt.Fprintf(b, ": %s → %s", orDash(m.From), orDash(m.To))
		}
		b.WriteString("\n")
	case *parley.MCPResourceMessage:
		fmt.Fprintf(b, "MCP resource `%s` from server **%s**\n", m.ResourceURI, m.ServerName)
		lang := ""
		if strings.Contains(m.MimeType, "json") {
			lang = "json"
		}
		fence(b, lang, m.Text())
	case *parley.CompactionMessage:
		who := "a summary"
		if m.Provider != "" {
			who = m.Provider + "'s compaction"
		}
		fmt.Fprintf(b, "_Stands in for messages 1-%d for an LLM (%s); they are above._\n", m.Covers(), who)
		if t := m.Text(); strings.TrimSpace(t) != "" {
			b.WriteString(t)
			b.WriteString("\n")
		}
	case *parley.UnknownMessage:
		fmt.Fprintf(b, "A message of type `%s`, which this Parley does not know:\n", m.TypeTag)
		fence(b, "json", pretty(m.Raw))
	}
}

// body writes thinking as a quote, then the text.
func body(b *strings.Builder, body parley.Body) {
	if t := body.Thinking(); strings.TrimSpace(t) != "" {
		b.WriteString("> _Thinking:_\n")
		for _, line := range strings.Split(strings.TrimRight(t, "\n"), "\n") {
			b.WriteString(strings.TrimRight("> "+line, " ") + "\n")
		}
		b.WriteString("\n")
	}
	if t := body.Text(); t != "" {
		b.WriteString(strings.TrimRight(t, "\n") + "\n")
	}
}

func image(b *strings.Builder, m *parley.ImageMessage) {
	switch s := m.Source; {
	case s.URL != "":
		fmt.Fprintf(b, "![image](%s)\n", s.URL)
	case s.Data != "":
		// Inline data would bury the transcript: say what it is instead.
		size := base64.StdEncoding.DecodedLen(len(s.Data))
		fmt.Fprintf(b, "_Image (%s, %s, inline)_\n", s.MediaType, humanSize(size))
	default:
		fmt.Fprintf(b, "_Image `%s`_\n", s.FilePath)
	}
	if text := m.RecognizedContent(); strings.TrimSpace(text) != "" {
		b.WriteString("\nRecognized text:\n")
		fence(b, "", text)
	}
}

// fence writes text as a fenced code block whose fence no line of text can close.
func fence(b *strings.Builder, lang, text string) {
	f := "```"
	for strings.Contains(text, f) {
		f += "`"
	}
	fmt.Fprintf(b, "%s%s\n%s\n%s\n", f, lang, strings.TrimRight(text, "\n"), f)
}

func pretty(raw parley.JSON) string {
	if raw.IsNull() {
		return "null"
	}
	var out bytes.Buffer
	if err := json.Indent(&out, raw, "", "  "); err != nil {
		return string(raw)
	}
	return out.String()
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

func orDash(s string) string {
	if s == "" {
		return "–"
	}
	return s
}

func humanSize(n int) string {
	switch {
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d bytes", n)
}
