// Command fanout measures realtime fan-out (`make bench-realtime`): how long a message
// takes from its commit to its delivery to websocket subscribers, at 1, 100 and 1,000
// subscribers of one conversation (p50, p99), the delivery rate under sustained writes,
// and the server memory an idle websocket subscription costs. It prints a Markdown
// report.
//
// It starts its own PostgreSQL (localpg, in a temporary directory, durability off: the
// commit itself is not what is measured) and one `parley serve` from the binary given
// with -parley, on loopback. The subscribers are websocket clients (graphql-transport-ws,
// one connection each) in this process; the writer is this process too, writing through
// Parley's db package as another replica would, so every message reaches the server by
// Postgres NOTIFY. Latency runs from the moment the writer's commit returns to the moment
// a client has read the frame; it includes the client's own work, on the same machine.
//
// Memory is the server process's resident set (VmRSS) before and after opening the idle
// subscriptions, divided by their number.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/coder/websocket"
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
		fmt.Fprintln(os.Stderr, "fanout:", err)
		os.Exit(1)
	}
}

type config struct {
	parley      string
	levels      []int
	messages    int
	interval    time.Duration
	sustainSubs int
	writers     int
	sustain     time.Duration
	paceRate    int
	keep        bool
	debugAddr   string
	hold        time.Duration
	cpuprofile  string
}

func parseFlags(args []string) (config, error) {
	var c config
	var levels string
	fs := flag.NewFlagSet("fanout", flag.ContinueOnError)
	fs.StringVar(&c.parley, "parley", "bin/parley", "the parley binary to run")
	fs.StringVar(&levels, "subscribers", "1,100,1000", "subscriber counts to measure latency at")
	fs.IntVar(&c.messages, "messages", 200, "messages written at each subscriber count")
	fs.DurationVar(&c.interval, "interval", 100*time.Millisecond, "pause between messages when measuring latency")
	fs.IntVar(&c.sustainSubs, "sustain-subscribers", 100, "subscribers during the sustained-write run")
	fs.IntVar(&c.writers, "writers", 4, "concurrent writers during the sustained-write run")
	fs.DurationVar(&c.sustain, "sustain", 10*time.Second, "length of each sustained-write run")
	fs.IntVar(&c.paceRate, "paced-rate", 100, "messages per second of the paced sustained run (0: none)")
	fs.BoolVar(&c.keep, "keep", false, "keep the temporary directory (server log, database)")
	fs.StringVar(&c.debugAddr, "debug-addr", "", "the server's --debug-addr (default: a free loopback port), to profile it (/debug/pprof/)")
	fs.DurationVar(&c.hold, "hold", 0, "pause this long with the idle subscriptions open, to profile them")
	fs.StringVar(&c.cpuprofile, "cpuprofile", "", "write the server's CPU profile of the largest level's latency row to this file")
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	for _, s := range strings.Split(levels, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n < 1 {
			return c, fmt.Errorf("-subscribers: %q is not a positive number", s)
		}
		c.levels = append(c.levels, n)
	}
	return c, nil
}

