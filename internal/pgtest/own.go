package pgtest

import (
	"context"
	"database/sql"
	"os"
	"testing"
	"time"

	"github.com/parley-dev/parley/db"
	"github.com/parley-dev/parley/localpg"
)

// OwnCluster starts a private cluster for t alone, in a new temporary directory, with a
// migrated database named parley, and returns the cluster and that database's DSN. It
// is for fault tests that stop and start Postgres: stopping the binary's shared cluster
// (Cluster) would fail every other test running beside them, while stopping this one
// harms nobody, so they can run in parallel. Unlike the shared cluster it is durable
// (fsync and synchronous commit on; its directory is on /dev/shm where there is one, so
// that costs little): what was acknowledged survives a crash (Kill). The cluster is
// stopped and removed when t ends. It needs the local PostgreSQL binaries even when
// TEST_DATABASE_URL is set.
func OwnCluster(t testing.TB) (*localpg.Cluster, string) {
	t.Helper()
	dir, err := os.MkdirTemp(clusterParent(), "parley-own-")
	if err != nil {
		t.Fatalf("pgtest: cluster directory: %v", err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	// As root the cluster runs as the postgres user, which must reach the directory.
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cluster, err := localpg.Start(ctx, localpg.Config{DataDir: dir})
	if err != nil {
		t.Fatalf("pgtest: start own cluster: %v", err)
	}
	// Registered after the directory's removal, so it runs first.
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := cluster.Stop(ctx); err != nil {
			t.Errorf("pgtest: stop own cluster: %v", err)
		}
	})
	admin, err := sql.Open("postgres", cluster.DSN("postgres"))
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	if _, err := admin.ExecContext(ctx, "CREATE DATABASE parley"); err != nil {
		t.Fatalf("pgtest: create database: %v", err)
	}
	dsn := cluster.DSN("parley")
	if err := db.Migrate(ctx, dsn); err != nil {
		t.Fatalf("pgtest: migrate: %v", err)
	}
	return cluster, dsn
}
