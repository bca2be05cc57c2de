// Package parleyjson reads and writes Parley's own export: a conversation and every one
// of its messages, with every field, in a versioned JSON document that Parley imports
// back without loss.
//
// The document:
//
//	{"format": "parley.conversation", "version": 1, "tree": true,
//	 "conversation": {"id", "title", "createdAt", "updatedAt", "activeLeafId"},
//	 "messages": [{"type": "text", "id", "role", "position", "parentId", "hidden",
//	               "deletedAt", "createdAt", "updatedAt", "sourceId", ...the variant's fields}]}
//
// A conversation is a tree of messages. The export of a whole conversation ("tree":
// true) holds every branch, each message after its parent, which "parentId" names (a
// root has none), and the active branch's leaf; importing it rebuilds the same tree with
// that branch active. Without "tree" the messages are one line, each following the one
// before it: the export of one branch, or a document of an earlier Parley.
// "hidden" messages are never sent to an LLM; "deletedAt" marks a tombstone, whose
// content is erased.
//
// Each message has a "type" tag: text, image, file_reference, tool_request,
// tool_result, system_control, mcp_resource, compaction. Text is the author's, unescaped. A message
// with a type this version does not know is imported as an UnknownMessage keeping its
// JSON intact, and exported back as that JSON.
package parleyjson

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/parley-dev/parley"
	"github.com/parley-dev/parley/interop/internal/input"
	"github.com/parley-dev/parley/interop/internal/jsonerr"
)

// Format is the document's format tag; Version its version. A later version that
// changes the meaning of a field gets a new number, and Parse refuses numbers it does
// not know rather than misread them.
const (
	Format  = "parley.conversation"
	Version = 1
)

// MaxInputBytes bounds what Parse reads.
const MaxInputBytes = 256 << 20

type document struct {
	Format       string            `json:"format"`
	Version      int               `json:"version"`
	Tree         bool              `json:"tree,omitempty"`
	Conversation *conversation     `json:"conversation,omitempty"`
	Messages     []json.RawMessage `json:"messages"`
}

type conversation struct {
	ID        string    `json:"id,omitempty"`
	Title     string    `json:"title"`
	CreatedAt time.Time `json:"createdAt,omitzero"`
	UpdatedAt time.Time `json:"updatedAt,omitzero"`
	// ActiveLeafID is the active branch's leaf, in a tree export.
	ActiveLeafID string `json:"activeLeafId,omitempty"`
}

type part struct {
	Kind      parley.PartKind `json:"kind"`
	Text      string          `json:"text"`
	Signature string          `json:"signature,omitempty"`
	ItemID    string          `json:"itemId,omitempty"`
	Raw       parley.JSON     `json:"raw,omitempty"`
	Citations parley.JSON     `json:"citations,omitempty"`
}

type processingError struct {
	Message   string `json:"message"`
	Retryable bool   `json:"retryable"`
}

type recognition struct {
	Status         parley.ProcessingStatus `json:"status"`
	ModeUsed       *parley.RecognitionMode `json:"modeUsed,omitempty"`
	RecognizedText string                  `json:"recognizedText,omitempty"`
	VisionAnalysis string                  `json:"visionAnalysis,omitempty"`
	Confidence     *float64                `json:"confidence,omitempty"`
	Language       string                  `json:"language,omitempty"`
	Script         string                  `json:"script,omitempty"`
	Notice         string                  `json:"notice,omitempty"`
	Error          *processingError        `json:"error,omitempty"`
	ProcessedAt    time.Time               `json:"processedAt"`
}

type resolution struct {
	Status       parley.ProcessingStatus `json:"status"`
	Content      string                  `json:"content,omitempty"`
	Truncated    bool                    `json:"truncated,omitempty"`
	OriginalSize *int                    `json:"originalSize,omitempty"`
	Error        *processingError        `json:"error,omitempty"`
	ResolvedAt   time.Time               `json:"resolvedAt"`
}

type decision struct {
	Status    parley.ApprovalStatus `json:"status"`
	DecidedBy string                `json:"decidedBy,omitempty"`
	Reason    string                `json:"reason,omitempty"`
	DecidedAt time.Time             `json:"decidedAt"`
}