func run(ctx context.Context, args []string, out io.Writer) error {
	cfg, err := parseFlags(args)
	if err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "parley-fanout-")
	if err != nil {
		return err
	}
	// Postgres runs as the postgres user when we are root and must reach its directory.
	if err := os.Chmod(dir, 0o755); err != nil {
		return err
	}
	if cfg.keep {
		fmt.Fprintf(os.Stderr, "fanout: keeping %s\n", dir)
	} else {
		defer os.RemoveAll(dir)
	}

	fmt.Fprintln(os.Stderr, "fanout: starting PostgreSQL...")
	cluster, err := localpg.Start(ctx, localpg.Config{DataDir: filepath.Join(dir, "pg"), Fast: true})
	if err != nil {
		return err
	}
	defer cluster.Stop(context.Background())
	admin, err := sqlx.Open("postgres", cluster.DSN("postgres"))
	if err != nil {
		return err
	}
	defer admin.Close()
	if _, err := admin.ExecContext(ctx, `CREATE DATABASE fanout`); err != nil {
		return err
	}
	dsn := cluster.DSN("fanout")
	if err := db.Migrate(ctx, dsn); err != nil {
		return err
	}
	// The server runs in local mode (loopback, no authentication), where everything
	// belongs to parley.LocalOwner; the writer acts for the same owner.
	ctx = parley.WithOwner(ctx, parley.LocalOwner)
	writer, err := db.Open(ctx, dsn, db.Config{})
	if err != nil {
		return err
	}
	defer writer.Close()

	if cfg.debugAddr == "" {
		if cfg.debugAddr, err = freeAddr(); err != nil {
			return err
		}
	}
	srv, err := parleyproc.Start(ctx, cfg.parley, dsn, filepath.Join(dir, "server.log"), debugFlags(cfg.debugAddr)...)
	if err != nil {
		return err
	}
	defer srv.Stop()

	b := &bench{cfg: cfg, url: srv.URL, writer: writer}
	fmt.Fprintf(out, "## Realtime fan-out\n\n")
	fmt.Fprintf(out, "%s, %d CPUs, Go %s; one `parley serve`, subscribers and writer in the benchmark process, all on loopback; load average at the start %s.\n\n",
		time.Now().UTC().Format("2006-01-02"), runtime.NumCPU(), runtime.Version(), parleyproc.LoadAverage())
	defer func() {
		fmt.Fprintf(out, "\nLoad average at the end: %s (other processes compete for the same CPUs).\n", parleyproc.LoadAverage())
	}()

	// Memory first, on a fresh server: the largest level's subscriptions, idle.
	maxSubs := slices.Max(cfg.levels)
	conv, err := writer.CreateConversation(ctx, "fanout")
	if err != nil {
		return err
	}
	warm, err := b.subscribe(ctx, conv.ID, 1)
	if err != nil {
		return err
	}
	if err := b.deliverOne(ctx, conv.ID, warm); err != nil {
		return err
	}
	// Live memory first: its collections return garbage, which the resident set then
	// sheds as the runtime gives pages back (it does so over seconds).
	liveBefore, err := liveMemory(ctx, cfg.debugAddr)
	if err != nil {
		return err
	}
	before, err := settledRSS(ctx, srv)
	if err != nil {
		return err
	}
	subs, err := b.subscribe(ctx, conv.ID, maxSubs)
	if err != nil {
		return err
	}
	// One message reaches them all: then every subscription is live, and idle again.
	if err := b.deliverOne(ctx, conv.ID, append(subs, warm...)); err != nil {
		return err
	}
	liveAfter, err := liveMemory(ctx, cfg.debugAddr)
	if err != nil {
		return err
	}
	after, err := settledRSS(ctx, srv)
	if err != nil {
		return err
	}
	if cfg.hold > 0 {
		fmt.Fprintf(os.Stderr, "fanout: holding %d idle subscriptions for %s\n", maxSubs+1, cfg.hold)
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(cfg.hold):
		}
	}
	closeAll(warm)

	fmt.Fprintf(out, "### Commit-to-delivery latency\n\n")
	fmt.Fprintf(out, "%d messages per row, one every %s; latency from the writer's commit returning to the client reading the frame.\n\n",
		cfg.messages, cfg.interval)
	fmt.Fprintf(out, "| Subscribers | Deliveries | p50 | p99 | max | Server CPU per delivery |\n|---:|---:|---:|---:|---:|---:|\n")
	levels := slices.Clone(cfg.levels)
	slices.Sort(levels)
	slices.Reverse(levels) // the largest first: its subscriptions are open already
	rows := map[int]string{}
	for _, n := range levels {
		if len(subs) != n {
			closeAll(subs)
			if conv, err = writer.CreateConversation(ctx, "fanout"); err != nil {
				return err
			}
			if subs, err = b.subscribe(ctx, conv.ID, n); err != nil {
				return err
			}
			if err := b.deliverOne(ctx, conv.ID, subs); err != nil {
				return err
			}
		}
		cpu0, err := srv.CPUTime()
		if err != nil {
			return err
		}
		var profiled chan error
		if cfg.cpuprofile != "" && n == maxSubs {
			profiled = make(chan error, 1)
			secs := max(1, int((time.Duration(cfg.messages) * cfg.interval).Seconds()))
			go func() { profiled <- parleyproc.CPUProfile(ctx, "http://"+cfg.debugAddr, secs, cfg.cpuprofile) }()
		}
		lat, err := b.latency(ctx, conv.ID, subs)
		if err != nil {
			return fmt.Errorf("%d subscribers: %w", n, err)
		}
		if profiled != nil {
			if err := <-profiled; err != nil {
				return err
			}
		}
		cpu1, err := srv.CPUTime()
		if err != nil {
			return err
		}
		rows[n] = fmt.Sprintf("| %d | %d | %s | %s | %s | %.1f µs |\n", n, len(lat), ms(pct(lat, 50)), ms(pct(lat, 99)), ms(pct(lat, 100)),
			float64((cpu1-cpu0).Microseconds())/float64(len(lat)))
		fmt.Fprintf(os.Stderr, "fanout: %d subscribers done\n", n)
	}
	for _, n := range cfg.levels {
		fmt.Fprint(out, rows[n])
	}
	closeAll(subs)

	fmt.Fprintf(out, "\n### Sustained writes\n\n")
	fmt.Fprintf(out, "%d subscribers, %d writers for %s.\n\n", cfg.sustainSubs, cfg.writers, cfg.sustain)
	fmt.Fprintf(out, "| Writers | Messages/s committed | Deliveries/s | p50 | p99 | Last delivery after last commit |\n|---|---:|---:|---:|---:|---:|\n")
	rates := []int{0}
	if cfg.paceRate > 0 {
		rates = append(rates, cfg.paceRate)
	}
	for _, rate := range rates {
		conv, err = writer.CreateConversation(ctx, "sustained")
		if err != nil {
			return err
		}
		if subs, err = b.subscribe(ctx, conv.ID, cfg.sustainSubs); err != nil {
			return err
		}
		if err := b.deliverOne(ctx, conv.ID, subs); err != nil {
			return err
		}
		s, err := b.sustained(ctx, conv.ID, subs, rate)
		if err != nil {
			return err
		}
		closeAll(subs)
		how := "as fast as they can"
		if rate > 0 {
			how = fmt.Sprintf("paced at %d messages/s", rate)
		}
		fmt.Fprintf(out, "| %s | %.0f | %.0f | %s | %s | %s |\n", how, s.writesPerSec, s.deliveriesPerSec, ms(s.p50), ms(s.p99), ms(s.drain))
	}
	fmt.Fprintf(out, "\nWhen writers outrun the subscribers, each subscriber falls behind and catches up from the database afterwards: the latency then measures the backlog, and deliveries/s the capacity.\n")

	fmt.Fprintf(out, "\n### Memory per idle subscription\n\n")
	fmt.Fprintf(out, "%d idle websocket subscriptions, one connection each:\n\n", maxSubs)
	fmt.Fprintf(out, "| Measure | Before | After | Per subscription |\n|---|---:|---:|---:|\n")
	fmt.Fprintf(out, "| Live memory (heap in use + goroutine stacks, after a GC) | %.1f MiB | %.1f MiB | %.1f KiB |\n",
		mib(liveBefore), mib(liveAfter), float64(liveAfter-liveBefore)/float64(maxSubs)/1024)
	fmt.Fprintf(out, "| Resident set (VmRSS, settled after those collections) | %.1f MiB | %.1f MiB | %.1f KiB |\n",
		mib(before), mib(after), float64(after-before)/float64(maxSubs)/1024)
	return nil
}

