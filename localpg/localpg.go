// Package localpg runs a private PostgreSQL cluster from the locally installed binaries,
// so Parley and its tests need no database server set up by hand. The cluster lives in
// a directory of its own, listens only on a Unix socket there (never on TCP), and is
// created with initdb the first time it is started. It is Unix-only.
package localpg

import (
	"bufio"
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/lib/pq"
)

// Superuser is the name of the cluster's superuser role, the one DSN connects as.
const Superuser = "parley"

// port only names the socket file (.s.PGSQL.<port>): the socket directory is private to
// the cluster and there is no TCP listener, so the usual port cannot clash.
const port = 5432

// startTimeout bounds the wait for postgres to accept connections when the caller's
// context has no deadline. Crash recovery of a large dev database can take a while, so
// it is generous; a postgres that fails outright is noticed at once, not at the timeout.
const startTimeout = 2 * time.Minute

// ErrAlreadyRunning is returned by Start when the data directory is in use by another
// Cluster or by a postgres that is still running on it.
var ErrAlreadyRunning = errors.New("a postgres is already running on this data directory")

// ErrNoBinaries is returned by Start when the PostgreSQL server binaries are not found.
var ErrNoBinaries = errors.New("PostgreSQL server binaries not found")

// Config says where a Cluster lives and how it runs.
type Config struct {
	// DataDir holds the cluster (DataDir/pgdata), its log (postgres.log) and its socket
	// directory (DataDir/sock; if that path is too long for a Unix socket, a 0700
	// /tmp/parley-<hash of DataDir> instead). Created if missing.
	DataDir string
	// BinDir holds initdb and postgres. Empty means: `pg_config --bindir`, else the
	// newest /usr/lib/postgresql/*/bin, else a directory on PATH containing initdb.
	BinDir string
	// Logger receives lifecycle messages; nil discards them.
	Logger *slog.Logger
	// Fast trades durability for speed (fsync, synchronous_commit and full_page_writes
	// off): for tests, whose clusters are thrown away, never for data anyone keeps.
	Fast bool
	// Shared lets other processes use the cluster while this one runs it (Attach):
	// parley serve's cluster, which the CLI's commands work beside. The lock file
	// (DataDir/localpg.lock) then says so, with this process's pid.
	Shared bool
}

// Cluster is a running (or stopped) private PostgreSQL cluster. Its methods are safe
// for concurrent use.
type Cluster struct {
	dataDir   string
	pgdata    string
	socketDir string
	binDir    string
	fast      bool
	shared    bool
	log       *slog.Logger
	runAs     *runAs // nil unless we are root and postgres must run as another user

	mu   sync.Mutex
	proc *process // nil while stopped
}

// process is one run of the postmaster.
type process struct {
	cmd     *exec.Cmd
	exited  chan struct{} // closed once cmd.Wait has returned
	waitErr error         // cmd.Wait's result, valid after exited is closed
	lock    *os.File      // holds the data directory's flock while the postmaster runs
}

