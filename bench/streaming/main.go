// Command streaming measures live messages (`make bench-streaming`): S concurrent
// streaming messages (one conversation each), each fed R TEXT deltas a second through
// Parley's GraphQL API, each watched by N websocket subscribers of messageStream. It
// reports the deltas per second achieved, the appends that carried them, the latency
// from a delta's origin and from its acknowledgement to a subscriber reading it (p50,
// p99), the append's round trip and how much of it the server and its group commit took
// (from the server's /metrics), the database's commits and row writes per second, the
// server's CPU per delivered delta and the CPUs the server, Postgres and this program
// used; then checks that every stored message is exactly the deltas sent.
//
// Writers follow one of two models, each run by default (-models):
//   - relay (the headline): a relay of a provider's stream. Deltas arrive open-loop, at
//     R a second per stream whatever Parley does; the writer sends every delta that has
//     come since its last acknowledgement in one append (up to 1,000), waits for the
//     acknowledgement, and goes on. A delta's origin is when it was due.
//   - closed: one delta per append, the writer waiting for each acknowledgement before
//     making the next delta, never sooner than R a second. A delta's origin is when its
//     append was sent. Its rate is bounded by the round trip: R a second needs every
//     round trip under 1/R.
//
// Then a single stream, closed loop. Since the writer's own replica hands a committed
// append to its subscribers before acknowledging it, a delivery often precedes the
// acknowledgement (ack→subscriber then counts 0 ms): origin→subscriber is the
// end-to-end figure.
//
// It starts its own PostgreSQL (localpg, durability off unless -durable, as
// bench/fanout) and one `parley serve` from the binary given with -parley, on loopback;
// writers and subscribers run in this process and share the machine's CPUs with the
// server.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/coder/websocket"
	"github.com/jmoiron/sqlx"
	_ "github.com/lib/pq"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/parley-dev/parley"
	"github.com/parley-dev/parley/bench/internal/parleyproc"
	"github.com/parley-dev/parley/db"
	"github.com/parley-dev/parley/localpg"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "streaming:", err)
		os.Exit(1)
	}
}

type config struct {
	parley      string
	streams     int
	rate        int
	subscribers int
	duration    time.Duration
	durable     bool
	keep        bool
	debugAddr   string
	models      []string
	cpuprofile  string
	appendOver  string
	postmaster  int // the pid of the benchmark's Postgres
}

