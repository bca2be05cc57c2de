package localpg

import (
	"context"
	"database/sql"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	_ "github.com/lib/pq"
)

// dataDir returns a fresh data directory path. As root, postgres runs as the postgres
// user, which must traverse every ancestor; t.TempDir's parent is 0700, so open it up.
func dataDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	if os.Geteuid() == 0 {
		for _, d := range []string{filepath.Dir(dir), dir} {
			if err := os.Chmod(d, 0o755); err != nil {
				t.Fatal(err)
			}
		}
	}
	return filepath.Join(dir, "data")
}

// start starts a cluster and stops it when the test ends.
func start(t *testing.T, cfg Config) *Cluster {
	t.Helper()
	began := time.Now()
	c, err := Start(t.Context(), cfg)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Logf("Start took %v (fast=%v)", time.Since(began).Round(time.Millisecond), cfg.Fast)
	t.Cleanup(func() {
		if err := c.Stop(context.Background()); err != nil {
			t.Errorf("Stop: %v", err)
		}
	})
	return c
}

func open(t *testing.T, dsn string) *sql.DB {
	t.Helper()
	db, err := sql.Open("postgres", dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func mustExec(t *testing.T, db *sql.DB, query string) {
	t.Helper()
	if _, err := db.ExecContext(t.Context(), query); err != nil {
		t.Fatalf("%s: %v", query, err)
	}
}

func queryString(t *testing.T, db *sql.DB, query string) string {
	t.Helper()
	var s string
	if err := db.QueryRowContext(t.Context(), query).Scan(&s); err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	return s
}

func TestDataSurvivesRestart(t *testing.T) {
	t.Parallel()
	dir := dataDir(t)
	// Default (durable) settings here: this is how parley serve runs it.
	c := start(t, Config{DataDir: dir})

	db := open(t, c.DSN("postgres"))
	mustExec(t, db, "CREATE TABLE notes (body text)")
	mustExec(t, db, "INSERT INTO notes VALUES ('kept')")
	for _, tc := range []struct{ setting, want string }{
		{"listen_addresses", ""},
		{"server_encoding", "UTF8"},
		{"max_connections", "200"},
		{"fsync", "on"},
		{"current_user", Superuser},
	} {
		query := "SHOW " + tc.setting
		if tc.setting == "current_user" {
			query = "SELECT current_user"
		}
		if got := queryString(t, db, query); got != tc.want {
			t.Errorf("%s: got %q, want %q", tc.setting, got, tc.want)
		}
	}
	db.Close()
	initialized, err := os.Stat(filepath.Join(dir, "pgdata", "PG_VERSION"))
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Stop(t.Context()); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	if err := c.Stop(t.Context()); err != nil {
		t.Fatalf("second Stop: got %v, want nil", err)
	}

	c2 := start(t, Config{DataDir: dir})
	if c2.DSN("postgres") != c.DSN("postgres") {
		t.Errorf("DSN changed across restart: got %q, want %q", c2.DSN("postgres"), c.DSN("postgres"))
	}
	if got := queryString(t, open(t, c2.DSN("postgres")), "SELECT body FROM notes"); got != "kept" {
		t.Errorf("after restart: got %q, want %q", got, "kept")
	}
	again, err := os.Stat(filepath.Join(dir, "pgdata", "PG_VERSION"))
	if err != nil {
		t.Fatal(err)
	}
	if !again.ModTime().Equal(initialized.ModTime()) {
		t.Errorf("second Start ran initdb again")
	}
}

// TestKillThenRestartRecovers covers a crash: postgres gone without a checkpoint, and a
// postmaster.pid left behind naming a process that no longer exists.
func TestKillThenRestartRecovers(t *testing.T) {
	t.Parallel()
	dir := dataDir(t)
	c := start(t, Config{DataDir: dir, Fast: true})
	db := open(t, c.DSN("postgres"))
	mustExec(t, db, "CREATE TABLE notes (body text)")
	mustExec(t, db, "SET synchronous_commit = on")
	mustExec(t, db, "INSERT INTO notes VALUES ('committed')")
	dsn := c.DSN("postgres")
	pidFile := filepath.Join(dir, "pgdata", "postmaster.pid")
	stale, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatal(err)
	}

	if err := c.Kill(); err != nil {
		t.Fatalf("Kill: %v", err)
	}
	if err := db.PingContext(t.Context()); err == nil {
		t.Fatal("ping after Kill: got nil error, want postgres gone")
	}
	// An immediate shutdown still removes postmaster.pid; a crash would not.
	if err := os.WriteFile(pidFile, stale, 0o600); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(filepath.Dir(pidFile)); err != nil {
		t.Fatal(err)
	} else if st, ok := fi.Sys().(*syscall.Stat_t); ok { // as root, it is postgres's file
		if err := os.Chown(pidFile, int(st.Uid), int(st.Gid)); err != nil {
			t.Fatal(err)
		}
	}

	if err := c.Restart(t.Context()); err != nil {
		t.Fatalf("Restart after Kill: %v", err)
	}
	if got := queryString(t, open(t, dsn), "SELECT body FROM notes"); got != "committed" {
		t.Errorf("after crash recovery: got %q, want %q", got, "committed")
	}
	if err := c.Kill(); err != nil { // Kill twice, then Stop: both no-ops
		t.Fatalf("Kill: %v", err)
	}
	if err := c.Kill(); err != nil {
		t.Fatalf("second Kill: got %v, want nil", err)
	}
}

// TestRestartAfterPostgresDied covers postgres going away behind our back: Restart still
// brings it back.
func TestRestartAfterPostgresDied(t *testing.T) {
	t.Parallel()
	c := start(t, Config{DataDir: dataDir(t), Fast: true})
	c.mu.Lock()
	p := c.proc
	c.mu.Unlock()
	if err := syscall.Kill(p.cmd.Process.Pid, syscall.SIGQUIT); err != nil {
		t.Fatal(err)
	}
	<-p.exited
	if err := c.Restart(t.Context()); err != nil {
		t.Fatalf("Restart: %v", err)
	}
	if err := open(t, c.DSN("postgres")).PingContext(t.Context()); err != nil {
		t.Errorf("after Restart: %v", err)
	}
}

func TestConcurrentStartsOnOneDataDir(t *testing.T) {
	t.Parallel()
	dir := dataDir(t)
	var wg sync.WaitGroup
	clusters := make([]*Cluster, 2)
	errs := make([]error, 2)
	for i := range 2 {
		wg.Go(func() { clusters[i], errs[i] = Start(t.Context(), Config{DataDir: dir, Fast: true}) })
	}
	wg.Wait()
	var started int
	for i := range 2 {
		if errs[i] == nil {
			started++
			t.Cleanup(func() { clusters[i].Stop(context.Background()) })
			continue
		}
		if !errors.Is(errs[i], ErrAlreadyRunning) {
			t.Errorf("losing Start: got %v, want ErrAlreadyRunning", errs[i])
		}
	}
	if started != 1 {
		t.Fatalf("got %d clusters started, want exactly 1 (errors: %v)", started, errs)
	}

	// A later Start while the first still runs fails the same way.
	_, err := Start(t.Context(), Config{DataDir: dir, Fast: true})
	if !errors.Is(err, ErrAlreadyRunning) {
		t.Errorf("Start while running: got %v, want ErrAlreadyRunning", err)
	}
}

// TestOrphanedPostgresIsReported covers a parley that died and left its postgres running
// (the postmaster is in its own process group, so it survives): the data directory lock
// is gone with the dead process, and it is postgres that must refuse, clearly.
func TestOrphanedPostgresIsReported(t *testing.T) {
	t.Parallel()
	dir := dataDir(t)
	c := start(t, Config{DataDir: dir, Fast: true})
	c.mu.Lock()
	orphanPID := c.proc.cmd.Process.Pid
	c.proc.lock.Close() // as if our process had died
	c.mu.Unlock()

	_, err := Start(t.Context(), Config{DataDir: dir, Fast: true})
	if !errors.Is(err, ErrAlreadyRunning) {
		t.Fatalf("Start beside an orphaned postgres: got %v, want ErrAlreadyRunning", err)
	}
	if want := "pid " + strconv.Itoa(orphanPID); !strings.Contains(err.Error(), want) {
		t.Errorf("error %q does not name the running postgres (%s)", err, want)
	}
	// The orphan was left alone.
	if err := open(t, c.DSN("postgres")).PingContext(t.Context()); err != nil {
		t.Errorf("orphan no longer answers: %v", err)
	}
}

func TestMissingBinaries(t *testing.T) {
	t.Parallel()
	empty := t.TempDir()
	_, err := Start(t.Context(), Config{DataDir: dataDir(t), BinDir: empty})
	if !errors.Is(err, ErrNoBinaries) {
		t.Fatalf("got %v, want ErrNoBinaries", err)
	}
	for _, want := range []string{empty, "initdb", "postgres", "make deps", "apt-get install postgresql"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %q", err, want)
		}
	}
}

