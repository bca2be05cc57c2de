// Command bench is `make bench` (scripts/bench.sh builds and runs it): it measures
// Parley beside the raw SQL doing the same database work and beside PostGraphile serving
// the same tables, all on one machine in one run so that the ratios hold on a noisy
// machine, and writes a Markdown report and an SVG chart.
//
// It starts its own PostgreSQL (localpg, durability off: the figures measure software,
// not the disk), a Parley from the binary given with -parley and a PostGraphile from
// bench/node_modules, all on loopback, and drives them with its own load generator:
// N concurrent clients, each sending its next request when the last one is answered,
// for a fixed time. Every figure is the median of -runs runs; each run measures every
// target once, in an order that rotates from run to run.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/jmoiron/sqlx"
	_ "github.com/lib/pq"

	"github.com/parley-dev/parley"
	"github.com/parley-dev/parley/bench/internal/parleyproc"
	"github.com/parley-dev/parley/bench/internal/readtrace"
	"github.com/parley-dev/parley/localpg"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

// config is what the flags say.
type config struct {
	parleyBin    string
	postgraphile string // PostGraphile's cli.js
	node         string
	out, chart   string
	resultsJSON  string
	before       string // results of an earlier run to show beside this one
	profileDir   string
	workDir      string
	keep         bool
	runs         int
	clients      int
	warmup       time.Duration
	duration     time.Duration
	profileFor   time.Duration
	pgWorkers    int
	only         string
	fanout       string
	fanoutArgs   string
	sections     sectionFlags
	importMsgs   int
	scaleMsgs    int
	scaleConvs   int
	importRuns   int
	from         string
	commandLine  string
}

func parseFlags(args []string, stderr io.Writer) (*config, error) {
	cfg := &config{}
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&cfg.parleyBin, "parley", "bin/parley", "the parley binary to measure")
	fs.StringVar(&cfg.postgraphile, "postgraphile", "bench/node_modules/postgraphile/cli.js", "PostGraphile's CLI script")
	fs.StringVar(&cfg.node, "node", "node", "the Node.js binary")
	fs.StringVar(&cfg.out, "out", "bench/report.md", "where to write the Markdown report")
	fs.StringVar(&cfg.chart, "chart", "bench/report.svg", "where to write the SVG chart")
	fs.StringVar(&cfg.resultsJSON, "json", "bench/results.json", "where to write the raw results (every run's samples)")
	fs.StringVar(&cfg.before, "before", "", "results JSON of an earlier run (e.g. before optimizations) to show beside this one")
	fs.StringVar(&cfg.profileDir, "profiles", "bench", "where to keep the CPU profiles of Parley under load")
	fs.StringVar(&cfg.workDir, "work", "", "directory for the database and logs (default: a new temporary directory, removed at the end)")
	fs.BoolVar(&cfg.keep, "keep", false, "keep the work directory")
	fs.IntVar(&cfg.runs, "runs", 5, "runs; every figure is the median of the runs")
	fs.IntVar(&cfg.clients, "clients", 16, "concurrent clients of the throughput measurements")
	fs.DurationVar(&cfg.warmup, "warmup", 500*time.Millisecond, "unrecorded warm-up before each measurement")
	fs.DurationVar(&cfg.duration, "duration", 3*time.Second, "recorded time of each measurement")
	fs.DurationVar(&cfg.profileFor, "profile-for", 8*time.Second, "how long to profile Parley under load (0: no profiles)")
	fs.IntVar(&cfg.pgWorkers, "postgraphile-workers", 1, "PostGraphile processes (its --cluster-workers; 1: one process)")
	fs.StringVar(&cfg.fanout, "fanout", "", "the realtime fan-out benchmark's binary (bench/fanout), run after the rest and its report included; empty: not run")
	fs.StringVar(&cfg.fanoutArgs, "fanout-args", "-messages 100", "arguments for the fan-out benchmark, besides -parley")
	fs.Var(&cfg.sections, "section", "title=file: a benchmark of its own whose Markdown report (file) is included under title (repeatable; file empty: it failed); scripts/bench.sh runs them")
	fs.IntVar(&cfg.importMsgs, "import-messages", 100000, "messages of the generated Claude Code session imported with parley import")
	fs.IntVar(&cfg.importRuns, "import-runs", 2, "imports of it to time (0: none)")
	fs.IntVar(&cfg.scaleMsgs, "scale-messages", 1000000, "messages of the large database of the scale rows (0: no scale rows)")
	fs.IntVar(&cfg.scaleConvs, "scale-conversations", 100000, "conversations of the large database of the scale rows")
	fs.StringVar(&cfg.from, "from", "", "measure nothing: write the report and chart again from these results (JSON of an earlier run)")
	fs.StringVar(&cfg.only, "only", "", "measure only these workloads (comma-separated: save, history, save-mixed, typename, export, scale or one scale-* row), for a quick look; import alone times only parley import of the generated session, with -import-runs runs, and writes no report")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected arguments: %q", fs.Args())
	}
	if cfg.runs < 1 || cfg.clients < 1 {
		return nil, errors.New("-runs and -clients must be at least 1")
	}
	cfg.commandLine = strings.Join(append([]string{"bench"}, args...), " ")
	return cfg, nil
}