// rss returns the server's resident set size in bytes.
func rss(s *parleyproc.Server) (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", s.Pid()))
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			return kb << 10, err
		}
	}
	return 0, errors.New("no VmRSS in /proc status")
}

// settledRSS waits until the resident set stops moving (two samples a second apart
// within 1%), then returns it.
func settledRSS(ctx context.Context, s *parleyproc.Server) (int64, error) {
	prev, err := rss(s)
	if err != nil {
		return 0, err
	}
	for range 30 {
		select {
		case <-ctx.Done():
			return 0, ctx.Err()
		case <-time.After(time.Second):
		}
		cur, err := rss(s)
		if err != nil {
			return 0, err
		}
		if d := cur - prev; d*100 <= prev && -d*100 <= prev {
			return cur, nil
		}
		prev = cur
	}
	return prev, nil
}

func mib(n int64) float64 { return float64(n) / (1 << 20) }

// freeAddr returns a loopback address with a port free a moment ago.
func freeAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

// liveMemory forces garbage collections in the server (its /debug/pprof/heap?gc=1)
// until goroutine stacks have shrunk to what they use, then returns the heap in use
// plus the stacks (runtime.MemStats HeapAlloc + StackInuse, from /debug/vars).
func liveMemory(ctx context.Context, debugAddr string) (int64, error) {
	get := func(path string) ([]byte, error) {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+debugAddr+path, nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return nil, err
		}
		defer resp.Body.Close()
		return io.ReadAll(resp.Body)
	}
	// Each collection at most halves a stack that uses under a quarter of it.
	for range 4 {
		if _, err := get("/debug/pprof/heap?gc=1"); err != nil {
			return 0, fmt.Errorf("force a GC in the server: %w", err)
		}
	}
	b, err := get("/debug/vars")
	if err != nil {
		return 0, err
	}
	var vars struct {
		Memstats struct{ HeapAlloc, StackInuse int64 }
	}
	if err := json.Unmarshal(b, &vars); err != nil {
		return 0, fmt.Errorf("read the server's /debug/vars: %w", err)
	}
	return vars.Memstats.HeapAlloc + vars.Memstats.StackInuse, nil
}