// Start starts the cluster in cfg.DataDir, creating it with initdb on first use, and
// returns once postgres accepts connections. It fails with ErrAlreadyRunning if the data
// directory is in use, and with ErrNoBinaries if PostgreSQL is not installed.
func Start(ctx context.Context, cfg Config) (*Cluster, error) {
	if cfg.DataDir == "" {
		return nil, errors.New("localpg: Config.DataDir is empty")
	}
	dataDir, err := filepath.Abs(cfg.DataDir)
	if err != nil {
		return nil, fmt.Errorf("localpg: data directory %q: %w", cfg.DataDir, err)
	}
	logger := cfg.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	c := &Cluster{
		dataDir: dataDir,
		pgdata:  filepath.Join(dataDir, "pgdata"),
		fast:    cfg.Fast,
		shared:  cfg.Shared,
		log:     logger.With("component", "localpg", "data_dir", dataDir),
	}
	c.binDir, err = findBinDir(cfg.BinDir, c.pgdata)
	if err != nil {
		return nil, fmt.Errorf("localpg: %w", err)
	}
	if os.Geteuid() == 0 {
		// Postgres refuses to run as root, so as root we run it as the postgres user.
		if c.runAs, err = lookupRunAs("postgres"); err != nil {
			return nil, fmt.Errorf("localpg: %w", err)
		}
	}
	if err := c.prepareDirs(); err != nil {
		return nil, fmt.Errorf("localpg: %w", err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.start(ctx); err != nil {
		return nil, fmt.Errorf("localpg: %w", err)
	}
	return c, nil
}

// DataDir returns the cluster's data directory, as an absolute path.
func (c *Cluster) DataDir() string { return c.dataDir }

// SocketDir returns the directory holding the cluster's Unix socket, for clients that
// take a host directory rather than DSN (libpq's host=, node-postgres's ?host=).
func (c *Cluster) SocketDir() string { return c.socketDir }

// BinDir returns the directory of the PostgreSQL programs the cluster runs, where the
// client programs of the same version (pgbench, psql) are too.
func (c *Cluster) BinDir() string { return c.binDir }

// DSN returns a lib/pq key=value connection string for database dbname, as the
// superuser over the cluster's Unix socket. It stays valid across Restart.
func (c *Cluster) DSN(dbname string) string {
	return fmt.Sprintf("host=%s port=%d user=%s dbname=%s sslmode=disable",
		dsnValue(c.socketDir), port, Superuser, dsnValue(dbname))
}

// Stop shuts postgres down the "fast" way (SIGINT: active transactions are rolled back,
// then a checkpoint) and waits for it to exit. If ctx ends first, postgres is killed and
// ctx's error returned. Stopping a stopped cluster does nothing.
func (c *Cluster) Stop(ctx context.Context) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.stop(ctx); err != nil {
		return fmt.Errorf("localpg: stop: %w", err)
	}
	return nil
}

// Kill stops postgres the "immediate" way (SIGQUIT): no checkpoint, every session cut
// off, so the next start runs crash recovery, as after a crash. For fault tests;
// Restart brings it back.
func (c *Cluster) Kill() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	p := c.proc
	if p == nil {
		return nil
	}
	c.proc = nil
	defer p.release()
	p.halt()
	c.log.Info("postgres killed", "pid", p.cmd.Process.Pid)
	return nil
}

// Restart stops postgres if it is running (fast shutdown) and starts it again on the same
// data directory. After Kill it exercises crash recovery. DSNs stay valid.
func (c *Cluster) Restart(ctx context.Context) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	// A postgres that died on its own (the fault a test may be simulating) makes stop
	// report an error, yet is exactly what Restart should recover from.
	stopErr := c.stop(ctx)
	if stopErr != nil {
		c.log.Warn("stopping postgres for restart", "err", stopErr)
	}
	if err := c.start(ctx); err != nil {
		return fmt.Errorf("localpg: restart: %w", errors.Join(stopErr, err))
	}
	return nil
}

// DefaultDataDir returns where Parley keeps its cluster when told nothing else:
// $XDG_DATA_HOME/parley, else ~/.local/share/parley. As root it is /var/lib/parley,
// because postgres then runs as the postgres user, which cannot traverse /root (0700).
func DefaultDataDir() (string, error) {
	if os.Geteuid() == 0 {
		return "/var/lib/parley", nil
	}
	if dir := os.Getenv("XDG_DATA_HOME"); filepath.IsAbs(dir) {
		return filepath.Join(dir, "parley"), nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("localpg: default data directory: %w", err)
	}
	return filepath.Join(home, ".local", "share", "parley"), nil
}

