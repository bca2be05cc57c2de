package parley

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
)

// ImportFormat names a history format that Parley imports.
type ImportFormat string

// The import formats.
const (
	// ImportClaudeCode is a Claude Code session file (~/.claude/projects/<project>/<session>.jsonl).
	ImportClaudeCode ImportFormat = "CLAUDE_CODE_JSONL"
	// ImportOpenAIChat is a Chat Completions messages array, or a request body holding one.
	ImportOpenAIChat ImportFormat = "OPENAI_CHAT"
	// ImportOpenAIResponses is a Responses API input array, or a request or response
	// holding one.
	ImportOpenAIResponses ImportFormat = "OPENAI_RESPONSES"
	// ImportAnthropicMessages is a Messages API {system, messages} object, or a messages array.
	ImportAnthropicMessages ImportFormat = "ANTHROPIC_MESSAGES"
	// ImportParleyJSON is Parley's own export (TranscriptParleyJSON).
	ImportParleyJSON ImportFormat = "PARLEY_JSON"
)

// ImportFormats lists every import format.
var ImportFormats = []ImportFormat{ImportClaudeCode, ImportOpenAIChat, ImportOpenAIResponses, ImportAnthropicMessages, ImportParleyJSON}

// ParseImportFormat accepts a format in the API's spelling (CLAUDE_CODE_JSONL) or in
// lower case with dashes (claude-code-jsonl), as people type it on a command line.
func ParseImportFormat(s string) (ImportFormat, error) {
	f := ImportFormat(strings.ReplaceAll(strings.ToUpper(s), "-", "_"))
	if !slices.Contains(ImportFormats, f) {
		return "", Errorf(EINVALID, "format: %q is not one of %s", s, joinFormats(ImportFormats))
	}
	return f, nil
}

// TranscriptFormat names a shape that a conversation's history is exported in.
type TranscriptFormat string

// The transcript formats.
const (
	// TranscriptOpenAIChat is a Chat Completions messages array.
	TranscriptOpenAIChat TranscriptFormat = "OPENAI_CHAT"
	// TranscriptOpenAIResponses is a Responses API input array: message, function_call and
	// function_call_output items.
	TranscriptOpenAIResponses TranscriptFormat = "OPENAI_RESPONSES"
	// TranscriptAnthropicMessages is a Messages API {system, messages} object.
	TranscriptAnthropicMessages TranscriptFormat = "ANTHROPIC_MESSAGES"
	// TranscriptMarkdown is a transcript for people, one labelled section per message.
	TranscriptMarkdown TranscriptFormat = "MARKDOWN"
	// TranscriptParleyJSON is Parley's lossless, versioned export, which it imports back.
	TranscriptParleyJSON TranscriptFormat = "PARLEY_JSON"
)

// TranscriptFormats lists every transcript format.
var TranscriptFormats = []TranscriptFormat{
	TranscriptOpenAIChat, TranscriptOpenAIResponses, TranscriptAnthropicMessages, TranscriptMarkdown, TranscriptParleyJSON,
}

// ParseTranscriptFormat accepts a format in the API's spelling or in lower case with dashes.
func ParseTranscriptFormat(s string) (TranscriptFormat, error) {
	f := TranscriptFormat(strings.ReplaceAll(strings.ToUpper(s), "-", "_"))
	if !slices.Contains(TranscriptFormats, f) {
		return "", Errorf(EINVALID, "format: %q is not one of %s", s, joinFormats(TranscriptFormats))
	}
	return f, nil
}

// ForLLM reports whether the format is a provider's request shape, which an LLM can
// continue from, rather than a record for people or for Parley.
func (f TranscriptFormat) ForLLM() bool {
	return f == TranscriptOpenAIChat || f == TranscriptOpenAIResponses || f == TranscriptAnthropicMessages
}

func joinFormats[T ~string](fs []T) string {
	s := make([]string, len(fs))
	for i, f := range fs {
		s[i] = string(f)
	}
	return strings.Join(s, ", ")
}

// ImportedMessage is a message read from another tool's history, not yet stored.
type ImportedMessage struct {
	Message Message
	// Origin says where in the input the message comes from ("line 12",
	// "messages[3]"), so that an error about it can point there.
	Origin string
	// Parent and Root say where the message goes in the conversation's tree, for
	// formats that record one (a Claude Code session's parentUuid links, PARLEY_JSON's
	// parentId). Parent is the SourceID of the message it follows: an earlier message
	// of the import, or one imported before into the same conversation. Root says it
	// starts a tree of its own (an edited first prompt). With neither, the message
	// follows the one the import added before it (the first one continues the
	// conversation's active branch), as in formats that are one line.
	Parent string
	Root   bool
}