func TestLongDataDirGetsShortSocketDir(t *testing.T) {
	t.Parallel()
	dir := dataDir(t)
	dir = filepath.Join(dir, strings.Repeat("d", 100-len(dir)))
	c := start(t, Config{DataDir: dir, Fast: true})
	if !strings.HasPrefix(c.socketDir, "/tmp/parley-") {
		t.Errorf("socket dir: got %q, want one under /tmp", c.socketDir)
	}
	if got := queryString(t, open(t, c.DSN("postgres")), "SELECT 'ok'"); got != "ok" {
		t.Errorf("got %q, want ok", got)
	}
	if err := c.Stop(t.Context()); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(c.socketDir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("socket dir %s left behind after Stop (stat: %v)", c.socketDir, err)
	}
}

func TestRootNeedsTraversableAncestors(t *testing.T) {
	t.Parallel()
	if os.Geteuid() != 0 {
		t.Skip("only root runs postgres as another user")
	}
	closed := filepath.Join(filepath.Dir(dataDir(t)), "closed")
	if err := os.Mkdir(closed, 0o700); err != nil {
		t.Fatal(err)
	}
	_, err := Start(t.Context(), Config{DataDir: filepath.Join(closed, "data")})
	if err == nil {
		t.Fatal("got nil error, want one naming the untraversable directory")
	}
	for _, want := range []string{closed, "--data-dir"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %q", err, want)
		}
	}
	if fi, err := os.Stat(closed); err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("%s: mode changed or gone (%v, %v); it must be left alone", closed, fi.Mode(), err)
	}
}

func TestDSNQuoting(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ name, in, want string }{
		{"plain", "/tmp/x", "/tmp/x"},
		{"space", "/tmp/a b", "'/tmp/a b'"},
		{"quote", "it's", `'it\'s'`},
		{"empty", "", "''"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := dsnValue(tc.in); got != tc.want {
				t.Errorf("dsnValue(%q): got %s, want %s", tc.in, got, tc.want)
			}
		})
	}
}

func TestCompareVersions(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		a, b string
		want int // sign
	}{
		{"15", "9.6", 1},
		{"9.6", "10", -1},
		{"15", "15", 0},
	} {
		got := compareVersions(tc.a, tc.b)
		if (got > 0) != (tc.want > 0) || (got < 0) != (tc.want < 0) {
			t.Errorf("compareVersions(%q, %q): got %d, want sign %d", tc.a, tc.b, got, tc.want)
		}
	}
}
