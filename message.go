package parley

import (
	"bytes"
	"encoding/json"
	"strings"
	"time"
)

// MessageKind names a message variant. It is the kind column of a stored message and the
// type tag of Parley's JSON export.
type MessageKind string

// The variants.
const (
	KindText          MessageKind = "text"
	KindImage         MessageKind = "image"
	KindFileReference MessageKind = "file_reference"
	KindToolRequest   MessageKind = "tool_request"
	KindToolResult    MessageKind = "tool_result"
	KindSystemControl MessageKind = "system_control"
	KindMCPResource   MessageKind = "mcp_resource"
)

// Message is one entry of a conversation: one of the variants below, each a pointer.
type Message interface {
	Node
	// Meta returns the fields every message has.
	Meta() *MessageMeta
	// Kind names the variant; an UnknownMessage returns its original type tag.
	Kind() MessageKind
	// Label is how the message is titled for people (seed 004): "User", "Tool Call"...
	Label() string
}

// MessageMeta holds what every message has, whatever its variant.
type MessageMeta struct {
	ID             string
	ConversationID string
	Role           Role
	// Position is the message's depth along its branch: 1 for a root, its parent's
	// plus one otherwise. Positions are gap-free along every branch.
	Position int
	// Seq is the store's conversation-wide, gap-free, commit-ordered number of the
	// message, which realtime replay follows; not shown to clients.
	Seq int
	// Place, on a message to store, says where in the tree it goes; Tree, on a message
	// read, where it is (nil unless it was asked for).
	Place Placement
	Tree  *TreeInfo
	// Hidden says the message is never sent to an LLM, though it stays in the history.
	Hidden bool
	// DeletedAt, when set, says the message was deleted then: its content is erased,
	// its place in the tree kept.
	DeletedAt *time.Time
	CreatedAt time.Time
	UpdatedAt time.Time
	// SourceID is the id of the record an import made this message from ("" otherwise).
	SourceID string
	// Live is the message's status, client id and provenance.
	Live Live
}

// Meta implements Message.
func (m *MessageMeta) Meta() *MessageMeta { return m }

// NodeID implements Node.
func (m *MessageMeta) NodeID() string { return m.ID }

// Label is the role's display label; variants with a label of their own override it.
func (m *MessageMeta) Label() string { return m.Role.Label() }

// Part is one piece of a message's text: text for the reader, or the model's thinking.
type Part struct {
	Kind PartKind
	// Text is the author's text, unescaped.
	Text string
	// Signature is the provider's integrity token for a thinking part (Anthropic), kept
	// so that the history can be sent back to the provider. For a REDACTED_THINKING part
	// it is the provider's encrypted data, and Text is empty. For an OpenAI Responses
	// reasoning item it is the item's encrypted_content, and Text its summary.
	Signature string
	// ItemID is the provider's id of the item the part was (OpenAI Responses' rs_…),
	// sent back with it to that provider.
	ItemID string
	// Raw is a SERVER_TOOL part's block as the provider produced it.
	Raw JSON
	// Citations are a TEXT part's citations as the provider produced them (Anthropic's
	// citations array), nil when it has none.
	Citations JSON
}

// HasImages reports whether b holds IMAGE parts (a tool result's images).
func HasImages(b Body) bool {
	for _, p := range b.Parts {
		if p.Kind == PartImage {
			return true
		}
	}
	return false
}

// ImageSource returns an IMAGE part's image: base64 data with its media type, or a URL
// (Anthropic's image block, as the part holds it). ok is false for any other part, or
// a block with neither.
func (p Part) ImageSource() (src ImageSource, ok bool) {
	if p.Kind != PartImage {
		return ImageSource{}, false
	}
	var b struct {
		Source struct {
			Type      string `json:"type"`
			MediaType string `json:"media_type"`
			Data      string `json:"data"`
			URL       string `json:"url"`
		} `json:"source"`
	}
	if json.Unmarshal(p.Raw, &b) != nil {
		return ImageSource{}, false
	}
	switch s := b.Source; {
	case s.Type == "base64" && s.Data != "":
		return ImageSource{Kind: ImageBase64, Data: s.Data, MediaType: s.MediaType}, true
	case s.URL != "":
		return ImageSource{Kind: ImageURL, URL: s.URL}, true
	}
	return ImageSource{}, false
}

// Content is the part's text as stored: HTML-escaped, safe for innerHTML.
func (p Part) Content() string { return EscapeHTML(p.Text) }

// Body is the text of a message, in parts.
type Body struct {
	Parts []Part
}

// partSeparator joins TEXT parts into one text.
const partSeparator = "\n\n"

// Text is the author's text: the TEXT parts joined, unescaped. For text nodes and LLMs.
func (b Body) Text() string {
	// One TEXT part, the common case, is the text: no copy.
	n, only := 0, ""
	for _, p := range b.Parts {
		if p.Kind == PartText {
			n, only = n+1, p.Text
		}
	}
	if n <= 1 {
		return only
	}
	var sb strings.Builder
	for _, p := range b.Parts {
		if p.Kind != PartText {
			continue
		}
		if sb.Len() > 0 {
			sb.WriteString(partSeparator)
		}
		sb.WriteString(p.Text)
	}
	return sb.String()
}

