// Command tree measures the conversation tree (`make bench-tree`), each figure beside
// its linear reference in the same run, against the store (package db) in this process:
//
//   - reading a 100-message page along a deep branch of a conversation of 10,000
//     messages in 100 branches (each forking from the one before, so the deepest branch
//     is a chain of 100 segments, 5,050 deep) beside the same page of a linear
//     conversation of 10,000 messages (target: p50 within 1.5x);
//   - adding a message to the active branch, and to another branch (by parentId), of
//     that tree beside adding one to the linear conversation, today's save (target:
//     within 1.2x);
//   - forking a conversation at its last message with 100, 10,000 and 100,000 messages
//     of history (target: the same cost whatever the length).
//
// It starts its own PostgreSQL (localpg, durability off unless -durable) and writes a
// Markdown section to stdout, and to -out when given.
package main

import (
	"context"
	"database/sql"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"runtime/pprof"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/jmoiron/sqlx"
	_ "github.com/lib/pq"

	"github.com/parley-dev/parley"
	"github.com/parley-dev/parley/bench/internal/parleyproc"
	"github.com/parley-dev/parley/db"
	"github.com/parley-dev/parley/localpg"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "tree:", err)
		os.Exit(1)
	}
}

type config struct {
	runs     int
	branches int
	per      int // messages each branch adds
	forkMax  int
	durable  bool
	out      string
	dsn      string // an existing, empty database to use instead of a private cluster
	cpu      string // where to write a CPU profile of the timed operations
}