func run(ctx context.Context, args []string, stdout io.Writer) error {
	cfg, err := parseFlags(args, os.Stderr)
	if err != nil {
		return err
	}
	logf := func(format string, a ...any) {
		fmt.Fprintf(stdout, "%s  %s\n", time.Now().Format("15:04:05"), fmt.Sprintf(format, a...))
	}
	if cfg.from != "" {
		res, err := readResults(cfg.from)
		if err != nil {
			return err
		}
		if len(cfg.sections) > 0 { // sections given again replace the run's
			res.Sections = readSections(cfg.sections)
		}
		return writeReport(cfg, res, logf)
	}
	began := time.Now()
	if cfg.only == "import" {
		return importOnly(ctx, cfg, began, logf)
	}
	e, err := setUp(ctx, cfg, logf)
	if e != nil {
		defer e.tearDown(logf)
	}
	if err != nil {
		return err
	}
	res := &results{
		Started:    began.UTC(),
		Machine:    machine(),
		Versions:   e.versions,
		Runs:       cfg.runs,
		Clients:    cfg.clients,
		Warmup:     cfg.warmup.String(),
		Duration:   cfg.duration.String(),
		Samples:    map[string][]sample{},
		Profiles:   map[string]string{},
		Breakdowns: map[string][]string{},
		Postgres:   "localpg, fsync=off synchronous_commit=off full_page_writes=off (durability off: the figures measure software, not the disk)",
		PGWorkers:  cfg.pgWorkers,
	}
	if e.scaleSetUp {
		res.ScaleDatabase = fmt.Sprintf("%d messages in %d conversations (generated in SQL with generate_series, then VACUUM ANALYZE)", cfg.scaleMsgs, cfg.scaleConvs)
	}

	plan := e.plan(cfg)
	if cfg.only != "" {
		plan = slices.DeleteFunc(plan, func(g []measurement) bool {
			w := strings.Split(g[0].key, "/")[0]
			return !slices.ContainsFunc(strings.Split(cfg.only, ","), func(o string) bool { return w == o || strings.HasPrefix(w, o+"-") })
		})
	}
	for r := range cfg.runs {
		logf("run %d of %d", r+1, cfg.runs)
		for _, group := range plan {
			if group[0].interleave {
				if err := e.checkAlive(); err != nil {
					return err
				}
				ops := make([]op, len(group))
				for i, m := range group {
					ops[i] = m.op
				}
				ss, err := measureInterleaved(ctx, cfg.warmup, cfg.duration, ops)
				if err != nil {
					return fmt.Errorf("%s: %w", group[0].key, err)
				}
				for i, m := range group {
					logf("  %-28s p50 %8s  p99 %8s  %8.0f req/s", m.key, fmtDur(ss[i].P50), fmtDur(ss[i].P99), ss[i].Throughput)
					res.Samples[m.key] = append(res.Samples[m.key], ss[i])
				}
				continue
			}
			// Rotate the targets of each group from run to run, so that none is always
			// measured first (or right after the heaviest).
			n := len(group)
			for i := range n {
				m := group[(i+r)%n]
				if err := e.checkAlive(); err != nil {
					return err
				}
				var s sample
				if m.run != nil {
					s, err = m.run(ctx, m.clients, cfg.warmup, cfg.duration)
				} else {
					s, err = measure(ctx, m.clients, cfg.warmup, cfg.duration, m.op, e.cpuOf(m.key))
				}
				if err != nil {
					return fmt.Errorf("%s: %w", m.key, err)
				}
				logf("  %-28s p50 %8s  p99 %8s  %8.0f req/s", m.key, fmtDur(s.P50), fmtDur(s.P99), s.Throughput)
				res.Samples[m.key] = append(res.Samples[m.key], s)
			}
		}
	}

	if err := e.measureAllocs(ctx, res, logf); err != nil {
		return err
	}
	if cfg.profileFor > 0 {
		for _, wl := range []string{"history", "save"} {
			m, ok := e.byKey(plan, keyOf(wl, cfg.clients, "parley"))
			if !ok {
				continue
			}
			if err := e.profile(ctx, cfg, m, res, logf); err != nil {
				return err
			}
		}
		if m, ok := e.byKey(plan, keyOf("history", 1, "parley")); ok {
			if err := e.traceReads(ctx, m, res, logf); err != nil {
				return err
			}
		}
	}
	if cfg.importRuns > 0 && cfg.only == "" {
		figs, err := e.measureImport(ctx, cfg, cfg.importMsgs, cfg.importRuns, logf)
		if err != nil {
			return err
		}
		res.Extra = append(res.Extra, figs...)
	}
	if cfg.fanout != "" && cfg.only == "" {
		md, cmdline, err := runFanout(ctx, cfg, logf)
		if err != nil {
			return err
		}
		res.Fanout = md
		e.commands = append(e.commands, cmdline)
	}
	res.Sections = readSections(cfg.sections)
	res.Commands = append([]string{"make bench    # scripts/bench.sh: npm ci in bench/ if needed, go build, then:", cfg.commandLine}, e.commands...)
	res.Elapsed = time.Since(began).Round(time.Second).String()

	if err := writeResults(cfg.resultsJSON, res); err != nil {
		return err
	}
	return writeReport(cfg, res, logf)
}

