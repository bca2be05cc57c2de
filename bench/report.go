package main

import (
	"fmt"
	"html"
	"math"
	"os"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/parley-dev/parley/bench/internal/readtrace"
)

// report turns results into the Markdown report and the SVG chart.
type report struct {
	r      *results
	before *results
	notes  string
}

func buildReport(r, before *results) *report {
	rep := &report{r: r, before: before}
	if b, err := os.ReadFile("bench/NOTES.md"); err == nil {
		rep.notes = strings.TrimSpace(string(b))
	}
	return rep
}

// target is one of the goals, checked against the figures.
type goal struct {
	name     string
	measured string
	want     string
	met      bool
	known    bool
	miss     string // by how much it is missed
}

var targetNames = map[string]string{"raw": "raw SQL", "parley": "Parley", "postgraphile": "PostGraphile",
	"raw+notify": "raw SQL + NOTIFY", "pgbench": "pgbench (raw SQL, prepared)"}

// floorRatios is the median over runs (and the range) of Parley's p50 of workload at
// clients divided by its floor measured in the same run: pgbench's p50 of the same SQL
// (what Postgres needs) plus Parley's p50 of { __typename } (what the transport needs).
func (r *results) floorRatios(workload string, clients int) (med, lo, hi float64, floor time.Duration, ok bool) {
	ps, gs, ts := r.Samples[keyOf(workload, clients, "parley")], r.Samples[keyOf(workload, clients, "pgbench")], r.Samples[keyOf("typename", clients, "parley")]
	n := min(len(ps), len(gs), len(ts))
	var rs []float64
	var floors []time.Duration
	for i := range n {
		f := gs[i].P50 + ts[i].P50
		if f > 0 {
			rs = append(rs, float64(ps[i].P50)/float64(f))
			floors = append(floors, f)
		}
	}
	if len(rs) == 0 {
		return 0, 0, 0, 0, false
	}
	return median(rs), slices.Min(rs), slices.Max(rs), median(floors), true
}

func (rep *report) fig(workload string, clients int, target string) (figure, bool) {
	return rep.r.figure(keyOf(workload, clients, target))
}

func ms(d time.Duration) string {
	v := float64(d) / float64(time.Millisecond)
	switch {
	case v >= 100:
		return fmt.Sprintf("%.0f ms", v)
	case v >= 10:
		return fmt.Sprintf("%.1f ms", v)
	default:
		return fmt.Sprintf("%.2f ms", v)
	}
}

func ratio(a, b float64) float64 {
	if b == 0 {
		return math.Inf(1)
	}
	return a / b
}

