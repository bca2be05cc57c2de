package testserver

import (
	"testing"

	"github.com/parley-dev/parley/config"
)

// Wired is a server configured by a configuration file's text.
type Wired struct {
	*Server
}

// NewWired starts a server on a fresh database configured by configYAML (a config
// file's text, which must be valid).
func NewWired(t testing.TB, configYAML string) *Wired {
	t.Helper()
	return NewWiredWith(t, configYAML, Options{})
}

// NewWiredWith is NewWired with options: Auth, say. Its Config is configYAML's.
func NewWiredWith(t testing.TB, configYAML string, opts Options) *Wired {
	t.Helper()
	cfg, err := config.Parse([]byte(configYAML))
	if err != nil {
		t.Fatalf("testserver: config: %v", err)
	}
	opts.Config = &cfg
	return &Wired{NewWith(t, opts)}
}