// bench holds what the measurements share.
type bench struct {
	cfg    config
	url    string
	writer *db.DB
}

// receipt is one delivery: which position, read when.
type receipt struct {
	position int
	at       time.Time
}

// client is one websocket with one messageAdded subscription.
type client struct {
	conn *websocket.Conn
	mu   sync.Mutex
	got  []receipt
	last atomic.Int64 // the highest position received
	done chan struct{}
}

func (c *client) take() []receipt {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := c.got
	c.got = nil
	return out
}

func closeAll(cs []*client) {
	for _, c := range cs {
		c.conn.Close(websocket.StatusNormalClosure, "")
	}
	for _, c := range cs {
		<-c.done
	}
}

// subscribe opens n websockets, each subscribed to the conversation's messages after
// its current last one. Subscribing from a cursor rather than "from now on" makes the
// subscription gap-free from the start, however long the server takes to set it up.
func (b *bench) subscribe(ctx context.Context, convID string, n int) ([]*client, error) {
	wsURL := "ws" + strings.TrimPrefix(b.url, "http") + "/graphql"
	conv, err := b.writer.FindConversationByID(ctx, convID)
	if err != nil {
		return nil, err
	}
	sub, _ := json.Marshal(map[string]any{"id": "1", "type": "subscribe", "payload": map[string]any{
		"query": `subscription($c: ID!, $a: String) { messageAdded(conversationId: $c, after: $a) {
			cursor node { ... on MessageBase { position } } } }`,
		"variables": map[string]any{"c": convID, "a": parley.MessageCursor(conv.LastPosition)},
	}})
	out := make([]*client, 0, n)
	for range n {
		dctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		conn, _, err := websocket.Dial(dctx, wsURL, &websocket.DialOptions{Subprotocols: []string{"graphql-transport-ws"}})
		if err != nil {
			cancel()
			closeAll(out)
			return nil, fmt.Errorf("dial: %w", err)
		}
		err = conn.Write(dctx, websocket.MessageText, []byte(`{"type":"connection_init"}`))
		if err == nil {
			_, _, err = conn.Read(dctx) // connection_ack
		}
		if err == nil {
			err = conn.Write(dctx, websocket.MessageText, sub)
		}
		cancel()
		if err != nil {
			conn.CloseNow()
			closeAll(out)
			return nil, fmt.Errorf("subscribe: %w", err)
		}
		c := &client{conn: conn, done: make(chan struct{})}
		go c.read()
		out = append(out, c)
	}
	return out, nil
}

