package db

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"

	"github.com/golang-migrate/migrate/v4"
	"github.com/golang-migrate/migrate/v4/database/postgres"
	"github.com/golang-migrate/migrate/v4/source"
	"github.com/golang-migrate/migrate/v4/source/iofs"

	"github.com/parley-dev/parley/migrations"
)

// Migrate applies every pending migration to the database at dsn. It takes a session-level
// advisory lock (golang-migrate's), so replicas starting together migrate once.
func Migrate(ctx context.Context, dsn string) error {
	conn, err := sql.Open("postgres", dsn)
	if err != nil {
		return fmt.Errorf("migrate: open: %w", err)
	}
	defer conn.Close()
	if err := conn.PingContext(ctx); err != nil {
		return fmt.Errorf("migrate: connect: %w", err)
	}
	src, err := iofs.New(migrations.FS, ".")
	if err != nil {
		return fmt.Errorf("migrate: read migrations: %w", err)
	}
	driver, err := postgres.WithInstance(conn, &postgres.Config{})
	if err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	m, err := migrate.NewWithInstance("iofs", src, "postgres", driver)
	if err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	defer m.Close()
	if err := refuseNewerSchema(m, src); err != nil {
		return err
	}
	if err := m.Up(); err != nil && !errors.Is(err, migrate.ErrNoChange) {
		return fmt.Errorf("migrate: %w", err)
	}
	return nil
}

// refuseNewerSchema says plainly when the database was migrated by a newer Parley than
// this one: golang-migrate, finding no file for the database's version, would say only
// "no migration found for version N: read down for version N .: file does not exist".
// Nothing is written; the operator runs the newer version again (a rollback of the
// binary is not a rollback of the schema).
func refuseNewerSchema(m *migrate.Migrate, src source.Driver) error {
	version, dirty, err := m.Version()
	if errors.Is(err, migrate.ErrNilVersion) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("migrate: read the schema version: %w", err)
	}
	latest, err := src.First()
	if err != nil {
		return fmt.Errorf("migrate: read migrations: %w", err)
	}
	for {
		next, err := src.Next(latest)
		if errors.Is(err, fs.ErrNotExist) {
			break
		}
		if err != nil {
			return fmt.Errorf("migrate: read migrations: %w", err)
		}
		latest = next
	}
	if version > latest {
		state := ""
		if dirty {
			state = " (left dirty by a failed migration)"
		}
		return fmt.Errorf("migrate: the database's schema is at migration %d%s, newer than this build of parley knows "+
			"(its migrations end at %d): it was migrated by a newer parley; run that version (or a later one) against it, "+
			"or a fresh database with this one", version, state, latest)
	}
	return nil
}

// MigrationVersion reports the schema version the database at dsn is on.
func MigrationVersion(ctx context.Context, dsn string) (version uint, dirty bool, err error) {
	conn, err := sql.Open("postgres", dsn)
	if err != nil {
		return 0, false, err
	}
	defer conn.Close()
	src, err := iofs.New(migrations.FS, ".")
	if err != nil {
		return 0, false, err
	}
	driver, err := postgres.WithInstance(conn, &postgres.Config{})
	if err != nil {
		return 0, false, err
	}
	m, err := migrate.NewWithInstance("iofs", src, "postgres", driver)
	if err != nil {
		return 0, false, err
	}
	defer m.Close()
	version, dirty, err = m.Version()
	if errors.Is(err, migrate.ErrNilVersion) {
		return 0, false, nil
	}
	return version, dirty, err
}
