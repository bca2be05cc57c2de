package graph

import (
	"github.com/parley-dev/parley"
	"github.com/parley-dev/parley/graph/model"
)

// searchRequest turns search's arguments into the domain's request; the service checks it.
func searchRequest(query string, filter *model.SearchFilter, order *parley.SearchOrder, prefix *bool, first *int, after *string) parley.SearchRequest {
	req := parley.SearchRequest{Query: query, Prefix: prefix != nil && *prefix}
	if order != nil {
		req.Order = *order
	}
	if first != nil {
		req.First = *first
		if *first == 0 {
			req.First = -1 // 0 is "absent" to the service; an explicit 0 is refused
		}
	}
	if after != nil {
		req.After = *after
	}
	if f := filter; f != nil {
		req.Filter = parley.SearchFilter{
			ConversationIDs: f.ConversationIds, Kinds: f.Kinds, Roles: f.Roles, ToolNames: f.ToolNames,
			Models: f.Models, Providers: f.Providers,
			AllBranches:     f.Branches != nil && *f.Branches == model.BranchScopeAll,
			IncludeThinking: f.IncludeThinking != nil && *f.IncludeThinking,
		}
		if f.ToolResultStatus != nil {
			req.Filter.ToolResultStatus = *f.ToolResultStatus
		}
		if f.ApprovalStatus != nil {
			req.Filter.ApprovalStatus = *f.ApprovalStatus
		}
		req.Filter.CreatedAfter, req.Filter.CreatedBefore = f.CreatedAfter, f.CreatedBefore
	}
	return req
}

var errNoSearch = &parley.Error{Code: parley.EUNAVAILABLE, Message: "Search is not available on this server."}
