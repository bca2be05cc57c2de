package main

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/parley-dev/parley/db"
	"github.com/parley-dev/parley/internal/pgtest"
)

// TestNewerSchemaRefusedPlainly: a database migrated by a newer parley (its schema
// version beyond this build's last migration) is refused by migrate and by serve with
// an error that names both versions and what to do, and left as it was; golang-migrate
// alone said "no migration found for version N: read down for version N .: file does
// not exist".
func TestNewerSchemaRefusedPlainly(t *testing.T) {
	t.Parallel()
	dsn := pgtest.NewDatabase(t)
	ctx := context.Background()
	if err := db.Migrate(ctx, dsn); err != nil {
		t.Fatal(err)
	}
	latest, _, err := db.MigrationVersion(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	store, err := db.Open(ctx, dsn, db.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	newer := latest + 1 // as a newer parley would leave it
	if _, err := store.SQL().ExecContext(ctx, `UPDATE schema_migrations SET version = $1`, newer); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"parley", "migrate", "--database-url", dsn},
		{"parley", "serve", "--database-url", dsn, "--addr", "127.0.0.1:0"},
	} {
		cmd := args[1]
		var out, errOut syncBuffer
		err := run(ctx, args, &out, &errOut)
		want := []string{fmt.Sprintf("schema is at migration %d", newer), fmt.Sprintf("migrations end at %d", latest), "newer parley"}
		for _, w := range want {
			if err == nil || !strings.Contains(err.Error(), w) {
				t.Errorf("parley %s: got %v, want an error saying %q", cmd, err, w)
			}
		}
		if got, dirty, err := db.MigrationVersion(ctx, dsn); err != nil || got != newer || dirty {
			t.Errorf("parley %s: schema version %d (dirty %v, %v) after the refusal, want %d untouched", cmd, got, dirty, err, newer)
		}
	}
}
