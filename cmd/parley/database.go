package main

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/urfave/cli/v3"

	"github.com/parley-dev/parley/localpg"
)

// databaseFlags select the database: a URL, or the embedded cluster in a data directory.
func databaseFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{
			Name: "database-url", Usage: "PostgreSQL URL; without it Parley runs its own Postgres in --data-dir",
			Sources: cli.EnvVars("DATABASE_URL"),
		},
		&cli.StringFlag{
			Name: "data-dir", Usage: "where the embedded Postgres keeps its data (default: the user's data directory)",
			Sources: cli.EnvVars("PARLEY_DATA_DIR"),
		},
	}
}

// openDatabase returns the DSN to use and a function that releases what it started: the
// embedded cluster when no URL is given.
func openDatabase(ctx context.Context, cmd *cli.Command, log *slog.Logger) (dsn string, release func(), err error) {
	if url := cmd.String("database-url"); url != "" {
		return url, func() {}, nil
	}
	dir := cmd.String("data-dir")
	if dir == "" {
		if dir, err = localpg.DefaultDataDir(); err != nil {
			return "", nil, fmt.Errorf("no --data-dir given and no default: %w", err)
		}
	}
	log.Info("starting embedded Postgres", "dataDir", dir)
	cluster, err := localpg.Start(ctx, localpg.Config{DataDir: dir, Logger: log})
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