func run(ctx context.Context, args []string, out io.Writer) error {
	var cfg config
	fs := flag.NewFlagSet("streaming", flag.ContinueOnError)
	fs.StringVar(&cfg.parley, "parley", "bin/parley", "the parley binary to run")
	fs.IntVar(&cfg.streams, "streams", 100, "concurrent streaming messages")
	fs.IntVar(&cfg.rate, "rate", 50, "deltas per second per stream")
	fs.IntVar(&cfg.subscribers, "subscribers", 10, "websocket subscribers per stream")
	fs.DurationVar(&cfg.duration, "duration", 10*time.Second, "length of each run")
	fs.BoolVar(&cfg.durable, "durable", false, "run Postgres with fsync and synchronous commit on")
	fs.BoolVar(&cfg.keep, "keep", false, "keep the temporary directory (server log, database)")
	models := fs.String("models", "relay,closed", "the writers' models to run with -streams, in order: relay (deltas due open-loop, each append "+
		"carrying every delta due since the last acknowledgement, as a relay of a provider's stream does) and closed (one delta per append, "+
		"each waiting for the acknowledgement before the next)")
	fs.StringVar(&cfg.debugAddr, "debug-addr", "", "serve the server's profiles (/debug/pprof/) at this loopback address, to profile a run")
	fs.StringVar(&cfg.appendOver, "append-over", "http", "how writers send appends: http (a POST each) or websocket "+
		"(each writer's appends as graphql-transport-ws operations on one websocket it keeps open, as a relay of a provider's stream may)")
	fs.StringVar(&cfg.cpuprofile, "cpuprofile", "", "write the server's CPU profile of the first run's load to this file (needs -debug-addr)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if cfg.appendOver != "http" && cfg.appendOver != "websocket" {
		return fmt.Errorf("-append-over: %q is neither http nor websocket", cfg.appendOver)
	}
	for m := range strings.SplitSeq(*models, ",") {
		if m != modelRelay && m != modelClosed {
			return fmt.Errorf("-models: %q is neither %s nor %s", m, modelRelay, modelClosed)
		}
		cfg.models = append(cfg.models, m)
	}
	dir, err := os.MkdirTemp("", "parley-streaming-")
	if err != nil {
		return err
	}
	if err := os.Chmod(dir, 0o755); err != nil { // Postgres runs as postgres when we are root
		return err
	}
	if cfg.keep {
		fmt.Fprintf(os.Stderr, "streaming: keeping %s\n", dir)
	} else {
		defer os.RemoveAll(dir)
	}
	fmt.Fprintln(os.Stderr, "streaming: starting PostgreSQL...")
	cluster, err := localpg.Start(ctx, localpg.Config{DataDir: filepath.Join(dir, "pg"), Fast: !cfg.durable})
	if err != nil {
		return err
	}
	defer cluster.Stop(context.Background())
	cfg.postmaster = parleyproc.PostmasterPID(filepath.Join(cluster.DataDir(), "pgdata"))
	admin, err := sqlx.Open("postgres", cluster.DSN("postgres"))
	if err != nil {
		return err
	}
	defer admin.Close()
	if _, err := admin.ExecContext(ctx, `CREATE DATABASE streaming`); err != nil {
		return err
	}
	dsn := cluster.DSN("streaming")
	if err := db.Migrate(ctx, dsn); err != nil {
		return err
	}
	stats, err := sqlx.Open("postgres", dsn)
	if err != nil {
		return err
	}
	defer stats.Close()
	var extra []string
	if cfg.debugAddr != "" {
		extra = append(extra, "--debug-addr", cfg.debugAddr)
	}
	srv, err := parleyproc.Start(ctx, cfg.parley, dsn, filepath.Join(dir, "server.log"), extra...)
	if err != nil {
		return err
	}
	defer srv.Stop()

	fmt.Fprintf(out, "## Live messages\n\n`make bench-streaming` (bench/streaming): %s per run, %d websocket subscribers per stream, "+
		"Postgres durability %s, appends over %s. Load average at the start: %s.\n\n",
		cfg.duration, cfg.subscribers, map[bool]string{true: "on", false: "off"}[cfg.durable],
		map[string]string{"http": "HTTP (a POST each)", "websocket": "one kept-open websocket per writer"}[cfg.appendOver],
		parleyproc.LoadAverage())
	fmt.Fprintf(out, "- **relay**: deltas due open-loop at %d/s per stream; each append carries every delta due since the writer's last "+
		"acknowledgement (a relay of a provider's stream). A delta's origin is its due time.\n", cfg.rate)
	fmt.Fprintf(out, "- **closed**: one delta per append, each sent after the previous one's acknowledgement and no sooner than "+
		"%d/s. A delta's origin is when its append was sent.\n", cfg.rate)
	fmt.Fprintln(out, "- deltas/s: deltas acknowledged that were sent within the run, per second of the run; behind at the end: deltas "+
		"due within the run (at the rate) that a stream had not sent when it ended, per stream: a writer keeping up is behind by "+
		"about what comes due during one round trip, one falling behind by more the longer it runs. Deliveries count deltas "+
		"read by subscribers (an append's deltas arrive in one event). ack→subscriber counts 0 ms for a delta read before its "+
		"writer had the acknowledgement. Round trip: an append's send to its acknowledgement; in the server: "+
		"the part of it from the server receiving the request to having its response (parley_graphql_request_duration_seconds "+
		"of the run's mutations, the p99 as its histogram bucket's bound), the rest being the HTTP exchange and waiting for a CPU. Group commit: of the time in the server, the mean "+
		"an append waited for the batch in flight (queued) and for its own batch's statement and commit (written), "+
		"parley_append_group_commit_seconds. CPUs used: CPU seconds per second of the run and its drain, of the server, "+
		"Postgres (the postmaster and its backends) and this program (the writers and the subscribers' readers), out of the machine's "+
		fmt.Sprint(runtime.NumCPU())+"; the rest of the load average is other work.")
	fmt.Fprintln(out)
	fmt.Fprintln(out, "| writers | streams × deltas/s | deltas/s done | behind at the end | appends/s | deltas per append | deliveries/s | origin→subscriber p50 | p99 | "+
		"ack→subscriber p50 | p99 | max | origin→ack p99 | round trip p50 | p99 | in the server: mean | p99 ≤ | group commit queued | written | DB commits/s | DB rows written/s | WAL per append | "+
		"server CPU per delivered delta | CPUs used: server | Postgres | benchmark | stored = sent |")
	fmt.Fprintln(out, "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|")
	type row struct {
		model   string
		streams int
	}
	var rows []row
	for _, m := range cfg.models {
		rows = append(rows, row{m, cfg.streams})
	}
	rows = append(rows, row{modelClosed, 1})
	for _, rw := range rows {
		r, err := measure(ctx, cfg, rw.model, rw.streams, srv, stats)
		if err != nil {
			return err
		}
		fmt.Fprintf(out, "| %s | %d × %d | %.0f | %.1f | %.0f | %.1f | %.0f | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %.0f | %.0f | %.0f B | %.1f µs | %.2f | %.2f | %.2f | %s |\n",
			rw.model, rw.streams, cfg.rate, r.deltasPerSec, r.behind, r.appendsPerSec, r.deltasPerSec/max(r.appendsPerSec, 1e-9), r.deliveriesPerSec,
			ms(pct(r.fromOrigin, 50)), ms(pct(r.fromOrigin, 99)),
			ms(pct(r.latencies, 50)), ms(pct(r.latencies, 99)), ms(pct(r.latencies, 100)),
			ms(pct(r.originToAck, 99)), ms(pct(r.roundTrips, 50)), ms(pct(r.roundTrips, 99)),
			ms(r.serverMean), ms(time.Duration(r.serverP99*float64(time.Second))), ms(r.queuedMean), ms(r.writtenMean),
			r.commitsPerSec, r.rowsPerSec, r.walPerAppend, r.cpuPerDelivery, r.cpus[0], r.cpus[1], r.cpus[2], r.check)
	}
	fmt.Fprintln(out)
	return nil
}

