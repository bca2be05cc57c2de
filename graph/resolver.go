// Package graph is Parley's GraphQL adapter: gqlgen's generated executor, thin resolvers
// that decode arguments, call a root service and return, and the HTTP handler.
package graph

import (
	"log/slog"

	"github.com/parley-dev/parley"
	"github.com/parley-dev/parley/render"
)

// Resolver holds the services the resolvers call.
type Resolver struct {
	ConversationService parley.ConversationService
	MessageService      parley.MessageService
	// EventService serves subscriptions; without it they answer SERVICE_UNAVAILABLE.
	EventService parley.EventService
	// ProcessingService runs processing steps and ToolWorkService serves tool workers;
	// without them those fields answer SERVICE_UNAVAILABLE.
	ProcessingService parley.ProcessingService
	ToolWorkService   parley.ToolWorkService
	// InteropService imports and exports histories; without it importConversation and
	// transcripts answer SERVICE_UNAVAILABLE.
	InteropService parley.InteropService
	// Renderer renders the html fields (Markdown to sanitized HTML). Required.
	Renderer *render.Renderer
	// LiveMessageService writes messages while they stream; without it those mutations
	// answer SERVICE_UNAVAILABLE.
	LiveMessageService parley.LiveMessageService
	// LiveEventService serves messageStream; without it that subscription answers
	// SERVICE_UNAVAILABLE.
	LiveEventService parley.LiveEventService
	// TreeService reads and switches branches; without it parentId, siblings, branches,
	// activeLeaf and switchBranch answer SERVICE_UNAVAILABLE.
	TreeService parley.TreeService
	// ConversationEventService serves conversationsChanged and changesCursor; without it
	// they answer SERVICE_UNAVAILABLE.
	ConversationEventService parley.ConversationEventService
	// SearchService serves search and searchConversations; without it they answer
	// SERVICE_UNAVAILABLE.
	SearchService parley.SearchService
	// ShareLinkService makes, lists and revokes share links; without it those fields
	// answer SERVICE_UNAVAILABLE.
	ShareLinkService parley.ShareLinkService
	Logger           *slog.Logger
}