func run(ctx context.Context, args []string, stdout io.Writer) error {
	var cfg config
	fs := flag.NewFlagSet("tree", flag.ContinueOnError)
	fs.IntVar(&cfg.runs, "runs", 200, "timed runs of each operation")
	fs.IntVar(&cfg.branches, "branches", 100, "branches of the tree")
	fs.IntVar(&cfg.per, "per-branch", 100, "messages each branch adds (the tree holds branches × this)")
	fs.IntVar(&cfg.forkMax, "fork-history", 100000, "the longest history forked")
	fs.BoolVar(&cfg.durable, "durable", false, "run Postgres with fsync and synchronous commit on")
	fs.StringVar(&cfg.out, "out", "", "also write the report to this file")
	fs.StringVar(&cfg.dsn, "database-url", "", "an empty database to build in instead of starting a private cluster "+
		"(one with auto_explain or a statement log, to see where the time goes; -durable then says nothing)")
	fs.StringVar(&cfg.cpu, "cpuprofile", "", "write a CPU profile of the timed operations to this file")
	if err := fs.Parse(args); err != nil {
		return err
	}
	dsn := cfg.dsn
	if dsn == "" {
		var stop func()
		var err error
		if dsn, stop, err = privateCluster(ctx, cfg.durable); err != nil {
			return err
		}
		defer stop()
	}
	if err := db.Migrate(ctx, dsn); err != nil {
		return err
	}
	store, err := db.Open(ctx, dsn, db.Config{})
	if err != nil {
		return err
	}
	defer store.Close()
	ctx = parley.WithOwner(ctx, "bench")

	var b strings.Builder
	total := cfg.branches * cfg.per
	fmt.Fprintf(&b, "## Conversation tree\n\n`make bench-tree` (bench/tree): the store in-process, %d timed runs of each operation, "+
		"interleaved with its reference; Postgres durability %s. Load average at the start: %s.\n\n",
		cfg.runs, map[bool]string{true: "on", false: "off"}[cfg.durable], parleyproc.LoadAverage())

	fmt.Fprintln(os.Stderr, "tree: building the conversations...")
	tree, leaves, err := buildTree(ctx, store, cfg.branches, cfg.per)
	if err != nil {
		return err
	}
	line, err := importLine(ctx, store, total)
	if err != nil {
		return err
	}
	deep := leaves[len(leaves)-1]
	defer profile(cfg.cpu)()
	deepLen := deep.Meta().Position

	// A page in the middle of the deep branch crosses forks; the linear page is at the
	// same place.
	after := parley.MessageCursor(deepLen/2 - 50)
	first := 100
	read := func(conv *parley.Conversation, branch string) func() error {
		return func() error {
			p, err := store.FindMessages(ctx, conv, parley.PageRequest{First: &first, After: &after, Branch: branch})
			if err == nil && len(p.Messages) != first {
				err = fmt.Errorf("a page of %d messages, want %d", len(p.Messages), first)
			}
			return err
		}
	}
	treeConv, lineConv := &parley.Conversation{ID: tree}, &parley.Conversation{ID: line}
	pageTree, pageLine, err := pair(cfg.runs, read(treeConv, ""), read(lineConv, ""))
	if err != nil {
		return fmt.Errorf("read pages: %w", err)
	}
	pageNamed, pageLine2, err := pair(cfg.runs, read(treeConv, deep.Meta().ID), read(lineConv, ""))
	if err != nil {
		return fmt.Errorf("read pages: %w", err)
	}

	// add adds a message to conv: continuing the active branch, or as the child of
	// *parent, which it then becomes (the branch grows in its segment).
	add := func(conv string, parent *string) func() error {
		return func() error {
			m := &parley.TextMessage{MessageMeta: parley.MessageMeta{Role: parley.RoleUser}, Body: parley.TextBody("one more turn")}
			if parent != nil {
				m.Place = parley.Placement{ParentID: *parent}
			}
			stored, err := store.AddMessage(ctx, conv, m)
			if err == nil && parent != nil {
				*parent = stored.Meta().ID
			}
			return err
		}
	}
	addActive, addLine, err := pair(cfg.runs, add(tree, nil), add(line, nil))
	if err != nil {
		return fmt.Errorf("add messages: %w", err)
	}
	// Another branch, by parentId: it grows in its own segment.
	other := leaves[len(leaves)/2].Meta().ID
	addOther, addLine2, err := pair(cfg.runs, add(tree, &other), add(line, nil))
	if err != nil {
		return fmt.Errorf("add messages: %w", err)
	}

	fmt.Fprintf(&b, "Tree: %d messages in %d branches, each forking from the one before; the deepest is %d messages deep, "+
		"a chain of %d segments. Linear: %d messages.\n\n", total, cfg.branches, deepLen, cfg.branches, total)
	fmt.Fprintln(&b, "| operation | tree p50 | linear p50 | ratio | target | tree p99 | linear p99 |")
	fmt.Fprintln(&b, "|---|---:|---:|---:|---|---:|---:|")
	row := func(name string, t, l []time.Duration, target string) {
		fmt.Fprintf(&b, "| %s | %s | %s | %.2fx | %s | %s | %s |\n", name, ms(pct(t, 50)), ms(pct(l, 50)),
			float64(pct(t, 50))/float64(pct(l, 50)), target, ms(pct(t, 99)), ms(pct(l, 99)))
	}
	row(fmt.Sprintf("page of 100 along the deep branch (active), after position %d", deepLen/2-50), pageTree, pageLine, "≤ 1.5x")
	// Each row beside the linear reference timed with it: the load moves between pairs.
	row("the same page, the branch named (`branch:`)", pageNamed, pageLine2, "≤ 1.5x")
	row("add a message to the active branch", addActive, addLine, "≤ 1.2x")
	row("add a message to another branch (`parentId`)", addOther, addLine2, "≤ 1.2x")
	fmt.Fprintln(&b)

	fmt.Fprintln(os.Stderr, "tree: forks...")
	fmt.Fprintln(&b, "A fork shares the path it was forked at (db/fork.go): it writes a link, not the path's rows. "+
		"Reading the fork's last page of 100 is timed beside the same page of its source, interleaved; the fork's "+
		"shared rows are copied only when something changes one of them (once), which the last table times.")
	fmt.Fprintln(&b)
	fmt.Fprintln(&b, "| fork at the last message of a history of | p50 | p99 | runs | last page of 100 of the fork vs of the source, p50 |")
	fmt.Fprintln(&b, "|---|---:|---:|---:|---|")
	forkRuns := max(5, cfg.runs/10)
	var base time.Duration
	lengths := []int{100, total}
	if cfg.forkMax > total {
		lengths = append(lengths, cfg.forkMax)
	}
	type forked struct {
		source string
		n      int
	}
	var sources []forked
	last := 100
	// Every history first, then the forks in rounds, one of each length a round, so that
	// what else the machine does weighs on all lengths alike.
	convs, leafIDs := make([]string, len(lengths)), make([]string, len(lengths))
	for i, n := range lengths {
		convs[i] = line
		if n != total {
			if convs[i], err = importLine(ctx, store, n); err != nil {
				return err
			}
		}
		if leafIDs[i], err = lastMessage(ctx, store, convs[i]); err != nil {
			return err
		}
	}
	// Analyzed, as autovacuum would soon have them: its own analyze must not run during the timings.
	if err := analyze(ctx, dsn); err != nil {
		return err
	}
	forks := make([]*parley.Conversation, len(lengths))
	times := make([][]time.Duration, len(lengths))
	for range forkRuns {
		for i := range lengths {
			start := time.Now()
			if forks[i], err = store.ForkConversation(ctx, leafIDs[i], ""); err != nil {
				return fmt.Errorf("fork: %w", err)
			}
			times[i] = append(times[i], time.Since(start))
		}
	}
	for i, n := range lengths {
		sources = append(sources, forked{source: convs[i], n: n})
		slices.Sort(times[i])
		if base == 0 {
			base = pct(times[i], 50)
		}
		lastPage := func(c *parley.Conversation) func() error {
			return func() error {
				p, err := store.FindMessages(ctx, c, parley.PageRequest{Last: &last})
				if err == nil && len(p.Messages) != min(n, last) {
					err = fmt.Errorf("a last page of %d messages, want %d", len(p.Messages), min(n, last))
				}
				return err
			}
		}
		readFork, readSource, err := pair(cfg.runs/4, lastPage(forks[i]), lastPage(&parley.Conversation{ID: convs[i]}))
		if err != nil {
			return fmt.Errorf("read a fork: %w", err)
		}
		fmt.Fprintf(&b, "| %d messages | %s (%.2fx the first) | %s | %d | %s vs %s (%.2fx) |\n", n, ms(pct(times[i], 50)),
			float64(pct(times[i], 50))/float64(base), ms(pct(times[i], 99)), forkRuns,
			ms(pct(readFork, 50)), ms(pct(readSource, 50)), float64(pct(readFork, 50))/float64(pct(readSource, 50)))
	}
	fmt.Fprintln(&b, "\nTarget for forks: the same cost whatever the history's length.")
	fmt.Fprintln(&b)
	fmt.Fprintln(&b, "| a fork made real (its first shared message hidden, through the fork's id), in a history of | time |")
	fmt.Fprintln(&b, "|---|---:|")
	for i, f := range sources {
		first, err := firstMessage(ctx, store, forks[i].ID)
		if err != nil {
			return err
		}
		start := time.Now()
		if _, err := store.SetMessageHidden(ctx, first, true); err != nil {
			return fmt.Errorf("hide a shared message: %w", err)
		}
		fmt.Fprintf(&b, "| %d messages | %s |\n", f.n, ms(time.Since(start)))
	}
	fmt.Fprintln(&b)

	fmt.Fprint(stdout, b.String())
	if cfg.out != "" {
		return os.WriteFile(cfg.out, []byte(b.String()), 0o644)
	}
	return nil
}