// The writers' models (see the package comment).
const (
	modelRelay  = "relay"
	modelClosed = "closed"
)

type result struct {
	deltasPerSec, appendsPerSec, deliveriesPerSec float64
	latencies                                     []time.Duration // a delivered delta's, from the acknowledgement
	fromOrigin                                    []time.Duration // a delivered delta's, from its origin (due time or send)
	originToAck                                   []time.Duration // a delta's, from its origin to its acknowledgement
	roundTrips                                    []time.Duration // an append's, from its send to its acknowledgement
	serverMean                                    time.Duration   // an append's mean time in the server's GraphQL execution
	serverP99                                     float64         // the upper bound (s) of the bucket holding the p99 of it
	queuedMean, writtenMean                       time.Duration   // of serverMean, the group commit's: waiting for the batch in flight, then its own
	behind                                        float64         // deltas due within the run and not sent by its end, per stream
	cpus                                          [3]float64      // CPUs used by the server, Postgres and this program over the run and its drain
	commitsPerSec, rowsPerSec                     float64
	walPerAppend                                  float64 // bytes
	cpuPerDelivery                                float64 // µs
	check                                         string
}

// stream is one streaming message and what its writer sent.
type stream struct {
	conv, id string
	mu       sync.Mutex
	acked    map[int]time.Time   // seq → when the writer read the acknowledgement
	origins  map[int][]time.Time // seq → when each of its deltas originated
	deltas   int                 // sent
	behind   int                 // due within the run (at the rate), not sent by its end
	// roundTrips and originToAck are each append's send to acknowledgement, and each
	// delta's origin to acknowledgement.
	roundTrips, originToAck []time.Duration
	text                    strings.Builder
	sent                    int
}