type toolCall struct {
	ID        string      `json:"id"`
	Name      string      `json:"name"`
	Arguments parley.JSON `json:"arguments"`
	// ArgumentsRaw is the arguments as the provider produced them, when known.
	ArgumentsRaw *string `json:"argumentsRaw,omitempty"`
	PartIndex    *int    `json:"partIndex,omitempty"`
	ItemID       string  `json:"itemId,omitempty"`
	// ThoughtSignature is Gemini's thought signature for the call, when it has one.
	ThoughtSignature string                `json:"thoughtSignature,omitempty"`
	ApprovalStatus   parley.ApprovalStatus `json:"approvalStatus"`
	Decision         *decision             `json:"decision,omitempty"`
}

type toolError struct {
	Message     string `json:"message"`
	StackTrace  string `json:"stackTrace,omitempty"`
	Recoverable bool   `json:"recoverable"`
}

type imageSource struct {
	Kind      parley.ImageSourceKind `json:"kind"`
	URL       string                 `json:"url,omitempty"`
	Base64    string                 `json:"base64,omitempty"`
	MediaType string                 `json:"mediaType,omitempty"`
	FilePath  string                 `json:"filePath,omitempty"`
}

// message is every field of every variant; "type" says which apply.
type message struct {
	Type      string      `json:"type"`
	ID        string      `json:"id,omitempty"`
	Role      parley.Role `json:"role"`
	Position  int         `json:"position,omitempty"`
	ParentID  string      `json:"parentId,omitempty"`
	Hidden    bool        `json:"hidden,omitempty"`
	DeletedAt *time.Time  `json:"deletedAt,omitempty"`
	CreatedAt time.Time   `json:"createdAt,omitzero"`
	UpdatedAt time.Time   `json:"updatedAt,omitzero"`
	SourceID  string      `json:"sourceId,omitempty"`

	Parts []part `json:"parts,omitempty"`

	Source          *imageSource           `json:"source,omitempty"`
	RecognitionMode parley.RecognitionMode `json:"recognitionMode,omitempty"`
	Recognition     *recognition           `json:"recognition,omitempty"`

	Path       string      `json:"path,omitempty"`
	StartLine  *int        `json:"startLine,omitempty"`
	EndLine    *int        `json:"endLine,omitempty"`
	Resolution *resolution `json:"resolution,omitempty"`

	ToolCalls []toolCall `json:"toolCalls,omitempty"`

	ToolCallID string                  `json:"toolCallId,omitempty"`
	ToolName   string                  `json:"toolName,omitempty"`
	Status     parley.ToolResultStatus `json:"status,omitempty"`
	Output     parley.JSON             `json:"output,omitempty"`
	// OutputRaw is the output as it was given, when known: Output's bytes exactly.
	OutputRaw    *string    `json:"outputRaw,omitempty"`
	Error        *toolError `json:"error,omitempty"`
	DurationMs   *int       `json:"durationMs,omitempty"`
	ExecutedAt   *time.Time `json:"executedAt,omitempty"`
	Truncated    bool       `json:"truncated,omitempty"`
	OriginalSize *int       `json:"originalSize,omitempty"`

	Kind   parley.ControlKind `json:"kind,omitempty"`
	From   string             `json:"from,omitempty"`
	To     string             `json:"to,omitempty"`
	Params parley.JSON        `json:"params,omitempty"`

	ServerName  string    `json:"serverName,omitempty"`
	ResourceURI string    `json:"resourceUri,omitempty"`
	MimeType    string    `json:"mimeType,omitempty"`
	RetrievedAt time.Time `json:"retrievedAt,omitzero"`

	// A compaction's: coversThrough only when it is not "every message before it".
	Provider      string      `json:"provider,omitempty"`
	ProviderData  parley.JSON `json:"providerData,omitempty"`
	CoversThrough int         `json:"coversThrough,omitempty"`
}

