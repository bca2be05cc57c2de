// Package interop moves conversations between Parley and other tools: it implements
// parley.InteropService on top of the store's services and the format packages beneath
// it (claudecode, openai, anthropic, parleyjson, markdown), which speak only domain
// types and do not know each other. What all LLM exports share lives here: choosing
// what an LLM may see, checking that every tool call has its result, repairing what
// does not, and fitting the history into a token budget.
package interop

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/parley-dev/parley"
	"github.com/parley-dev/parley/interop/anthropic"
	"github.com/parley-dev/parley/interop/claudecode"
	"github.com/parley-dev/parley/interop/markdown"
	"github.com/parley-dev/parley/interop/openai"
	"github.com/parley-dev/parley/interop/parleyjson"
)

// Service implements parley.InteropService.
type Service struct {
	imports       parley.ImportService
	conversations parley.ConversationService
	messages      parley.MessageService
	seesImages    VisionLookup
	maxBytes      int
}

var _ parley.InteropService = (*Service)(nil)

// New returns a service that stores imports with imports and reads histories with
// conversations and messages (the db package's DB is all three).
func New(imports parley.ImportService, conversations parley.ConversationService, messages parley.MessageService) *Service {
	return &Service{imports: imports, conversations: conversations, messages: messages, maxBytes: parley.DefaultMaxTranscriptBytes}
}

// WithMaxBytes bounds the stored bytes of the history a transcript reads (n <= 0: the
// default, parley.DefaultMaxTranscriptBytes).
func (s *Service) WithMaxBytes(n int) *Service {
	if n <= 0 {
		n = parley.DefaultMaxTranscriptBytes
	}
	s.maxBytes = n
	return s
}

// WithVisionModels makes transcripts with images: FOR_MODEL look their model up with
// seesImages (without it they are refused).
func (s *Service) WithVisionModels(seesImages VisionLookup) *Service {
	s.seesImages = seesImages
	return s
}

// Parse reads a history in format, without storing it.
func Parse(format parley.ImportFormat, r io.Reader) (*parley.Import, error) {
	switch format {
	case parley.ImportClaudeCode:
		return claudecode.Parse(r)
	case parley.ImportOpenAIChat:
		return openai.ParseChat(r)
	case parley.ImportOpenAIResponses:
		return openai.ParseResponses(r)
	case parley.ImportAnthropicMessages:
		return anthropic.Parse(r)
	case parley.ImportParleyJSON:
		return parleyjson.Parse(r)
	}
	return nil, parley.Errorf(parley.EINVALID, "format: %q is not an import format", format)
}

// ImportConversation implements parley.InteropService.
func (s *Service) ImportConversation(ctx context.Context, format parley.ImportFormat, data io.Reader, target parley.ImportTarget) (*parley.ImportReport, error) {
	if target.ConversationID != "" && target.Title != "" {
		return nil, parley.Errorf(parley.EINVALID, "title: give a conversation to import into or a title for a new one, not both")
	}
	untitled := target.ConversationID == "" && target.Title == ""
	if format == parley.ImportClaudeCode {
		// Sessions of agents run to hundreds of megabytes: stored as they are read.
		return s.imports.ImportStream(ctx, target, &titledSource{ImportSource: claudecode.Stream(data), untitled: untitled})
	}
	imp, err := Parse(format, data)
	if err != nil {
		return nil, err
	}
	if untitled && strings.TrimSpace(imp.Title) == "" {
		for _, im := range imp.Messages {
			if imp.Title = promptTitle(im.Message); imp.Title != "" {
				break
			}
		}
	}
	return s.imports.ImportMessages(ctx, target, imp)
}

// titledSource names a new conversation after its first user prompt, as chat tools do,
// when the source has no title.
type titledSource struct {
	parley.ImportSource
	untitled bool
	prompt   string
}

func (s *titledSource) Next() (parley.ImportedMessage, error) {
	im, err := s.ImportSource.Next()
	if err == nil && s.untitled && s.prompt == "" {
		s.prompt = promptTitle(im.Message)
	}
	return im, err
}

func (s *titledSource) Import() *parley.Import {
	imp := s.ImportSource.Import()
	if s.untitled && strings.TrimSpace(imp.Title) == "" {
		imp.Title = s.prompt
	}
	return imp
}