// ackedAt returns when the writer read append seq's acknowledgement, and when each of
// its deltas originated.
func (s *stream) ackedAt(seq int) (acked time.Time, origins []time.Time, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	acked, ok = s.acked[seq]
	return acked, s.origins[seq], ok
}

// delivery is one append a subscriber read (of n deltas), and when.
type delivery struct {
	s   *stream
	seq int
	n   int
	at  time.Time
}

func measure(ctx context.Context, cfg config, model string, n int, srv *parleyproc.Server, stats *sqlx.DB) (result, error) {
	var r result
	relay := model == modelRelay
	fmt.Fprintf(os.Stderr, "streaming: %d streams, %s...\n", n, model)
	streams := make([]*stream, n)
	for i := range streams {
		s := &stream{acked: map[int]time.Time{}, origins: map[int][]time.Time{}}
		var c struct {
			CreateConversation struct{ ID string }
		}
		if err := gql(ctx, srv.URL, `mutation { createConversation(title: "bench") { id } }`, nil, &c); err != nil {
			return r, err
		}
		s.conv = c.CreateConversation.ID
		streams[i] = s
	}
	// Subscribers first, so that they see each message start.
	var deliveries []delivery
	var dmu sync.Mutex
	var conns []*websocket.Conn
	var readers sync.WaitGroup
	for _, s := range streams {
		for range cfg.subscribers {
			conn, err := subscribe(ctx, srv.URL, s.conv)
			if err != nil {
				return r, err
			}
			conns = append(conns, conn)
			readers.Add(1)
			go func() {
				defer readers.Done()
				read(conn, func(seq, n int, at time.Time) {
					dmu.Lock()
					deliveries = append(deliveries, delivery{s, seq, n, at})
					dmu.Unlock()
				})
			}()
		}
	}
	defer func() {
		for _, c := range conns {
			c.Close(websocket.StatusNormalClosure, "")
		}
		readers.Wait()
	}()
	for _, s := range streams {
		var m struct {
			StartMessage struct{ Node struct{ ID string } }
		}
		if err := gql(ctx, srv.URL, `mutation($c: ID!) { startMessage(conversationId: $c) { node { ... on MessageBase { id } } } }`,
			map[string]any{"c": s.conv}, &m); err != nil {
			return r, err
		}
		s.id = m.StartMessage.Node.ID
	}
	time.Sleep(500 * time.Millisecond) // let the start's events reach the subscribers before measuring
	dmu.Lock()
	deliveries = deliveries[:0]
	dmu.Unlock()

	time.Sleep(1500 * time.Millisecond) // the counters settle (see dbStats)
	commits0, rows0, wal0, err := dbStats(ctx, stats)
	if err != nil {
		return r, err
	}
	cpu0, err := srv.CPUTime()
	if err != nil {
		return r, err
	}
	procs := parleyproc.ReadProcs()
	pg0, self0 := parleyproc.TreeCPU(procs, cfg.postmaster), parleyproc.SelfCPU()
	mut0, queued0, written0, err := serverTimes(ctx, srv.URL)
	if err != nil {
		return r, err
	}
	var profiled chan error
	if cfg.cpuprofile != "" && cfg.debugAddr != "" && n == cfg.streams && model == cfg.models[0] {
		profiled = make(chan error, 1)
		go func() {
			profiled <- parleyproc.CPUProfile(ctx, "http://"+cfg.debugAddr, max(1, int(cfg.duration.Seconds())), cfg.cpuprofile)
		}()
	}
	start := time.Now()
	end := start.Add(cfg.duration)
	interval := time.Second / time.Duration(cfg.rate)
	var writers sync.WaitGroup
	var werr error
	var wmu sync.Mutex
	for i, s := range streams {
		writers.Add(1)
		go func() {
			defer writers.Done()
			send := func(vars map[string]any) error { return gql(ctx, srv.URL, appendMutation, vars, nil) }
			if cfg.appendOver == "websocket" {
				ws, err := dialWriter(ctx, srv.URL)
				if err != nil {
					wmu.Lock()
					werr = errors.Join(werr, err)
					wmu.Unlock()
					return
				}
				defer ws.CloseNow()
				send = func(vars map[string]any) error { return wsMutation(ctx, ws, appendMutation, vars) }
			}
			// Stagger the streams over one interval, then pace each at its rate: delta k
			// is due at first + k·interval. A relay sends every delta due by now; a
			// closed-loop writer makes one.
			first := start.Add(interval * time.Duration(i) / time.Duration(len(streams)))
			dueAt := func(k int) time.Time { return first.Add(interval * time.Duration(k)) }
			for seq, k := 1, 0; ; seq++ {
				if d := time.Until(dueAt(k)); d > 0 {
					time.Sleep(d)
				}
				now := time.Now()
				if now.After(end) {
					behind := 0 // due within the run, never sent
					for dueAt(k + behind).Before(end) {
						behind++
					}
					s.mu.Lock()
					s.behind = behind
					s.mu.Unlock()
					return
				}
				n := 1
				for relay && n < parley.MaxDeltasPerAppend && !dueAt(k+n).After(now) && dueAt(k+n).Before(end) {
					n++
				}
				deltas := make([]map[string]any, n)
				dues := make([]time.Time, n)
				var text strings.Builder
				for j := range n {
					piece := fmt.Sprintf("t%d ", k+j+1)
					text.WriteString(piece)
					deltas[j] = map[string]any{"kind": "TEXT", "index": 0, "text": piece}
					dues[j] = dueAt(k + j)
				}
				k += n
				sentAt := time.Now()
				if !relay {
					dues = []time.Time{sentAt} // a closed-loop delta originates when it is sent
				}
				s.mu.Lock()
				s.origins[seq] = dues
				s.mu.Unlock()
				err := send(map[string]any{"m": s.id, "s": seq, "d": deltas})
				at := time.Now()
				if err != nil {
					wmu.Lock()
					werr = errors.Join(werr, err)
					wmu.Unlock()
					return
				}
				s.mu.Lock()
				s.acked[seq] = at
				s.roundTrips = append(s.roundTrips, at.Sub(sentAt))
				for _, d := range dues {
					s.originToAck = append(s.originToAck, at.Sub(d))
				}
				s.text.WriteString(text.String())
				s.sent, s.deltas = seq, s.deltas+n
				s.mu.Unlock()
			}
		}()
	}
	writers.Wait()
	if werr != nil {
		return r, werr
	}
	mut1, queued1, written1, err := serverTimes(ctx, srv.URL)
	if err != nil {
		return r, err
	}
	r.serverMean, r.serverP99 = mut1.since(mut0)
	r.queuedMean, _ = queued1.since(queued0)
	r.writtenMean, _ = written1.since(written0)
	if profiled != nil {
		if err := <-profiled; err != nil {
			return r, err
		}
	}
	// Wait (up to 30 s) for the subscribers to have every delta.
	total := 0
	for _, s := range streams {
		total += s.deltas * cfg.subscribers
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		dmu.Lock()
		got := 0
		for _, d := range deliveries {
			got += d.n
		}
		dmu.Unlock()
		if got >= total || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	drained := time.Since(start)
	cpu1, err := srv.CPUTime()
	if err != nil {
		return r, err
	}
	procs = parleyproc.ReadProcs()
	pg1, self1 := parleyproc.TreeCPU(procs, cfg.postmaster), parleyproc.SelfCPU()
	r.cpus = [3]float64{(cpu1 - cpu0).Seconds() / drained.Seconds(), (pg1 - pg0).Seconds() / drained.Seconds(),
		(self1 - self0).Seconds() / drained.Seconds()}
	time.Sleep(1500 * time.Millisecond) // the counters settle (see dbStats)
	commits1, rows1, wal1, err := dbStats(ctx, stats)
	if err != nil {
		return r, err
	}
	dmu.Lock()
	ds := slices.Clone(deliveries)
	dmu.Unlock()
	sent, deltas, delivered, behind := 0, 0, 0, 0
	for _, s := range streams {
		sent += s.sent
		deltas += s.deltas
		behind += s.behind
	}
	r.behind = float64(behind) / float64(len(streams))
	for _, d := range ds {
		delivered += d.n
	}
	// Every append counted was sent within the run (the writers send none after its
	// end) and acknowledged; the last acknowledgements may come after it.
	r.appendsPerSec = float64(sent) / cfg.duration.Seconds()
	r.deltasPerSec = float64(deltas) / cfg.duration.Seconds()
	r.deliveriesPerSec = float64(delivered) / drained.Seconds()
	r.commitsPerSec = float64(commits1-commits0) / drained.Seconds()
	r.rowsPerSec = float64(rows1-rows0) / drained.Seconds()
	r.walPerAppend = float64(wal1-wal0) / float64(max(sent, 1))
	if delivered > 0 {
		r.cpuPerDelivery = float64((cpu1 - cpu0).Microseconds()) / float64(delivered)
	}
	for _, d := range ds {
		acked, origins, ok := d.s.ackedAt(d.seq)
		for j := range d.n {
			if ok {
				r.latencies = append(r.latencies, max(d.at.Sub(acked), 0))
			} else {
				r.latencies = append(r.latencies, 0) // read before the writer had its acknowledgement
			}
			if j < len(origins) {
				r.fromOrigin = append(r.fromOrigin, max(d.at.Sub(origins[j]), 0))
			}
		}
	}
	for _, s := range streams {
		r.roundTrips = append(r.roundTrips, s.roundTrips...)
		r.originToAck = append(r.originToAck, s.originToAck...)
	}
	for _, ds := range [][]time.Duration{r.latencies, r.fromOrigin, r.roundTrips, r.originToAck} {
		slices.Sort(ds)
	}
	missing := total - delivered
	// Complete every message and compare the stored text with what was sent.
	bad := 0
	for _, s := range streams {
		var m struct {
			CompleteMessage struct{ Text string }
		}
		if err := gql(ctx, srv.URL, `mutation($m: ID!) { completeMessage(messageId: $m) { ... on TextMessage { text } } }`,
			map[string]any{"m": s.id}, &m); err != nil {
			return r, err
		}
		if m.CompleteMessage.Text != s.text.String() {
			bad++
		}
	}
	switch {
	case bad > 0:
		r.check = fmt.Sprintf("**%d of %d differ**", bad, len(streams))
	case missing > 0:
		r.check = fmt.Sprintf("yes (%d deliveries not read within 30 s)", missing)
	default:
		r.check = "yes"
	}
	return r, nil
}

// dbStats returns the database's commits and rows written so far, and the WAL
// position. Backends report their counters at most once a second when idle, so callers
// let a second and a half pass after the load before reading the end.
func dbStats(ctx context.Context, stats *sqlx.DB) (commits, rows, wal int64, err error) {
	err = stats.QueryRowxContext(ctx, `SELECT xact_commit, tup_inserted + tup_updated + tup_deleted,
		pg_current_wal_lsn() - '0/0'::pg_lsn
		FROM pg_stat_database WHERE datname = current_database()`).Scan(&commits, &rows, &wal)
	return commits, rows, wal, err
}

const appendMutation = `mutation($m: ID!, $s: Int!, $d: [MessageDeltaInput!]!) {
	appendMessageDeltas(messageId: $m, seq: $s, deltas: $d) { seq } }`

// dialWriter opens a websocket for a writer's mutations (graphql-transport-ws).
func dialWriter(ctx context.Context, url string) (*websocket.Conn, error) {
	dctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	conn, _, err := websocket.Dial(dctx, "ws"+strings.TrimPrefix(url, "http")+"/graphql",
		&websocket.DialOptions{Subprotocols: []string{"graphql-transport-ws"}})
	if err != nil {
		return nil, fmt.Errorf("dial: %w", err)
	}
	err = conn.Write(dctx, websocket.MessageText, []byte(`{"type":"connection_init"}`))
	if err == nil {
		_, _, err = conn.Read(dctx) // connection_ack
	}
	if err != nil {
		conn.CloseNow()
		return nil, fmt.Errorf("connection_init: %w", err)
	}
	return conn, nil
}

// wsMutation runs a mutation as an operation on ws and waits for its completion: one
// at a time, so that a writer's appends stay in order.
func wsMutation(ctx context.Context, ws *websocket.Conn, query string, vars map[string]any) error {
	msg, _ := json.Marshal(map[string]any{"id": "m", "type": "subscribe", "payload": map[string]any{"query": query, "variables": vars}})
	if err := ws.Write(ctx, websocket.MessageText, msg); err != nil {
		return err
	}
	var failed error
	for {
		_, b, err := ws.Read(ctx)
		if err != nil {
			return err
		}
		var m struct {
			Type    string
			Payload struct{ Errors []struct{ Message string } }
		}
		if err := json.Unmarshal(b, &m); err != nil {
			return err
		}
		switch m.Type {
		case "next":
			if len(m.Payload.Errors) > 0 {
				failed = errors.New(m.Payload.Errors[0].Message)
			}
		case "error":
			return fmt.Errorf("append refused: %s", b)
		case "ping":
			ws.Write(ctx, websocket.MessageText, []byte(`{"type":"pong"}`))
		case "complete":
			return failed
		}
	}
}

var httpClient = &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 256}}

