package parley

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"path"
	"regexp"
	"slices"
	"strings"
	"unicode/utf8"
)

// Limits are the configurable bounds applied when a message is stored.
type Limits struct {
	// MaxToolOutputBytes is the size above which a tool result's output and text are
	// truncated before saving (seed 001).
	MaxToolOutputBytes int
	// MaxImageBytes bounds an inline (base64) image, decoded.
	MaxImageBytes int
	// MaxImagePixels bounds the width times the height of an image to recognize, read
	// from its header before anything decodes it: OCR needs memory in proportion to
	// the pixels, and a PNG of one colour compresses a thousandfold (a 30000x30000 one
	// is under 1 MB, and took Tesseract to 1.9 GiB).
	MaxImagePixels int
	// MaxMessageTextBytes bounds the text of a message, all its parts (text, thinking,
	// signatures) together; over it a message is refused with EMESSAGETOOLARGE. Tool
	// results are truncated at MaxToolOutputBytes instead.
	MaxMessageTextBytes int
	// MaxToolCallsPerMessage bounds the calls of one tool request (ETOOMANYTOOLCALLS).
	MaxToolCallsPerMessage int
	// MaxToolArgumentsBytes bounds one tool call's arguments, as JSON
	// (EARGUMENTSTOOLARGE).
	MaxToolArgumentsBytes int
}

// DefaultLimits are the limits when none are configured. 50 megapixels holds a
// 48-megapixel phone photo (8000x6000) and an 8K screenshot (7680x4320, 33 MP).
//
// A message's text is capped at 1 MiB, about 250,000 tokens: more than Claude's
// standard 200,000-token context window holds in all, and the same as every other
// text Parley stores (tool outputs, workspace files, MCP resources). A tool request
// may make 128 calls, OpenAI's limit on the tools one request may offer (agents make
// a few in parallel, rarely dozens), and a call's arguments may be 1 MiB of JSON,
// enough for a file written whole by a Write or Edit tool.
var DefaultLimits = Limits{
	MaxToolOutputBytes:     1 << 20,
	MaxImageBytes:          20 << 20,
	MaxImagePixels:         50_000_000,
	MaxMessageTextBytes:    1 << 20,
	MaxToolCallsPerMessage: 128,
	MaxToolArgumentsBytes:  1 << 20,
}

// orDefaults returns lim with its zero fields taken from DefaultLimits.
func (lim Limits) orDefaults() Limits {
	for _, f := range []struct {
		v *int
		d int
	}{
		{&lim.MaxToolOutputBytes, DefaultLimits.MaxToolOutputBytes},
		{&lim.MaxImageBytes, DefaultLimits.MaxImageBytes},
		{&lim.MaxImagePixels, DefaultLimits.MaxImagePixels},
		{&lim.MaxMessageTextBytes, DefaultLimits.MaxMessageTextBytes},
		{&lim.MaxToolCallsPerMessage, DefaultLimits.MaxToolCallsPerMessage},
		{&lim.MaxToolArgumentsBytes, DefaultLimits.MaxToolArgumentsBytes},
	} {
		if *f.v == 0 {
			*f.v = f.d
		}
	}
	return lim
}

// MaxTitleLength bounds a conversation title, in characters.
const MaxTitleLength = 500

// CleanTitle cleans and checks a conversation title.
func CleanTitle(title string) (string, error) {
	t, err := CleanText("title", title)
	if err != nil {
		return "", err
	}
	t = strings.TrimSpace(t)
	if n := utf8.RuneCountInString(t); n > MaxTitleLength {
		return "", Errorf(EINVALID, "title: %d characters, at most %d allowed", n, MaxTitleLength)
	}
	return t, nil
}