// start runs initdb if needed, then the postmaster, and waits until it is ready.
// c.mu must be held.
func (c *Cluster) start(ctx context.Context) (err error) {
	began := time.Now()
	lock, err := c.lockDataDir()
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			lock.Close()
		}
	}()
	if err := c.makeSocketDir(); err != nil {
		return err
	}
	logFile, err := c.openLog()
	if err != nil {
		return err
	}
	// The children hold their own descriptors for the log; ours is not needed after Start.
	defer logFile.Close()

	if _, err := os.Stat(filepath.Join(c.pgdata, "PG_VERSION")); errors.Is(err, os.ErrNotExist) {
		if err := c.initdb(ctx, logFile); err != nil {
			return err
		}
	} else if err != nil {
		return fmt.Errorf("check for an existing cluster: %w", err)
	}

	args := []string{
		"-D", c.pgdata,
		"-k", c.socketDir,
		"-c", "listen_addresses=",
		"-c", "port=" + strconv.Itoa(port),
		// Tests run many databases in parallel, each with its own connection pool.
		"-c", "max_connections=200",
	}
	if c.fast {
		args = append(args, "-c", "fsync=off", "-c", "synchronous_commit=off", "-c", "full_page_writes=off")
	}
	var p *process
	for attempt := 1; ; attempt++ {
		// The postgres of a parley that died may still be shutting down (see orphan.go).
		if err := c.waitForStoppingPostmaster(ctx); err != nil {
			return err
		}
		cmd := c.command(filepath.Join(c.binDir, "postgres"), args...)
		cmd.Stdout, cmd.Stderr = logFile, logFile
		setParentDeathSignal(cmd.SysProcAttr)
		if p, err = launch(cmd, lock); err != nil {
			return fmt.Errorf("start postgres: %w", err)
		}
		err = c.waitReady(ctx, p)
		if err == nil {
			break
		}
		// Whatever state it reached, this postmaster is not going to be used.
		p.halt()
		if !errors.Is(err, errOtherStopping) || attempt == 3 {
			return err
		}
	}
	c.proc = p
	c.log.Info("postgres started", "pid", p.cmd.Process.Pid, "socket_dir", c.socketDir,
		"fast", c.fast, "took", time.Since(began).Round(time.Millisecond))
	return nil
}

// stop shuts the postmaster down fast, if it runs. c.mu must be held.
func (c *Cluster) stop(ctx context.Context) error {
	p := c.proc
	if p == nil {
		return nil
	}
	c.proc = nil
	defer p.release()
	pid := p.cmd.Process.Pid
	select {
	case <-p.exited:
		return fmt.Errorf("postgres (pid %d) had already exited: %v%s", pid, p.waitErr, c.logTail())
	default:
	}
	if err := p.cmd.Process.Signal(syscall.SIGINT); err != nil {
		return fmt.Errorf("signal postgres (pid %d): %w", pid, err)
	}
	select {
	case <-p.exited:
	case <-ctx.Done():
		p.halt()
		return fmt.Errorf("postgres (pid %d) did not shut down in time, killed it: %w", pid, ctx.Err())
	}
	if p.waitErr != nil {
		return fmt.Errorf("postgres (pid %d) exited: %v%s", pid, p.waitErr, c.logTail())
	}
	if c.socketDir != filepath.Join(c.dataDir, "sock") {
		// The fallback socket directory is outside DataDir; don't leave it behind in /tmp.
		_ = os.Remove(c.socketDir)
	}
	c.log.Info("postgres stopped", "pid", pid)
	return nil
}

// halt stops the postmaster the "immediate" way and waits for it to exit. SIGQUIT rather
// than SIGKILL: postgres children are process group leaders of their own, out of reach of
// a signal to ours, and a killed postmaster's orphans keep its shared memory attached
// for a while, which makes the next start refuse. On SIGQUIT the postmaster takes them
// down itself (SIGKILLing stragglers after 5s) before exiting; SIGKILL is the last resort.
func (p *process) halt() {
	_ = p.cmd.Process.Signal(syscall.SIGQUIT)
	timer := time.NewTimer(15 * time.Second)
	defer timer.Stop()
	select {
	case <-p.exited:
	case <-timer.C:
		_ = p.cmd.Process.Kill()
		<-p.exited
	}
}

