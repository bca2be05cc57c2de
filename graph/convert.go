package graph

import (
	"github.com/parley-dev/parley"
	"github.com/parley-dev/parley/graph/model"
)

// The generated input types stop here: each is turned into the domain variant it
// describes. Validation is the domain's (parley.Prepare); this only reshapes.

// messageFromInput checks that exactly one member of the @oneOf input is set (gqlgen
// checks that only for literals, not for variables) and converts it.
func messageFromInput(in model.MessageInput) (parley.Message, error) {
	var members []string
	var m parley.Message
	var err error
	if in.Text != nil {
		members = append(members, "text")
		m, err = textFromInput(in.Text)
	}
	if in.Image != nil {
		members, m = append(members, "image"), imageFromInput(in.Image)
	}
	if in.FileReference != nil {
		members, m = append(members, "fileReference"), &parley.FileReferenceMessage{
			Path: in.FileReference.Path, StartLine: in.FileReference.StartLine, EndLine: in.FileReference.EndLine,
		}
	}
	if in.ToolRequest != nil {
		members = append(members, "toolRequest")
		m, err = toolRequestFromInput(in.ToolRequest)
	}
	if in.ToolResult != nil {
		members, m = append(members, "toolResult"), toolResultFromInput(in.ToolResult)
	}
	if in.SystemControl != nil {
		sc := in.SystemControl
		members, m = append(members, "systemControl"), &parley.SystemControlMessage{
			ControlKind: sc.Kind, From: deref(sc.From), To: deref(sc.To), Params: sc.Params,
		}
	}
	if in.McpResource != nil {
		r := in.McpResource
		mr := &parley.MCPResourceMessage{
			ServerName: r.ServerName, ResourceURI: r.ResourceURI, MimeType: deref(r.MimeType),
			Body: parley.TextBody(r.Content),
		}
		if r.RetrievedAt != nil {
			mr.RetrievedAt = *r.RetrievedAt
		}
		members, m = append(members, "mcpResource"), mr
	}
	if c := in.Compaction; c != nil {
		members, m = append(members, "compaction"), &parley.CompactionMessage{
			Body: parley.TextBody(deref(c.Content)), Provider: deref(c.Provider), Data: parley.JSON(deref(c.ProviderData)),
			CoversThrough: deref(c.CoversThrough),
		}
	}
	if len(members) != 1 {
		return nil, parley.Errorf(parley.EINVALID,
			"input: give exactly one of text, image, fileReference, toolRequest, toolResult, systemControl, mcpResource, compaction (got %d: %v)",
			len(members), members)
	}
	return m, err
}

func bodyFromInput(field string, content *string, parts []*model.PartInput) (parley.Body, error) {
	if content != nil && len(parts) > 0 {
		return parley.Body{}, parley.Errorf(parley.EINVALID, "%s: give content or parts, not both", field)
	}
	if content != nil {
		return parley.Body{Parts: []parley.Part{{Kind: parley.PartText, Text: *content}}}, nil
	}
	b := parley.Body{Parts: make([]parley.Part, len(parts))}
	for i, p := range parts {
		b.Parts[i] = parley.Part{Kind: p.Kind, Text: p.Text, Signature: deref(p.Signature), ItemID: deref(p.ItemID),
			Raw: p.Raw, Citations: p.Citations}
	}
	return b, nil
}

func textFromInput(in *model.TextInput) (parley.Message, error) {
	body, err := bodyFromInput("text", in.Content, in.Parts)
	return &parley.TextMessage{MessageMeta: parley.MessageMeta{Role: in.Role}, Body: body}, err
}

func imageFromInput(in *model.ImageInput) parley.Message {
	m := &parley.ImageMessage{
		Source: parley.ImageSource{URL: deref(in.URL), Data: deref(in.Base64), MediaType: deref(in.MediaType), FilePath: deref(in.FilePath)},
	}
	if in.Role != nil {
		m.Role = *in.Role
	}
	if in.RecognitionMode != nil {
		m.RecognitionMode = *in.RecognitionMode
	}
	return m
}

func toolRequestFromInput(in *model.ToolRequestInput) (parley.Message, error) {
	body, err := bodyFromInput("toolRequest", in.Content, in.Parts)
	m := &parley.ToolRequestMessage{Body: body, ToolCalls: make([]parley.ToolCall, len(in.ToolCalls))}
	for i, c := range in.ToolCalls {
		m.ToolCalls[i] = parley.ToolCall{ID: c.ID, Name: c.Name, Arguments: c.Arguments, ArgumentsRaw: c.ArgumentsRaw, PartIndex: c.PartIndex, ItemID: deref(c.ItemID), ThoughtSignature: deref(c.ThoughtSignature)}
	}
	return m, err
}

func toolResultFromInput(in *model.ToolResultInput) parley.Message {
	m := &parley.ToolResultMessage{
		ToolCallID: in.ToolCallID, Status: in.Status, Output: in.Output, OutputRaw: in.OutputRaw,
		DurationMs: in.DurationMs, ExecutedAt: in.ExecutedAt, Worker: deref(in.Worker),
	}
	if in.Content != nil {
		m.Body = parley.TextBody(*in.Content)
	}
	if in.Output.IsNull() {
		m.Output = nil
	}
	if e := in.Error; e != nil {
		m.Error = &parley.ToolErrorDetail{Message: e.Message, StackTrace: deref(e.StackTrace), Recoverable: deref(e.Recoverable)}
	}
	return m
}

// messageConnection makes a connection's edges and page info from a page of messages.
func messageConnection(page *parley.MessagePage) *model.MessageConnection {
	conn := &model.MessageConnection{
		Edges:      make([]*model.MessageEdge, len(page.Messages)),
		PageInfo:   &model.PageInfo{HasNextPage: page.HasNextPage, HasPreviousPage: page.HasPreviousPage},
		TotalCount: page.TotalCount,
	}
	edges := make([]model.MessageEdge, len(page.Messages)) // one allocation for the page's edges
	for i, m := range page.Messages {
		edges[i] = edgeOf(m)
		conn.Edges[i] = &edges[i]
	}
	if n := len(conn.Edges); n > 0 {
		conn.PageInfo.StartCursor = &conn.Edges[0].Cursor
		conn.PageInfo.EndCursor = &conn.Edges[n-1].Cursor
	}
	return conn
}

func messageEdge(m parley.Message) *model.MessageEdge {
	e := edgeOf(m)
	return &e
}

func edgeOf(m parley.Message) model.MessageEdge {
	return model.MessageEdge{Cursor: parley.MessageCursor(m.Meta().Position), Node: m}
}

func conversationConnection(page *parley.ConversationPage) *model.ConversationConnection {
	conn := &model.ConversationConnection{
		Edges:    make([]*model.ConversationEdge, len(page.Conversations)),
		PageInfo: &model.PageInfo{HasNextPage: page.HasNextPage, HasPreviousPage: page.HasPreviousPage},
	}
	for i, c := range page.Conversations {
		conn.Edges[i] = &model.ConversationEdge{Cursor: page.Cursors[i], Node: c}
	}
	if n := len(conn.Edges); n > 0 {
		conn.PageInfo.StartCursor = &conn.Edges[0].Cursor
		conn.PageInfo.EndCursor = &conn.Edges[n-1].Cursor
	}
	return conn
}

func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}
