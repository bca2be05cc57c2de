package db

import (
	"bytes"
	"database/sql"
	"encoding/json"
	"fmt"
	"log/slog"
	"time"

	gojson "github.com/goccy/go-json"

	"github.com/parley-dev/parley"
)

// unmarshal decodes the payloads of the rows read. It is most of a history read's
// database side and of a transcript's. goccy/go-json is a drop-in encoding/json; it
// decodes them in about 55% of the CPU segmentio's encoding/json took (which replaced
// the standard library, 2.5 times slower, before: bench/report.md), most of the
// difference in unquoting long strings, which segmentio re-encodes rune by rune
// (BenchmarkDecodeExportRows: a tool result's 2 kB of test output). Encoding stays
// with encoding/json.
var unmarshal = gojson.Unmarshal

// messageRow is a row of the messages table.
type messageRow struct {
	ID             string         `db:"id"`
	ConversationID string         `db:"conversation_id"`
	Position       int            `db:"position"`
	SchemaVersion  int            `db:"schema_version"`
	Kind           sql.NullString `db:"kind"`
	Role           string         `db:"role"`
	Content        string         `db:"content"`
	ToolCalls      []byte         `db:"tool_calls"`
	ToolResults    []byte         `db:"tool_results"`
	Payload        []byte         `db:"payload"`
	SourceID       sql.NullString `db:"source_id"`
	CreatedAt      time.Time      `db:"created_at"`
	UpdatedAt      time.Time      `db:"updated_at"`
	// The live columns: status, why it ended, the client's id, provenance (jsonb) and
	// the last acknowledged append.
	Status       string         `db:"status"`
	StatusReason sql.NullString `db:"status_reason"`
	ClientID     sql.NullString `db:"client_message_id"`
	Provenance   []byte         `db:"provenance"`
	StreamSeq    int            `db:"stream_seq"`
	// Where it is in the tree: its segment, and its depth (the API's position).
	Segment int `db:"segment"`
	Depth   int `db:"depth"`
	// Hidden from LLMs; deleted (a tombstone) when DeletedAt is set.
	Hidden    bool         `db:"hidden"`
	DeletedAt sql.NullTime `db:"deleted_at"`
	// Parent is the message's parent, when the statement reads it (conversationPageSQL).
	Parent sql.NullString `db:"-"`
	// Bytes is what the stored message takes as read (body_bytes), when the statement
	// reads it (pageColumns).
	Bytes int `db:"-"`
}

// messageColumns lists messageRow's columns, for SELECT and RETURNING.
const messageColumns = `id, conversation_id, position, schema_version, kind, role, content,
	tool_calls, tool_results, payload, source_id, created_at, updated_at,
	status, status_reason, client_message_id, provenance, stream_seq, segment, depth, hidden, deleted_at`

// scanMessages scans the rows of a query selecting messageColumns (its results, as
// QueryContext returns them, and how many rows to expect) without sqlx's reflection: a
// page of history is read often enough for that to show.
func scanMessages(rows *sql.Rows, err error, expect int) ([]messageRow, error) {
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := make([]messageRow, 0, expect)
	for rows.Next() {
		out = append(out, messageRow{})
		r := &out[len(out)-1]
		if err := rows.Scan(&r.ID, &r.ConversationID, &r.Position, &r.SchemaVersion, &r.Kind, &r.Role, &r.Content,
			&r.ToolCalls, &r.ToolResults, &r.Payload, &r.SourceID, &r.CreatedAt, &r.UpdatedAt,
			&r.Status, &r.StatusReason, &r.ClientID, &r.Provenance, &r.StreamSeq, &r.Segment, &r.Depth, &r.Hidden, &r.DeletedAt); err != nil {
			return nil, err
		}
	}
	return out, rows.Err()
}

// schemaVersion is the payload version this code writes.
const schemaVersion = 2