// Prepare cleans and validates m before it is stored, in place: free text is cleaned
// (CleanText), defaults are filled in, and every rule of the variant is checked. Its
// errors are EINVALID and name the offending input field, as in the API's MessageInput.
// Rules that need the stored history (tool call ids) are the store's to check. Sizes
// over lim (zero fields: DefaultLimits) are refused with their own codes:
// EMESSAGETOOLARGE, ETOOMANYTOOLCALLS, EARGUMENTSTOOLARGE.
func Prepare(m Message, lim Limits) error {
	lim = lim.orDefaults()
	if m != nil && m.Meta().DeletedAt != nil {
		return prepareTombstone(m, lim)
	}
	switch m := m.(type) {
	case *TextMessage:
		return m.prepare(lim)
	case *ImageMessage:
		return m.prepare(lim)
	case *FileReferenceMessage:
		return m.prepare()
	case *ToolRequestMessage:
		return m.prepare(lim)
	case *ToolResultMessage:
		return m.prepare(lim)
	case *SystemControlMessage:
		return m.prepare()
	case *MCPResourceMessage:
		return m.prepare(lim)
	case *CompactionMessage:
		return m.prepare(lim)
	case *UnknownMessage:
		return m.prepare(lim)
	case nil:
		return Errorf(EINVALID, "input: no message given")
	}
	return Errorf(EINVALID, "input: unsupported message type %T", m)
}

// prepareTombstone checks a deleted message (an imported tombstone): its content is
// erased (Erase), so only what places it is checked, its role and its tool call ids.
func prepareTombstone(m Message, lim Limits) error {
	Erase(m)
	switch m := m.(type) {
	case *TextMessage:
		return requireRole("text.role", m.Role, RoleUser, RoleAssistant, RoleSupervisor)
	case *ImageMessage:
		if m.Role == "" {
			m.Role = RoleUser
		}
		return requireRole("image.role", m.Role, RoleUser, RoleAssistant)
	case *MCPResourceMessage:
		m.Role = RoleDocument
		return nil
	case *CompactionMessage:
		m.Role = RoleSupervisor
		return nil
	case *ToolResultMessage:
		if m.Status == "" {
			m.Status = ToolSuccess
		}
	}
	// What stays of the others (calls and their ids, a result's call, a control's kind,
	// a file's path) is checked as for any message.
	at := m.Meta().DeletedAt
	m.Meta().DeletedAt = nil
	defer func() { m.Meta().DeletedAt = at }()
	return Prepare(m, lim)
}

func requireRole(field string, got Role, allowed ...Role) error {
	if slices.Contains(allowed, got) {
		return nil
	}
	names := make([]string, len(allowed))
	for i, r := range allowed {
		names[i] = r.String()
	}
	return Errorf(EINVALID, "%s: role %s is not allowed here; use %s", field, got, strings.Join(names, " or "))
}

// checkSize refuses a body whose parts are over max bytes in all, before any of it is
// cleaned.
func (b *Body) checkSize(field string, max int) error {
	size := 0
	for _, p := range b.Parts {
		size += len(p.Text) + len(p.Signature) + len(p.Raw) + len(p.Citations)
	}
	if size > max {
		return Errorf(EMESSAGETOOLARGE, "%s: the text is %d bytes, more than the %d allowed in one message", field, size, max)
	}
	return nil
}

// partField names a body's part in an error: written only for one (it was four
// strings a part, for every part of every message an import checks).
type partField struct {
	body string
	i    int
}

func (f partField) String() string { return fmt.Sprintf("%s.parts[%d]", f.body, f.i) }

// clean is CleanText of the part's field sub (".text"), named only when s is refused.
func (f partField) clean(sub, s string) (string, error) {
	if cleanAlready(s) {
		return s, nil
	}
	return CleanText(f.String()+sub, s)
}