// SkippedRecords counts the records of an import that were left out for one reason.
type SkippedRecords struct {
	Reason string
	Count  int
	// Where names the first few of them ("line 3", "messages[0]").
	Where []string
}

// maxSkippedWhere bounds SkippedRecords.Where: a session has thousands of progress lines.
const maxSkippedWhere = 5

// Import is a history read from another tool: messages ready to be stored, and what was
// found besides them. The importers fill it in; ImportService stores it.
type Import struct {
	Messages []ImportedMessage
	// Title is the title the source suggests (a Claude Code summary), or "".
	Title string
	// SystemPrompt is the system prompt the source carried. It is reported, never
	// stored (seed 000): pass it as the system argument when exporting.
	SystemPrompt string
	Skipped      []SkippedRecords
	Warnings     []string
	// Leaf, when set, is the SourceID of the message whose branch the source had
	// active (a PARLEY_JSON export's active leaf); without it the branch of the
	// import's last message becomes active.
	Leaf string
}

// Add appends a message read at origin.
func (imp *Import) Add(m Message, origin string) {
	imp.Messages = append(imp.Messages, ImportedMessage{Message: m, Origin: origin})
}

// Skip counts a record at where that is left out for reason.
func (imp *Import) Skip(reason, where string) {
	for i := range imp.Skipped {
		if s := &imp.Skipped[i]; s.Reason == reason {
			s.Count++
			if len(s.Where) < maxSkippedWhere {
				s.Where = append(s.Where, where)
			}
			return
		}
	}
	imp.Skipped = append(imp.Skipped, SkippedRecords{Reason: reason, Count: 1, Where: []string{where}})
}

// Warn records something the user should know about an import that went through.
func (imp *Import) Warn(format string, args ...any) {
	imp.Warnings = append(imp.Warnings, fmt.Sprintf(format, args...))
}

// ImportTarget says where an import goes: into an existing conversation, or into a new
// one titled Title (the source's title when empty).
type ImportTarget struct {
	ConversationID string
	Title          string
}

// VariantCount is how many messages of one variant an import added.
type VariantCount struct {
	// Variant is the GraphQL type name: TextMessage, ToolRequestMessage...
	Variant string
	Count   int
}

// ImportReport says what an import did.
type ImportReport struct {
	Conversation *Conversation
	// Created says the import created the conversation.
	Created bool
	Added   int
	// AddedByVariant counts the added messages per variant, in the API's variant order.
	AddedByVariant []VariantCount
	// AlreadyPresent counts the messages whose source record the conversation already
	// had (an earlier import of the same history): they are not added again.
	AlreadyPresent int
	Skipped        []SkippedRecords
	Warnings       []string
	// SystemPrompt is the import's system prompt, reported and not stored; nil if none.
	SystemPrompt *string
}

// VariantName is the API's type name of m's variant: TextMessage, ImageMessage...
func VariantName(m Message) string {
	switch m.(type) {
	case *TextMessage:
		return "TextMessage"
	case *ImageMessage:
		return "ImageMessage"
	case *FileReferenceMessage:
		return "FileReferenceMessage"
	case *ToolRequestMessage:
		return "ToolRequestMessage"
	case *ToolResultMessage:
		return "ToolResultMessage"
	case *SystemControlMessage:
		return "SystemControlMessage"
	case *MCPResourceMessage:
		return "MCPResourceMessage"
	case *CompactionMessage:
		return "CompactionMessage"
	}
	return "UnknownMessage"
}

// variantOrder is the order of the Message union in the API.
var variantOrder = []string{
	"TextMessage", "ImageMessage", "FileReferenceMessage", "ToolRequestMessage",
	"ToolResultMessage", "SystemControlMessage", "MCPResourceMessage", "CompactionMessage", "UnknownMessage",
}

// CountVariants counts msgs per variant, in the API's variant order, leaving out zeros.
func CountVariants(msgs []Message) []VariantCount {
	counts := make(VariantCounter)
	for _, m := range msgs {
		counts.Add(m)
	}
	return counts.Counts()
}

// VariantCounter counts messages per variant as they go by (a streamed import keeps
// the counts, not the messages).
type VariantCounter map[string]int

// Add counts m.
func (c VariantCounter) Add(m Message) { c[VariantName(m)]++ }

// Counts returns the counts in the API's variant order, leaving out zeros.
func (c VariantCounter) Counts() []VariantCount {
	var out []VariantCount
	for _, v := range variantOrder {
		if n := c[v]; n > 0 {
			out = append(out, VariantCount{Variant: v, Count: n})
		}
	}
	return out
}