// The payload shapes of version 2. Free text is kept HTML-escaped at rest (seed 001).
type (
	partJSON struct {
		Kind      parley.PartKind `json:"kind"`
		Content   string          `json:"content"`
		Signature string          `json:"signature,omitempty"`
		ItemID    string          `json:"itemId,omitempty"`
		Raw       parley.JSON     `json:"raw,omitempty"`
		Citations parley.JSON     `json:"citations,omitempty"`
	}
	bodyPayload struct {
		Parts []partJSON `json:"parts,omitempty"`
	}
	imagePayload struct {
		Source struct {
			Kind      parley.ImageSourceKind `json:"kind"`
			URL       string                 `json:"url,omitempty"`
			Data      string                 `json:"data,omitempty"`
			MediaType string                 `json:"mediaType,omitempty"`
			FilePath  string                 `json:"filePath,omitempty"`
		} `json:"source"`
		RecognitionMode parley.RecognitionMode   `json:"recognitionMode"`
		Recognition     *parley.ImageRecognition `json:"recognition,omitempty"`
	}
	filePayload struct {
		Path       string                 `json:"path"`
		StartLine  *int                   `json:"startLine,omitempty"`
		EndLine    *int                   `json:"endLine,omitempty"`
		Resolution *parley.FileResolution `json:"resolution,omitempty"`
	}
	decisionJSON struct {
		Status    parley.ApprovalStatus `json:"status"`
		DecidedBy string                `json:"decidedBy,omitempty"`
		Reason    string                `json:"reason,omitempty"`
		DecidedAt time.Time             `json:"decidedAt"`
	}
	toolCallJSON struct {
		ID        string      `json:"id"`
		Name      string      `json:"name"`
		Arguments parley.JSON `json:"arguments"`
		// ArgumentsRaw keeps the arguments as produced: a jsonb string keeps every byte
		// that the jsonb object beside it normalizes (key order, spacing, numbers).
		ArgumentsRaw     *string               `json:"argumentsRaw,omitempty"`
		ArgumentsInvalid bool                  `json:"argumentsInvalid,omitempty"`
		PartIndex        *int                  `json:"partIndex,omitempty"`
		ItemID           string                `json:"itemId,omitempty"`
		ThoughtSignature string                `json:"thoughtSignature,omitempty"`
		ApprovalStatus   parley.ApprovalStatus `json:"approvalStatus"`
		Decision         *decisionJSON         `json:"decision,omitempty"`
		Imported         bool                  `json:"imported,omitempty"`
	}
	toolErrorJSON struct {
		Message     string `json:"message"`
		StackTrace  string `json:"stackTrace,omitempty"`
		Recoverable bool   `json:"recoverable"`
	}
	toolResultJSON struct {
		ToolCallID string                  `json:"toolCallId"`
		ToolName   string                  `json:"toolName,omitempty"`
		Status     parley.ToolResultStatus `json:"status"`
		Output     parley.JSON             `json:"output,omitempty"`
		// OutputRaw keeps the output as given, which the jsonb output beside it normalizes.
		OutputRaw    *string        `json:"outputRaw,omitempty"`
		Error        *toolErrorJSON `json:"error,omitempty"`
		DurationMs   *int           `json:"durationMs,omitempty"`
		ExecutedAt   *time.Time     `json:"executedAt,omitempty"`
		Truncated    bool           `json:"truncated,omitempty"`
		OriginalSize *int           `json:"originalSize,omitempty"`
	}
	controlPayload struct {
		Kind   parley.ControlKind `json:"kind"`
		From   string             `json:"from,omitempty"`
		To     string             `json:"to,omitempty"`
		Params parley.JSON        `json:"params,omitempty"`
	}
	compactionPayload struct {
		bodyPayload
		Provider string `json:"provider,omitempty"`
		// Data is the provider's JSON as a string: jsonb would reorder its keys, and it
		// goes back to the provider byte for byte.
		Data          string `json:"data,omitempty"`
		CoversThrough int    `json:"coversThrough,omitempty"`
	}
	mcpPayload struct {
		bodyPayload
		ServerName  string    `json:"serverName"`
		ResourceURI string    `json:"resourceUri"`
		MimeType    string    `json:"mimeType,omitempty"`
		RetrievedAt time.Time `json:"retrievedAt"`
		Truncated   bool      `json:"truncated,omitempty"`
	}
)