// promptTitle is a title made of m when it is a user's prompt, else "".
func promptTitle(m parley.Message) string {
	const max = 80
	t, ok := m.(*parley.TextMessage)
	if !ok || t.Role != parley.RoleUser {
		return ""
	}
	line := strings.Join(strings.Fields(t.Text()), " ")
	if utf8.RuneCountInString(line) > max {
		cut := string([]rune(line)[:max-1])
		if i := strings.LastIndexByte(cut, ' '); i > len(cut)/2 {
			cut = cut[:i] // at a word's end, unless that loses half of it
		}
		line = strings.TrimRight(cut, " ,.;:") + "…"
	}
	return line
}

// maxModelBytes bounds the model a transcript names.
const maxModelBytes = 256

// pageSize is how many messages Transcript reads at a time.
const pageSize = parley.MaxPageSize

// Transcript implements parley.InteropService.
func (s *Service) Transcript(ctx context.Context, conversationID string, format parley.TranscriptFormat, opts parley.TranscriptOptions) (*parley.Transcript, error) {
	if err := checkOptions(format, opts); err != nil {
		return nil, err
	}
	conv, err := s.conversations.FindConversationByID(ctx, conversationID)
	if err != nil {
		return nil, err
	}
	if format == parley.TranscriptParleyJSON && opts.Branch == "" {
		return s.treeTranscript(ctx, conv)
	}
	if format.ForLLM() && opts.After != nil && opts.MaxTokens == nil {
		return s.increment(ctx, conv, format, opts)
	}
	msgs, _, err := s.readHistory(ctx, conv, historyRead(format, opts), nil, 0, 0)
	if err != nil {
		return nil, err
	}
	return build(conv, msgs, format, opts, s.seesImages)
}

// increment makes an incremental export (opts.After, no budget) reading only what
// follows the cursor, when that is enough: when no compaction the format takes
// follows the cursor (the transcript would start at it, with what it does not cover
// before the cursor) and every tool result after the cursor answers a call made after
// it (else its request, before the cursor, decides how it is sent). Otherwise it reads
// what precedes the cursor too, and plans the whole history as before. Either way the
// body is the same: what the whole history's transcript holds after the cursor.
func (s *Service) increment(ctx context.Context, conv *parley.Conversation, format parley.TranscriptFormat, opts parley.TranscriptOptions) (*parley.Transcript, error) {
	cursor := parley.MessageCursor(*opts.After)
	tail, used, err := s.readHistory(ctx, conv, historyRead(format, opts), &cursor, 0, 0)
	if err != nil {
		return nil, err
	}
	if *opts.After > 0 && !standsAlone(tail, format) { // after 0, the tail is the whole history
		head, _, err := s.readHistory(ctx, conv, historyRead(format, opts), nil, *opts.After, used)
		if err != nil {
			return nil, err
		}
		return build(conv, append(head, tail...), format, opts, s.seesImages)
	}
	t, err := build(conv, tail, format, opts, s.seesImages)
	if err == nil && t.Report.EndPosition == 0 {
		// Nothing visible follows the cursor: the next increment starts where this one did.
		t.Report.EndPosition = *opts.After
	}
	return t, err
}

// standsAlone reports whether the part of a history after a cursor makes the same
// transcript alone as it does after the rest: it holds no compaction format takes,
// and each tool result an LLM would see answers a call made in it.
func standsAlone(tail []parley.Message, format parley.TranscriptFormat) bool {
	calls := make(map[string]bool)
	for _, m := range tail {
		if meta := m.Meta(); meta.DeletedAt != nil || meta.Hidden {
			continue // never sent, and pairs nothing (plan leaves it out first)
		}
		switch m := m.(type) {
		case *parley.CompactionMessage:
			if m.ValidFor(format) {
				return false
			}
		case *parley.ToolRequestMessage:
			for _, c := range m.ToolCalls {
				calls[c.ID] = true
			}
		case *parley.ToolResultMessage:
			if !calls[m.ToolCallID] {
				return false
			}
		}
	}
	return true
}

// historyRead is how a transcript in format reads its history: along opts.Branch, and
// for an LLM only what the LLM exports use (parley.PageRequest.ForLLM: no times).
func historyRead(format parley.TranscriptFormat, opts parley.TranscriptOptions) parley.PageRequest {
	return parley.PageRequest{Branch: opts.Branch, ForLLM: format.ForLLM()}
}

