package db_test

import (
	"database/sql"
	"testing"

	"github.com/golang-migrate/migrate/v4"
	"github.com/golang-migrate/migrate/v4/database/postgres"
	"github.com/golang-migrate/migrate/v4/source/iofs"

	"github.com/parley-dev/parley/internal/pgtest"
	"github.com/parley-dev/parley/migrations"
)

// newMigrator gives a test a fresh database (its DSN), a connection to it, closed when
// the test ends, and a migrator over the embedded migrations, for tests that migrate
// to a version, store history as that version did, and migrate on.
func newMigrator(t *testing.T) (string, *sql.DB, *migrate.Migrate) {
	t.Helper()
	dsn := pgtest.NewDatabase(t)
	conn, err := sql.Open("postgres", dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	src, err := iofs.New(migrations.FS, ".")
	if err != nil {
		t.Fatal(err)
	}
	driver, err := postgres.WithInstance(conn, &postgres.Config{})
	if err != nil {
		t.Fatal(err)
	}
	m, err := migrate.NewWithInstance("iofs", src, "postgres", driver)
	if err != nil {
		t.Fatal(err)
	}
	return dsn, conn, m
}
