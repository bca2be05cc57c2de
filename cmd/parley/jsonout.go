package main

import (
	"encoding/json"
	"io"
	"time"

	"github.com/parley-dev/parley"
)

// The --json output of the commands: the API's field names (camelCase, as the GraphQL
// schema spells them), declared here so that renaming a Go field never changes what
// scripts read. Fields are only ever added.

type conversationJSON struct {
	ID           string    `json:"id"`
	Title        string    `json:"title"`
	Owner        string    `json:"owner"`
	MessageCount int       `json:"messageCount"`
	CreatedAt    time.Time `json:"createdAt"`
	UpdatedAt    time.Time `json:"updatedAt"`
}

func conversationView(c *parley.Conversation, owner string) conversationJSON {
	return conversationJSON{ID: c.ID, Title: c.Title, Owner: owner, MessageCount: c.MessageCount, CreatedAt: c.CreatedAt, UpdatedAt: c.UpdatedAt}
}

type variantCountJSON struct {
	Variant string `json:"variant"`
	Count   int    `json:"count"`
}

type skippedJSON struct {
	Reason string   `json:"reason"`
	Count  int      `json:"count"`
	Where  []string `json:"where"`
}

// importReportJSON is parley import --json: the importConversation mutation's
// ImportReport, plus created.
type importReportJSON struct {
	Conversation   conversationJSON   `json:"conversation"`
	Created        bool               `json:"created"`
	Added          int                `json:"added"`
	AddedByVariant []variantCountJSON `json:"addedByVariant"`
	AlreadyPresent int                `json:"alreadyPresent"`
	Skipped        []skippedJSON      `json:"skipped"`
	Warnings       []string           `json:"warnings"`
	SystemPrompt   *string            `json:"systemPrompt"`
}

func importReportView(r *parley.ImportReport, owner string) importReportJSON {
	out := importReportJSON{Conversation: conversationView(r.Conversation, owner), Created: r.Created, Added: r.Added,
		AddedByVariant: []variantCountJSON{}, AlreadyPresent: r.AlreadyPresent, Skipped: []skippedJSON{},
		Warnings: append([]string{}, r.Warnings...), SystemPrompt: r.SystemPrompt}
	for _, v := range r.AddedByVariant {
		out.AddedByVariant = append(out.AddedByVariant, variantCountJSON{Variant: v.Variant, Count: v.Count})
	}
	for _, s := range r.Skipped {
		out.Skipped = append(out.Skipped, skippedJSON{Reason: s.Reason, Count: s.Count, Where: append([]string{}, s.Where...)})
	}
	return out
}

// writeJSON writes v indented, ending in a newline.
func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}