// importOnly is -only import: the import's figure alone, the quickest way to time
// `parley import` of the generated session (PostgreSQL only: no Parley server, no
// PostGraphile, no seeding). It prints the figure and writes no report: the results of
// a full run stay as they were.
func importOnly(ctx context.Context, cfg *config, began time.Time, logf func(string, ...any)) error {
	e, err := startCluster(ctx, cfg, logf)
	if e != nil {
		defer e.tearDown(logf)
	}
	if err != nil {
		return err
	}
	figs, err := e.measureImport(ctx, cfg, cfg.importMsgs, max(cfg.importRuns, 1), logf)
	if err != nil {
		return err
	}
	for _, f := range figs {
		logf("%s: %s (%s)", f.Name, f.Value, f.Note)
	}
	logf("took %s", time.Since(began).Round(time.Second))
	return nil
}

// writeReport writes the Markdown report and the chart of res.
func writeReport(cfg *config, res *results, logf func(string, ...any)) error {
	var before *results
	if cfg.before != "" {
		var err error
		if before, err = readResults(cfg.before); err != nil {
			return err
		}
	}
	rep := buildReport(res, before)
	if err := os.WriteFile(cfg.out, []byte(rep.markdown(filepath.Base(cfg.chart))), 0o644); err != nil {
		return err
	}
	if err := os.WriteFile(cfg.chart, []byte(rep.svg()), 0o644); err != nil {
		return err
	}
	logf("wrote %s and %s (results: %s, measured in %s)", cfg.out, cfg.chart, cfg.resultsJSON, res.Elapsed)
	return nil
}

// measurement is one workload against one target with a number of clients.
type measurement struct {
	key     string // workload/clients/target
	clients int
	op      op
	// run, when not nil, measures instead of op: a load generator of its own (pgbench).
	run func(ctx context.Context, clients int, warmup, d time.Duration) (sample, error)
	// interleave, in a group's first measurement, measures the group's ops together with
	// one client doing each in turn (measureInterleaved).
	interleave bool
}

func keyOf(workload string, clients int, target string) string {
	return fmt.Sprintf("%s/%d/%s", workload, clients, target)
}

// targets, in the order reports show them.
var targets = []string{"raw", "parley", "postgraphile"}