// Export writes a conversation and its messages, in order, as the document: one line of
// messages (a branch).
func Export(conv *parley.Conversation, msgs []parley.Message) (parley.JSON, error) {
	return export(conv, msgs, false, "")
}

// ExportTree writes a conversation and the messages of every branch of its tree, each
// after its parent (its Tree's ParentID), and its active leaf.
func ExportTree(conv *parley.Conversation, msgs []parley.Message, activeLeaf string) (parley.JSON, error) {
	return export(conv, msgs, true, activeLeaf)
}

func export(conv *parley.Conversation, msgs []parley.Message, tree bool, activeLeaf string) (parley.JSON, error) {
	doc := document{Format: Format, Version: Version, Tree: tree, Messages: make([]json.RawMessage, 0, len(msgs))}
	if conv != nil {
		doc.Conversation = &conversation{ID: conv.ID, Title: conv.Title, CreatedAt: conv.CreatedAt, UpdatedAt: conv.UpdatedAt, ActiveLeafID: activeLeaf}
	}
	// A message's id in the document: its id, or an unknown message's own (its JSON
	// is given back as it came), which its children's parentId names.
	docIDs := make(map[string]string)
	for _, m := range msgs {
		if tree {
			if u, ok := m.(*parley.UnknownMessage); ok {
				raw, id, err := encodeUnknownInTree(u, docIDs)
				if err != nil {
					return nil, err
				}
				docIDs[u.ID] = id
				doc.Messages = append(doc.Messages, raw)
				continue
			}
			if t := m.Meta().Tree; t != nil && t.ParentID != "" {
				if id, ok := docIDs[t.ParentID]; ok {
					t.ParentID = id
				}
			}
			docIDs[m.Meta().ID] = m.Meta().ID
		}
		raw, err := encode(m, tree)
		if err != nil {
			return nil, err
		}
		doc.Messages = append(doc.Messages, raw)
	}
	out, err := json.Marshal(doc)
	if err != nil {
		return nil, fmt.Errorf("encode parley export: %w", err)
	}
	return out, nil
}

func encodeParts(b parley.Body) []part {
	out := make([]part, len(b.Parts))
	for i, p := range b.Parts {
		out[i] = part{Kind: p.Kind, Text: p.Text, Signature: p.Signature, ItemID: p.ItemID, Raw: p.Raw, Citations: p.Citations}
	}
	return out
}

func encodeError(e *parley.ProcessingError) *processingError {
	if e == nil {
		return nil
	}
	return &processingError{Message: e.Message, Retryable: e.Retryable}
}

