// Package pgtest gives each test its own freshly migrated PostgreSQL database, so tests
// that use the database can run in parallel without seeing each other's rows.
//
// A package opts in from its TestMain:
//
//	func TestMain(m *testing.M) { pgtest.Main(m) }
//
// and each test calls NewDatabase. The server is TEST_DATABASE_URL (else DATABASE_URL)
// when set, whose role needs CREATEDB; otherwise a private cluster started with localpg
// for the test binary and removed when it ends.
package pgtest

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/lib/pq"

	"github.com/parley-dev/parley/db"
	"github.com/parley-dev/parley/localpg"
)

// server is the database server of one test binary.
type server struct {
	cluster  *localpg.Cluster // nil with an external server
	dataDir  string           // the local cluster's directory, removed at teardown
	watchdog *exec.Cmd        // stops the local cluster if this process dies abruptly
	wakeDog  io.Closer        // the watchdog's stdin; held open until tearDown
	admin    *sql.DB          // for CREATE/DROP DATABASE
	dsnFor   func(dbname string) string
	template string

	// createMu serializes CREATE DATABASE ... TEMPLATE. Postgres refuses to copy a
	// template anyone is connected to, and the template admits no connections after
	// setUp; concurrent copies of it do succeed (checked on PostgreSQL 15), so this only
	// keeps parallel tests' copies from competing for I/O.
	createMu sync.Mutex
	seq      atomic.Int64
	stopOnce sync.Once
}

// current is set by Main; NewDatabase without Main is a setup mistake, reported as such.
var current *server

// Main sets up the database server, runs the tests and tears the server down, then
// exits. Call it from TestMain. If the server cannot be set up, no test runs.
func Main(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	s, err := setUp(ctx)
	cancel()
	if err != nil {
		fmt.Fprintf(os.Stderr, "pgtest: %v\n", err)
		return 1
	}
	current = s
	// Deferred so a panic in this goroutine still stops the cluster. A panic or timeout
	// in a test goroutine ends the process without running this; the watchdog covers that.
	defer s.tearDown()
	return m.Run()
}

// NewDatabase creates a fresh database for t from the migrated template and returns its
// lib/pq DSN. The database is dropped, with any connections still open to it, when t ends.
func NewDatabase(t testing.TB) string {
	t.Helper()
	s := current
	if s == nil {
		t.Fatal("pgtest: NewDatabase needs pgtest.Main in TestMain: func TestMain(m *testing.M) { pgtest.Main(m) }")
	}
	name := fmt.Sprintf("test_%d_%d", os.Getpid(), s.seq.Add(1))
	s.createMu.Lock()
	_, err := s.admin.ExecContext(t.Context(),
		"CREATE DATABASE "+pq.QuoteIdentifier(name)+" TEMPLATE "+pq.QuoteIdentifier(s.template))
	s.createMu.Unlock()
	if err != nil {
		t.Fatalf("pgtest: create database %s: %v", name, err)
	}
	t.Cleanup(func() {
		// t.Context is already cancelled when cleanups run.
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if _, err := s.admin.ExecContext(ctx, "DROP DATABASE IF EXISTS "+pq.QuoteIdentifier(name)+" WITH (FORCE)"); err != nil {
			t.Errorf("pgtest: drop database %s: %v", name, err)
		}
	})
	return s.dsnFor(name)
}

// Cluster returns the test binary's local cluster, or nil with an external server. It is
// shared by every test in the binary: a test that stops or kills it must not call
// t.Parallel, and must Restart it before returning, or later tests fail.
func Cluster() *localpg.Cluster {
	if current == nil {
		return nil
	}
	return current.cluster
}

