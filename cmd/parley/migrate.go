package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"

	"github.com/urfave/cli/v3"

	"github.com/parley-dev/parley/config"
	"github.com/parley-dev/parley/db"
)

func migrateCommand(stdout, stderr io.Writer) *cli.Command {
	return &cli.Command{
		Name:  "migrate",
		Usage: "apply pending database migrations and report the schema version",
		Flags: flagsOf(config.Database),
		Action: func(ctx context.Context, cmd *cli.Command) error {
			return withDatabase(ctx, cmd, stderr, func(_ config.Config, _ *slog.Logger, dsn string) error {
				version, _, err := db.MigrationVersion(ctx, dsn)
				if err != nil {
					return err
				}
				fmt.Fprintf(stdout, "database schema at version %d\n", version)
				return nil
			})
		},
	}
}