func encode(m parley.Message, tree bool) (json.RawMessage, error) {
	meta := m.Meta()
	out := message{
		Type: string(m.Kind()), ID: meta.ID, Role: meta.Role, Position: meta.Position,
		Hidden: meta.Hidden, DeletedAt: meta.DeletedAt,
		CreatedAt: meta.CreatedAt, UpdatedAt: meta.UpdatedAt, SourceID: meta.SourceID,
	}
	if tree && meta.Tree != nil {
		out.ParentID = meta.Tree.ParentID
	}
	switch m := m.(type) {
	case *parley.TextMessage:
		out.Parts = encodeParts(m.Body)
	case *parley.ImageMessage:
		out.Source = &imageSource{Kind: m.Source.Kind, URL: m.Source.URL, Base64: m.Source.Data, MediaType: m.Source.MediaType, FilePath: m.Source.FilePath}
		out.RecognitionMode = m.RecognitionMode
		if r := m.Recognition; r != nil {
			out.Recognition = &recognition{Status: r.Status, ModeUsed: r.ModeUsed, RecognizedText: r.RecognizedText,
				VisionAnalysis: r.VisionAnalysis, Confidence: r.Confidence, Language: r.Language, Script: r.Script,
				Notice: r.Notice, Error: encodeError(r.Error), ProcessedAt: r.ProcessedAt}
		}
	case *parley.FileReferenceMessage:
		out.Path, out.StartLine, out.EndLine = m.Path, m.StartLine, m.EndLine
		if r := m.Resolution; r != nil {
			out.Resolution = &resolution{Status: r.Status, Content: r.Content, Truncated: r.Truncated,
				OriginalSize: r.OriginalSize, Error: encodeError(r.Error), ResolvedAt: r.ResolvedAt}
		}
	case *parley.ToolRequestMessage:
		out.Parts = encodeParts(m.Body)
		out.ToolCalls = make([]toolCall, len(m.ToolCalls))
		for i, c := range m.ToolCalls {
			out.ToolCalls[i] = toolCall{ID: c.ID, Name: c.Name, Arguments: c.Arguments, ArgumentsRaw: c.ArgumentsRaw, PartIndex: c.PartIndex, ItemID: c.ItemID, ThoughtSignature: c.ThoughtSignature, ApprovalStatus: c.ApprovalStatus}
			if d := c.Decision; d != nil {
				out.ToolCalls[i].Decision = &decision{Status: d.Status, DecidedBy: d.DecidedBy, Reason: d.Reason, DecidedAt: d.DecidedAt}
			}
		}
	case *parley.ToolResultMessage:
		out.Parts = encodeParts(m.Body)
		out.ToolCallID, out.ToolName, out.Status, out.Output, out.OutputRaw = m.ToolCallID, m.ToolName, m.Status, m.Output, m.OutputRaw
		out.DurationMs, out.ExecutedAt, out.Truncated, out.OriginalSize = m.DurationMs, m.ExecutedAt, m.Truncated, m.OriginalSize
		if e := m.Error; e != nil {
			out.Error = &toolError{Message: e.Message, StackTrace: e.StackTrace, Recoverable: e.Recoverable}
		}
	case *parley.SystemControlMessage:
		out.Kind, out.From, out.To, out.Params = m.ControlKind, m.From, m.To, m.Params
	case *parley.MCPResourceMessage:
		out.Parts = encodeParts(m.Body)
		out.ServerName, out.ResourceURI, out.MimeType = m.ServerName, m.ResourceURI, m.MimeType
		out.RetrievedAt, out.Truncated = m.RetrievedAt, m.Truncated
	case *parley.CompactionMessage:
		out.Parts = encodeParts(m.Body)
		out.Provider, out.ProviderData, out.CoversThrough = m.Provider, m.Data, m.CoversThrough
	case *parley.UnknownMessage:
		return encodeUnknown(m)
	default:
		return nil, fmt.Errorf("parleyjson: cannot export a %T", m)
	}
	raw, err := json.Marshal(out)
	if err != nil {
		return nil, fmt.Errorf("encode message %s: %w", meta.ID, err)
	}
	return raw, nil
}

// encodeUnknown gives back an unknown message's JSON as it was imported, with its
// type tag; a message stored some other way gets the common fields and its raw JSON.
func encodeUnknown(m *parley.UnknownMessage) (json.RawMessage, error) {
	var obj map[string]json.RawMessage
	if json.Unmarshal(m.Raw, &obj) == nil && obj != nil {
		var tag string
		if json.Unmarshal(obj["type"], &tag) == nil && tag == m.TypeTag {
			return json.RawMessage(m.Raw), nil
		}
	}
	return json.Marshal(struct {
		Type string      `json:"type"`
		ID   string      `json:"id,omitempty"`
		Role parley.Role `json:"role"`
		Raw  parley.JSON `json:"raw"`
	}{m.TypeTag, m.ID, m.Role, m.Raw})
}