func gql(ctx context.Context, url, query string, vars map[string]any, v any) error {
	body, _ := json.Marshal(map[string]any{"query": query, "variables": vars})
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url+"/graphql", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	resp, err := httpClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	var out struct {
		Data   json.RawMessage
		Errors []struct{ Message string }
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		return fmt.Errorf("status %d: %w", resp.StatusCode, err)
	}
	if len(out.Errors) > 0 {
		return errors.New(out.Errors[0].Message)
	}
	if v != nil {
		return json.Unmarshal(out.Data, v)
	}
	return nil
}

// subscribe opens a websocket subscribed to the conversation's messageStream.
func subscribe(ctx context.Context, url, conv string) (*websocket.Conn, error) {
	dctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	conn, _, err := websocket.Dial(dctx, "ws"+strings.TrimPrefix(url, "http")+"/graphql",
		&websocket.DialOptions{Subprotocols: []string{"graphql-transport-ws"}})
	if err != nil {
		return nil, fmt.Errorf("dial: %w", err)
	}
	conn.SetReadLimit(1 << 20)
	sub, _ := json.Marshal(map[string]any{"id": "1", "type": "subscribe", "payload": map[string]any{
		"query":     `subscription($c: ID!) { messageStream(conversationId: $c) { cursor delta { seq deltas { text } } } }`,
		"variables": map[string]any{"c": conv},
	}})
	err = conn.Write(dctx, websocket.MessageText, []byte(`{"type":"connection_init"}`))
	if err == nil {
		_, _, err = conn.Read(dctx) // connection_ack
	}
	if err == nil {
		err = conn.Write(dctx, websocket.MessageText, sub)
	}
	if err != nil {
		conn.CloseNow()
		return nil, fmt.Errorf("subscribe: %w", err)
	}
	return conn, nil
}