// bodyCap is about how many bytes b's payload takes: what to make room for.
func bodyCap(b parley.Body) int {
	n := 16
	for _, p := range b.Parts {
		n += len(p.Text) + len(p.Signature) + 32
	}
	return n + n/8
}

func encodeBody(b parley.Body) bodyPayload {
	p := bodyPayload{Parts: make([]partJSON, len(b.Parts))}
	for i, part := range b.Parts {
		p.Parts[i] = partJSON{Kind: part.Kind, Content: parley.EscapeHTML(part.Text), Signature: part.Signature, ItemID: part.ItemID,
			Raw: part.Raw, Citations: part.Citations}
	}
	return p
}

func decodeBody(p bodyPayload) parley.Body {
	return decodeBodyInto(p, make([]parley.Part, len(p.Parts)))
}

// decodeBodyInto is decodeBody into parts, of len(p.Parts).
func decodeBodyInto(p bodyPayload, parts []parley.Part) parley.Body {
	b := parley.Body{Parts: parts}
	for i, part := range p.Parts {
		b.Parts[i] = parley.Part{Kind: part.Kind, Text: parley.UnescapeHTML(part.Content), Signature: part.Signature, ItemID: part.ItemID,
			Raw: part.Raw, Citations: part.Citations}
	}
	return b
}

func encodeToolCalls(calls []parley.ToolCall) []toolCallJSON {
	out := make([]toolCallJSON, len(calls))
	for i, c := range calls {
		out[i] = toolCallJSON{ID: c.ID, Name: c.Name, Arguments: c.Arguments, ArgumentsRaw: c.ArgumentsRaw,
			ArgumentsInvalid: c.ArgumentsInvalid, ItemID: c.ItemID, ThoughtSignature: c.ThoughtSignature, PartIndex: c.PartIndex, ApprovalStatus: c.ApprovalStatus, Imported: c.Imported}
		if d := c.Decision; d != nil {
			out[i].Decision = &decisionJSON{Status: d.Status, DecidedBy: d.DecidedBy, Reason: d.Reason, DecidedAt: d.DecidedAt}
		}
	}
	return out
}

// decodeToolCalls decodes calls into out, of len(calls).
func decodeToolCalls(calls []toolCallJSON, out []parley.ToolCall) []parley.ToolCall {
	for i, c := range calls {
		out[i] = parley.ToolCall{ID: c.ID, Name: c.Name, Arguments: c.Arguments, ArgumentsRaw: c.ArgumentsRaw,
			ArgumentsInvalid: c.ArgumentsInvalid, ItemID: c.ItemID, ThoughtSignature: c.ThoughtSignature, PartIndex: c.PartIndex, ApprovalStatus: c.ApprovalStatus, Imported: c.Imported}
		if c.ArgumentsRaw != nil && !c.ArgumentsInvalid {
			out[i].Arguments = parley.JSON(*c.ArgumentsRaw) // as produced, not as jsonb reordered it
		}
		if d := c.Decision; d != nil {
			out[i].Decision = &parley.ApprovalDecision{Status: d.Status, DecidedBy: d.DecidedBy, Reason: d.Reason, DecidedAt: d.DecidedAt}
		}
	}
	return out
}

