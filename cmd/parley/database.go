package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/urfave/cli/v3"

	"github.com/parley-dev/parley/config"
	"github.com/parley-dev/parley/db"
	"github.com/parley-dev/parley/localpg"
)

// openDatabase returns the DSN of the database cfg selects and a function that releases
// what it started: the embedded cluster when no URL is given. A server (serving) shares
// its embedded cluster; any other command, finding the data directory held by a
// running server, uses that server's cluster over its socket instead of starting one.
func openDatabase(ctx context.Context, cfg config.Config, log *slog.Logger, serving bool) (dsn string, release func(), err error) {
	if url := cfg.Process.DatabaseURL; url != "" {
		return url, func() {}, nil
	}
	dir := cfg.Process.DataDir
	if dir == "" {
		if dir, err = localpg.DefaultDataDir(); err != nil {
			return "", nil, fmt.Errorf("no --data-dir given and no default: %w", err)
		}
	}
	log.Info("starting embedded Postgres", "dataDir", dir)
	cluster, err := localpg.Start(ctx, localpg.Config{DataDir: dir, Logger: log, Shared: serving})
	if errors.Is(err, localpg.ErrAlreadyRunning) && !serving {
		shared, aerr := localpg.Attach(localpg.Config{DataDir: dir})
		if aerr != nil {
			return "", nil, fmt.Errorf("embedded Postgres: %w\n(or give --database-url to use another database)", aerr)
		}
		log.Info("using the Postgres of the parley serve running on the data directory", "dataDir", dir)
		return shared.DSN("parley"), func() {}, nil
	}
	if err != nil {
		return "", nil, fmt.Errorf("embedded Postgres: %w", err)
	}
	dsn = cluster.DSN("postgres")
	if err := ensureDatabase(ctx, dsn, "parley"); err != nil {
		cluster.Stop(context.Background())
		return "", nil, err
	}
	release = func() {
		stopCtx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := cluster.Stop(stopCtx); err != nil {
			log.Error("stopping embedded Postgres", "err", err)
		} else {
			log.Info("embedded Postgres stopped")
		}
	}
	return cluster.DSN("parley"), release, nil
}

// openMigrated opens the database cfg selects (openDatabase) and migrates it.
func openMigrated(ctx context.Context, cfg config.Config, log *slog.Logger, serving bool) (dsn string, release func(), err error) {
	if dsn, release, err = openDatabase(ctx, cfg, log, serving); err != nil {
		return "", nil, err
	}
	if err := db.Migrate(ctx, dsn); err != nil {
		release()
		return "", nil, err
	}
	return dsn, release, nil
}

// withDatabase runs fn with the configuration of scopes (Global and Database are
// always read), its logger and the database it selects, migrated: the administrative
// commands' way in.
func withDatabase(ctx context.Context, cmd *cli.Command, stderr io.Writer, fn func(cfg config.Config, log *slog.Logger, dsn string) error, scopes ...config.Scope) error {
	cfg, err := loadConfig(cmd, append([]config.Scope{config.Global, config.Database}, scopes...)...)
	if err != nil {
		return err
	}
	log, err := logger(cfg, stderr)
	if err != nil {
		return err
	}
	dsn, release, err := openMigrated(ctx, cfg, log, false)
	if err != nil {
		return err
	}
	defer release()
	return fn(cfg, log, dsn)
}

// withStore is withDatabase with the database's store.
func withStore(ctx context.Context, cmd *cli.Command, stderr io.Writer, fn func(config.Config, *db.DB) error, scopes ...config.Scope) error {
	return withDatabase(ctx, cmd, stderr, func(cfg config.Config, log *slog.Logger, dsn string) error {
		store, err := db.Open(ctx, dsn, db.Config{Logger: log, MaxOpenConns: 2})
		if err != nil {
			return err
		}
		defer store.Close()
		return fn(cfg, store)
	}, scopes...)
}