// ImportService stores imported histories.
type ImportService interface {
	// ImportMessages prepares (Prepare) and stores imp's messages, in order, after the
	// target conversation's messages, creating the conversation when target names none.
	// It is all or nothing: on any error nothing is written. A message whose SourceID
	// the conversation already has is not added again, so importing the same history
	// twice adds nothing and a longer copy adds only what is new; nor is a copy under
	// another id (a user's text or image with the same time and content as a stored
	// one, a result with the same text for a call already answered), which a resumed
	// Claude Code session writes. Returns ENOTFOUND for a
	// missing conversation and EINVALID for an unusable title or a message that breaks a
	// rule, the message naming the message's origin.
	ImportMessages(ctx context.Context, target ImportTarget, imp *Import) (*ImportReport, error)
	// ImportStream is ImportMessages reading the messages from src one at a time, so
	// that a long history is never all in memory: they are checked and stored in
	// batches, still in one transaction (all or nothing), and the title is settled at
	// the end, from what src found. Unlike ImportMessages it is not run again when a
	// concurrent transaction aborts it: src cannot be read twice.
	ImportStream(ctx context.Context, target ImportTarget, src ImportSource) (*ImportReport, error)
}

// ImportSource yields an import's messages one at a time, in order.
type ImportSource interface {
	// Next returns the next message, or io.EOF after the last; EINVALID errors name
	// the line or index of the input at fault.
	Next() (ImportedMessage, error)
	// Import is what was found besides the messages (title, system prompt, skipped
	// records, warnings), complete once Next has returned io.EOF. Its Messages are
	// not used.
	Import() *Import
}

// SliceSource is an ImportSource over the messages of an import read whole.
func SliceSource(imp *Import) ImportSource { return &sliceSource{imp: imp} }

type sliceSource struct {
	imp  *Import
	next int
}

func (s *sliceSource) Next() (ImportedMessage, error) {
	if s.next == len(s.imp.Messages) {
		return ImportedMessage{}, io.EOF
	}
	s.next++
	return s.imp.Messages[s.next-1], nil
}

func (s *sliceSource) Import() *Import { return s.imp }

// TranscriptOptions tune an export for an LLM.
type TranscriptOptions struct {
	// System is the ephemeral system prompt: put where the provider wants system
	// instructions, never stored.
	System string
	// MaxTokens, when set, is the budget the history is fitted into by dropping the
	// oldest context first.
	MaxTokens *int
	// Repair closes or drops unanswered tool calls and results without a call, the way
	// the provider requires, instead of refusing to export them.
	Repair bool
	// Images says how images go to the LLM; "" is ImagesAsSent.
	Images ImageExport
	// Model is the model the transcript is for, "" when unknown: ImagesForModel asks
	// whether it sees images, and provider-bound artifacts (thinking signatures,
	// redacted thinking) another model issued are not sent to it.
	Model string
	// CacheBreakpoints is how many Anthropic cache_control breakpoints to place (0 to
	// MaxCacheBreakpoints): see the anthropic package. Only for ANTHROPIC_MESSAGES.
	CacheBreakpoints int
	// After, when set, is a message position: only what follows it is exported (an
	// incremental export, to append to a transcript sent before), without the system
	// prompt, which the earlier export carried. The report is then of the increment.
	After *int
	// Branch names the branch exported by a message on it; "" is the active branch.
	Branch string
	// ForeignReasoning says what becomes of reasoning the target cannot take: the
	// provider-bound artifacts another provider or model issued.
	ForeignReasoning ForeignReasoning
}

// MaxCacheBreakpoints is how many cache_control breakpoints Anthropic takes in a request.
const MaxCacheBreakpoints = 4

// ImageExport says how images go into a transcript for an LLM.
type ImageExport string

// The ways images are exported.
const (
	// ImagesAsSent sends an image as it was given, as the provider's image block, whether
	// or not it was recognized since: an exported image exports the same way ever after,
	// so a provider's prompt cache stays valid. An image the provider cannot be given (a
	// file path, or the assistant's) goes as its recognized text.
	ImagesAsSent ImageExport = "AS_SENT"
	// ImagesAsText sends every recognized image as its recognized text (OCR text or
	// the vision model's description); an image not recognized goes as sent.
	ImagesAsText ImageExport = "AS_TEXT"
	// ImagesForModel sends images as image blocks when the transcript's model sees
	// images (TranscriptOptions.Model, looked up in the table of vision models), as
	// their recognized text otherwise.
	ImagesForModel ImageExport = "FOR_MODEL"
)

// ImageExports lists every ImageExport.
var ImageExports = []ImageExport{ImagesAsSent, ImagesAsText, ImagesForModel}