// encodeMessage turns a prepared message into the columns of a version 2 row. The
// meta fields (id, position, times) are the store's to set.
func encodeMessage(m parley.Message) (messageRow, error) {
	meta := m.Meta()
	row := messageRow{
		SchemaVersion: schemaVersion,
		Kind:          sql.NullString{String: string(m.Kind()), Valid: true},
		Role:          string(meta.Role),
		SourceID:      sql.NullString{String: meta.SourceID, Valid: meta.SourceID != ""},
	}
	var payload any
	var body *parley.Body // a payload that is the body alone: written by appendBodyPayload where it can
	switch m := m.(type) {
	case *parley.TextMessage:
		row.Content, body = m.Content(), &m.Body
	case *parley.ImageMessage:
		p := imagePayload{RecognitionMode: m.RecognitionMode, Recognition: m.Recognition}
		p.Source.Kind, p.Source.URL, p.Source.Data = m.Source.Kind, m.Source.URL, m.Source.Data
		p.Source.MediaType, p.Source.FilePath = m.Source.MediaType, m.Source.FilePath
		payload = p
	case *parley.FileReferenceMessage:
		payload = filePayload{Path: m.Path, StartLine: m.StartLine, EndLine: m.EndLine, Resolution: m.Resolution}
	case *parley.ToolRequestMessage:
		row.Content = m.Content()
		calls, ok := appendToolCalls(make([]byte, 0, 256*len(m.ToolCalls)), m.ToolCalls)
		if !ok {
			var err error
			if calls, err = json.Marshal(encodeToolCalls(m.ToolCalls)); err != nil {
				return row, fmt.Errorf("encode tool calls: %w", err)
			}
		}
		row.ToolCalls, body = calls, &m.Body
	case *parley.ToolResultMessage:
		row.Content = m.Content()
		r := toolResultJSON{
			ToolCallID: m.ToolCallID, ToolName: m.ToolName, Status: m.Status, Output: m.Output, OutputRaw: m.OutputRaw,
			DurationMs: m.DurationMs, ExecutedAt: m.ExecutedAt, Truncated: m.Truncated, OriginalSize: m.OriginalSize,
		}
		if e := m.Error; e != nil {
			r.Error = &toolErrorJSON{Message: e.Message, StackTrace: e.StackTrace, Recoverable: e.Recoverable}
		}
		results, ok := appendToolResults(make([]byte, 0, 128), &r)
		if !ok {
			var err error
			if results, err = json.Marshal([]toolResultJSON{r}); err != nil {
				return row, fmt.Errorf("encode tool result: %w", err)
			}
		}
		row.ToolResults, body = results, &m.Body
	case *parley.SystemControlMessage:
		payload = controlPayload{Kind: m.ControlKind, From: m.From, To: m.To, Params: m.Params}
	case *parley.MCPResourceMessage:
		payload = mcpPayload{
			bodyPayload: encodeBody(m.Body), ServerName: m.ServerName, ResourceURI: m.ResourceURI,
			MimeType: m.MimeType, RetrievedAt: m.RetrievedAt, Truncated: m.Truncated,
		}
		row.Content = m.Content()
	case *parley.CompactionMessage:
		payload = compactionPayload{bodyPayload: encodeBody(m.Body), Provider: m.Provider, Data: string(m.Data),
			CoversThrough: m.CoversThrough}
		row.Content = m.Content()
	case *parley.UnknownMessage:
		row.Payload = m.Raw
		return row, nil
	default:
		return row, fmt.Errorf("encode message: unsupported type %T", m)
	}
	if body != nil {
		if p, ok := appendBodyPayload(make([]byte, 0, bodyCap(*body)), *body); ok {
			row.Payload = p
			return row, nil
		}
		payload = encodeBody(*body)
	}
	var err error
	if row.Payload, err = json.Marshal(payload); err != nil {
		return row, fmt.Errorf("encode %s payload: %w", m.Kind(), err)
	}
	return row, nil
}

// decodeMessage turns a row of any schema version into its variant.
func decodeMessage(row *messageRow, log *slog.Logger) (parley.Message, error) {
	var d rowDecoder
	return d.decode(row, log)
}