// Content is the text as stored: HTML-escaped, safe to put in innerHTML.
func (b Body) Content() string { return EscapeHTML(b.Text()) }

// Thinking is the THINKING parts joined, unescaped.
func (b Body) Thinking() string {
	var parts []string
	for _, p := range b.Parts {
		if p.Kind == PartThinking {
			parts = append(parts, p.Text)
		}
	}
	return strings.Join(parts, partSeparator)
}

// TextBody returns a body of one TEXT part, or no parts for "".
func TextBody(text string) Body {
	if text == "" {
		return Body{}
	}
	return Body{Parts: []Part{{Kind: PartText, Text: text}}}
}

// TextMessage is text from the user, the assistant or a supervisor.
type TextMessage struct {
	MessageMeta
	Body
}

// Kind implements Message.
func (*TextMessage) Kind() MessageKind { return KindText }

// ImageSource says where an image's bytes are: exactly one of URL, Data or FilePath.
type ImageSource struct {
	Kind      ImageSourceKind
	URL       string
	Data      string // base64, standard alphabet
	MediaType string
	FilePath  string
}

// ProcessingError is why a processing step failed, and whether trying again can help.
type ProcessingError struct {
	Message   string
	Retryable bool
}

// ImageRecognition is the stored outcome of recognizing an image.
type ImageRecognition struct {
	Status         ProcessingStatus
	ModeUsed       *RecognitionMode
	RecognizedText string
	VisionAnalysis string
	Confidence     *float64
	Language       string
	// Script is the writing system OCR detected ("Latin"), "" when unknown.
	Script      string `json:",omitempty"`
	Notice      string
	Error       *ProcessingError
	ProcessedAt time.Time
}

// ImageMessage is an image, from the user or generated by the assistant.
type ImageMessage struct {
	MessageMeta
	Source          ImageSource
	RecognitionMode RecognitionMode
	// Recognition is nil until the image has been processed.
	Recognition *ImageRecognition
}

// Kind implements Message.
func (*ImageMessage) Kind() MessageKind { return KindImage }

// FileResolution is the stored outcome of reading a referenced file.
type FileResolution struct {
	Status       ProcessingStatus
	Content      string
	Truncated    bool
	OriginalSize *int
	Error        *ProcessingError
	ResolvedAt   time.Time
}

// FileReferenceMessage points at a file, or a range of its lines, as context.
type FileReferenceMessage struct {
	MessageMeta
	Path      string
	StartLine *int
	EndLine   *int
	// Resolution is nil until the file has been read.
	Resolution *FileResolution
}

// Kind implements Message.
func (*FileReferenceMessage) Kind() MessageKind { return KindFileReference }

// ApprovalDecision is who decided a tool call, how, why and when.
type ApprovalDecision struct {
	Status    ApprovalStatus
	DecidedBy string
	Reason    string
	DecidedAt time.Time
}

// ToolCall is one call a tool request makes.
type ToolCall struct {
	ID   string
	Name string
	// Arguments is the parsed arguments, a JSON object: ArgumentsRaw itself when that is
	// one, {} when it is not (ArgumentsInvalid).
	Arguments JSON
	// ArgumentsRaw is the arguments exactly as the provider produced them, nil when they
	// were given as JSON only. OpenAI sends them as a string, which a model cut short
	// (finish_reason "length") leaves truncated; they are stored as produced, so that the
	// turn can be recorded, sent back as it was and answered with an error result.
	ArgumentsRaw *string
	// ArgumentsInvalid says ArgumentsRaw is not a JSON object.
	ArgumentsInvalid bool
	// ItemID is the provider's id of the item that made the call (OpenAI Responses'
	// fc_…), beside the call id (ID); "" when there is none.
	ItemID string
	// ThoughtSignature is Gemini's thought signature for the call, as its
	// OpenAI-compatible API gives it (extra_content.google.thought_signature): sent back
	// in the same place, and only to Google, which refuses the next turn without it.
	ThoughtSignature string
	// PartIndex is where the call came among its message's parts: after the first
	// PartIndex of them ([text, tool_use, text, tool_use] is calls at 1 and 2). Nil:
	// after all of them, as most replies have it.
	PartIndex      *int
	ApprovalStatus ApprovalStatus
	// Decision is nil while the call is pending.
	Decision *ApprovalDecision
	// Imported says the call came with an import and has not been decided here since:
	// it is history, not a request. Its decision, if any, was made where it came from
	// (a "policy" there is not this server's), and it never enters the work queue
	// unless a person approves it here, under this server's tool policies.
	Imported bool
}

// ToolRequestMessage is the assistant asking for one or more tool calls, with any text
// and thinking that came with them.
type ToolRequestMessage struct {
	MessageMeta
	Body
	ToolCalls []ToolCall
}

// Kind implements Message.
func (*ToolRequestMessage) Kind() MessageKind { return KindToolRequest }