// plan lists the measurements of one run in groups whose members are compared with each
// other (the same workload and clients against each target).
func (e *env) plan(cfg *config) [][]measurement {
	var plan [][]measurement
	for _, workload := range []string{"save", "history"} {
		for _, clients := range []int{1, cfg.clients} {
			var group []measurement
			for _, target := range targets {
				group = append(group, measurement{key: keyOf(workload, clients, target), clients: clients, op: e.op(workload, target)})
			}
			if workload == "save" {
				group = append(group, measurement{key: keyOf(workload, clients, "raw+notify"), clients: clients, op: e.op(workload, "raw+notify")})
			}
			group = append(group, measurement{key: keyOf(workload, clients, "pgbench"), clients: clients,
				run: func(ctx context.Context, clients int, warmup, d time.Duration) (sample, error) {
					return e.pgbench.measure(ctx, workload, clients, warmup, d)
				}})
			plan = append(plan, group)
		}
	}
	// The transport's floor: one round trip through Parley that does nothing else.
	for _, clients := range []int{1, cfg.clients} {
		plan = append(plan, []measurement{{key: keyOf("typename", clients, "parley"), clients: clients, op: parleyTypename(e.parleyClient)}})
	}
	plan = append(plan, []measurement{{key: keyOf("save-mixed", 1, "parley"), clients: 1,
		op: parleySaveMixed(e.parleyClient, e.mixedConvIDs)}})
	plan = append(plan, e.exportPlan(e.exportID)...)
	return append(plan, e.scalePlan()...)
}

func (e *env) byKey(plan [][]measurement, key string) (measurement, bool) {
	for _, g := range plan {
		for _, m := range g {
			if m.key == key {
				return m, true
			}
		}
	}
	return measurement{}, false
}

func (e *env) op(workload, target string) op {
	switch workload + "/" + target {
	case "save/raw":
		return rawSave(e.sql, e.saveKeys["raw"])
	case "save/raw+notify":
		return rawSaveNotify(e.sql, e.saveKeys["raw"])
	case "save/parley":
		return parleySave(e.parleyClient, e.saveIDs["parley"])
	case "save/postgraphile":
		return postgraphileSave(e.pgClient, e.saveKeys["postgraphile"])
	case "history/raw":
		return rawHistory(e.sql, e.historyKey, 100)
	case "history/parley":
		return parleyHistory(e.parleyClient, e.historyID)
	case "history/postgraphile":
		return postgraphileHistory(e.pgClient, e.historyKey)
	}
	panic("no op for " + workload + "/" + target)
}

// cpuOf returns a reader of the CPU times of the parts measurement key involves: its
// server (none for raw SQL, whose work is the load generator's own), Postgres, and the
// load generator.
func (e *env) cpuOf(key string) func() cpuTimes {
	server := 0
	switch strings.Split(key, "/")[2] {
	case "parley":
		server = e.parley.cmd.Process.Pid
	case "postgraphile":
		server = e.pg.cmd.Process.Pid
	}
	postmaster := parleyproc.PostmasterPID(filepath.Join(e.cluster.DataDir(), "pgdata"))
	return func() cpuTimes {
		procs := parleyproc.ReadProcs()
		return cpuTimes{Server: parleyproc.TreeCPU(procs, server), Postgres: parleyproc.TreeCPU(procs, postmaster), Client: parleyproc.SelfCPU()}
	}
}

// env is everything the benchmark started.
type env struct {
	work      string
	removeDir bool
	cluster   *localpg.Cluster
	sql       *sqlx.DB

	parley       *proc
	parleyURL    string // the GraphQL endpoint
	debugURL     string // Parley's --debug-addr: pprof and expvar
	parleyClient *gqlClient
	pg           *proc
	pgURL        string
	pgClient     *gqlClient
	pgbench      *pgbench

	scale      []*scaleDB // the small and the large database of the scale rows
	scaleSetUp bool

	historyID, historyKey string              // the 100-message conversation read
	exportID              string              // the exportMessages-message conversation exported (seedExport)
	saveIDs, saveKeys     map[string][]string // per target, one conversation per client
	mixedConvIDs          []string

	versions map[string]string
	commands []string
}

// startCluster makes the work directory and starts the benchmark's PostgreSQL in it.
func startCluster(ctx context.Context, cfg *config, logf func(string, ...any)) (*env, error) {
	e := &env{versions: map[string]string{}}
	parleyBin, err := filepath.Abs(cfg.parleyBin)
	if err != nil {
		return nil, err
	}
	cfg.parleyBin = parleyBin
	e.work = cfg.workDir
	if e.work == "" {
		if e.work, err = os.MkdirTemp("", "parley-bench-"); err != nil {
			return nil, err
		}
		e.removeDir = !cfg.keep
	} else if err := os.MkdirAll(e.work, 0o755); err != nil {
		return nil, err
	}
	// As root, Postgres runs as the postgres user, which must traverse this directory.
	if err := os.Chmod(e.work, 0o755); err != nil {
		return e, err
	}

	logf("starting PostgreSQL in %s", e.work)
	e.cluster, err = localpg.Start(ctx, localpg.Config{DataDir: filepath.Join(e.work, "pg"), Fast: true})
	if err != nil {
		return e, err
	}
	e.versions["Parley"] = parleyRevision(cfg.parleyBin)
	e.versions["Go"] = runtime.Version()
	return e, nil
}

