package main

import (
	"encoding/json"
	"io"

	"github.com/parley-dev/parley/server"
)

// The --json output of the commands is the HTTP API's (server.ImportReportJSON,
// server.ConversationJSON): the GraphQL schema's field names (camelCase), declared
// there so that renaming a Go field never changes what scripts read, and the same
// whether a command opened the database or asked a server (--server). Fields are only
// ever added.
type conversationJSON = server.ConversationJSON

var (
	conversationView = server.ConversationView
	importReportView = server.ImportReportView
)

// writeJSON writes v indented, ending in a newline.
func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}