// ToolCall returns the call with the given id, or nil.
func (m *ToolRequestMessage) ToolCall(id string) *ToolCall {
	for i := range m.ToolCalls {
		if m.ToolCalls[i].ID == id {
			return &m.ToolCalls[i]
		}
	}
	return nil
}

// ToolErrorDetail describes a failed tool run.
type ToolErrorDetail struct {
	Message     string
	StackTrace  string
	Recoverable bool
}

// ToolResultMessage is the outcome of one tool call.
type ToolResultMessage struct {
	MessageMeta
	Body
	ToolCallID string
	// ToolName is the name of the call it answers, filled in when it is stored.
	ToolName string
	Status   ToolResultStatus
	// Output is the parsed output: OutputRaw itself when that is given.
	Output JSON
	// OutputRaw is the output exactly as given (key order, whitespace, number spelling),
	// nil when it was given as JSON only: Postgres's jsonb normalizes Output, and exports
	// send these bytes back to the provider as they were.
	OutputRaw  *string
	Error      *ToolErrorDetail
	DurationMs *int
	ExecutedAt *time.Time
	// Truncated says the output or text was cut to the configured size before saving;
	// OriginalSize is then the size in bytes of what was given.
	Truncated    bool
	OriginalSize *int
	// Worker is who sends the result, as it named itself when it claimed the call ("" for
	// none): checked against a claim that lasts (CheckResultClaim) when the result is
	// added, and not stored.
	Worker string
}

// Kind implements Message.
func (*ToolResultMessage) Kind() MessageKind { return KindToolResult }

// SystemControlMessage records a change of mode or branch. It stays in the history and
// is never sent to an LLM.
type SystemControlMessage struct {
	MessageMeta
	ControlKind ControlKind
	From        string
	To          string
	Params      JSON
}

// Kind implements Message.
func (*SystemControlMessage) Kind() MessageKind { return KindSystemControl }

// Label implements Message.
func (*SystemControlMessage) Label() string { return "System" }

// MCPResourceMessage is a resource read from an MCP server, injected as context.
type MCPResourceMessage struct {
	MessageMeta
	Body
	ServerName  string
	ResourceURI string
	MimeType    string
	RetrievedAt time.Time
	Truncated   bool
}

// Kind implements Message.
func (*MCPResourceMessage) Kind() MessageKind { return KindMCPResource }

// UnknownMessage is a stored or imported message of a type this version does not know,
// kept with its type tag and original JSON so that nothing is lost.
type UnknownMessage struct {
	MessageMeta
	TypeTag string
	Raw     JSON
}

// Kind implements Message.
func (m *UnknownMessage) Kind() MessageKind { return MessageKind(m.TypeTag) }

// Label implements Message.
func (*UnknownMessage) Label() string { return "Unknown" }

// TextBearing is a message with text: its content as stored and as written. (The API's
// html, the text rendered, is the GraphQL adapter's: see package render.)
type TextBearing interface {
	Content() string
	Text() string
}

// Provenance returns who produced the message, nil when unknown.
func (m *MessageMeta) Provenance() *Provenance { return m.Live.Provenance }

// ArgumentsText is the call's arguments as the text providers take (OpenAI's
// arguments string): exactly as produced when known, else the JSON compacted.
func (c *ToolCall) ArgumentsText() string {
	if c.ArgumentsRaw != nil {
		return *c.ArgumentsRaw
	}
	if c.Arguments.IsNull() {
		return "{}"
	}
	var compact bytes.Buffer
	if err := json.Compact(&compact, c.Arguments); err != nil {
		return string(c.Arguments)
	}
	return compact.String()
}

// Anchored reports whether any of m's calls came before some of its parts, so that an
// export which can interleave them should (PartIndex).
func (m *ToolRequestMessage) Anchored() bool {
	for _, c := range m.ToolCalls {
		if c.PartIndex != nil && *c.PartIndex < len(m.Parts) {
			return true
		}
	}
	return false
}

// InOrder calls f with each part (c nil) and each call (p nil) in the order the model
// produced them: each call after the parts its PartIndex counts, calls without one
// after every part.
func (m *ToolRequestMessage) InOrder(f func(p *Part, c *ToolCall)) {
	next := 0
	calls := func(upto int) {
		for next < len(m.ToolCalls) {
			c := &m.ToolCalls[next]
			if c.PartIndex == nil || *c.PartIndex > upto {
				return
			}
			f(nil, c)
			next++
		}
	}
	for i := range m.Parts {
		calls(i)
		f(&m.Parts[i], nil)
	}
	for ; next < len(m.ToolCalls); next++ {
		f(nil, &m.ToolCalls[next])
	}
}

// AnchorCalls sets the PartIndex of calls made after parts[:at[i]] when any call came
// before a part, and leaves them nil otherwise (every call after every part).
func AnchorCalls(calls []ToolCall, at []int, parts int) {
	for _, n := range at {
		if n < parts {
			for i := range calls {
				n := at[i]
				calls[i].PartIndex = &n
			}
			return
		}
	}
}