// setUp starts what the benchmark measures: PostgreSQL, Parley, PostGraphile, and the
// seeded databases.
func setUp(ctx context.Context, cfg *config, logf func(string, ...any)) (*env, error) {
	if _, err := os.Stat(cfg.postgraphile); err != nil {
		return nil, fmt.Errorf("PostGraphile is not installed (%v): run npm ci in bench/ (scripts/bench.sh does)", err)
	}
	e, err := startCluster(ctx, cfg, logf)
	if err != nil {
		return e, err
	}
	if err := createDatabase(ctx, e.cluster.DSN("postgres"), "parley"); err != nil {
		return e, err
	}
	dsn := e.cluster.DSN("parley")

	// Parley migrates the database as it starts.
	port, err := parleyproc.FreePort()
	if err != nil {
		return e, err
	}
	debugPort, err := parleyproc.FreePort()
	if err != nil {
		return e, err
	}
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	e.parleyURL = "http://" + addr + "/graphql"
	e.debugURL = fmt.Sprintf("http://127.0.0.1:%d", debugPort)
	argv := []string{cfg.parleyBin, "serve", "--addr", addr, "--database-url", dsn,
		"--debug-addr", fmt.Sprintf("127.0.0.1:%d", debugPort)}
	e.commands = append(e.commands, redactDSN(strings.Join(argv, " "), dsn))
	logf("starting Parley on %s", addr)
	e.parley, err = startProc(ctx, "parley", filepath.Join(e.work, "parley.log"), nil, argv, 60*time.Second,
		httpOK("http://"+addr+"/readyz"))
	if err != nil {
		return e, err
	}

	if e.sql, err = sqlx.Open("postgres", dsn); err != nil {
		return e, err
	}
	e.sql.SetMaxOpenConns(20) // as Parley's pool
	e.sql.SetMaxIdleConns(20)
	var pgVersion string
	if err := e.sql.GetContext(ctx, &pgVersion, `SHOW server_version`); err != nil {
		return e, err
	}
	e.versions["PostgreSQL"] = pgVersion

	e.parleyClient = newGQLClient(e.parleyURL, max(cfg.clients, 1))
	if err := e.seed(ctx, cfg, logf); err != nil {
		return e, err
	}
	pgbenchBin, err := findPgbench(e.cluster.BinDir())
	if err != nil {
		return e, err
	}
	if _, err := e.sql.ExecContext(ctx, pgbenchSetupSQL(cfg.clients)); err != nil {
		return e, fmt.Errorf("create pgbench's conversations: %w", err)
	}
	pgCPU := e.cpuOf(keyOf("save", 1, "raw"))
	e.pgbench = &pgbench{bin: pgbenchBin, work: e.work, cpu: pgCPU,
		conn:   []string{"-h", e.cluster.SocketDir(), "-p", dsnPort(dsn), "-U", localpg.Superuser, "parley"},
		script: map[string]string{"save": pgbenchSaveScript, "history": pgbenchHistoryScript},
		vars: map[string][]string{
			"save":    {"-D", "content=" + saveContent, "-D", "payload=" + savePayload},
			"history": {"-D", "conv=" + e.historyKey},
		}}
	e.versions["pgbench"] = commandVersion(`\(PostgreSQL\) (\S+)`, pgbenchBin, "--version")

	if _, err := e.sql.ExecContext(ctx, postgraphileSetupSQL); err != nil {
		return e, fmt.Errorf("create bench.add_message: %w", err)
	}
	if port, err = parleyproc.FreePort(); err != nil {
		return e, err
	}
	e.pgURL = fmt.Sprintf("http://127.0.0.1:%d/graphql", port)
	pgConn := "postgres:///parley?" + url.Values{"host": {e.cluster.SocketDir()}, "port": {dsnPort(dsn)}, "user": {localpg.Superuser}}.Encode()
	argv = []string{cfg.node, cfg.postgraphile, "--connection", pgConn, "--schema", "public,bench",
		"--host", "127.0.0.1", "--port", fmt.Sprint(port), "--disable-graphiql", "--disable-query-log",
		"--dynamic-json", "--no-setof-functions-contain-nulls", "--max-pool-size", "20"}
	if cfg.pgWorkers > 1 {
		argv = append(argv, "--cluster-workers", fmt.Sprint(cfg.pgWorkers))
	}
	e.commands = append(e.commands, "NODE_ENV=production "+strings.Join(argv, " "))
	logf("starting PostGraphile on 127.0.0.1:%d", port)
	e.pg, err = startProc(ctx, "postgraphile", filepath.Join(e.work, "postgraphile.log"), []string{"NODE_ENV=production"},
		argv, 60*time.Second, graphqlOK(e.pgURL))
	if err != nil {
		return e, err
	}
	e.pgClient = newGQLClient(e.pgURL, max(cfg.clients, 1))
	e.versions["Node.js"] = commandVersion(`v(\S+)`, cfg.node, "--version")
	e.versions["PostGraphile"] = commandVersion(`(\d+\.\d+\.\d+)`, cfg.node, cfg.postgraphile, "--version")

	if err := e.check(ctx); err != nil {
		return e, err
	}
	if cfg.scaleMsgs > 0 {
		if err := e.setUpScale(ctx, cfg, logf); err != nil {
			return e, fmt.Errorf("scale rows: %w", err)
		}
	}
	return e, nil
}

