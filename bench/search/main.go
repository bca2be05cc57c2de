// Command search measures search (`make bench-search`): it generates a history of
// -messages messages in -conversations conversations of mixed variants (user and
// assistant text with thinking, tool requests and results with errors, file references)
// from a Zipf-distributed vocabulary of English, code and log words, in SQL
// (generate_series, not the API), then reports the first page's latency (p50, p99) of
// a selective query, a common-word query, a filtered query (tool name + ERROR status)
// and a prefix query, each for the heaviest owner (half the conversations) and for a
// typical one; the save latency with the search trigger and index beside the save
// without them, in alternating rounds of the same run; and the index's size. Each
// figure is printed beside its target, as Markdown, to stdout and to -report.
//
// Searches and saves go through the store (db.DB.Search, db.DB.AddMessage), which is
// what the GraphQL resolvers call: the figures leave out HTTP and JSON.
//
// It starts its own PostgreSQL (localpg, durability off as the other benchmarks' clusters).
package main

import (
	"context"
	"database/sql"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"time"

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
		fmt.Fprintln(os.Stderr, "search:", err)
		os.Exit(1)
	}
}

type config struct {
	messages, conversations int
	runs, saves             int
	report                  string
	keep                    bool
}

func run(ctx context.Context, args []string, stdout io.Writer) error {
	var cfg config
	fs := flag.NewFlagSet("search", flag.ContinueOnError)
	fs.IntVar(&cfg.messages, "messages", 1_000_000, "messages to generate")
	fs.IntVar(&cfg.conversations, "conversations", 10_000, "conversations to spread them over")
	fs.IntVar(&cfg.runs, "runs", 50, "times each query is run (first pages)")
	fs.IntVar(&cfg.saves, "saves", 1000, "messages saved with search and as many without, in alternating rounds")
	fs.StringVar(&cfg.report, "report", "bench/search-report.md", "where to write the Markdown report (also printed); empty: stdout only")
	fs.BoolVar(&cfg.keep, "keep", false, "keep the cluster running (until interrupted) and its directory, to look at the data")
	if err := fs.Parse(args); err != nil {
		return err
	}
	perConv := cfg.messages / cfg.conversations
	if perConv < 10 {
		return fmt.Errorf("-messages %d over -conversations %d is under 10 a conversation", cfg.messages, cfg.conversations)
	}

	dir, err := os.MkdirTemp(shm(), "parley-bench-search-")
	if err != nil {
		return err
	}
	if !cfg.keep {
		defer os.RemoveAll(dir)
	}
	if err := os.Chmod(dir, 0o755); err != nil { // as root the cluster runs as postgres
		return err
	}
	cluster, err := localpg.Start(ctx, localpg.Config{DataDir: dir, Fast: true})
	if err != nil {
		return err
	}
	defer cluster.Stop(context.Background())
	admin, err := sql.Open("postgres", cluster.DSN("postgres"))
	if err != nil {
		return err
	}
	if _, err := admin.ExecContext(ctx, "CREATE DATABASE parley"); err != nil {
		return err
	}
	admin.Close()
	dsn := cluster.DSN("parley")
	if err := db.Migrate(ctx, dsn); err != nil {
		return err
	}
	raw, err := sql.Open("postgres", dsn)
	if err != nil {
		return err
	}
	defer raw.Close()
	store, err := db.Open(ctx, dsn, db.Config{})
	if err != nil {
		return err
	}
	defer store.Close()

	out := &strings.Builder{}
	fmt.Fprintf(out, "## Search\n\n")
	fmt.Fprintf(out, "`make bench-search` (bench/search), %s, load average %s at the start. %d messages in %d conversations (%d each), generated in SQL; "+
		"the heaviest owner has half the conversations, 99 others share the rest.\n\n",
		time.Now().UTC().Format("2006-01-02 15:04 MST"), parleyproc.LoadAverage(), perConv*cfg.conversations, cfg.conversations, perConv)

	start := time.Now()
	indexes, err := generate(ctx, raw, cfg.conversations, perConv, os.Stderr)
	if err != nil {
		return fmt.Errorf("generate: %w", err)
	}
	loaded := time.Since(start)
	built := make([]time.Duration, len(indexes))
	for i, ix := range indexes {
		start = time.Now()
		if _, err := raw.ExecContext(ctx, ix.def); err != nil {
			return fmt.Errorf("create index %s: %w", ix.name, err)
		}
		built[i] = time.Since(start)
	}
	const sample = 1000
	if err := checkVectors(ctx, raw, sample); err != nil {
		return err
	}
	if _, err := raw.ExecContext(ctx, `VACUUM ANALYZE messages, conversations`); err != nil {
		return err
	}
	var vectorBytes, tableBytes int64
	if err := raw.QueryRowContext(ctx, `SELECT (SELECT sum(pg_column_size(search_vector)) FROM messages)::bigint,
		pg_total_relation_size('messages')`).Scan(&vectorBytes, &tableBytes); err != nil {
		return err
	}
	fmt.Fprintf(out, "Generated in %s by INSERT … SELECT, each vector computed in it by `message_search_vector` (the trigger's function) with triggers off; "+
		"the trigger recomputed a sample of %d messages' vectors and each was the same (and each had its conversation's owner). The search indexes built after:\n\n",
		loaded.Round(time.Second), sample)
	fmt.Fprintf(out, "| Size | Bytes | |\n|---|---:|---|\n")
	var indexBytes int64
	for i, ix := range indexes {
		var n int64
		if err := raw.QueryRowContext(ctx, `SELECT pg_relation_size($1::regclass)`, ix.name).Scan(&n); err != nil {
			return err
		}
		indexBytes += n
		fmt.Fprintf(out, "| `%s` | %s | built in %s |\n", ix.def, mib(n), built[i].Round(time.Second))
	}
	fmt.Fprintf(out, "| `search_vector` column (sum of values) | %s | |\n| messages table, all indexes and TOAST | %s | the search indexes are %.0f%% of it |\n\n",
		mib(vectorBytes), mib(tableBytes), 100*float64(indexBytes)/float64(tableBytes))

	// Queries.
	type query struct {
		name, target string
		limit        time.Duration
		req          parley.SearchRequest
	}
	queries := []query{
		{"selective (a rare word)", "p50 < 20 ms", 20 * time.Millisecond, parley.SearchRequest{Query: "zanzibar"}},
		{"common word", "first page < 100 ms", 100 * time.Millisecond, parley.SearchRequest{Query: "error"}},
		{"filtered (tool name + ERROR status)", "p50 < 20 ms", 20 * time.Millisecond, parley.SearchRequest{Query: "timeout",
			Filter: parley.SearchFilter{ToolNames: []string{"bash"}, ToolResultStatus: parley.ToolError}}},
		{"prefix (search as you type)", "", 0, parley.SearchRequest{Query: "deploy conf", Prefix: true}},
		{"common word, newest first", "", 0, parley.SearchRequest{Query: "error", Order: parley.SearchByNewest}},
	}
	owners := []struct{ name, owner string }{{"heaviest owner (half the history)", "heavy"}, {"typical owner (1/198 of it)", "owner7"}}
	fmt.Fprintf(out, "First page (20 hits, relevance order unless said) through `db.DB.Search`, %d runs each after 5 warm-ups:\n\n", cfg.runs)
	fmt.Fprintf(out, "(Matches: the owner's messages matching the words, before filters.)\n\n")
	fmt.Fprintf(out, "| Query | Owner | Matches | p50 | p99 | Target | |\n|---|---|---:|---:|---:|---|---|\n")
	for _, o := range owners {
		octx := parley.WithOwner(ctx, o.owner)
		for _, q := range queries {
			matches, err := countMatches(octx, raw, o.owner, q.req)
			if err != nil {
				return err
			}
			var lat []time.Duration
			// Warm-ups: each pooled connection plans and compiles the PL/pgSQL once.
			const warm = 5
			for i := range cfg.runs + warm {
				t0 := time.Now()
				page, err := store.Search(octx, q.req)
				if err != nil {
					return fmt.Errorf("%s: %w", q.name, err)
				}
				if i >= warm {
					lat = append(lat, time.Since(t0))
				}
				if len(page.Hits) == 0 && matches > 0 && q.req.Filter.ToolResultStatus == "" {
					return fmt.Errorf("%s: no hits of %d matches", q.name, matches)
				}
			}
			p50, p99 := pct(lat, 50), pct(lat, 99)
			verdict := ""
			if q.limit > 0 {
				verdict = "met"
				bound := p50
				if strings.HasPrefix(q.target, "first page") {
					bound = p99
				}
				if bound >= q.limit {
					verdict = "**missed**"
				}
			}
			fmt.Fprintf(out, "| %s | %s | %d | %s | %s | %s | %s |\n", q.name, o.name, matches, ms(p50), ms(p99), q.target, verdict)
		}
	}
	fmt.Fprintln(out)

	// Saves with and without search, alternating rounds.
	with, without, err := saves(ctx, raw, store, cfg.saves)
	if err != nil {
		return fmt.Errorf("saves: %w", err)
	}
	w50, wo50 := pct(with, 50), pct(without, 50)
	ratio := float64(w50) / float64(wo50)
	verdict := "met"
	if ratio > 1.15 {
		verdict = "**missed**"
	}
	fmt.Fprintf(out, "Saves through `db.DB.AddMessage` (a text message of about 60 words, or a tool result with an error and an output, to a conversation of the heaviest owner), "+
		"%d with search (the trigger computing the vector, the partial GIN index) and %d without (trigger disabled, so no vector and no index entry), in 20 alternating rounds after one round of each unmeasured:\n\n", len(with), len(without))
	fmt.Fprintf(out, "| Save | p50 | p99 |\n|---|---:|---:|\n| without search | %s | %s |\n| with search | %s | %s |\n\n", ms2(wo50), ms2(pct(without, 99)), ms2(w50), ms2(pct(with, 99)))
	fmt.Fprintf(out, "Save p50 with search is %.2fx the save without (target within 1.15x): %s.\n", ratio, verdict)

	fmt.Fprint(stdout, out.String())
	if cfg.report != "" {
		if err := os.WriteFile(cfg.report, []byte(out.String()), 0o644); err != nil {
			return err
		}
	}
	if cfg.keep {
		fmt.Fprintf(os.Stderr, "kept: %s (interrupt to stop)\n", dsn)
		<-ctx.Done()
	}
	return nil
}