// read calls got with each append's number, its number of deltas, and when it was read,
// until the connection ends. It picks them out of the frame without decoding the JSON:
// it shares the CPUs with the server.
func read(conn *websocket.Conn, got func(seq, n int, at time.Time)) {
	key := []byte(`"seq":`)
	for {
		_, b, err := conn.Read(context.Background())
		if err != nil {
			if os.Getenv("STREAMING_DEBUG") != "" {
				fmt.Fprintln(os.Stderr, "read:", err)
			}
			return
		}
		if os.Getenv("STREAMING_DEBUG") != "" {
			fmt.Fprintf(os.Stderr, "frame: %.300s\n", b)
		}
		at := time.Now()
		switch {
		case bytes.Contains(b, []byte(`"type":"next"`)):
			i := bytes.Index(b, key)
			if i < 0 {
				continue // a whole message
			}
			j := i + len(key)
			k := j
			for k < len(b) && b[k] >= '0' && b[k] <= '9' {
				k++
			}
			if seq, err := strconv.Atoi(string(b[j:k])); err == nil {
				got(seq, bytes.Count(b, []byte(`"text":`)), at)
			}
		case bytes.Contains(b, []byte(`"type":"ping"`)):
			conn.Write(context.Background(), websocket.MessageText, []byte(`{"type":"pong"}`))
		}
	}
}