func (rep *report) goals() []goal {
	n := rep.r.Clients
	var gs []goal
	latency := func(workload, what string, maxRatio float64, seed time.Duration) {
		p, ok1 := rep.fig(workload, 1, "parley")
		raw, ok2 := rep.fig(workload, 1, "raw")
		g := goal{name: what + " p50 (1 client) within " + trimFloat(maxRatio) + "× of raw SQL", want: "≤ " + trimFloat(maxRatio) + "×", known: ok1 && ok2}
		if g.known {
			x, lo, hi, _ := rep.r.pairedRatios(keyOf(workload, 1, "parley"), keyOf(workload, 1, "raw"), p50)
			g.measured = fmt.Sprintf("%.2f× (runs %.2f–%.2f×; %s vs %s)", x, lo, hi, ms(p.P50), ms(raw.P50))
			g.met = x <= maxRatio
			if !g.met {
				g.miss = fmt.Sprintf("%.2f× raw SQL's p50 where the goal is %s×: %.0f%% over", x, trimFloat(maxRatio), (x/maxRatio-1)*100)
			}
		}
		gs = append(gs, g)
		g = goal{name: what + " p50 (1 client) 10× under the seed's " + ms(seed), want: "≤ " + ms(seed/10), known: ok1}
		if ok1 {
			g.measured = ms(p.P50)
			g.met = p.P50 <= seed/10
			if !g.met {
				g.miss = fmt.Sprintf("%s over", ms(p.P50-seed/10))
			}
		}
		gs = append(gs, g)
	}
	latency("save", "Save", 2, 50*time.Millisecond)
	latency("history", "History read", 4, 100*time.Millisecond)
	floor := func(workload, what, sql string, maxRatio float64) {
		g := goal{name: fmt.Sprintf("%s p50 (1 client) within %s× of its floor (%s + one round trip)", what, trimFloat(maxRatio), sql),
			want: "≤ " + trimFloat(maxRatio) + "×"}
		x, lo, hi, f, ok := rep.r.floorRatios(workload, 1)
		if g.known = ok; ok {
			p, _ := rep.fig(workload, 1, "parley")
			g.measured = fmt.Sprintf("%.2f× (runs %.2f–%.2f×; %s vs %s)", x, lo, hi, ms(p.P50), ms(f))
			g.met = x <= maxRatio
			if !g.met {
				g.miss = fmt.Sprintf("%.2f× its floor where the goal is %s×: %.0f%% over", x, trimFloat(maxRatio), (x/maxRatio-1)*100)
			}
		}
		gs = append(gs, g)
	}
	floor("save", "Save", "pgbench's raw SQL + NOTIFY", 1.5)
	floor("history", "History read", "pgbench's raw SQL", 2)
	if rows := rep.r.scaleRows(); len(rows) > 0 {
		g := goal{name: "Every scale row (1M-message database) within 1.2× of the same operation on a 100-message conversation in a small database",
			want: "≤ 1.2×", known: true, met: true}
		worst := rows[0]
		var over []string
		for _, row := range rows {
			if row.ratio > worst.ratio {
				worst = row
			}
			if row.ratio > scaleGoal {
				g.met = false
				over = append(over, fmt.Sprintf("%s %.2f×", row.name, row.ratio))
			}
		}
		g.measured = fmt.Sprintf("worst %.2f× (%s; %d rows)", worst.ratio, worst.name, len(rows))
		if !g.met {
			g.miss = fmt.Sprintf("over 1.2×: %s (the scale table below)", strings.Join(over, ", "))
		}
		gs = append(gs, g)
	}
	throughput := func(workload, what, other string, min float64, pct bool) {
		p, ok1 := rep.fig(workload, n, "parley")
		o, ok2 := rep.fig(workload, n, other)
		want := fmt.Sprintf("≥ %s×", trimFloat(min))
		if pct {
			want = fmt.Sprintf("≥ %.0f%%", min*100)
		}
		g := goal{name: fmt.Sprintf("%s throughput at %d clients vs %s", what, n, targetNames[other]), want: want, known: ok1 && ok2}
		if g.known {
			x, lo, hi, _ := rep.r.pairedRatios(keyOf(workload, n, "parley"), keyOf(workload, n, other), sampleThroughput)
			if pct {
				g.measured = fmt.Sprintf("%.0f%% (runs %.0f–%.0f%%; %.0f vs %.0f req/s)", x*100, lo*100, hi*100, p.Throughput, o.Throughput)
			} else {
				g.measured = fmt.Sprintf("%.2f× (runs %.2f–%.2f×; %.0f vs %.0f req/s)", x, lo, hi, p.Throughput, o.Throughput)
			}
			g.met = x >= min
			if !g.met {
				if pct {
					g.miss = fmt.Sprintf("%.0f%% of %s's throughput where the goal is %.0f%%: %.0f points short", x*100, targetNames[other], min*100, (min-x)*100)
				} else {
					g.miss = fmt.Sprintf("%.2f× %s's throughput where the goal is %s×: %.0f%% short", x, targetNames[other], trimFloat(min), (1-x/min)*100)
				}
			}
		}
		gs = append(gs, g)
	}
	throughput("save", "Save", "raw", 0.6, true)
	if g := &gs[len(gs)-1]; g.known && !g.met {
		// How much of the gap is the NOTIFY realtime adds to every save.
		if x, ok := rep.r.pairedRatio(keyOf("save", n, "raw+notify"), keyOf("save", n, "raw"), sampleThroughput); ok {
			y, _ := rep.r.pairedRatio(keyOf("save", n, "parley"), keyOf("save", n, "raw+notify"), sampleThroughput)
			g.miss += fmt.Sprintf("; raw SQL doing the NOTIFY Parley's realtime needs manages %.0f%% of raw SQL, and Parley %.0f%% of that", x*100, y*100)
		}
	}
	throughput("history", "History read", "postgraphile", 2, false)
	throughput("save", "Save", "postgraphile", 2, false)
	return gs
}

