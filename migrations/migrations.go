// Package migrations holds Parley's SQL schema migrations, embedded in the binary.
package migrations

import "embed"

// FS holds the numbered NNNNNN_name.up.sql / .down.sql files, in golang-migrate's layout.
//
//go:embed *.sql
var FS embed.FS