// seed creates the history that is read (100 messages of mixed variants, through
// Parley) and one conversation per client and target for the saves.
func (e *env) seed(ctx context.Context, cfg *config, logf func(string, ...any)) error {
	logf("seeding a 100-message conversation of mixed variants and %d conversations per target", cfg.clients)
	var err error
	if e.historyID, e.historyKey, err = e.createConversation(ctx, "history"); err != nil {
		return err
	}
	for i := range 100 {
		body := request(parleySaveQuery, map[string]any{"c": e.historyID, "i": mixedInput(i)})
		if _, err := e.parleyClient.post(ctx, 0, body); err != nil {
			return fmt.Errorf("seed message %d: %w", i, err)
		}
	}
	e.saveIDs, e.saveKeys = map[string][]string{}, map[string][]string{}
	for _, target := range append(slices.Clone(targets), "mixed") {
		for c := range cfg.clients {
			id, key, err := e.createConversation(ctx, fmt.Sprintf("save %s %d", target, c))
			if err != nil {
				return err
			}
			e.saveIDs[target] = append(e.saveIDs[target], id)
			e.saveKeys[target] = append(e.saveKeys[target], key)
		}
	}
	e.mixedConvIDs = e.saveIDs["mixed"]
	if e.exportID, err = e.seedExport(ctx, cfg, logf); err != nil {
		return err
	}
	return nil
}

func (e *env) createConversation(ctx context.Context, title string) (id, key string, err error) {
	b, err := e.parleyClient.post(ctx, 0, request(`mutation($t: String) { createConversation(title: $t) { id } }`, map[string]any{"t": title}))
	if err != nil {
		return "", "", err
	}
	var r struct {
		Data struct {
			CreateConversation struct{ ID string } `json:"createConversation"`
		} `json:"data"`
	}
	if err := json.Unmarshal(b, &r); err != nil {
		return "", "", err
	}
	id = r.Data.CreateConversation.ID
	key, ok := parley.ParseConversationID(id)
	if !ok {
		return "", "", fmt.Errorf("createConversation returned id %q", id)
	}
	return id, key, nil
}