// rowDecoder decodes the rows of one read (a page) one after the other, reusing the
// slices their payloads are decoded into: what decode returns is copied out of them
// (decodeBody, decodeToolCalls), so each row's parts, calls and results cost no slice
// of their own (goccy/go-json grows a new one through reflect for each otherwise:
// a tenth of a transcript's allocated bytes).
type rowDecoder struct {
	// payload, calls and results are what the row's jsonb columns decode into: fields,
	// so that decoding into them allocates nothing for them either.
	payload bodyPayload
	calls   []toolCallJSON
	results []toolResultJSON
	// conv and convID are the last row's conversation key and public id: a page's rows
	// share one, which is then made once, not once a row.
	conv, convID string
	// publicIDs: the rows' ids are the messages' public ids (pageColumns), not their keys.
	publicIDs bool
	// With slab > 1, the messages of the commonest kinds, their parts and their calls
	// are cut from slices of slab elements (take), a few allocations for a page where
	// each message took three. A page's messages are read, written and dropped
	// together, so one kept message keeping its slab's others alive costs little.
	slab     int
	texts    []parley.TextMessage
	requests []parley.ToolRequestMessage
	answers  []parley.ToolResultMessage
	partSlab []parley.Part
	callSlab []parley.ToolCall
}

// take cuts n elements from *slab, a new slice of at least chunk elements when what is
// left is too short. The piece's capacity is n: appending to it never writes into the
// next piece.
func take[T any](slab *[]T, n, chunk int) []T {
	if n == 0 {
		return []T{} // empty, not nil, as make made it
	}
	if cap(*slab)-len(*slab) < n {
		*slab = make([]T, 0, max(chunk, n))
	}
	i := len(*slab)
	*slab = (*slab)[:i+n]
	return (*slab)[i : i+n : i+n]
}

// unmarshalBody decodes a body's payload into d.payload.
func (d *rowDecoder) unmarshalBody(payload []byte) error {
	d.payload.Parts = reuse(d.payload.Parts)
	return unmarshal(payload, &d.payload)
}

// body is decodeBody, its parts cut from the decoder's slab.
func (d *rowDecoder) body(p bodyPayload) parley.Body {
	return decodeBodyInto(p, take(&d.partSlab, len(p.Parts), 2*d.slab))
}

// reuse returns s emptied, its elements zeroed: the decoder appends parley.JSON fields
// into what an element holds, which an earlier message now owns.
func reuse[T any](s []T) []T {
	clear(s[:cap(s)])
	return s[:0]
}

