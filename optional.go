package parley

// The API's optional strings. The domain keeps an absent optional value as "", and the
// API answers null for it, never "": a client tells "not given" by null alone, as the
// schema's nullable String says (sourceId is null for a message no import made, not "").
// gqlgen.yml binds each nullable String field to the method here of its type.

// OptSourceID is SourceID, nil when the message was not imported.
func (m *MessageMeta) OptSourceID() *string { return nonEmpty(&m.SourceID) }

// OptSignature is Signature, nil when the part has none.
func (p *Part) OptSignature() *string { return nonEmpty(&p.Signature) }

// OptItemID is ItemID, nil when the provider gave the part no item id.
func (p *Part) OptItemID() *string { return nonEmpty(&p.ItemID) }

// OptURL is URL, nil unless the image is at a URL.
func (s *ImageSource) OptURL() *string { return nonEmpty(&s.URL) }

// OptData is Data, nil unless the image is inline.
func (s *ImageSource) OptData() *string { return nonEmpty(&s.Data) }

// OptMediaType is MediaType, nil when unknown.
func (s *ImageSource) OptMediaType() *string { return nonEmpty(&s.MediaType) }

// OptFilePath is FilePath, nil unless the image is a file.
func (s *ImageSource) OptFilePath() *string { return nonEmpty(&s.FilePath) }

// OptRecognizedText is RecognizedText, nil when none was recognized.
func (r *ImageRecognition) OptRecognizedText() *string { return nonEmpty(&r.RecognizedText) }

// OptVisionAnalysis is VisionAnalysis, nil when no vision model looked.
func (r *ImageRecognition) OptVisionAnalysis() *string { return nonEmpty(&r.VisionAnalysis) }

// OptLanguage is Language, nil when unknown.
func (r *ImageRecognition) OptLanguage() *string { return nonEmpty(&r.Language) }

// OptScript is Script, nil when unknown.
func (r *ImageRecognition) OptScript() *string { return nonEmpty(&r.Script) }

// OptNotice is Notice, nil when there is nothing to say.
func (r *ImageRecognition) OptNotice() *string { return nonEmpty(&r.Notice) }

// OptContent is Content: "" for a file read that is empty, nil when the file could not
// be read.
func (r *FileResolution) OptContent() *string {
	if r.Status == ProcessingCompleted {
		return &r.Content
	}
	return nonEmpty(&r.Content)
}

// OptDecidedBy is DecidedBy, nil when no one was named.
func (d *ApprovalDecision) OptDecidedBy() *string { return nonEmpty(&d.DecidedBy) }

// OptReason is Reason, nil when none was given.
func (d *ApprovalDecision) OptReason() *string { return nonEmpty(&d.Reason) }

// OptStackTrace is StackTrace, nil when none was given.
func (e *ToolErrorDetail) OptStackTrace() *string { return nonEmpty(&e.StackTrace) }

// OptFrom is From, nil when not given.
func (m *SystemControlMessage) OptFrom() *string { return nonEmpty(&m.From) }

// OptTo is To, nil when not given.
func (m *SystemControlMessage) OptTo() *string { return nonEmpty(&m.To) }

// OptMimeType is MimeType, nil when not given.
func (m *MCPResourceMessage) OptMimeType() *string { return nonEmpty(&m.MimeType) }