// ParseImageExport accepts a value in the API's spelling or in lower case with dashes.
func ParseImageExport(s string) (ImageExport, error) {
	f := ImageExport(strings.ReplaceAll(strings.ToUpper(s), "-", "_"))
	if !slices.Contains(ImageExports, f) {
		return "", Errorf(EINVALID, "images: %q is not one of %s", s, joinFormats(ImageExports))
	}
	return f, nil
}

// ForeignReasoning says what a transcript does with reasoning that another provider or
// model issued, which the target would refuse ("Invalid signature in thinking block").
type ForeignReasoning string

// The ways of handling foreign reasoning.
const (
	// ForeignReasoningDrop leaves it out (the default).
	ForeignReasoningDrop ForeignReasoning = "DROP"
	// ForeignReasoningAsText sends the readable thinking as assistant text, in
	// <thinking> tags, without its signature; what has no readable text is left out.
	ForeignReasoningAsText ForeignReasoning = "AS_TEXT"
)

// ForeignReasonings lists every way of handling foreign reasoning.
var ForeignReasonings = []ForeignReasoning{ForeignReasoningDrop, ForeignReasoningAsText}

// TranscriptArtifact is a provider-bound piece of a message (a thinking signature,
// redacted thinking) that a transcript did not send as stored, and why.
type TranscriptArtifact struct {
	MessageID string
	Position  int
	// Artifact names it: "signed thinking", "redacted thinking".
	Artifact string
	// Action is what was done: "dropped", or "sent as text".
	Action string
	Reason string
}

// TranscriptDrop is a message left out of a transcript, and why.
type TranscriptDrop struct {
	MessageID string
	Position  int
	Label     string
	Reason    string
}

// TranscriptReport says how a transcript was made: what was left out or repaired, and
// how many tokens it is estimated to take.
type TranscriptReport struct {
	Format TranscriptFormat
	// TokenCounting states the rule EstimatedTokens follows.
	TokenCounting   string
	EstimatedTokens int
	MaxTokens       *int
	Dropped         []TranscriptDrop
	// Repairs says what Repair changed, one sentence each.
	Repairs []string
	// Notes says what the format could not carry (an image sent as its text...).
	Notes []string
	// Artifacts lists the provider-bound artifacts not sent as stored, because the
	// target provider or model did not issue them.
	Artifacts []TranscriptArtifact
	// EndPosition is the position of the newest message the transcript holds, 0 when it
	// holds none: the After of the next incremental export.
	EndPosition int
	// CutPosition is where a cut history starts (the position of its first message
	// after what maxTokens or a compaction left out), 0 when nothing was cut. While it
	// stays the same, an earlier export is a prefix of a later one.
	CutPosition int
}

// EndCursor is the message cursor of EndPosition (the after of the next incremental
// export), nil when the transcript holds no message.
func (r *TranscriptReport) EndCursor() *string {
	if r.EndPosition == 0 {
		return nil
	}
	c := MessageCursor(r.EndPosition)
	return &c
}

// Cut is CutPosition, nil when nothing was cut.
func (r *TranscriptReport) Cut() *int {
	if r.CutPosition == 0 {
		return nil
	}
	return &r.CutPosition
}

// Transcript is a conversation's history in one format, with its report.
type Transcript struct {
	// Body is the JSON value of the transcript: the provider's shape, Parley's export,
	// or, for Markdown, a JSON string.
	Body   JSON
	Report TranscriptReport
}

// DefaultMaxTranscriptBytes bounds the stored bytes (text, calls, results, payload, as
// MessagePage.Bytes counts them) of the history one transcript reads: a transcript is
// one value, built in memory, that cannot end early as a page does.
const DefaultMaxTranscriptBytes = 64 << 20

// InteropService moves histories between Parley and other tools' formats.
type InteropService interface {
	// ImportConversation reads a history in format from data and stores it as
	// ImportService.ImportMessages does. Returns EINVALID for unreadable input, the
	// message naming the line or index and what is wrong; nothing is written then.
	ImportConversation(ctx context.Context, format ImportFormat, data io.Reader, target ImportTarget) (*ImportReport, error)
	// Transcript exports a conversation's history. Returns ENOTFOUND for a missing
	// conversation, EINVALID for options the format does not take, for a tool call
	// without a result or a result without its call (unless opts.Repair), and for a
	// budget too small for the newest turn, ETRANSCRIPTTOOLARGE for a history holding
	// more stored bytes than the service's limit (nothing is exported; reading stops
	// at the limit). An incremental export (opts.After, no opts.MaxTokens) counts only
	// the messages after its cursor when they can be planned alone.
	Transcript(ctx context.Context, conversationID string, format TranscriptFormat, opts TranscriptOptions) (*Transcript, error)
}