func setUp(ctx context.Context) (_ *server, err error) {
	s := &server{template: fmt.Sprintf("parley_template_%d", os.Getpid())}
	defer func() {
		if err != nil {
			s.tearDown()
		}
	}()
	adminDSN := os.Getenv("TEST_DATABASE_URL")
	if adminDSN == "" {
		adminDSN = os.Getenv("DATABASE_URL")
	}
	if adminDSN != "" {
		if strings.HasPrefix(adminDSN, "postgres://") || strings.HasPrefix(adminDSN, "postgresql://") {
			if adminDSN, err = pq.ParseURL(adminDSN); err != nil {
				return nil, fmt.Errorf("TEST_DATABASE_URL: %w", err)
			}
		}
		// In a key=value DSN a repeated key overrides the earlier one.
		s.dsnFor = func(dbname string) string { return adminDSN + " dbname=" + quoteDSNValue(dbname) }
	} else {
		if err := s.startCluster(ctx); err != nil {
			return nil, err
		}
		adminDSN = s.cluster.DSN("postgres")
		s.dsnFor = s.cluster.DSN
	}

	s.admin, err = sql.Open("postgres", adminDSN)
	if err != nil {
		return nil, fmt.Errorf("connect: %w", err)
	}
	template := pq.QuoteIdentifier(s.template)
	if _, err := s.admin.ExecContext(ctx, "CREATE DATABASE "+template); err != nil {
		return nil, fmt.Errorf("create template database: %w", err)
	}
	if err := db.Migrate(ctx, s.dsnFor(s.template)); err != nil {
		return nil, fmt.Errorf("template database: %w", err)
	}
	// Copying a template fails while anyone is connected to it; closing the door makes
	// sure no stray connection can turn up later.
	if _, err := s.admin.ExecContext(ctx, "ALTER DATABASE "+template+" ALLOW_CONNECTIONS false"); err != nil {
		return nil, fmt.Errorf("template database: %w", err)
	}
	return s, nil
}

// startCluster starts a throwaway cluster in a new temporary directory, with a watchdog.
func (s *server) startCluster(ctx context.Context) error {
	dir, err := os.MkdirTemp(clusterParent(), "parley-pgtest-")
	if err != nil {
		return fmt.Errorf("cluster directory: %w", err)
	}
	s.dataDir = dir
	s.cluster, err = localpg.Start(ctx, localpg.Config{DataDir: dir, Fast: true})
	if err != nil {
		return err
	}
	s.watchdog, s.wakeDog, err = startWatchdog(dir)
	if err != nil {
		return fmt.Errorf("start cluster watchdog: %w", err)
	}
	return nil
}

// watchdogScript waits for EOF on stdin, which comes when the test binary exits however
// it exits (a test panic or -timeout skips TestMain's teardown), then stops the cluster
// and removes its directory. It reads the postmaster pid only then, since a fault test
// may have restarted the cluster, and checks the process is still a postgres first.
const watchdogScript = `
read -r _
pid=$(head -n 1 "$1/pgdata/postmaster.pid" 2>/dev/null)
if [ -n "$pid" ]; then
	if [ -r "/proc/$pid/comm" ]; then comm=$(cat "/proc/$pid/comm"); else comm=$(ps -o comm= -p "$pid" 2>/dev/null); fi
	case "$comm" in
	*postgres*)
		kill -INT "$pid" 2>/dev/null
		i=0
		while kill -0 "$pid" 2>/dev/null && [ "$i" -lt 300 ]; do sleep 0.1; i=$((i + 1)); done
		kill -KILL "$pid" 2>/dev/null
		;;
	esac
fi
rm -rf "$1"
`

func startWatchdog(dir string) (*exec.Cmd, io.Closer, error) {
	cmd := exec.Command("/bin/sh", "-c", watchdogScript, "pgtest-watchdog", dir)
	// Its own process group, so the terminal's Ctrl-C, which ends the test binary, does
	// not end the watchdog before it has done its job.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	// We never write; the pipe's write end closing when we exit is the signal. Go opens
	// it close-on-exec, so no other child keeps it open.
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, nil, err
	}
	return cmd, stdin, nil
}

// tearDown drops the template and stops and removes the local cluster. It runs once.
func (s *server) tearDown() {
	s.stopOnce.Do(func() {
		var errs []error
		if s.watchdog != nil {
			// Our own orderly stop follows; the watchdog must not race it.
			_ = s.watchdog.Process.Kill()
			_ = s.wakeDog.Close()
			_ = s.watchdog.Wait()
		}
		if s.admin != nil {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			if s.cluster == nil { // a local cluster is removed whole
				_, err := s.admin.ExecContext(ctx, "DROP DATABASE IF EXISTS "+pq.QuoteIdentifier(s.template)+" WITH (FORCE)")
				errs = append(errs, err)
			}
			errs = append(errs, s.admin.Close())
			cancel()
		}
		if s.cluster != nil {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			errs = append(errs, s.cluster.Stop(ctx))
			cancel()
		}
		if s.dataDir != "" {
			errs = append(errs, os.RemoveAll(s.dataDir))
		}
		if err := errors.Join(errs...); err != nil {
			fmt.Fprintf(os.Stderr, "pgtest: tear down: %v\n", err)
		}
	})
}

// quoteDSNValue quotes a key=value DSN value when it needs it, as lib/pq parses them.
func quoteDSNValue(s string) string {
	if s != "" && !strings.ContainsAny(s, " '\\\t\n") {
		return s
	}
	return "'" + strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(s) + "'"
}