// encodeUnknownInTree is encodeUnknown with the message's place: its parentId set (or
// removed, for a root) and its id kept, or set when it has none; it returns the JSON and
// the id.
func encodeUnknownInTree(m *parley.UnknownMessage, docIDs map[string]string) (json.RawMessage, string, error) {
	raw, err := encodeUnknown(m)
	if err != nil {
		return nil, "", err
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(raw, &obj); err != nil || obj == nil {
		return nil, "", fmt.Errorf("encode unknown message %s: not an object", m.ID)
	}
	id := m.ID
	if json.Unmarshal(obj["id"], &id) != nil || id == "" {
		id = m.ID
		obj["id"], _ = json.Marshal(id)
	}
	delete(obj, "parentId")
	if t := m.Tree; t != nil && t.ParentID != "" {
		parent := t.ParentID
		if d, ok := docIDs[parent]; ok {
			parent = d
		}
		obj["parentId"], _ = json.Marshal(parent)
	}
	out, err := json.Marshal(obj)
	return out, id, err
}

// MarshalJSON writes the role in the API's spelling, as the GraphQL API does.
func (m message) MarshalJSON() ([]byte, error) {
	type plain message
	return json.Marshal(struct {
		plain
		Role string `json:"role"`
	}{plain(m), m.Role.String()})
}

// Parse reads the document. Messages are imported in order, after whatever the target
// conversation has; each keeps its source id, or takes the exported message's id as
// one, so that importing the same export twice adds nothing. Errors are EINVALID and
// name the message (messages[3].toolCalls[0].id) and what is wrong.
func Parse(r io.Reader) (*parley.Import, error) {
	raw, err := input.Read(r, MaxInputBytes)
	if err != nil {
		return nil, err
	}
	t := bytes.TrimSpace(raw)
	if len(t) == 0 || !json.Valid(t) {
		return nil, parley.Errorf(parley.EINVALID, "input: not valid JSON (%s)", jsonerr.SyntaxProblem(t, "input"))
	}
	if t[0] != '{' {
		return nil, parley.Errorf(parley.EINVALID, "input: want a %s document (an object), got %s", Format, jsonerr.Kind(t))
	}
	var doc document
	if err := json.Unmarshal(t, &doc); err != nil {
		return nil, parley.Errorf(parley.EINVALID, "input%s", fieldProblem(err))
	}
	switch {
	case doc.Format != Format:
		return nil, parley.Errorf(parley.EINVALID, "format: %q is not %q; is this a Parley export?", jsonerr.Truncate(doc.Format), Format)
	case doc.Version < 1:
		return nil, parley.Errorf(parley.EINVALID, "version: missing or not a version number")
	case doc.Version > Version:
		return nil, parley.Errorf(parley.EINVALID, "version: %d is newer than this Parley reads (%d); upgrade Parley", doc.Version, Version)
	}
	imp := &parley.Import{}
	if doc.Conversation != nil {
		imp.Title = doc.Conversation.Title
	}
	// In a tree, each message names its parent by its id in the document: the parent's
	// source id here is its sourceId, or that id.
	sources := make(map[string]string)
	for i, rawMsg := range doc.Messages {
		where := fmt.Sprintf("messages[%d]", i)
		m, err := decode(where, rawMsg, imp)
		if err != nil {
			return nil, err
		}
		im := parley.ImportedMessage{Message: m, Origin: where}
		if doc.Tree {
			var link struct {
				ID       string `json:"id"`
				ParentID string `json:"parentId"`
			}
			if err := json.Unmarshal(rawMsg, &link); err != nil {
				return nil, parley.Errorf(parley.EINVALID, "%s%s", where, fieldProblem(err))
			}
			if link.ParentID == "" {
				im.Root = true
			} else if im.Parent = sources[link.ParentID]; im.Parent == "" {
				return nil, parley.Errorf(parley.EINVALID, "%s.parentId: %q is not the id of an earlier message; a parent comes before its children",
					where, jsonerr.Truncate(link.ParentID))
			}
			if link.ID != "" {
				sources[link.ID] = m.Meta().SourceID
			}
		}
		imp.Messages = append(imp.Messages, im)
	}
	if doc.Tree && doc.Conversation != nil && doc.Conversation.ActiveLeafID != "" {
		if imp.Leaf = sources[doc.Conversation.ActiveLeafID]; imp.Leaf == "" {
			return nil, parley.Errorf(parley.EINVALID, "conversation.activeLeafId: %q is not the id of a message of the document",
				jsonerr.Truncate(doc.Conversation.ActiveLeafID))
		}
	}
	return imp, nil
}

var known = map[string]bool{
	string(parley.KindText): true, string(parley.KindImage): true, string(parley.KindFileReference): true,
	string(parley.KindToolRequest): true, string(parley.KindToolResult): true,
	string(parley.KindSystemControl): true, string(parley.KindMCPResource): true, string(parley.KindCompaction): true,
}

func decode(where string, raw json.RawMessage, imp *parley.Import) (parley.Message, error) {
	if t := bytes.TrimSpace(raw); len(t) == 0 || t[0] != '{' {
		return nil, parley.Errorf(parley.EINVALID, "%s: want a message object, got %s", where, jsonerr.Kind(raw))
	}
	var head struct {
		Type     string `json:"type"`
		ID       string `json:"id"`
		Role     string `json:"role"`
		SourceID string `json:"sourceId"`
	}
	if err := json.Unmarshal(raw, &head); err != nil {
		return nil, parley.Errorf(parley.EINVALID, "%s%s", where, fieldProblem(err))
	}
	if head.Type == "" {
		return nil, parley.Errorf(parley.EINVALID, "%s.type: every message needs a type tag", where)
	}
	sourceID := head.SourceID
	if sourceID == "" {
		sourceID = head.ID
	}
	if !known[head.Type] {
		// Seed 003: an unknown type never fails; it is kept intact, and said.
		role, err := parley.ParseRole(head.Role)
		if err != nil {
			role = parley.RoleUser
			imp.Warn("%s: unknown type %q with role %q kept as an UnknownMessage of role USER", where, jsonerr.Truncate(head.Type), jsonerr.Truncate(head.Role))
		} else {
			imp.Warn("%s: unknown type %q kept as an UnknownMessage, its JSON intact", where, jsonerr.Truncate(head.Type))
		}
		var compact bytes.Buffer
		if err := json.Compact(&compact, raw); err != nil {
			return nil, parley.Errorf(parley.EINVALID, "%s: not valid JSON", where)
		}
		return &parley.UnknownMessage{
			MessageMeta: parley.MessageMeta{Role: role, SourceID: sourceID},
			TypeTag:     head.Type, Raw: parley.JSON(compact.Bytes()),
		}, nil
	}
	var in struct {
		message
		Role string `json:"role"`
	}
	if err := json.Unmarshal(raw, &in); err != nil {
		return nil, parley.Errorf(parley.EINVALID, "%s%s", where, fieldProblem(err))
	}
	meta := parley.MessageMeta{CreatedAt: in.CreatedAt, SourceID: sourceID, Hidden: in.Hidden, DeletedAt: in.DeletedAt}
	if in.Role != "" {
		role, err := parley.ParseRole(in.Role)
		if err != nil {
			return nil, parley.Errorf(parley.EINVALID, "%s.role: %s", where, parley.ErrorMessage(err))
		}
		meta.Role = role
	}
	body := parley.Body{Parts: make([]parley.Part, len(in.Parts))}
	for i, p := range in.Parts {
		body.Parts[i] = parley.Part{Kind: p.Kind, Text: p.Text, Signature: p.Signature, ItemID: p.ItemID, Raw: p.Raw, Citations: p.Citations}
	}
	switch parley.MessageKind(in.Type) {
	case parley.KindText:
		return &parley.TextMessage{MessageMeta: meta, Body: body}, nil
	case parley.KindImage:
		m := &parley.ImageMessage{MessageMeta: meta, RecognitionMode: in.RecognitionMode}
		if s := in.Source; s != nil {
			m.Source = parley.ImageSource{Kind: s.Kind, URL: s.URL, Data: s.Base64, MediaType: s.MediaType, FilePath: s.FilePath}
		}
		if r := in.Recognition; r != nil {
			m.Recognition = &parley.ImageRecognition{Status: r.Status, ModeUsed: r.ModeUsed, RecognizedText: r.RecognizedText,
				VisionAnalysis: r.VisionAnalysis, Confidence: r.Confidence, Language: r.Language, Script: r.Script,
				Notice: r.Notice, Error: decodeError(r.Error), ProcessedAt: r.ProcessedAt}
		}
		return m, nil
	case parley.KindFileReference:
		m := &parley.FileReferenceMessage{MessageMeta: meta, Path: in.Path, StartLine: in.StartLine, EndLine: in.EndLine}
		if r := in.Resolution; r != nil {
			m.Resolution = &parley.FileResolution{Status: r.Status, Content: r.Content, Truncated: r.Truncated,
				OriginalSize: r.OriginalSize, Error: decodeError(r.Error), ResolvedAt: r.ResolvedAt}
		}
		return m, nil
	case parley.KindToolRequest:
		m := &parley.ToolRequestMessage{MessageMeta: meta, Body: body, ToolCalls: make([]parley.ToolCall, len(in.ToolCalls))}
		for i, c := range in.ToolCalls {
			m.ToolCalls[i] = parley.ToolCall{ID: c.ID, Name: c.Name, Arguments: c.Arguments, PartIndex: c.PartIndex, ItemID: c.ItemID, ThoughtSignature: c.ThoughtSignature, ApprovalStatus: c.ApprovalStatus}
			if c.ArgumentsRaw != nil {
				// The raw form is the record; Prepare derives the parsed one from it.
				m.ToolCalls[i].ArgumentsRaw, m.ToolCalls[i].Arguments = c.ArgumentsRaw, nil
			}
			if d := c.Decision; d != nil {
				m.ToolCalls[i].Decision = &parley.ApprovalDecision{Status: d.Status, DecidedBy: d.DecidedBy, Reason: d.Reason, DecidedAt: d.DecidedAt}
			}
		}
		return m, nil
	case parley.KindToolResult:
		m := &parley.ToolResultMessage{MessageMeta: meta, Body: body, ToolCallID: in.ToolCallID, ToolName: in.ToolName,
			Status: in.Status, Output: in.Output, DurationMs: in.DurationMs, ExecutedAt: in.ExecutedAt}
		if in.Output.IsNull() {
			m.Output = nil
		}
		if in.OutputRaw != nil {
			m.OutputRaw, m.Output = in.OutputRaw, nil // Prepare parses it again
		}
		if e := in.Error; e != nil {
			m.Error = &parley.ToolErrorDetail{Message: e.Message, StackTrace: e.StackTrace, Recoverable: e.Recoverable}
		}
		if in.Truncated {
			// Already cut by the exporting Parley: keep saying so.
			m.Truncated, m.OriginalSize = true, in.OriginalSize
		}
		return m, nil
	case parley.KindSystemControl:
		m := &parley.SystemControlMessage{MessageMeta: meta, ControlKind: in.Kind, From: in.From, To: in.To, Params: in.Params}
		if in.Params.IsNull() {
			m.Params = nil
		}
		return m, nil
	case parley.KindMCPResource:
		return &parley.MCPResourceMessage{MessageMeta: meta, Body: body, ServerName: in.ServerName,
			ResourceURI: in.ResourceURI, MimeType: in.MimeType, RetrievedAt: in.RetrievedAt, Truncated: in.Truncated}, nil
	case parley.KindCompaction:
		return &parley.CompactionMessage{MessageMeta: meta, Body: body, Provider: in.Provider,
			Data: in.ProviderData, CoversThrough: in.CoversThrough}, nil
	}
	return nil, fmt.Errorf("parleyjson: type %q is known but not decoded", in.Type)
}

func decodeError(e *processingError) *parley.ProcessingError {
	if e == nil {
		return nil
	}
	return &parley.ProcessingError{Message: e.Message, Retryable: e.Retryable}
}

func fieldProblem(err error) string {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		te.Field = strings.TrimPrefix(te.Field, "message.") // the embedded struct's name
		if te.Field == "" {
			return fmt.Sprintf(": want %s, got %s", jsonerr.GoKind(te.Type.Kind().String(), "an object"), te.Value)
		}
		return fmt.Sprintf(".%s: want %s, got %s", te.Field, jsonerr.GoKind(te.Type.Kind().String(), "an object"), te.Value)
	}
	var pe *time.ParseError
	if errors.As(err, &pe) {
		return fmt.Sprintf(": %q is not an RFC 3339 time", jsonerr.Truncate(pe.Value))
	}
	return ": " + err.Error()
}