// privateCluster starts a private PostgreSQL (localpg) with a database tree in a temporary
// directory, and returns its URL and what stops it.
func privateCluster(ctx context.Context, durable bool) (string, func(), error) {
	dir, err := os.MkdirTemp("", "parley-tree-")
	if err != nil {
		return "", nil, err
	}
	if err := os.Chmod(dir, 0o755); err != nil { // Postgres runs as postgres when we are root
		os.RemoveAll(dir)
		return "", nil, err
	}
	fmt.Fprintln(os.Stderr, "tree: starting PostgreSQL...")
	cluster, err := localpg.Start(ctx, localpg.Config{DataDir: filepath.Join(dir, "pg"), Fast: !durable})
	if err != nil {
		os.RemoveAll(dir)
		return "", nil, err
	}
	stop := func() {
		cluster.Stop(context.Background())
		os.RemoveAll(dir)
	}
	admin, err := sqlx.Open("postgres", cluster.DSN("postgres"))
	if err == nil {
		_, err = admin.ExecContext(ctx, `CREATE DATABASE tree`)
		admin.Close()
	}
	if err != nil {
		stop()
		return "", nil, err
	}
	return cluster.DSN("tree"), stop, nil
}

// profile starts a CPU profile written to path (nothing when path is empty) and returns
// what stops it.
func profile(path string) func() {
	if path == "" {
		return func() {}
	}
	f, err := os.Create(path)
	if err == nil {
		err = pprof.StartCPUProfile(f)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "tree: no CPU profile:", err)
		return func() {}
	}
	return func() {
		pprof.StopCPUProfile()
		f.Close()
	}
}