// readHistory reads a conversation's history (as read says: its branch, and whether
// for an LLM) after the cursor after (nil:
// from the first message), through the message at position through (0: to the end),
// refusing it with ETRANSCRIPTTOOLARGE once it holds more than s.maxBytes of stored
// messages, used of them being spent already. Each page is read with what is left of
// the limit as its byte budget, so a page ends where the limit is reached and the read
// stops at the first message past it: memory holds the limit and one message, never
// the whole history. Returns the messages and the bytes spent in all.
func (s *Service) readHistory(ctx context.Context, conv *parley.Conversation, read parley.PageRequest, after *string, through, used int) ([]parley.Message, int, error) {
	var msgs []parley.Message
	page := parley.PageRequest{Branch: read.Branch, ForLLM: read.ForLLM, After: after}
	last := 0 // the position of the last message read
	for {
		first := pageSize
		if through > 0 {
			// Positions along a branch have no gaps: what is left up to through is known.
			if first = min(first, through-last); first <= 0 {
				break
			}
		}
		page.First = &first
		page.MaxBytes = max(s.maxBytes-used, 1) // 0 would be no bound
		p, err := s.messages.FindMessages(ctx, conv, page)
		if err != nil {
			return nil, 0, fmt.Errorf("read history of %s: %w", conv.ID, err)
		}
		if used += p.Bytes; used > s.maxBytes {
			return nil, 0, parley.Errorf(parley.ETRANSCRIPTTOOLARGE,
				"transcript: the history holds more than %d bytes of stored messages (--max-transcript-bytes), the most one transcript may read; nothing was exported. Read it in pages with messages, or ask the operator for a larger limit",
				s.maxBytes)
		}
		msgs = append(msgs, p.Messages...)
		if !p.HasNextPage || len(p.Messages) == 0 {
			break
		}
		last = p.Messages[len(p.Messages)-1].Meta().Position
		next := parley.MessageCursor(last)
		page.After = &next
	}
	return msgs, used, nil
}

// treeTranscript is the PARLEY_JSON export of a whole conversation: every branch of its
// tree, each message with its parent, and the active leaf, read page by page within the
// same limit as readHistory.
func (s *Service) treeTranscript(ctx context.Context, conv *parley.Conversation) (*parley.Transcript, error) {
	var msgs []parley.Message
	var leaf string
	used, after := 0, 0
	for {
		p, err := s.messages.FindTreeMessages(ctx, conv, after, pageSize, max(s.maxBytes-used, 1))
		if err != nil {
			return nil, fmt.Errorf("read the tree of %s: %w", conv.ID, err)
		}
		if used += p.Bytes; used > s.maxBytes {
			return nil, parley.Errorf(parley.ETRANSCRIPTTOOLARGE,
				"transcript: the history holds more than %d bytes of stored messages (--max-transcript-bytes), the most one transcript may read; nothing was exported. Read it in pages with messages, or ask the operator for a larger limit",
				s.maxBytes)
		}
		msgs, leaf = append(msgs, p.Messages...), p.ActiveLeafID
		if !p.HasNextPage || len(p.Messages) == 0 {
			break
		}
		after = p.Messages[len(p.Messages)-1].Meta().Seq
	}
	body, err := parleyjson.ExportTree(conv, msgs, leaf)
	if err != nil {
		return nil, err
	}
	return &parley.Transcript{Body: body, Report: parley.TranscriptReport{Format: parley.TranscriptParleyJSON,
		TokenCounting: TokenCounting, EstimatedTokens: estimateAll(msgs)}}, nil
}

