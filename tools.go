//go:build tools

// Tools the build uses, pinned in go.mod.
package parley

import (
	_ "github.com/99designs/gqlgen"
)