// release lets go of the data directory lock once the postmaster has exited.
func (p *process) release() { p.lock.Close() }

// lockDataDir takes an exclusive, non-blocking flock on DataDir/localpg.lock, so two
// Clusters, in this process or another, never initdb or start on one directory at once.
// The kernel drops the lock if we die; a postgres orphaned that way is caught by
// postgres's own postmaster.pid check.
func (c *Cluster) lockDataDir() (*os.File, error) {
	path := filepath.Join(c.dataDir, "localpg.lock")
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open lock file: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("%w: %s is locked by another parley (or another Cluster in this process)",
				ErrAlreadyRunning, c.dataDir)
		}
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	mode := "private"
	if c.shared {
		mode = sharedMode
	}
	// Who holds it, for Attach and for the error another process reports.
	if err := f.Truncate(0); err == nil {
		_, _ = f.WriteAt([]byte(fmt.Sprintf("%d %s\n", os.Getpid(), mode)), 0)
	}
	return f, nil
}

// sharedMode marks the lock file of a shared cluster (Config.Shared).
const sharedMode = "shared"

// ErrNotShared is returned by Attach when the process running the cluster does not
// share it (a parley command rather than a server), or nothing runs it.
var ErrNotShared = errors.New("no shared postgres is running on this data directory")

// Attach returns the cluster that another process runs on cfg.DataDir and shares
// (Config.Shared: a parley serve), to connect to over its socket instead of starting
// a second postgres, which the data directory's lock forbids. Its Stop does nothing: the
// cluster stays its owner's. Only DataDir is read from cfg. It fails with ErrNotShared
// (saying what holds the directory) when no live process shares a cluster there.
func Attach(cfg Config) (*Cluster, error) {
	if cfg.DataDir == "" {
		return nil, errors.New("localpg: Config.DataDir is empty")
	}
	dataDir, err := filepath.Abs(cfg.DataDir)
	if err != nil {
		return nil, fmt.Errorf("localpg: data directory %q: %w", cfg.DataDir, err)
	}
	path := filepath.Join(dataDir, "localpg.lock")
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("%w: %s has no cluster running", ErrNotShared, dataDir)
	} else if err != nil {
		return nil, fmt.Errorf("localpg: %w", err)
	}
	defer f.Close()
	// A shared lock we can take means no process holds the exclusive one: nothing runs.
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_SH|syscall.LOCK_NB); err == nil {
		_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		return nil, fmt.Errorf("%w: %s has no cluster running", ErrNotShared, dataDir)
	}
	b, err := io.ReadAll(io.LimitReader(f, 256))
	if err != nil {
		return nil, fmt.Errorf("localpg: read %s: %w", path, err)
	}
	var pid int
	var mode string
	if _, err := fmt.Sscanf(string(b), "%d %s", &pid, &mode); err != nil || mode != sharedMode {
		holder := "another parley command"
		if pid > 0 {
			holder = fmt.Sprintf("%s (pid %d)", holder, pid)
		}
		return nil, fmt.Errorf("%w: %s is in use by %s, which does not share its postgres; wait for it to finish",
			ErrNotShared, dataDir, holder)
	}
	c := &Cluster{dataDir: dataDir, pgdata: filepath.Join(dataDir, "pgdata"), log: slog.New(slog.DiscardHandler)}
	c.socketDir = socketDirFor(dataDir)
	if _, err := os.Stat(filepath.Join(c.socketDir, socketName())); err != nil {
		return nil, fmt.Errorf("%w: the server using %s (pid %d) has no socket in %s yet", ErrNotShared, dataDir, pid, c.socketDir)
	}
	return c, nil
}