// decode is decodeMessage.
func (d *rowDecoder) decode(row *messageRow, log *slog.Logger) (parley.Message, error) {
	if row.ConversationID != d.conv || d.convID == "" {
		d.conv, d.convID = row.ConversationID, parley.ConversationID(row.ConversationID)
	}
	id := row.ID
	if !d.publicIDs {
		id = parley.MessageID(row.ID)
	}
	meta := parley.MessageMeta{
		ID:             id,
		ConversationID: d.convID,
		Role:           parley.Role(row.Role),
		Position:       row.Depth,
		Seq:            row.Position,
		Hidden:         row.Hidden,
		CreatedAt:      row.CreatedAt,
		UpdatedAt:      row.UpdatedAt,
		SourceID:       row.SourceID.String,
		Live: parley.Live{
			Status:   parley.MessageStatus(row.Status),
			Reason:   row.StatusReason.String,
			ClientID: row.ClientID.String,
			Seq:      row.StreamSeq,
		},
	}
	if row.DeletedAt.Valid {
		t := row.DeletedAt.Time
		meta.DeletedAt = &t
	}
	if len(row.Provenance) > 0 {
		var p provenanceJSON
		if err := unmarshal(row.Provenance, &p); err != nil {
			return nil, fmt.Errorf("decode provenance of message %s: %w", row.ID, err)
		}
		meta.Live.Provenance = p.provenance()
	}
	if row.SchemaVersion == 1 {
		return decodeV1(row, meta)
	}
	var (
		m   parley.Message
		err error
	)
	switch kind := parley.MessageKind(row.Kind.String); kind {
	case parley.KindText:
		err = d.unmarshalBody(row.Payload)
		tm := &take(&d.texts, 1, d.slab)[0]
		*tm = parley.TextMessage{MessageMeta: meta, Body: d.body(d.payload)}
		m = tm
	case parley.KindImage:
		var p imagePayload
		err = unmarshal(row.Payload, &p)
		m = &parley.ImageMessage{MessageMeta: meta, RecognitionMode: p.RecognitionMode, Recognition: p.Recognition,
			Source: parley.ImageSource{Kind: p.Source.Kind, URL: p.Source.URL, Data: p.Source.Data,
				MediaType: p.Source.MediaType, FilePath: p.Source.FilePath}}
	case parley.KindFileReference:
		var p filePayload
		err = unmarshal(row.Payload, &p)
		m = &parley.FileReferenceMessage{MessageMeta: meta, Path: p.Path, StartLine: p.StartLine, EndLine: p.EndLine, Resolution: p.Resolution}
	case parley.KindToolRequest:
		d.calls = reuse(d.calls)
		if err = d.unmarshalBody(row.Payload); err == nil {
			err = unmarshal(row.ToolCalls, &d.calls)
		}
		rm := &take(&d.requests, 1, d.slab)[0]
		*rm = parley.ToolRequestMessage{MessageMeta: meta, Body: d.body(d.payload), ToolCalls: decodeToolCalls(d.calls, take(&d.callSlab, len(d.calls), d.slab))}
		m = rm
	case parley.KindToolResult:
		d.results = reuse(d.results)
		if err = d.unmarshalBody(row.Payload); err == nil {
			err = unmarshal(row.ToolResults, &d.results)
		}
		if err == nil && len(d.results) != 1 {
			err = fmt.Errorf("want one tool result, found %d", len(d.results))
		}
		if err == nil {
			r := d.results[0]
			tm := &take(&d.answers, 1, d.slab)[0]
			*tm = parley.ToolResultMessage{MessageMeta: meta, Body: d.body(d.payload), ToolCallID: r.ToolCallID,
				ToolName: r.ToolName, Status: r.Status, Output: r.Output, DurationMs: r.DurationMs,
				ExecutedAt: r.ExecutedAt, Truncated: r.Truncated, OriginalSize: r.OriginalSize, OutputRaw: r.OutputRaw}
			if r.OutputRaw != nil {
				tm.Output = parley.JSON(*r.OutputRaw) // as given, not as jsonb normalized it
			}
			if e := r.Error; e != nil {
				tm.Error = &parley.ToolErrorDetail{Message: e.Message, StackTrace: e.StackTrace, Recoverable: e.Recoverable}
			}
			m = tm
		}
	case parley.KindSystemControl:
		var p controlPayload
		err = unmarshal(row.Payload, &p)
		m = &parley.SystemControlMessage{MessageMeta: meta, ControlKind: p.Kind, From: p.From, To: p.To, Params: p.Params}
	case parley.KindMCPResource:
		var p mcpPayload
		err = unmarshal(row.Payload, &p)
		m = &parley.MCPResourceMessage{MessageMeta: meta, Body: decodeBody(p.bodyPayload), ServerName: p.ServerName,
			ResourceURI: p.ResourceURI, MimeType: p.MimeType, RetrievedAt: p.RetrievedAt, Truncated: p.Truncated}
	case parley.KindCompaction:
		var p compactionPayload
		err = unmarshal(row.Payload, &p)
		m = &parley.CompactionMessage{MessageMeta: meta, Body: decodeBody(p.bodyPayload), Provider: p.Provider,
			Data: parley.JSON(p.Data), CoversThrough: p.CoversThrough}
	default:
		// Seed 003: an unknown type never fails a read; it is kept intact and logged.
		if log != nil {
			log.Warn("message of unknown kind", "kind", kind, "message", meta.ID)
		}
		// A copy: a page's rows are decoded from the driver's buffer (scanRows).
		return &parley.UnknownMessage{MessageMeta: meta, TypeTag: string(kind), Raw: parley.JSON(bytes.Clone(row.Payload))}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("decode %s message %s: %w", row.Kind.String, row.ID, err)
	}
	return m, nil
}
