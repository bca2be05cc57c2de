package pgtest_test

import (
	"database/sql"
	"fmt"
	"testing"
	"time"

	_ "github.com/lib/pq"

	"github.com/parley-dev/parley/internal/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// TestNewDatabase runs in parallel pairs: each test gets its own migrated database, and
// what one writes the other does not see.
func TestNewDatabase(t *testing.T) {
	t.Parallel()
	for i := range 2 {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			t.Parallel()
			began := time.Now()
			dsn := pgtest.NewDatabase(t)
			t.Logf("NewDatabase took %v", time.Since(began).Round(time.Microsecond))

			db, err := sql.Open("postgres", dsn)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { db.Close() })
			var migrated bool
			err = db.QueryRowContext(t.Context(),
				"SELECT EXISTS (SELECT FROM pg_tables WHERE tablename = 'schema_migrations')").Scan(&migrated)
			if err != nil {
				t.Fatal(err)
			}
			if !migrated {
				t.Fatal("got no schema_migrations table, want a migrated database")
			}
			if _, err := db.ExecContext(t.Context(), "CREATE TABLE mine (id int)"); err != nil {
				t.Fatalf("got %v, want a table name no other test's database has taken", err)
			}
		})
	}
}

// TestDatabaseDroppedAtCleanup checks a test's database, and the connections it left
// open, are gone once the test ends.
func TestDatabaseDroppedAtCleanup(t *testing.T) {
	t.Parallel()
	var dsn string
	t.Run("user", func(t *testing.T) {
		dsn = pgtest.NewDatabase(t)
		db, err := sql.Open("postgres", dsn)
		if err != nil {
			t.Fatal(err)
		}
		// Deliberately left open: DROP ... WITH (FORCE) must cope.
		if err := db.PingContext(t.Context()); err != nil {
			t.Fatal(err)
		}
	})
	db, err := sql.Open("postgres", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.PingContext(t.Context()); err == nil {
		t.Fatal("connecting to the dropped database: got nil error, want it gone")
	}
}

// BenchmarkNewDatabase measures creation only: the databases are dropped at the end.
func BenchmarkNewDatabase(b *testing.B) {
	for b.Loop() {
		pgtest.NewDatabase(b)
	}
}