func shm() string {
	if fi, err := os.Stat("/dev/shm"); err == nil && fi.IsDir() {
		return "/dev/shm"
	}
	return os.TempDir()
}

// countMatches counts the messages of owner whose words match the query (filters
// left out; every generated conversation is one line).
func countMatches(ctx context.Context, raw *sql.DB, owner string, req parley.SearchRequest) (int, error) {
	sq, err := parley.ParseSearchQuery(req.Query, req.Prefix)
	if err != nil {
		return 0, err
	}
	var n int
	err = raw.QueryRowContext(ctx, `SELECT count(*) FROM messages m JOIN conversations c ON c.id = m.conversation_id AND c.owner = $1
		WHERE m.search_vector @@ (CASE WHEN $3 = '' THEN websearch_to_tsquery('simple', $2)
			WHEN $2 = '' THEN to_tsquery('simple', '''' || $3 || ''':*')
			ELSE websearch_to_tsquery('simple', $2) && to_tsquery('simple', '''' || $3 || ''':*') END)`,
		owner, sq.Web, sq.Prefix).Scan(&n)
	return n, err
}

func pct(d []time.Duration, p int) time.Duration {
	if len(d) == 0 {
		return 0
	}
	s := slices.Clone(d)
	slices.Sort(s)
	i := (len(s)*p + 99) / 100
	return s[min(max(i-1, 0), len(s)-1)]
}