// check does each operation once and checks that the three targets read the same rows
// and that every save writes one.
func (e *env) check(ctx context.Context) error {
	var p struct {
		Data struct {
			Conversation struct {
				Messages struct {
					Edges []struct {
						Node struct {
							ID       string `json:"id"`
							Position int    `json:"position"`
						} `json:"node"`
					} `json:"edges"`
				} `json:"messages"`
			} `json:"conversation"`
		} `json:"data"`
	}
	b, err := e.parleyClient.post(ctx, 0, request(parleyHistoryQuery, map[string]any{"c": e.historyID}))
	if err != nil {
		return err
	}
	if err := json.Unmarshal(b, &p); err != nil {
		return err
	}
	var g struct {
		Data struct {
			ConversationByID struct {
				MessagesByConversationID struct {
					Nodes []struct {
						ID       string `json:"id"`
						Position int    `json:"position"`
					} `json:"nodes"`
				} `json:"messagesByConversationId"`
			} `json:"conversationById"`
		} `json:"data"`
	}
	if b, err = e.pgClient.post(ctx, 0, request(postgraphileHistoryQuery, map[string]any{"id": e.historyKey})); err != nil {
		return err
	}
	if err := json.Unmarshal(b, &g); err != nil {
		return err
	}
	var rows []messageRow
	if err := e.sql.SelectContext(ctx, &rows, rawHistorySQL, e.historyKey); err != nil {
		return err
	}
	edges, nodes := p.Data.Conversation.Messages.Edges, g.Data.ConversationByID.MessagesByConversationID.Nodes
	if len(edges) != 100 || len(nodes) != 100 || len(rows) != 100 {
		return fmt.Errorf("history read: Parley %d messages, PostGraphile %d, raw SQL %d; want 100 each", len(edges), len(nodes), len(rows))
	}
	for i := range rows {
		if edges[i].Node.ID != parley.MessageID(rows[i].ID) || nodes[i].ID != rows[i].ID ||
			edges[i].Node.Position != i+1 || nodes[i].Position != i+1 || rows[i].Position != i+1 {
			return fmt.Errorf("history read: message %d differs: Parley %+v, PostGraphile %+v, raw %s/%d",
				i, edges[i].Node, nodes[i], rows[i].ID, rows[i].Position)
		}
	}
	// One save of each kind, then the three rows must be alike.
	for _, target := range targets {
		if err := e.op("save", target)(ctx, 0); err != nil {
			return fmt.Errorf("save through %s: %w", target, err)
		}
	}
	var stored []struct {
		Kind    string `db:"kind"`
		Role    string `db:"role"`
		Content string `db:"content"`
		Payload string `db:"payload"`
	}
	if err := e.sql.SelectContext(ctx, &stored, `SELECT kind, role, content, payload::text AS payload FROM messages
		WHERE conversation_id = ANY($1) ORDER BY created_at`, "{"+e.saveKeys["raw"][0]+","+e.saveKeys["parley"][0]+","+e.saveKeys["postgraphile"][0]+"}"); err != nil {
		return err
	}
	if len(stored) != 3 || stored[0] != stored[1] || stored[1] != stored[2] {
		return fmt.Errorf("the three saves stored different rows: %+v", stored)
	}
	return nil
}

func (e *env) checkAlive() error {
	if err := e.parley.alive(); err != nil {
		return err
	}
	for _, s := range e.scale {
		if err := s.parley.alive(); err != nil {
			return err
		}
	}
	return e.pg.alive()
}

func (e *env) tearDown(logf func(string, ...any)) {
	e.pg.stop()
	e.parley.stop()
	e.stopScale()
	if e.sql != nil {
		e.sql.Close()
	}
	if e.cluster != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := e.cluster.Stop(ctx); err != nil {
			logf("stopping PostgreSQL: %v", err)
		}
	}
	if e.removeDir {
		os.RemoveAll(e.work)
	} else if e.work != "" {
		logf("kept %s (logs: parley.log, postgraphile.log, pg/postgres.log)", e.work)
	}
}

// measureAllocs counts the allocations of Parley's process per history read, from its
// runtime's exact counters (expvar's memstats), over sequential reads.
func (e *env) measureAllocs(ctx context.Context, res *results, logf func(string, ...any)) error {
	const n = 300
	do := parleyHistory(e.parleyClient, e.historyID)
	for range 20 { // warm: query cache, pools
		if err := do(ctx, 0); err != nil {
			return err
		}
	}
	m0, err := e.memstats(ctx)
	if err != nil {
		return err
	}
	for range n {
		if err := do(ctx, 0); err != nil {
			return err
		}
	}
	m1, err := e.memstats(ctx)
	if err != nil {
		return err
	}
	res.AllocsPerRead = float64(m1.Mallocs-m0.Mallocs) / n
	res.BytesPerRead = float64(m1.TotalAlloc-m0.TotalAlloc) / n
	logf("history read: %.0f allocations (%.0f KiB) per request in Parley's process", res.AllocsPerRead, res.BytesPerRead/1024)
	return nil
}

type memstats struct {
	Mallocs    uint64
	TotalAlloc uint64
}

