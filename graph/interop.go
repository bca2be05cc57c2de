package graph

import (
	"context"

	"github.com/parley-dev/parley"
)

var errNoInterop = &parley.Error{Code: parley.EUNAVAILABLE, Message: "Import and export are not available on this server."}

// transcript serves transcript and transcriptReport, which take the same arguments.
func (r *conversationResolver) transcript(ctx context.Context, conv *parley.Conversation, format parley.TranscriptFormat,
	opts parley.TranscriptOptions) (*parley.Transcript, error) {
	if r.InteropService == nil {
		return nil, errNoInterop
	}
	return r.InteropService.Transcript(ctx, conv.ID, format, opts)
}

// transcriptOptions decodes the arguments of transcript and transcriptReport.
func transcriptOptions(system *string, maxTokens *int, repair *bool, images *parley.ImageExport, model *string,
	cacheBreakpoints *int, after *string, foreign *parley.ForeignReasoning, branch *string) (parley.TranscriptOptions, error) {
	opts := parley.TranscriptOptions{System: deref(system), MaxTokens: maxTokens, Repair: deref(repair),
		Images: deref(images), Model: deref(model), CacheBreakpoints: deref(cacheBreakpoints), ForeignReasoning: deref(foreign),
		Branch: deref(branch)}
	if after != nil {
		pos, err := parley.ParseMessageCursor("after", *after)
		if err != nil {
			return opts, err
		}
		opts.After = &pos
	}
	return opts, nil
}