// buildTree imports a tree of branches × per messages: branch 0 is a line of per
// messages, and branch i forks from branch i-1 after its message at depth 50·i (half of
// per), adding per messages. It makes the deepest branch active and returns the
// conversation and the leaves, in order.
func buildTree(ctx context.Context, store *db.DB, branches, per int) (string, []parley.Message, error) {
	imp := &parley.Import{Title: "tree"}
	step := per / 2
	var leafIDs []string
	var prevBranch []string // source ids of the branch before, by depth-1
	for br := range branches {
		var path []string
		parent := ""
		if br > 0 {
			path = slices.Clone(prevBranch[:step*br])
			parent = path[len(path)-1]
		}
		for i := range per {
			id := fmt.Sprintf("b%d-%d", br, i)
			im := parley.ImportedMessage{Origin: id, Parent: parent, Root: parent == "",
				Message: &parley.TextMessage{MessageMeta: parley.MessageMeta{Role: roleAt(len(path)), SourceID: id},
					Body: parley.TextBody(fmt.Sprintf("branch %d, depth %d: a turn of ordinary length, a sentence or two of text.", br, len(path)+1))}}
			imp.Messages = append(imp.Messages, im)
			path = append(path, id)
			parent = id
		}
		prevBranch = path
		leafIDs = append(leafIDs, parent)
	}
	imp.Leaf = leafIDs[len(leafIDs)-1]
	rep, err := store.ImportMessages(ctx, parley.ImportTarget{}, imp)
	if err != nil {
		return "", nil, fmt.Errorf("import the tree: %w", err)
	}
	bs, err := store.FindBranches(ctx, rep.Conversation.ID, branches+1)
	if err != nil {
		return "", nil, err
	}
	if len(bs) != branches {
		return "", nil, fmt.Errorf("the tree has %d branches, want %d", len(bs), branches)
	}
	leaves := make([]parley.Message, len(bs))
	for i, b := range bs {
		leaves[i] = b.Leaf
	}
	slices.SortFunc(leaves, func(a, b parley.Message) int { return a.Meta().Position - b.Meta().Position })
	return rep.Conversation.ID, leaves, nil
}

func roleAt(depth int) parley.Role {
	if depth%2 == 0 {
		return parley.RoleUser
	}
	return parley.RoleAssistant
}

// importLine imports a linear conversation of n messages.
func importLine(ctx context.Context, store *db.DB, n int) (string, error) {
	imp := &parley.Import{Title: fmt.Sprintf("line of %d", n)}
	for i := range n {
		imp.Messages = append(imp.Messages, parley.ImportedMessage{Origin: fmt.Sprint(i), Message: &parley.TextMessage{
			MessageMeta: parley.MessageMeta{Role: roleAt(i)},
			Body:        parley.TextBody(fmt.Sprintf("turn %d: a turn of ordinary length, a sentence or two of text.", i+1))}})
	}
	rep, err := store.ImportMessages(ctx, parley.ImportTarget{}, imp)
	if err != nil {
		return "", fmt.Errorf("import a line of %d: %w", n, err)
	}
	return rep.Conversation.ID, nil
}

// analyze gathers the statistics of the database at dsn.
func analyze(ctx context.Context, dsn string) error {
	conn, err := sql.Open("postgres", dsn)
	if err != nil {
		return err
	}
	defer conn.Close()
	_, err = conn.ExecContext(ctx, `ANALYZE`)
	return err
}

// firstMessage returns the id of conv's first message.
func firstMessage(ctx context.Context, store *db.DB, conv string) (string, error) {
	one := 1
	p, err := store.FindMessages(ctx, &parley.Conversation{ID: conv}, parley.PageRequest{First: &one})
	if err != nil {
		return "", err
	}
	if len(p.Messages) == 0 {
		return "", fmt.Errorf("conversation %s has no messages", conv)
	}
	return p.Messages[0].Meta().ID, nil
}

func lastMessage(ctx context.Context, store *db.DB, conv string) (string, error) {
	last := 1
	p, err := store.FindMessages(ctx, &parley.Conversation{ID: conv}, parley.PageRequest{Last: &last})
	if err != nil || len(p.Messages) != 1 {
		return "", fmt.Errorf("read the last message: %v", err)
	}
	return p.Messages[0].Meta().ID, nil
}

// pair times a and b alternately, runs times each, after a few untimed runs of each,
// and returns the sorted durations.
func pair(runs int, a, b func() error) ([]time.Duration, []time.Duration, error) {
	for range 5 {
		if err := a(); err != nil {
			return nil, nil, err
		}
		if err := b(); err != nil {
			return nil, nil, err
		}
	}
	var ta, tb []time.Duration
	for range runs {
		for _, f := range []struct {
			op  func() error
			out *[]time.Duration
		}{{a, &ta}, {b, &tb}} {
			start := time.Now()
			if err := f.op(); err != nil {
				return nil, nil, err
			}
			*f.out = append(*f.out, time.Since(start))
		}
	}
	slices.Sort(ta)
	slices.Sort(tb)
	return ta, tb, nil
}

func pct(d []time.Duration, p int) time.Duration {
	if len(d) == 0 {
		return 0
	}
	return d[min(len(d)-1, (len(d)*p)/100)]
}

func ms(d time.Duration) string { return fmt.Sprintf("%.2f ms", float64(d.Microseconds())/1000) }