func trimFloat(f float64) string {
	return strings.TrimSuffix(strings.TrimRight(fmt.Sprintf("%.2f", f), "0"), ".")
}

func (rep *report) markdown(chartFile string) string {
	r := rep.r
	var b strings.Builder
	w := func(format string, a ...any) { fmt.Fprintf(&b, format, a...) }
	w("# Parley performance report\n\n")
	w("Written by `make bench` (`scripts/bench.sh`, the program in `bench/`) on %s in %s, on %s. ",
		r.Started.Format("2006-01-02 15:04 UTC"), r.Elapsed, r.Machine)
	w("Parley, a raw SQL reference and PostGraphile ran against one PostgreSQL in the same run; ")
	w("every figure is the median of %d runs of %s each (after %s of warm-up), and each run measured every target once, ",
		r.Runs, r.Duration, r.Warmup)
	w("in an order that rotates from run to run. Compare ratios rather than absolutes: the machine is shared. ")
	w("A ratio is the median over runs of each run's ratio, its two figures measured moments apart, with the range of the runs' ratios; ")
	w("it need not be the ratio of the two medians shown beside it.\n\n")
	var vs []string
	for _, k := range sortedKeys(r.Versions) {
		vs = append(vs, k+" "+r.Versions[k])
	}
	w("Versions: %s. PostgreSQL: %s.\n\n", strings.Join(vs, ", "), r.Postgres)

	w("## Targets\n\n")
	w("| target | measured | goal | |\n|---|---|---|---|\n")
	var missed []goal
	for _, g := range rep.goals() {
		mark := "met"
		switch {
		case !g.known:
			mark, g.measured = "not measured", "—"
		case !g.met:
			mark = "**missed**"
			missed = append(missed, g)
		}
		w("| %s | %s | %s | %s |\n", g.name, g.measured, g.want, mark)
	}
	w("\n")
	if len(missed) > 0 {
		w("Missed:\n\n")
		for _, g := range missed {
			where := "the CPU per request below each table of figures, and the CPU profiles of Parley further down"
			if strings.HasPrefix(g.name, "History read p50") && len(r.ReadPhases) > 0 {
				where = "the CPU per request below each table of figures, and further down the wall time of a read at one client (an execution trace) and the CPU profiles of Parley"
			}
			w("- %s: %s. Where the time goes: %s.\n", g.name, g.miss, where)
		}
		w("\n")
	}
	w("![p50 latency at 1 client and throughput at %d clients](%s)\n\n", r.Clients, chartFile)

	w("## Figures\n\n")
	for _, wl := range []struct{ key, title, what string }{
		{"save", "Save", "`addMessage` of a user's text (Markdown, a character to escape) to the client's own conversation"},
		{"history", "History read", "`conversation.messages(first: 100)`, every field of every variant, of a 100-message conversation of mixed variants"},
	} {
		w("### %s\n\n%s.\n\n", wl.title, wl.what)
		w("| clients | target | p50 | p99 | throughput | p50 vs raw SQL | throughput vs PostGraphile | p50 vs floor |\n|---|---|---|---|---|---|---|---|\n")
		for _, c := range []int{1, r.Clients} {
			for _, t := range append(slices.Clone(targets), "raw+notify", "pgbench") {
				f, ok := rep.fig(wl.key, c, t)
				if !ok {
					continue
				}
				vsRaw, vsPG := "", ""
				if x, ok := r.pairedRatio(keyOf(wl.key, c, t), keyOf(wl.key, c, "raw"), p50); ok && t != "raw" {
					vsRaw = fmt.Sprintf("%.2f×", x)
				}
				if x, ok := r.pairedRatio(keyOf(wl.key, c, t), keyOf(wl.key, c, "postgraphile"), sampleThroughput); ok && t != "postgraphile" {
					vsPG = fmt.Sprintf("%.2f×", x)
				}
				vsFloor := ""
				if x, _, _, _, ok := r.floorRatios(wl.key, c); ok && t == "parley" {
					vsFloor = fmt.Sprintf("%.2f×", x)
				}
				w("| %d | %s | %s | %s | %.0f req/s | %s | %s | %s |\n", c, targetNames[t], ms(f.P50), ms(f.P99), f.Throughput, vsRaw, vsPG, vsFloor)
			}
		}
		w("\n")
		rep.cpuTable(&b, wl.key)
	}
	if f1, ok := rep.fig("typename", 1, "parley"); ok {
		fN, _ := rep.fig("typename", r.Clients, "parley")
		w("### Floors\n\n")
		w("An operation's floor is what Postgres needs for its SQL plus what the transport needs, both measured in this run: ")
		w("**pgbench** running the raw SQL with prepared statements (`-M prepared`; the save is raw SQL + NOTIFY in a transaction, each client writing to a conversation of its own; the read selects every column of the same 100 rows), ")
		w("and **one HTTP round trip of `{ __typename }` through Parley** (its middleware, gqlgen, the response; no database): p50 %s at 1 client, %s and %.0f req/s at %d clients. ",
			ms(f1.P50), ms(fN.P50), fN.Throughput, r.Clients)
		w("\"p50 vs floor\" is Parley's p50 over the sum of the two p50s, run by run.\n\n")
	}
	rep.scaleTable(&b)
	if f, ok := rep.fig("save-mixed", 1, "parley"); ok {
		w("Parley saving the seven variants in turn (text, tool call, its result, file reference, MCP resource, mode change, image; 1 client): p50 %s, p99 %s, %.0f req/s.\n\n",
			ms(f.P50), ms(f.P99), f.Throughput)
	}
	var exports []string
	for _, f := range exportFormats {
		key := "export-" + strings.ToLower(strings.ReplaceAll(f, "_", "-"))
		if fig, ok := rep.fig(key, 1, "parley"); ok {
			mark := "missed"
			if fig.P50 < 50*time.Millisecond {
				mark = "met"
			}
			exports = append(exports, fmt.Sprintf("| %s | %s | %s | %.1f req/s | under 50 ms: %s |", f, ms(fig.P50), ms(fig.P99), fig.Throughput, mark))
		}
	}
	if len(exports) > 0 {
		w("### Exports\n\n")
		w("The whole transcript of a %d-message conversation (an imported Claude Code session), through GraphQL, 1 client: what an agent re-exporting its history every turn pays. Target: p50 under 50 ms.\n\n", exportMessages)
		w("| format | p50 | p99 | throughput | target |\n|---|---|---|---|---|\n%s\n\n", strings.Join(exports, "\n"))
	}
	if rep.before != nil {
		rep.beforeAfter(&b)
	}

	w("## Allocations\n\n")
	w("A history read allocates %.0f times (%.0f KiB) in Parley's process, counted by its runtime (expvar's `memstats.Mallocs`) over 300 sequential reads: **%.0f allocations per message** read, HTTP and JSON encoding included.",
		r.AllocsPerRead, r.BytesPerRead/1024, r.AllocsPerRead/100)
	if rep.before != nil && rep.before.AllocsPerRead > 0 {
		w(" Before: %.0f per message (%.0f KiB per read).", rep.before.AllocsPerRead/100, rep.before.BytesPerRead/1024)
	}
	w("\n\n")

	if rep.notes != "" {
		w("%s\n\n", rep.notes)
	}

	if len(r.Profiles) > 0 {
		w("## Where the time goes\n\n")
		w("CPU profiles of Parley's process under %d clients (`/debug/pprof/profile` from `parley serve --debug-addr`), summarized with `go tool pprof -top -cum`; a run leaves the profiles in `%s` (not committed: `go tool pprof bin/parley FILE` opens them).\n\n",
			r.Clients, strings.Join(relPaths(r.ProfileFiles), "`, `"))
		for _, k := range sortedKeys(r.ReadPhases) {
			w("### %s: the wall time of a read\n\n", k)
			w("An execution trace of Parley for %d s while one client reads (`/debug/pprof/trace`; each request is a trace region, and `bench/internal/readtrace` follows the goroutine serving each one through its waits; `go run ./bench/pair -work DIR -parley BIN -trace 3` does the same on a kept database). The p50 of each part: before the query (the request, the middleware, gqlgen, the resolver), the waits for Postgres's rows, and the rest (reading the rows, writing the page and the response), and the goroutines a read starts, each of which wakes the idle core:\n\n", readTraceSeconds)
			w(readtrace.TableHeader, "server")
			w("%s\n", r.ReadPhases[k].Row("Parley"))
		}
		for _, k := range sortedKeys(r.Profiles) {
			w("### %s\n\n", k)
			if rows := r.Breakdowns[k]; len(rows) > 0 {
				w("| where | share of Parley's CPU (cumulative) |\n|---|---|\n%s\n\n", strings.Join(rows, "\n"))
			}
			w("<details><summary>go tool pprof -top -cum</summary>\n\n```\n%s\n```\n\n</details>\n\n", r.Profiles[k])
		}
	}

	w("## Fan-out and import\n\n")
	if len(r.Extra) == 0 {
		w("**TODO**: import not measured in this run (`-import-runs 0` or `-only`).\n\n")
	} else {
		w("| | figure | |\n|---|---|---|\n")
		for _, x := range r.Extra {
			w("| %s: %s | %s | %s |\n", x.Section, x.Name, x.Value, x.Note)
		}
		w("\n")
	}
	if r.Fanout == "" {
		w("**TODO**: the realtime fan-out benchmark (`bench/fanout`, `make bench-realtime`) did not run: scripts/bench.sh runs it when it is in the tree.\n\n")
	} else {
		w("The realtime fan-out benchmark's own report (`bench/fanout`, as `make bench-realtime` runs it, with fewer messages per row; it starts its own Postgres and Parley, after the measurements above):\n\n%s\n\n", r.Fanout)
	}

	if len(r.Sections) > 0 {
		w("## Other benchmarks\n\n")
		w("Benchmarks of their own, run by scripts/bench.sh one at a time before the measurements above, each starting its own Postgres and Parley; their figures and targets are as each reports them.\n\n")
		for _, s := range r.Sections {
			if s.Markdown == "" {
				w("### %s\n\n**Failed**: it ran but wrote no report in this run (its output is in `make bench`'s log).\n\n", s.Title)
				continue
			}
			w("### %s\n\nFrom `%s`:\n\n%s\n\n", s.Title, s.File, s.Markdown)
		}
	}

	w("## How it was measured\n\n")
	w("- **Load**: the benchmark's own Go client (`bench/load.go`): N clients, each sending its next request as soon as the last is answered, over kept-alive HTTP/1.1 connections, for a fixed time. Every response is checked (status 200, `data` and no `errors`); the first failure stops the benchmark. p50 and p99 are nearest-rank percentiles of every request's latency; throughput is requests completed per second.\n")
	w("- **Raw SQL** (the floor): the same database work from Go with sqlx over lib/pq, on a pool of 20 connections like Parley's. Save: `BEGIN`; Parley's own statement that bumps the conversation and inserts the row (below); `COMMIT`. History: every column of the same 100 rows, scanned into a struct.\n")
	w("- **Parley**: the `parley` binary built from this tree, serving on loopback with its defaults (info-level access log to a file).\n")
	w("- **PostGraphile**: v4 (v5 needs Node.js 22; this machine has 20), from `bench/package.json`, on the same tables. History: `conversationById { messagesByConversationId(first: 100, orderBy: POSITION_ASC) { nodes { every column } } }`. Save: PostGraphile's generated CRUD mutations cannot bump the conversation and insert the message in one transaction, so the benchmark creates `bench.add_message(...)`, the same statement as a SQL function in a schema of its own (never in Parley's migrations), which PostGraphile exposes as the `addMessage` mutation. The three saves store identical rows (checked before measuring).\n")
	w("- Each save client writes to a conversation of its own; all history clients read the same conversation.\n\n")
	w("Commands:\n\n```sh\n%s\n```\n\n", strings.Join(r.Commands, "\n"))
	w("The raw SQL save (also the body of `bench.add_message`):\n\n```sql\n%s\n```\n", strings.TrimSpace(dedent(rawSaveSQL)))
	return b.String()
}

