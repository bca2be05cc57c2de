package testserver

import (
	"context"
	"testing"
	"time"

	"github.com/parley-dev/parley"
	"github.com/parley-dev/parley/config"
	"github.com/parley-dev/parley/db"
	"github.com/parley-dev/parley/internal/pgtest"
	"github.com/parley-dev/parley/internal/wire"
	"github.com/parley-dev/parley/realtime"
	"github.com/parley-dev/parley/server"
)

// Wired is a server wired from a configuration as cmd/parley wires it: tool policies in
// the store, processing, and realtime subscriptions fed by a database listener that also
// wakes the tool work queue's subscribers.
type Wired struct {
	*Server
	Processing *wire.Processing
	Feed       *realtime.Feed
}

// NewWired starts a wired server on a fresh database; the configuration is a config
// file's text (YAML), which must be valid.
func NewWired(t testing.TB, configYAML string) *Wired {
	t.Helper()
	return NewWiredWith(t, configYAML, Options{})
}

// NewWiredWith is NewWired with options: Auth, say; Configure runs after the wiring.
// Its DSN and DB are the wiring's own and must be left empty.
func NewWiredWith(t testing.TB, configYAML string, opts Options) *Wired {
	t.Helper()
	cfg, err := config.Parse([]byte(configYAML))
	if err != nil {
		t.Fatalf("testserver: config: %v", err)
	}
	dsn := pgtest.NewDatabase(t)
	policies := cfg.ToolPolicies()
	w := &Wired{}
	w.Server = NewWith(t, Options{DSN: dsn, DB: db.Config{ToolPolicies: &policies}, Auth: opts.Auth, Configure: func(c *server.Config) {
		store := c.Messages.(*db.DB)
		w.Processing = wire.NewProcessing(cfg, store, "test", c.Logger)
		t.Cleanup(func() { w.Processing.Close() })
		w.Feed = realtime.NewFeed(store, realtime.Config{Logger: c.Logger})
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		proc := w.Processing.Service
		l, err := db.Listen(ctx, dsn, db.ListenerConfig{
			OnEvent:  func(ev parley.MessageEvent) { w.Feed.Publish(ev); proc.Publish(ev) },
			OnResync: func() { w.Feed.Resync(); proc.Resync() },
			Logger:   c.Logger,
		})
		if err != nil {
			t.Fatalf("testserver: listen: %v", err)
		}
		t.Cleanup(func() { l.Close() })
		c.Events, c.Processing, c.ToolWork = w.Feed, proc, store
		if opts.Configure != nil {
			opts.Configure(c)
		}
	}})
	return w
}