func (b *Body) prepare(field string) error {
	for i := range b.Parts {
		p := &b.Parts[i]
		f := partField{field, i}
		if !slices.Contains(PartKinds, p.Kind) {
			return Errorf(EINVALID, "%s.kind: %q is not TEXT, THINKING, REDACTED_THINKING, SERVER_TOOL or IMAGE", f, p.Kind)
		}
		if p.Kind == PartServerTool {
			if p.Text != "" {
				return Errorf(EINVALID, "%s.text: a SERVER_TOOL part has no text; its block goes in raw", f)
			}
			if !p.Raw.IsObject() {
				return Errorf(EINVALID, "%s.raw: a SERVER_TOOL part needs the provider's block, a JSON object", f)
			}
		} else if p.Kind == PartImage {
			if field != "toolResult" {
				return Errorf(EINVALID, "%s.kind: only a tool result has IMAGE parts; send an image message", f)
			}
			if p.Text != "" || p.Signature != "" {
				return Errorf(EINVALID, "%s.text: an IMAGE part has no text; its block goes in raw", f)
			}
			var img struct {
				Type   string          `json:"type"`
				Source json.RawMessage `json:"source"`
			}
			if !p.Raw.IsObject() || json.Unmarshal(p.Raw, &img) != nil || img.Type != "image" || !JSON(img.Source).IsObject() {
				return Errorf(EINVALID, "%s.raw: an IMAGE part needs an image block, {\"type\":\"image\",\"source\":{...}}", f)
			}
		} else if len(p.Raw) > 0 {
			return Errorf(EINVALID, "%s.raw: only a SERVER_TOOL or IMAGE part has a raw block", f)
		}
		if len(p.Raw) > 0 {
			if err := checkJSON(f.String()+".raw", p.Raw); err != nil {
				return err
			}
		}
		if len(p.Citations) > 0 {
			if p.Kind != PartText {
				return Errorf(EINVALID, "%s.citations: only a TEXT part has citations", f)
			}
			if err := checkJSON(f.String()+".citations", p.Citations); err != nil {
				return err
			}
			if t := bytes.TrimSpace(p.Citations); t[0] != '[' {
				return Errorf(EINVALID, "%s.citations: want a JSON array", f)
			}
		}
		if p.Kind == PartRedactedThinking {
			if p.Text != "" {
				return Errorf(EINVALID, "%s.text: a REDACTED_THINKING part has no text; its data goes in signature", f)
			}
			if p.Signature == "" {
				return Errorf(EINVALID, "%s.signature: a REDACTED_THINKING part needs the provider's data", f)
			}
		}
		text, err := f.clean(".text", p.Text)
		if err != nil {
			return err
		}
		p.Text = text
		if p.Signature, err = f.clean(".signature", p.Signature); err != nil {
			return err
		}
		if p.ItemID != "" { // none is a valid one
			if err := checkItemID(f.String()+".itemId", p.ItemID); err != nil {
				return err
			}
		}
	}
	return nil
}

func (m *TextMessage) prepare(lim Limits) error {
	if err := requireRole("text.role", m.Role, RoleUser, RoleAssistant, RoleSupervisor); err != nil {
		return err
	}
	if err := m.Body.checkSize("text", lim.MaxMessageTextBytes); err != nil {
		return err
	}
	if err := m.Body.prepare("text"); err != nil {
		return err
	}
	if strings.TrimSpace(m.Text()) == "" {
		return Errorf(EINVALID, "text: content is empty; give content or at least one non-blank TEXT part")
	}
	return nil
}

// mediaTypes are the inline image types providers accept.
var mediaTypes = []string{"image/png", "image/jpeg", "image/gif", "image/webp"}

func (m *ImageMessage) prepare(lim Limits) error {
	if m.Role == "" {
		m.Role = RoleUser
	}
	if err := requireRole("image.role", m.Role, RoleUser, RoleAssistant); err != nil {
		return err
	}
	if m.RecognitionMode == "" {
		m.RecognitionMode = RecognitionAuto
	} else if !slices.Contains(RecognitionModes, m.RecognitionMode) {
		return Errorf(EINVALID, "image.recognitionMode: %q is not VISION, OCR or AUTO", m.RecognitionMode)
	}
	s := &m.Source
	given := 0
	for _, v := range []string{s.URL, s.Data, s.FilePath} {
		if v != "" {
			given++
		}
	}
	if given != 1 {
		return Errorf(EINVALID, "image: give exactly one source of url, base64 and filePath (got %d)", given)
	}
	switch {
	case s.URL != "":
		s.Kind = ImageURL
		u, err := url.Parse(s.URL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return Errorf(EINVALID, "image.url: %q is not an absolute http(s) URL", truncateForError(s.URL))
		}
	case s.Data != "":
		s.Kind = ImageBase64
		if !slices.Contains(mediaTypes, s.MediaType) {
			return Errorf(EINVALID, "image.mediaType: %q is not one of %s", s.MediaType, strings.Join(mediaTypes, ", "))
		}
		raw, err := base64.StdEncoding.DecodeString(s.Data)
		if err != nil {
			return Errorf(EINVALID, "image.base64: not valid base64 (standard alphabet, padded)")
		}
		if len(raw) > lim.MaxImageBytes {
			return Errorf(EINVALID, "image.base64: %d bytes, at most %d allowed", len(raw), lim.MaxImageBytes)
		}
		if sniffed := http.DetectContentType(raw); sniffed != s.MediaType {
			return Errorf(EINVALID, "image.base64: the data is %s, not the %s that mediaType says", sniffed, s.MediaType)
		}
	default:
		s.Kind = ImageFilePath
		p, err := CleanPath("image.filePath", s.FilePath)
		if err != nil {
			return err
		}
		s.FilePath = p
		if s.MediaType != "" && !slices.Contains(mediaTypes, s.MediaType) {
			return Errorf(EINVALID, "image.mediaType: %q is not one of %s", s.MediaType, strings.Join(mediaTypes, ", "))
		}
	}
	if s.Kind != ImageBase64 && s.MediaType != "" && !slices.Contains(mediaTypes, s.MediaType) {
		return Errorf(EINVALID, "image.mediaType: %q is not one of %s", s.MediaType, strings.Join(mediaTypes, ", "))
	}
	return nil
}