func pct(ds []time.Duration, p float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	i := int(float64(len(ds)-1) * p / 100)
	return ds[i]
}

func ms(d time.Duration) string { return fmt.Sprintf("%.1f ms", float64(d.Microseconds())/1000) }

// histogram is the server's parley_graphql_request_duration_seconds for mutations (from
// receiving the request to having its response: decoding, GraphQL execution, the append
// and its group commit, not the HTTP connection's reading and writing).
type histogram struct {
	count  uint64
	sum    float64
	bounds []float64
	counts []uint64 // cumulative, per bound
}

// serverTimes scrapes the server's /metrics for its mutations' histogram, and its group
// commit's phases (parley_append_group_commit_seconds).
func serverTimes(ctx context.Context, url string) (mutations, queued, written histogram, err error) {
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url+"/metrics", nil)
	resp, err := httpClient.Do(req)
	if err != nil {
		return mutations, queued, written, err
	}
	defer resp.Body.Close()
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		return mutations, queued, written, fmt.Errorf("/metrics: %w", err)
	}
	return histogramOf(fams, "parley_graphql_request_duration_seconds", "operation_type", "mutation"),
		histogramOf(fams, "parley_append_group_commit_seconds", "phase", "queued"),
		histogramOf(fams, "parley_append_group_commit_seconds", "phase", "written"), nil
}