// cpuTable shows where a request's CPU went at N clients: the server, PostgreSQL and the
// load generator, read from /proc over each run's recorded stretch.
func (rep *report) cpuTable(b *strings.Builder, workload string) {
	r := rep.r
	var rows []string
	for _, t := range append(slices.Clone(targets), "raw+notify", "pgbench") {
		c, ok := r.cpuPerRequest(keyOf(workload, r.Clients, t))
		if !ok {
			continue
		}
		server := "—"
		if t == "parley" || t == "postgraphile" {
			server = us(c.Server)
		}
		rows = append(rows, fmt.Sprintf("| %s | %s | %s | %s | %s |", targetNames[t], server, us(c.Postgres), us(c.Client), us(c.Server+c.Postgres+c.Client)))
	}
	if len(rows) == 0 {
		return
	}
	fmt.Fprintf(b, "CPU per request at %d clients, by process (from /proc; the raw SQL reference runs in the load generator):\n\n", r.Clients)
	b.WriteString("| target | server | PostgreSQL | load generator | total |\n|---|---|---|---|---|\n")
	b.WriteString(strings.Join(rows, "\n") + "\n\n")
}

func us(d time.Duration) string { return fmt.Sprintf("%.0f µs", float64(d)/float64(time.Microsecond)) }

