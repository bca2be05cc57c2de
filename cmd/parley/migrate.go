package main

import (
	"context"
	"fmt"
	"io"

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
			cfg, err := loadConfig(cmd, config.Global, config.Database)
			if err != nil {
				return err
			}
			log, err := logger(cfg, stderr)
			if err != nil {
				return err
			}
			dsn, release, err := openDatabase(ctx, cfg, log)
			if err != nil {
				return err
			}
			defer release()
			if err := db.Migrate(ctx, dsn); err != nil {
				return err
			}
			version, _, err := db.MigrationVersion(ctx, dsn)
			if err != nil {
				return err
			}
			fmt.Fprintf(stdout, "database schema at version %d\n", version)
			return nil
		},
	}
}