func (e *env) memstats(ctx context.Context) (memstats, error) {
	var v struct {
		Memstats memstats `json:"memstats"`
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, e.debugURL+"/debug/vars", nil)
	if err != nil {
		return v.Memstats, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return v.Memstats, fmt.Errorf("Parley's expvar: %w", err)
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(&v); err != nil {
		return v.Memstats, fmt.Errorf("Parley's expvar: %w", err)
	}
	return v.Memstats, nil
}

// profile records a CPU profile of Parley while m runs, and keeps pprof's summary of it.
func (e *env) profile(ctx context.Context, cfg *config, m measurement, res *results, logf func(string, ...any)) error {
	name := strings.ReplaceAll(strings.TrimSuffix(m.key, "/parley"), "/", "-")
	path, err := filepath.Abs(filepath.Join(cfg.profileDir, "parley-"+name+".prof"))
	if err != nil {
		return err
	}
	logf("profiling Parley for %s under %s", cfg.profileFor, m.key)
	errc := make(chan error, 1)
	go func() {
		errc <- parleyproc.CPUProfile(ctx, e.debugURL, int(cfg.profileFor.Seconds()), path)
	}()
	if _, err := measure(ctx, m.clients, 0, cfg.profileFor+time.Second, m.op, nil); err != nil {
		return err
	}
	if err := <-errc; err != nil {
		return fmt.Errorf("CPU profile: %w", err)
	}
	out, err := exec.CommandContext(ctx, "go", "tool", "pprof", "-top", "-cum", "-nodecount=1000", cfg.parleyBin, path).Output()
	if err != nil {
		return fmt.Errorf("go tool pprof: %w", err)
	}
	res.Profiles[m.key] = trimProfile(string(out))
	res.Breakdowns[m.key] = profileBreakdown(string(out), strings.Split(m.key, "/")[0])
	res.ProfileFiles = append(res.ProfileFiles, path)
	return nil
}

// readTraceSeconds is how long traceReads traces Parley.
const readTraceSeconds = 3

// traceReads says where the wall time of m's reads goes (package readtrace), from an
// execution trace of Parley while m runs: at one client, where the history read's
// target is, much of a read is waiting, which the CPU profiles do not show.
func (e *env) traceReads(ctx context.Context, m measurement, res *results, logf func(string, ...any)) error {
	logf("tracing Parley for %ds under %s", readTraceSeconds, m.key)
	p, err := readtrace.Record(ctx, e.debugURL, readTraceSeconds, func(ctx context.Context) error {
		_, err := measure(ctx, m.clients, 0, time.Hour, m.op, nil)
		return err
	})
	if err != nil {
		return fmt.Errorf("execution trace: %w", err)
	}
	s := p.Summary()
	res.ReadPhases = map[string]readtrace.Summary{m.key: s}
	return nil
}

// parleyRevision is the commit the binary was built from: its VCS stamp, else (builds
// with -buildvcs=false) the working tree's HEAD, marked when the tree has uncommitted
// changes other than what make bench itself writes (benchOutputs: the sections' reports,
// written before this program starts, would otherwise mark every full run).
func parleyRevision(bin string) string {
	if rev := commandVersion(`vcs\.revision=(\w{12})`, "go", "version", "-m", bin); rev != "unknown" {
		if commandVersion(`vcs\.modified=(true)`, "go", "version", "-m", bin) == "true" {
			rev += " with uncommitted changes"
		}
		return rev
	}
	rev := commandVersion(`(\w{12})`, "git", "rev-parse", "--short=12", "HEAD")
	if rev != "unknown" && exec.Command("git", append([]string{"diff", "--quiet", "HEAD", "--", "."}, benchOutputs...)...).Run() != nil {
		rev += " (working tree with uncommitted changes)"
	}
	return rev
}

// benchOutputs are git pathspecs excluding the files make bench writes: its report,
// chart, results and profiles, and the reports of the sections scripts/bench.sh runs.
var benchOutputs = []string{":(exclude)bench/report.*", ":(exclude)bench/results.json",
	":(exclude)bench/*-report.md", ":(exclude)bench/*.prof"}

// createDatabase creates dbname on the server at adminDSN.
func createDatabase(ctx context.Context, adminDSN, dbname string) error {
	db, err := sqlx.Open("postgres", adminDSN)
	if err != nil {
		return err
	}
	defer db.Close()
	_, err = db.ExecContext(ctx, `CREATE DATABASE `+dbname)
	return err
}

var portRE = regexp.MustCompile(`\bport=(\d+)`)

// dsnPort returns the port of a key=value DSN: it names the Unix socket's file.
func dsnPort(dsn string) string {
	if m := portRE.FindStringSubmatch(dsn); m != nil {
		return m[1]
	}
	return "5432"
}

// redactDSN shortens the temporary socket path in a command line for the report.
func redactDSN(cmd, dsn string) string {
	return strings.ReplaceAll(cmd, dsn, "'"+regexp.MustCompile(`host=\S+`).ReplaceAllString(dsn, "host=$$WORK/pg/sock")+"'")
}

func cpuCount() int { return runtime.NumCPU() }

func fmtDur(d time.Duration) string {
	return fmt.Sprintf("%.2fms", float64(d)/float64(time.Millisecond))
}