func checkOptions(format parley.TranscriptFormat, opts parley.TranscriptOptions) error {
	if format.ForLLM() {
		switch {
		case opts.MaxTokens != nil && *opts.MaxTokens <= 0:
			return parley.Errorf(parley.EINVALID, "maxTokens: %d is not a budget; give a positive number", *opts.MaxTokens)
		case opts.CacheBreakpoints < 0 || opts.CacheBreakpoints > parley.MaxCacheBreakpoints:
			return parley.Errorf(parley.EINVALID, "cacheBreakpoints: %d is not between 0 and %d (Anthropic takes at most %d in a request)",
				opts.CacheBreakpoints, parley.MaxCacheBreakpoints, parley.MaxCacheBreakpoints)
		case opts.CacheBreakpoints > 0 && format != parley.TranscriptAnthropicMessages:
			return parley.Errorf(parley.EINVALID, "cacheBreakpoints: %s caches prefixes by itself; cacheBreakpoints applies to ANTHROPIC_MESSAGES", format)
		case opts.After != nil && *opts.After < 0:
			return parley.Errorf(parley.EINVALID, "after: %d is not a message position", *opts.After)
		}
		if opts.ForeignReasoning != "" && !slices.Contains(parley.ForeignReasonings, opts.ForeignReasoning) {
			return parley.Errorf(parley.EINVALID, "foreignReasoning: %q is not DROP or AS_TEXT", opts.ForeignReasoning)
		}
		if len(opts.Model) > maxModelBytes {
			return parley.Errorf(parley.EINVALID, "model: %d bytes, at most %d", len(opts.Model), maxModelBytes)
		}
		return nil
	}
	switch {
	case opts.System != "":
		return parley.Errorf(parley.EINVALID, "system: %s is not sent to an LLM; system applies to OPENAI_CHAT, OPENAI_RESPONSES and ANTHROPIC_MESSAGES", format)
	case opts.MaxTokens != nil:
		return parley.Errorf(parley.EINVALID, "maxTokens: %s is the whole history; maxTokens applies to OPENAI_CHAT, OPENAI_RESPONSES and ANTHROPIC_MESSAGES", format)
	case opts.Repair:
		return parley.Errorf(parley.EINVALID, "repair: %s keeps the history as it is; repair applies to OPENAI_CHAT, OPENAI_RESPONSES and ANTHROPIC_MESSAGES", format)
	case opts.Images != "":
		return parley.Errorf(parley.EINVALID, "images: %s keeps images as they are; images applies to OPENAI_CHAT, OPENAI_RESPONSES and ANTHROPIC_MESSAGES", format)
	case opts.Model != "":
		return parley.Errorf(parley.EINVALID, "model: %s is not sent to an LLM; model applies to OPENAI_CHAT, OPENAI_RESPONSES and ANTHROPIC_MESSAGES", format)
	case opts.CacheBreakpoints != 0:
		return parley.Errorf(parley.EINVALID, "cacheBreakpoints: %s is not sent to an LLM; cacheBreakpoints applies to ANTHROPIC_MESSAGES", format)
	case opts.After != nil:
		return parley.Errorf(parley.EINVALID, "after: %s is the whole history; after applies to OPENAI_CHAT, OPENAI_RESPONSES and ANTHROPIC_MESSAGES", format)
	case opts.ForeignReasoning != "":
		return parley.Errorf(parley.EINVALID, "foreignReasoning: %s keeps everything as stored; foreignReasoning applies to OPENAI_CHAT, OPENAI_RESPONSES and ANTHROPIC_MESSAGES", format)
	}
	return nil
}

// Build makes the transcript of a conversation's messages (all of them, in order),
// without a table of vision models.
func Build(conv *parley.Conversation, msgs []parley.Message, format parley.TranscriptFormat, opts parley.TranscriptOptions) (*parley.Transcript, error) {
	return build(conv, msgs, format, opts, nil)
}

func build(conv *parley.Conversation, msgs []parley.Message, format parley.TranscriptFormat, opts parley.TranscriptOptions, seesImages VisionLookup) (*parley.Transcript, error) {
	if err := checkOptions(format, opts); err != nil {
		return nil, err
	}
	t := &parley.Transcript{Report: parley.TranscriptReport{Format: format, TokenCounting: TokenCounting, MaxTokens: opts.MaxTokens}}
	var err error
	switch format {
	case parley.TranscriptParleyJSON:
		t.Body, err = parleyjson.Export(conv, msgs)
		t.Report.EstimatedTokens = estimateAll(msgs)
		return t, err
	case parley.TranscriptMarkdown:
		text := markdown.Export(conv, msgs)
		t.Body, err = json.Marshal(text)
		t.Report.EstimatedTokens = EstimateText(text)
		return t, err
	}
	kept, err := plan(msgs, format, opts, seesImages, &t.Report)
	if err != nil {
		return nil, err
	}
	kept = replay(kept, format, opts, &t.Report)
	system := opts.System
	if opts.After != nil {
		system = "" // the earlier export, which this one continues, carried it
	}
	var notes []string
	switch format {
	case parley.TranscriptOpenAIChat:
		t.Body, notes, err = openai.ExportChat(kept, system)
	case parley.TranscriptOpenAIResponses:
		t.Body, notes, err = openai.ExportResponses(kept, system)
	case parley.TranscriptAnthropicMessages:
		t.Body, notes, err = anthropic.ExportWith(kept, anthropic.Options{
			System: system, Continuation: opts.After != nil, CacheBreakpoints: opts.CacheBreakpoints})
	default:
		return nil, parley.Errorf(parley.EINVALID, "format: %q is not a transcript format", format)
	}
	if err != nil {
		return nil, err
	}
	t.Report.Notes = append(t.Report.Notes, notes...)
	return t, nil
}

func estimateAll(msgs []parley.Message) int {
	n := 0
	for _, m := range msgs {
		n += EstimateTokens(m)
	}
	return n
}