// CleanPath checks and normalizes a file path: not empty, no control characters, no ".."
// segment (traversal is refused, not resolved), cleaned of "." and repeated slashes.
func CleanPath(field, p string) (string, error) {
	p, err := CleanText(field, p)
	if err != nil {
		return "", err
	}
	if strings.TrimSpace(p) == "" {
		return "", Errorf(EINVALID, "%s: path is empty", field)
	}
	for _, seg := range strings.FieldsFunc(p, func(r rune) bool { return r == '/' || r == '\\' }) {
		if seg == ".." {
			return "", Errorf(EINVALID, "%s: %q contains a \"..\" segment; path traversal is not allowed", field, truncateForError(p))
		}
	}
	return path.Clean(p), nil
}

func (m *FileReferenceMessage) prepare() error {
	m.Role = RoleDocument
	p, err := CleanPath("fileReference.path", m.Path)
	if err != nil {
		return err
	}
	m.Path = p
	if m.StartLine != nil && *m.StartLine < 1 {
		return Errorf(EINVALID, "fileReference.startLine: %d is not a line number; lines are counted from 1", *m.StartLine)
	}
	if m.EndLine != nil {
		if *m.EndLine < 1 {
			return Errorf(EINVALID, "fileReference.endLine: %d is not a line number; lines are counted from 1", *m.EndLine)
		}
		start := 1
		if m.StartLine != nil {
			start = *m.StartLine
		}
		if *m.EndLine < start {
			return Errorf(EINVALID, "fileReference.endLine: %d is before startLine %d", *m.EndLine, start)
		}
	}
	return nil
}