func (rep *report) beforeAfter(b *strings.Builder) {
	w := func(format string, a ...any) { fmt.Fprintf(b, format, a...) }
	before := rep.before
	w("### Before and after\n\n")
	w("Parley before the optimizations (run of %s, same machine and benchmark) and now; raw SQL of each run for scale.\n\n",
		before.Started.Format("2006-01-02 15:04 UTC"))
	w("| figure | before | raw SQL then | now | raw SQL now |\n|---|---|---|---|---|\n")
	for _, wl := range []string{"save", "history"} {
		for _, c := range []int{1, rep.r.Clients} {
			bf, ok1 := before.figure(keyOf(wl, c, "parley"))
			braw, _ := before.figure(keyOf(wl, c, "raw"))
			nf, ok2 := rep.r.figure(keyOf(wl, c, "parley"))
			nraw, _ := rep.r.figure(keyOf(wl, c, "raw"))
			if !ok1 || !ok2 {
				continue
			}
			w("| %s, %d client(s), p50 | %s | %s | %s | %s |\n", wl, c, ms(bf.P50), ms(braw.P50), ms(nf.P50), ms(nraw.P50))
			w("| %s, %d client(s), throughput | %.0f req/s | %.0f req/s | %.0f req/s | %.0f req/s |\n", wl, c, bf.Throughput, braw.Throughput, nf.Throughput, nraw.Throughput)
		}
	}
	w("\n")
}