// histogramOf returns the series of the histogram name whose label is value.
func histogramOf(fams map[string]*dto.MetricFamily, name, label, value string) histogram {
	var h histogram
	for _, m := range fams[name].GetMetric() {
		for _, l := range m.GetLabel() {
			if l.GetName() == label && l.GetValue() == value {
				hg := m.GetHistogram()
				h.count, h.sum = hg.GetSampleCount(), hg.GetSampleSum()
				for _, b := range hg.GetBucket() {
					h.bounds = append(h.bounds, b.GetUpperBound())
					h.counts = append(h.counts, b.GetCumulativeCount())
				}
			}
		}
	}
	return h
}

// since returns the mean of the mutations between h0 and h, and the upper bound of the
// bucket that holds their 99th percentile.
func (h histogram) since(h0 histogram) (mean time.Duration, p99 float64) {
	n := h.count - h0.count
	if n == 0 {
		return 0, 0
	}
	mean = time.Duration((h.sum - h0.sum) / float64(n) * float64(time.Second))
	for i, b := range h.bounds {
		c := h.counts[i]
		if i < len(h0.counts) {
			c -= h0.counts[i]
		}
		if float64(c) >= 0.99*float64(n) {
			return mean, b
		}
	}
	return mean, math.Inf(1)
}