// toolNamePattern is what providers accept as a function name, plus the dots and colons
// of namespaced (MCP) tools.
var toolNamePattern = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9_.:\-]{0,127}$`)

// MaxToolCallIDLength bounds a tool call id.
const MaxToolCallIDLength = 256

func checkToolCallID(field, id string) error {
	if id == "" {
		return Errorf(EINVALID, "%s: tool call id is empty", field)
	}
	if len(id) > MaxToolCallIDLength {
		return Errorf(EINVALID, "%s: tool call id is %d bytes, at most %d allowed", field, len(id), MaxToolCallIDLength)
	}
	if clean, err := CleanText(field, id); err != nil {
		return err
	} else if clean != id || strings.TrimSpace(id) != id {
		return Errorf(EINVALID, "%s: tool call id %q has control characters or surrounding spaces", field, id)
	}
	return nil
}

func (m *ToolRequestMessage) prepare(lim Limits) error {
	m.Role = RoleInvocation
	if err := m.Body.checkSize("toolRequest", lim.MaxMessageTextBytes); err != nil {
		return err
	}
	if err := m.Body.prepare("toolRequest"); err != nil {
		return err
	}
	if len(m.ToolCalls) == 0 {
		return Errorf(EINVALID, "toolRequest.toolCalls: at least one tool call is required")
	}
	if len(m.ToolCalls) > lim.MaxToolCallsPerMessage {
		return Errorf(ETOOMANYTOOLCALLS, "toolRequest.toolCalls: %d calls, at most %d allowed in one message", len(m.ToolCalls), lim.MaxToolCallsPerMessage)
	}
	seen := make(map[string]int, len(m.ToolCalls))
	lastAnchor := 0
	for i := range m.ToolCalls {
		c := &m.ToolCalls[i]
		f := fmt.Sprintf("toolRequest.toolCalls[%d]", i)
		if c.PartIndex != nil {
			switch n := *c.PartIndex; {
			case n < 0 || n > len(m.Parts):
				return Errorf(EINVALID, "%s.partIndex: %d is not between 0 and the %d parts", f, n, len(m.Parts))
			case n < lastAnchor:
				return Errorf(EINVALID, "%s.partIndex: %d is before the call ahead of it (%d); calls keep their order", f, n, lastAnchor)
			default:
				lastAnchor = n
			}
		}
		if err := checkToolCallID(f+".id", c.ID); err != nil {
			return err
		}
		if j, dup := seen[c.ID]; dup {
			return Errorf(EINVALID, "%s.id: %q is already the id of toolCalls[%d]", f, c.ID, j)
		}
		seen[c.ID] = i
		if !toolNamePattern.MatchString(c.Name) {
			return Errorf(EINVALID, "%s.name: %q is not a valid tool name (letters, digits, _ . : -, at most 128)", f, truncateForError(c.Name))
		}
		if err := c.prepareArguments(f, lim); err != nil {
			return err
		}
		if err := checkItemID(f+".itemId", c.ItemID); err != nil {
			return err
		}
		if err := checkThoughtSignature(f+".thoughtSignature", c.ThoughtSignature); err != nil {
			return err
		}
		if c.ApprovalStatus == "" {
			c.ApprovalStatus = ApprovalPending
		} else if !slices.Contains(ApprovalStatuses, c.ApprovalStatus) {
			return Errorf(EINVALID, "%s.approvalStatus: %q is not PENDING, APPROVED or DENIED", f, c.ApprovalStatus)
		}
	}
	return nil
}

func (m *ToolResultMessage) prepare(lim Limits) error {
	m.Role = RoleResult
	if err := checkToolCallID("toolResult.toolCallId", m.ToolCallID); err != nil {
		return err
	}
	if !slices.Contains(ToolResultStatuses, m.Status) {
		return Errorf(EINVALID, "toolResult.status: %q is not SUCCESS or ERROR", m.Status)
	}
	if err := m.Body.prepare("toolResult"); err != nil {
		return err
	}
	if err := m.prepareOutput(); err != nil {
		return err
	}
	for i, p := range m.Parts {
		// An image inside a result is bounded as an image message is: its base64 data
		// is 4/3 of the bytes, and the block around it a few dozen more.
		if p.Kind == PartImage && len(p.Raw) > lim.MaxImageBytes/3*4+1024 {
			return Errorf(EINVALID, "toolResult.parts[%d].raw: the image is more than the %d bytes allowed", i, lim.MaxImageBytes)
		}
	}
	switch {
	case m.Status == ToolError && (m.Error == nil || strings.TrimSpace(m.Error.Message) == ""):
		return Errorf(EINVALID, "toolResult.error: a result with status ERROR needs error.message")
	case m.Status == ToolSuccess && m.Error != nil:
		return Errorf(EINVALID, "toolResult.error: only a result with status ERROR has an error")
	}
	if m.Error != nil {
		var err error
		if m.Error.Message, err = CleanText("toolResult.error.message", m.Error.Message); err != nil {
			return err
		}
		if m.Error.StackTrace, err = CleanText("toolResult.error.stackTrace", m.Error.StackTrace); err != nil {
			return err
		}
	}
	if m.DurationMs != nil && *m.DurationMs < 0 {
		return Errorf(EINVALID, "toolResult.durationMs: %d is negative", *m.DurationMs)
	}
	worker, err := CleanText("toolResult.worker", strings.TrimSpace(m.Worker))
	if err != nil {
		return err
	}
	if m.Worker = worker; len(m.Worker) > maxNameBytes {
		return Errorf(EINVALID, "toolResult.worker: %d bytes, at most %d allowed", len(m.Worker), maxNameBytes)
	}
	signatures := 0
	for _, p := range m.Parts {
		signatures += len(p.Signature)
	}
	if signatures > lim.MaxMessageTextBytes {
		return Errorf(EMESSAGETOOLARGE, "toolResult: the signatures are %d bytes, more than the %d allowed in one message", signatures, lim.MaxMessageTextBytes)
	}
	m.truncate(lim.MaxToolOutputBytes)
	return nil
}

// prepareOutput checks the output. Given as it was produced (OutputRaw), it must be JSON
// and becomes the parsed Output too, so that its bytes are what every reader sees.
func (m *ToolResultMessage) prepareOutput() error {
	if m.OutputRaw == nil {
		if len(m.Output) > 0 {
			return checkJSON("toolResult.output", m.Output)
		}
		return nil
	}
	if !m.Output.IsNull() {
		return Errorf(EINVALID, "toolResult: give output or outputRaw, not both")
	}
	raw := JSON(*m.OutputRaw)
	if !utf8.Valid(raw) {
		return Errorf(EINVALID, "toolResult.outputRaw: not valid UTF-8")
	}
	if !json.Valid(raw) {
		return Errorf(EINVALID, "toolResult.outputRaw: not valid JSON (send text as content)")
	}
	if err := checkJSON("toolResult.outputRaw", raw); err != nil {
		return err
	}
	m.Output = raw
	return nil
}

// truncate cuts the output and the text (all parts together) to max bytes each, at a
// character boundary. An
// output cut short is no longer JSON, so it is kept as a JSON string of its first bytes.
func (m *ToolResultMessage) truncate(max int) {
	if max <= 0 {
		return
	}
	size := len(m.Output)
	for _, p := range m.Parts {
		size += len(p.Text)
	}
	cut := false
	if len(m.Output) > max {
		m.Output = JSON(mustQuoteJSON(cutUTF8(string(m.Output), max)))
		m.OutputRaw, cut = nil, true // what is left is no longer what was given
	}
	// The parts share one budget: many parts of max bytes each are no smaller than
	// one part of all of them. Parts left with nothing are dropped.
	left := max
	for i := range m.Parts {
		if len(m.Parts[i].Text) > left {
			m.Parts[i].Text = cutUTF8(m.Parts[i].Text, left)
			cut = true
		}
		left -= len(m.Parts[i].Text)
		if left == 0 && i+1 < len(m.Parts) {
			m.Parts, cut = m.Parts[:i+1], true
			break
		}
	}
	// A result that arrives already cut (an imported Parley export) keeps its original
	// size; only a cut made here measures it.
	if cut {
		m.Truncated, m.OriginalSize = true, &size
	}
}

func cutUTF8(s string, max int) string {
	if len(s) <= max {
		return s
	}
	for max > 0 && !utf8.RuneStart(s[max]) {
		max--
	}
	return s[:max]
}

func (m *SystemControlMessage) prepare() error {
	m.Role = RoleSupervisor
	if !slices.Contains(ControlKinds, m.ControlKind) {
		return Errorf(EINVALID, "systemControl.kind: %q is not MODE_CHANGE or BRANCH_SWITCH", m.ControlKind)
	}
	var err error
	if m.From, err = CleanText("systemControl.from", m.From); err != nil {
		return err
	}
	if m.To, err = CleanText("systemControl.to", m.To); err != nil {
		return err
	}
	if len(m.Params) > 0 && !m.Params.IsNull() {
		if err := checkJSON("systemControl.params", m.Params); err != nil {
			return err
		}
		if !m.Params.IsObject() {
			return Errorf(EINVALID, "systemControl.params: must be a JSON object")
		}
	}
	return nil
}

var mimeTypePattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9!#$&^_.+-]*/[A-Za-z0-9][A-Za-z0-9!#$&^_.+-]*(\s*;.*)?$`)