func ms(d time.Duration) string { return fmt.Sprintf("%.1f ms", float64(d.Microseconds())/1000) }

// ms2 is ms to the hundredth: a save's p50 is about 1 ms, and its ratio's target is 1.15x.
func ms2(d time.Duration) string { return fmt.Sprintf("%.2f ms", float64(d.Microseconds())/1000) }

func mib(n int64) string { return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20)) }

// saves saves n messages with search and n without, in 20 alternating rounds.
func saves(ctx context.Context, raw *sql.DB, store *db.DB, n int) (with, without []time.Duration, err error) {
	var convs []string
	rows, err := raw.QueryContext(ctx, `SELECT id FROM conversations WHERE owner = 'heavy' ORDER BY id LIMIT 20`)
	if err != nil {
		return nil, nil, err
	}
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, nil, err
		}
		convs = append(convs, parley.ConversationID(id))
	}
	rows.Close()
	octx := parley.WithOwner(ctx, "heavy")
	rng := rand.New(rand.NewPCG(1, 2))
	vocab := vocabulary()
	text := func(words int) string {
		w := make([]string, words)
		for i := range w {
			w[i] = vocab[int(float64(len(vocab))*pow3(rng.Float64()))]
		}
		return strings.Join(w, " ")
	}
	calls := 0
	save := func() (time.Duration, error) {
		conv := convs[rng.IntN(len(convs))]
		var m parley.Message
		if rng.IntN(2) == 0 {
			m = &parley.TextMessage{MessageMeta: parley.MessageMeta{Role: parley.RoleUser}, Body: parley.TextBody(text(60))}
		} else {
			// A call and its result: only the result is timed.
			calls++
			id := fmt.Sprintf("bench-%d", calls)
			req := &parley.ToolRequestMessage{MessageMeta: parley.MessageMeta{Role: parley.RoleInvocation},
				ToolCalls: []parley.ToolCall{{ID: id, Name: "bash", Arguments: parley.JSON(`{"command":"go test ./internal/pgtest/..."}`)}}}
			if _, err := store.AddMessage(octx, conv, req); err != nil {
				return 0, err
			}
			m = &parley.ToolResultMessage{MessageMeta: parley.MessageMeta{Role: parley.RoleResult}, ToolCallID: id, ToolName: "bash",
				Status: parley.ToolError, Error: &parley.ToolErrorDetail{Message: "exit status 1: " + text(12)},
				Output: parley.JSON(fmt.Sprintf("%q", text(40)))}
		}
		t0 := time.Now()
		_, err := store.AddMessage(octx, conv, m)
		return time.Since(t0), err
	}
	// Two rounds more than measured: the first of each mode warms the pool's connections.
	for round := range 22 {
		on := round%2 == 0
		stmt := `ALTER TABLE messages DISABLE TRIGGER messages_search_vector`
		if on {
			stmt = `ALTER TABLE messages ENABLE TRIGGER messages_search_vector`
		}
		if _, err := raw.ExecContext(ctx, stmt); err != nil {
			return nil, nil, err
		}
		for range n / 10 {
			d, err := save()
			if err != nil {
				return nil, nil, err
			}
			switch {
			case round < 2:
			case on:
				with = append(with, d)
			default:
				without = append(without, d)
			}
		}
	}
	_, err = raw.ExecContext(ctx, `ALTER TABLE messages ENABLE TRIGGER messages_search_vector`)
	return with, without, err
}

func pow3(x float64) float64 { return x * x * x }
