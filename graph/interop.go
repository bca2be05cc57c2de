package graph

import (
	"context"

	"github.com/parley-dev/parley"
)

var errNoInterop = &parley.Error{Code: parley.EUNAVAILABLE, Message: "Import and export are not available on this server."}

// transcript serves transcript and transcriptReport, which take the same arguments.
func (r *conversationResolver) transcript(ctx context.Context, conv *parley.Conversation, format parley.TranscriptFormat,
	system *string, maxTokens *int, repair *bool, model *string, foreign *parley.ForeignReasoning) (*parley.Transcript, error) {
	if r.InteropService == nil {
		return nil, errNoInterop
	}
	opts := parley.TranscriptOptions{System: deref(system), MaxTokens: maxTokens, Repair: deref(repair), Model: deref(model)}
	if foreign != nil {
		opts.ForeignReasoning = *foreign
	}
	return r.InteropService.Transcript(ctx, conv.ID, format, opts)
}