// openLog opens a fresh DataDir/postgres.log for this run, keeping the previous run's
// as postgres.log.1: after a crash, that is the log worth reading.
func (c *Cluster) openLog() (*os.File, error) {
	path := c.logPath()
	if err := os.Rename(path, path+".1"); err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("rotate postgres log: %w", err)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open postgres log: %w", err)
	}
	if err := c.runAs.chown(path); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

func (c *Cluster) logPath() string { return filepath.Join(c.dataDir, "postgres.log") }

// initdb creates the cluster in a scratch directory and renames it into place, so an
// interrupted initdb never leaves a half-made pgdata that later starts would trip over.
func (c *Cluster) initdb(ctx context.Context, logFile *os.File) error {
	tmp := c.pgdata + ".initdb"
	if err := os.RemoveAll(tmp); err != nil {
		return fmt.Errorf("remove leftover %s: %w", tmp, err)
	}
	c.log.Info("creating PostgreSQL cluster", "pgdata", c.pgdata, "bin_dir", c.binDir)
	args := []string{
		"-D", tmp,
		"-U", Superuser,
		"-E", "UTF8",
		// Only the local socket exists, and only its owner can reach it (the socket
		// directory is 0700), so trust there is safe; anything over TCP is refused.
		"--auth-local=trust",
		"--auth-host=reject",
	}
	// A fixed locale keeps sorting and case rules the same on every machine instead of
	// following whatever LANG the caller had. C.UTF-8 ships with glibc and musl.
	if _, err := os.Stat("/usr/lib/locale/C.utf8"); err == nil {
		args = append(args, "--locale=C.UTF-8")
	} else {
		args = append(args, "--no-locale")
	}
	if c.fast {
		args = append(args, "--no-sync")
	}
	cmd := c.command(filepath.Join(c.binDir, "initdb"), args...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := runContext(ctx, cmd); err != nil {
		return fmt.Errorf("initdb: %w%s", err, c.logTail())
	}
	// Should anyone start this cluster by hand (pg_ctl), it must still stay off TCP.
	conf, err := os.OpenFile(filepath.Join(tmp, "postgresql.conf"), os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		return fmt.Errorf("initdb: %w", err)
	}
	_, err = io.WriteString(conf, "\n# Added by parley's localpg: this cluster is private, Unix socket only.\nlisten_addresses = ''\n")
	if cerr := conf.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("initdb: configure: %w", err)
	}
	if err := os.Rename(tmp, c.pgdata); err != nil {
		return fmt.Errorf("initdb: %w", err)
	}
	return nil
}

// runContext runs cmd, killing it if ctx ends first.
func runContext(ctx context.Context, cmd *exec.Cmd) error {
	if err := cmd.Start(); err != nil {
		return err
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-done
		return ctx.Err()
	}
}

// command prepares a PostgreSQL program to run as the right user, in its own process
// group: a Ctrl-C at the terminal then reaches parley only, which stops postgres cleanly
// instead of postgres dying under it.
func (c *Cluster) command(path string, args ...string) *exec.Cmd {
	cmd := exec.Command(path, args...)
	// The server's own cwd must be readable by it; the caller's may be /root.
	cmd.Dir = c.dataDir
	cmd.Env = serverEnv()
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if c.runAs != nil {
		cmd.SysProcAttr.Credential = c.runAs.cred
	}
	return cmd
}

// serverEnv is our environment without PG* variables: PGDATA, PGPORT and friends meant
// for some other server must not steer ours.
func serverEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "PG") {
			env = append(env, kv)
		}
	}
	return env
}