// profileSpots are the functions whose cumulative share of a profile says where a
// request's time goes, by workload; an indented label is part of the one above.
var profileSpots = map[string][][2]string{
	"history": {
		{"db.(*DB).FindMessagePages", "reading the page's rows: query, scan, decode"},
		{"db.scanMessages", "· the driver reading and scanning the rows"},
		{"db.decodeMessage", "· decoding the JSON payloads"},
		{"db.(*DB).FindConversationByID", "reading the conversation"},
		{"graph.writeEdges", "writing the page as JSON (graph/pagewriter.go)"},
		{"render.(*Renderer).HTML", "· Markdown to sanitized HTML (cached)"},
		{"transport.appendData", "writing the response body (graph/transport/data.go)"},
	},
	"save": {
		{"db.(*DB).AddMessage", "the save: validation, then the transaction"},
		{"parley.Prepare", "· validating and sanitizing the message"},
		{"db.(*DB).transact", "· the transaction: BEGIN, insert, NOTIFY, COMMIT"},
		{"db.(*DB).notifyAdded", "· · the NOTIFY"},
	},
	"": {
		{"executor.(*Executor).CreateOperationContext", "gqlgen: the query from its cache, variables coerced and validated"},
		{"log/slog.(*Logger).LogAttrs", "the access log"},
		{"syscall.Syscall", "system calls (network: HTTP and Postgres), within the above"},
		{"runtime.mallocgc", "allocating, within the above"},
		{"runtime.gcBgMarkWorker", "garbage collection, in the background"},
	},
}

// profileBreakdown picks profileSpots' lines out of pprof's -top -cum output.
func profileBreakdown(top, workload string) []string {
	var rows []string
	for _, spot := range append(profileSpots[workload], profileSpots[""]...) {
		for _, line := range strings.Split(top, "\n") {
			f := strings.Fields(line)
			if len(f) < 6 || !strings.HasSuffix(f[5], spot[0]) {
				continue
			}
			rows = append(rows, fmt.Sprintf("| %s (`%s`) | %s |", spot[1], spot[0], f[4]))
			break
		}
	}
	return rows
}