func (m *MCPResourceMessage) prepare(lim Limits) error {
	m.Role = RoleDocument
	if err := m.Body.checkSize("mcpResource", lim.MaxMessageTextBytes); err != nil {
		return err
	}
	var err error
	if m.ServerName, err = CleanText("mcpResource.serverName", m.ServerName); err != nil {
		return err
	}
	if strings.TrimSpace(m.ServerName) == "" {
		return Errorf(EINVALID, "mcpResource.serverName: is empty")
	}
	if u, err := url.Parse(m.ResourceURI); err != nil || u.Scheme == "" {
		return Errorf(EINVALID, "mcpResource.resourceUri: %q is not a URI with a scheme", truncateForError(m.ResourceURI))
	}
	if m.MimeType != "" && !mimeTypePattern.MatchString(m.MimeType) {
		return Errorf(EINVALID, "mcpResource.mimeType: %q is not a media type", truncateForError(m.MimeType))
	}
	return m.Body.prepare("mcpResource")
}

func (m *UnknownMessage) prepare(lim Limits) error {
	if len(m.Raw) > lim.MaxMessageTextBytes {
		return Errorf(EMESSAGETOOLARGE, "message: %d bytes, more than the %d allowed in one message", len(m.Raw), lim.MaxMessageTextBytes)
	}
	if !m.Role.Valid() {
		return Errorf(EINVALID, "role: %q is not a role", m.Role)
	}
	if strings.TrimSpace(m.TypeTag) == "" {
		return Errorf(EINVALID, "type: the type tag is empty")
	}
	return checkJSON("message", m.Raw)
}

