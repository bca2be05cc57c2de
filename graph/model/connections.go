// Package model holds the GraphQL adapter's own types: those gqlgen generates
// (models_gen.go) and a few written by hand where a field needs its own resolver.
package model

// ConversationConnection is a page of conversations. Its totalCount is resolved only
// when asked for, since counting is the expensive part.
type ConversationConnection struct {
	Edges    []*ConversationEdge `json:"edges"`
	PageInfo *PageInfo           `json:"pageInfo"`
	// ChangesCursor is the list's conversationsChanged cursor, read before the page
	// when it is asked for.
	ChangesCursor string `json:"changesCursor"`
}