// trimProfile keeps pprof's header and its 40 heaviest lines.
func trimProfile(s string) string {
	var out []string
	for _, l := range strings.Split(strings.TrimSpace(s), "\n") {
		if strings.HasPrefix(l, "File:") || strings.HasPrefix(l, "Build ID:") || strings.HasPrefix(l, "Time:") ||
			strings.HasPrefix(l, "Showing top") {
			continue
		}
		out = append(out, l)
	}
	return strings.Join(out[:min(len(out), 45)], "\n")
}

func relPaths(paths []string) []string {
	wd, _ := os.Getwd()
	out := make([]string, len(paths))
	for i, p := range paths {
		out[i] = strings.TrimPrefix(p, wd+"/")
	}
	return out
}

func dedent(s string) string {
	lines := strings.Split(strings.Trim(s, "\n"), "\n")
	for i, l := range lines {
		lines[i] = strings.TrimPrefix(l, "\t")
	}
	return strings.Join(lines, "\n")
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// svg draws two panels of grouped bars: p50 latency at 1 client, and throughput at N
// clients, for the save and the history read, one bar per target.
func (rep *report) svg() string {
	const (
		width, height = 960, 420
		panelW        = 440
		top, bottom   = 70, 340
	)
	colors := map[string]string{"raw": "#868e96", "parley": "#1c7ed6", "postgraphile": "#e8590c", "before": "#a5d8ff"}
	type bar struct {
		series string
		value  float64
		label  string
	}
	type group struct {
		name string
		bars []bar
	}
	latency := func(wl string) group {
		g := group{name: map[string]string{"save": "save", "history": "history read"}[wl]}
		if rep.before != nil {
			if f, ok := rep.before.figure(keyOf(wl, 1, "parley")); ok {
				g.bars = append(g.bars, bar{"before", float64(f.P50) / 1e6, fmt.Sprintf("%.2f", float64(f.P50)/1e6)})
			}
		}
		for _, t := range targets {
			if f, ok := rep.fig(wl, 1, t); ok {
				g.bars = append(g.bars, bar{t, float64(f.P50) / 1e6, fmt.Sprintf("%.2f", float64(f.P50)/1e6)})
			}
		}
		return g
	}
	tput := func(wl string) group {
		g := group{name: map[string]string{"save": "save", "history": "history read"}[wl]}
		if rep.before != nil {
			if f, ok := rep.before.figure(keyOf(wl, rep.r.Clients, "parley")); ok {
				g.bars = append(g.bars, bar{"before", f.Throughput, fmt.Sprintf("%.0f", f.Throughput)})
			}
		}
		for _, t := range targets {
			if f, ok := rep.fig(wl, rep.r.Clients, t); ok {
				g.bars = append(g.bars, bar{t, f.Throughput, fmt.Sprintf("%.0f", f.Throughput)})
			}
		}
		return g
	}
	var b strings.Builder
	w := func(format string, a ...any) { fmt.Fprintf(&b, format, a...) }
	w(`<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="Helvetica, Arial, sans-serif" font-size="12">`+"\n", width, height, width, height)
	w(`<rect width="100%%" height="100%%" fill="#ffffff"/>` + "\n")
	w(`<text x="%d" y="24" font-size="16" font-weight="bold" text-anchor="middle">Parley beside raw SQL and PostGraphile (%s)</text>`+"\n", width/2, html.EscapeString(rep.r.Started.Format("2006-01-02")))
	panel := func(x0 int, title string, groups []group) {
		w(`<text x="%d" y="48" font-size="13" text-anchor="middle">%s</text>`+"\n", x0+panelW/2, html.EscapeString(title))
		maxV := 0.0
		for _, g := range groups {
			for _, br := range g.bars {
				maxV = math.Max(maxV, br.value)
			}
		}
		if maxV == 0 {
			maxV = 1
		}
		maxV *= 1.15
		w(`<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="#343a40"/>`+"\n", x0+30, bottom, x0+panelW, bottom)
		gw := (panelW - 40) / max(len(groups), 1)
		for gi, g := range groups {
			gx := x0 + 40 + gi*gw
			bw := (gw - 30) / max(len(g.bars), 1)
			for bi, br := range g.bars {
				h := int(float64(bottom-top) * br.value / maxV)
				x := gx + bi*bw
				w(`<rect x="%d" y="%d" width="%d" height="%d" fill="%s"><title>%s: %s</title></rect>`+"\n",
					x, bottom-h, bw-4, h, colors[br.series], html.EscapeString(seriesName(br.series)), br.label)
				w(`<text x="%d" y="%d" text-anchor="middle" font-size="11">%s</text>`+"\n", x+(bw-4)/2, bottom-h-4, br.label)
			}
			w(`<text x="%d" y="%d" text-anchor="middle" font-size="12">%s</text>`+"\n", gx+(len(g.bars)*bw)/2, bottom+18, html.EscapeString(g.name))
		}
	}
	panel(30, "p50 latency, 1 client (ms; lower is better)", []group{latency("save"), latency("history")})
	panel(30+panelW+40, fmt.Sprintf("throughput, %d clients (req/s; higher is better)", rep.r.Clients), []group{tput("save"), tput("history")})
	// Legend.
	series := []string{"raw", "parley", "postgraphile"}
	if rep.before != nil {
		series = append([]string{"before"}, series...)
	}
	x := width/2 - len(series)*90
	for _, s := range series {
		w(`<rect x="%d" y="%d" width="14" height="14" fill="%s"/><text x="%d" y="%d">%s</text>`+"\n", x, height-40, colors[s], x+20, height-29, html.EscapeString(seriesName(s)))
		x += 180
	}
	w("</svg>\n")
	return b.String()
}

func seriesName(s string) string {
	if s == "before" {
		return "Parley before optimizing"
	}
	return targetNames[s]
}

// scaleGoal is the bound on each scale row's ratio to the small database's.
const scaleGoal = 1.2

// scaleRow is one operation in the large database beside the same in the small one.
type scaleRow struct {
	name, workload, target string
	small, large           figure
	ratio, lo, hi          float64
}

// scaleRows pairs every large-database measurement of the scale operations with the
// small database's measurement of the same operation.
func (r *results) scaleRows() []scaleRow {
	var rows []scaleRow
	for _, o := range scaleOps {
		smallKey := keyOf(o.workload, 1, scaleTarget("small", min(o.sizes[0], scaleSizes[0])))
		small, ok := r.figure(smallKey)
		if !ok {
			continue
		}
		for _, n := range o.sizes {
			key := keyOf(o.workload, 1, scaleTarget("large", n))
			large, ok := r.figure(key)
			if !ok {
				continue
			}
			x, lo, hi, _ := r.pairedRatios(key, smallKey, p50)
			name := o.title
			if n > 0 {
				name = fmt.Sprintf("%s, %d messages", o.title, n)
			}
			rows = append(rows, scaleRow{name: name, workload: o.workload, target: scaleTarget("large", n), small: small, large: large, ratio: x, lo: lo, hi: hi})
		}
	}
	return rows
}

// scaleTable shows the scale rows.
func (rep *report) scaleTable(b *strings.Builder) {
	rows := rep.r.scaleRows()
	if len(rows) == 0 {
		return
	}
	w := func(format string, a ...any) { fmt.Fprintf(b, format, a...) }
	w("### Cost in history length and database size\n\n")
	w("Each operation on conversations of 100, 10,000 and 100,000 messages in a database of %s, beside the same operation on a 100-message conversation in a small database (61 conversations, 220 messages), each served by a Parley of its own, measured together in every run: one client sending one request to each in turn, so that load from elsewhere on the machine falls on all of them alike (every field of every message; pages of 50). The goal is 1.2× at most.\n\n",
		rep.r.ScaleDatabase)
	w("| operation | small database p50 | large database p50 | p99 | ratio (runs) | |\n|---|---|---|---|---|---|\n")
	for _, row := range rows {
		mark := "met"
		if row.ratio > scaleGoal {
			mark = "**missed**"
		}
		w("| %s | %s | %s | %s | %.2f× (%.2f–%.2f×) | %s |\n", row.name, ms(row.small.P50), ms(row.large.P50), ms(row.large.P99), row.ratio, row.lo, row.hi, mark)
	}
	w("\n")
}