func truncateForError(s string) string {
	if len(s) <= 80 {
		return s
	}
	return cutUTF8(s, 77) + "..."
}

func mustQuoteJSON(s string) []byte {
	var sb strings.Builder
	sb.Grow(len(s) + 2)
	sb.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"' || r == '\\':
			sb.WriteByte('\\')
			sb.WriteRune(r)
		case r < 0x20:
			fmt.Fprintf(&sb, `\u%04x`, r)
		default:
			sb.WriteRune(r)
		}
	}
	sb.WriteByte('"')
	return []byte(sb.String())
}

// prepareArguments checks a call's arguments. Given as JSON only, they must be a JSON
// object. Given as the provider produced them (ArgumentsRaw), they are kept byte for
// byte: a JSON object is also the parsed Arguments; anything else (cut short, empty, an
// array) is stored as it is and flagged ArgumentsInvalid, with {} as its Arguments, so
// that the turn is recorded rather than refused.
func (c *ToolCall) prepareArguments(f string, lim Limits) error {
	if c.ArgumentsRaw == nil {
		if len(c.Arguments) == 0 {
			return Errorf(EINVALID, "%s: give arguments (a JSON object) or argumentsRaw (as the model produced them)", f)
		}
		if len(c.Arguments) > lim.MaxToolArgumentsBytes {
			return Errorf(EARGUMENTSTOOLARGE, "%s.arguments: %d bytes, at most %d allowed", f, len(c.Arguments), lim.MaxToolArgumentsBytes)
		}
		if err := checkJSON(f+".arguments", c.Arguments); err != nil {
			return err
		}
		if !c.Arguments.IsObject() {
			return Errorf(EINVALID, "%s.arguments: must be a JSON object", f)
		}
		c.ArgumentsInvalid = false
		return nil
	}
	if !c.Arguments.IsNull() {
		return Errorf(EINVALID, "%s: give arguments or argumentsRaw, not both", f)
	}
	raw := *c.ArgumentsRaw
	if len(raw) > lim.MaxToolArgumentsBytes {
		return Errorf(EARGUMENTSTOOLARGE, "%s.argumentsRaw: %d bytes, at most %d allowed", f, len(raw), lim.MaxToolArgumentsBytes)
	}
	if !utf8.ValidString(raw) {
		return Errorf(EINVALID, "%s.argumentsRaw: not valid UTF-8", f)
	}
	if strings.IndexByte(raw, 0) >= 0 {
		return Errorf(EINVALID, "%s.argumentsRaw: contains a NUL byte, which cannot be stored", f)
	}
	if args := JSON(raw); json.Valid(args) && args.IsObject() {
		// A JSON object Postgres cannot hold as jsonb is refused as it is when given as
		// JSON: it is not a truncation to record, and every reader would trip on it.
		if err := checkJSON(f+".argumentsRaw", args); err != nil {
			return err
		}
		c.Arguments, c.ArgumentsInvalid = args, false
		return nil
	}
	c.Arguments, c.ArgumentsInvalid = JSON("{}"), true
	return nil
}

// checkThoughtSignature refuses a thought signature that is not plain text.
func checkThoughtSignature(field, sig string) error {
	if !utf8.ValidString(sig) || strings.IndexByte(sig, 0) >= 0 {
		return Errorf(EINVALID, "%s: not valid UTF-8 text", field)
	}
	return nil
}

// MaxItemIDLength bounds a provider's item id (OpenAI's are some 50 bytes).
const MaxItemIDLength = 256

// checkItemID refuses an item id that is too long or not plain text.
func checkItemID(field, id string) error {
	if len(id) > MaxItemIDLength {
		return Errorf(EINVALID, "%s: %d bytes, at most %d allowed", field, len(id), MaxItemIDLength)
	}
	if clean, err := CleanText(field, id); err != nil {
		return err
	} else if clean != id || strings.TrimSpace(id) != id {
		return Errorf(EINVALID, "%s: %q has control characters or surrounding spaces", field, truncateForError(id))
	}
	return nil
}