// read records each event's position and when it was read. It does as little as it
// can, since it shares the machine's CPUs with the server under test: the frame is read
// into a reused buffer and the position picked out of it without decoding the JSON.
func (c *client) read() {
	defer close(c.done)
	buf := make([]byte, 0, 4096)
	for {
		_, r, err := c.conn.Reader(context.Background())
		if err != nil {
			return
		}
		buf = buf[:0]
		for {
			if len(buf) == cap(buf) {
				buf = append(buf, 0)[:len(buf)]
			}
			n, err := r.Read(buf[len(buf):cap(buf)])
			buf = buf[:len(buf)+n]
			if err == io.EOF {
				break
			}
			if err != nil {
				return
			}
		}
		at := time.Now()
		switch {
		case bytes.Contains(buf, []byte(`"type":"next"`)):
			p, ok := intAfter(buf, `"position":`)
			if !ok {
				continue
			}
			c.mu.Lock()
			c.got = append(c.got, receipt{p, at})
			c.mu.Unlock()
			c.last.Store(int64(p))
		case bytes.Contains(buf, []byte(`"type":"ping"`)):
			c.conn.Write(context.Background(), websocket.MessageText, []byte(`{"type":"pong"}`))
		}
	}
}

// intAfter parses the decimal number that follows key in b.
func intAfter(b []byte, key string) (int, bool) {
	i := bytes.Index(b, []byte(key))
	if i < 0 {
		return 0, false
	}
	n, digits := 0, 0
	for _, ch := range b[i+len(key):] {
		if ch < '0' || ch > '9' {
			break
		}
		n, digits = n*10+int(ch-'0'), digits+1
	}
	return n, digits > 0
}

// add writes one message and returns its position and when its commit returned.
func (b *bench) add(ctx context.Context, convID string) (int, time.Time, error) {
	m, err := b.writer.AddMessage(ctx, convID, &parley.TextMessage{
		MessageMeta: parley.MessageMeta{Role: parley.RoleUser}, Body: parley.TextBody("fan-out"),
	})
	if err != nil {
		return 0, time.Time{}, err
	}
	return m.Meta().Position, time.Now(), nil
}

// waitAll waits until every client has received position p.
func waitAll(ctx context.Context, cs []*client, p int, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for _, c := range cs {
		for c.last.Load() < int64(p) {
			if time.Now().After(deadline) {
				return fmt.Errorf("position %d not delivered to every subscriber within %s", p, timeout)
			}
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-c.done:
				return errors.New("a subscriber's connection ended")
			case <-time.After(time.Millisecond):
			}
		}
	}
	return nil
}

// deliverOne writes a message and waits until every client has it: then all their
// subscriptions are live.
func (b *bench) deliverOne(ctx context.Context, convID string, cs []*client) error {
	p, _, err := b.add(ctx, convID)
	if err != nil {
		return err
	}
	if err := waitAll(ctx, cs, p, time.Minute); err != nil {
		return err
	}
	for _, c := range cs {
		c.take()
	}
	return nil
}