// waitReady polls until the postmaster we started reports itself ready in
// postmaster.pid and answers a connection, until it exits, or until the deadline.
// Checking the pid in postmaster.pid matters: an orphaned postgres on the same
// directory would answer on the same socket until ours gives up on the lock file.
func (c *Cluster) waitReady(ctx context.Context, p *process) error {
	ctx, cancel := context.WithTimeout(ctx, startTimeout) // a shorter ctx deadline wins
	defer cancel()
	connector, err := pq.NewConnector(c.DSN("postgres"))
	if err != nil {
		return fmt.Errorf("wait for postgres: %w", err)
	}
	db := sql.OpenDB(connector)
	defer db.Close()
	pid := p.cmd.Process.Pid
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	var lastErr error
	for {
		select {
		case <-p.exited:
			if other := c.runningPID(); other != 0 && other != pid {
				if c.pidFileStatus() == "stopping" {
					return fmt.Errorf("%w (pid %d)", errOtherStopping, other)
				}
				return fmt.Errorf("%w: postgres pid %d runs on %s; stop it (kill -INT %d) or wait for the parley using it to exit",
					ErrAlreadyRunning, other, c.pgdata, other)
			}
			return fmt.Errorf("postgres exited during startup: %v%s", p.waitErr, c.logTail())
		case <-ctx.Done():
			return fmt.Errorf("postgres did not accept connections in time (last error: %v): %w%s",
				lastErr, ctx.Err(), c.logTail())
		case <-tick.C:
		}
		ready, err := c.pidFileReady(pid)
		if !ready {
			lastErr = err
			continue
		}
		pingCtx, cancelPing := context.WithTimeout(ctx, time.Second)
		lastErr = db.PingContext(pingCtx)
		cancelPing()
		if lastErr == nil {
			return nil
		}
	}
}

// pidFileReady reports whether postmaster.pid names pid with status "ready", as pg_ctl
// checks it (line 1: pid, line 8: status).
func (c *Cluster) pidFileReady(pid int) (bool, error) {
	lines, err := readPIDFile(c.pgdata)
	if err != nil {
		return false, err
	}
	if len(lines) < 8 || lines[0] != strconv.Itoa(pid) {
		return false, errors.New("postmaster.pid not written yet")
	}
	if status := strings.TrimSpace(lines[7]); status != "ready" {
		return false, fmt.Errorf("postmaster status %q", status)
	}
	return true, nil
}

// runningPID returns the pid in postmaster.pid if that process is alive, else 0. It is
// consulted only after postgres itself refused to start, so it never second-guesses
// postgres's own stale-lock handling.
func (c *Cluster) runningPID() int {
	lines, err := readPIDFile(c.pgdata)
	if err != nil || len(lines) == 0 {
		return 0
	}
	pid, err := strconv.Atoi(lines[0])
	if err != nil || pid <= 0 {
		return 0
	}
	if err := syscall.Kill(pid, 0); err != nil && !errors.Is(err, syscall.EPERM) {
		return 0
	}
	return pid
}

func readPIDFile(pgdata string) ([]string, error) {
	b, err := os.ReadFile(filepath.Join(pgdata, "postmaster.pid"))
	if err != nil {
		return nil, err
	}
	return strings.Split(string(b), "\n"), nil
}

// logTail returns the last lines of the postgres log, formatted to end an error
// message, so a failed start explains itself without a trip to the log file.
func (c *Cluster) logTail() string {
	f, err := os.Open(c.logPath())
	if err != nil {
		return ""
	}
	defer f.Close()
	const keep = 15
	var lines []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		lines = append(lines, sc.Text())
		if len(lines) > keep {
			lines = lines[1:]
		}
	}
	if len(lines) == 0 {
		return ""
	}
	var b bytes.Buffer
	fmt.Fprintf(&b, "\n--- last lines of %s ---", c.logPath())
	for _, l := range lines {
		b.WriteString("\n" + l)
	}
	return b.String()
}

// dsnValue quotes a key=value DSN value when it needs it, as lib/pq parses them.
func dsnValue(s string) string {
	if s != "" && !strings.ContainsAny(s, " '\\\t\n") {
		return s
	}
	return "'" + strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(s) + "'"
}