// latency writes cfg.messages messages, one every cfg.interval, and returns every
// delivery's commit-to-read time.
func (b *bench) latency(ctx context.Context, convID string, cs []*client) ([]time.Duration, error) {
	committed := map[int]time.Time{}
	last := 0
	for range b.cfg.messages {
		p, at, err := b.add(ctx, convID)
		if err != nil {
			return nil, err
		}
		committed[p], last = at, p
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(b.cfg.interval):
		}
	}
	if err := waitAll(ctx, cs, last, time.Minute); err != nil {
		return nil, err
	}
	var out []time.Duration
	for _, c := range cs {
		rs := c.take()
		if len(rs) != b.cfg.messages {
			return nil, fmt.Errorf("a subscriber got %d messages, want %d", len(rs), b.cfg.messages)
		}
		for _, r := range rs {
			out = append(out, max(0, r.at.Sub(committed[r.position])))
		}
	}
	return out, nil
}

type sustainedResult struct {
	writesPerSec, deliveriesPerSec float64
	p50, p99, drain                time.Duration
}

// sustained has cfg.writers writers add messages for cfg.sustain: as fast as they can
// when rate is 0, else rate messages per second between them.
func (b *bench) sustained(ctx context.Context, convID string, cs []*client, rate int) (sustainedResult, error) {
	var mu sync.Mutex
	committed := map[int]time.Time{}
	var lastCommit time.Time
	var wg sync.WaitGroup
	errs := make(chan error, b.cfg.writers)
	start := time.Now()
	stop := start.Add(b.cfg.sustain)
	var tick <-chan time.Time
	if rate > 0 {
		t := time.NewTicker(time.Second / time.Duration(rate))
		defer t.Stop()
		tick = t.C
	}
	for range b.cfg.writers {
		wg.Go(func() {
			for time.Now().Before(stop) {
				if tick != nil {
					<-tick
				}
				p, at, err := b.add(ctx, convID)
				if err != nil {
					errs <- err
					return
				}
				mu.Lock()
				committed[p] = at
				if at.After(lastCommit) {
					lastCommit = at
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		return sustainedResult{}, err
	}
	last := 0
	for p := range committed {
		last = max(last, p)
	}
	if err := waitAll(ctx, cs, last, 5*time.Minute); err != nil {
		return sustainedResult{}, err
	}
	var lat []time.Duration
	var lastRead time.Time
	deliveries := 0
	for _, c := range cs {
		rs := c.take()
		if len(rs) != len(committed) {
			return sustainedResult{}, fmt.Errorf("a subscriber got %d messages, want %d", len(rs), len(committed))
		}
		for _, r := range rs {
			lat = append(lat, max(0, r.at.Sub(committed[r.position])))
			if r.at.After(lastRead) {
				lastRead = r.at
			}
			if r.at.Before(stop) {
				deliveries++
			}
		}
	}
	window := b.cfg.sustain.Seconds()
	return sustainedResult{
		writesPerSec:     float64(len(committed)) / window,
		deliveriesPerSec: float64(deliveries) / window,
		p50:              pct(lat, 50),
		p99:              pct(lat, 99),
		drain:            lastRead.Sub(lastCommit),
	}, nil
}

// pct returns the p-th percentile (nearest rank) of ds; 100 is the maximum.
func pct(ds []time.Duration, p float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	i := int(p/100*float64(len(s))+0.5) - 1
	return s[min(max(i, 0), len(s)-1)]
}

func ms(d time.Duration) string {
	return fmt.Sprintf("%.1f ms", float64(d)/float64(time.Millisecond))
}

// debugFlags are serve's flags for a debug address: none when it is empty.
func debugFlags(addr string) []string {
	if addr == "" {
		return nil
	}
	return []string{"--debug-addr", addr}
}
