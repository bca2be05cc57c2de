// Package readtrace says where the wall time of Parley's reads goes, from an execution
// trace of the server (runtime/trace, from --debug-addr's /debug/pprof/trace), which a
// CPU profile cannot: at one client a read spends much of its time waiting (for
// Postgres, for the scheduler to run it again), and the profile sees only the CPU.
// Parley serves each request in a trace region (server.RequestRegion) while the tracer
// runs, and a read is such a region in which the serving goroutine sends a statement
// (lib/pq's first system call), in three parts:
//
//   - to the query: from the region's start to that system call (reading and decoding
//     the request, the middleware, gqlgen, the resolver);
//   - Postgres: the waits for Postgres's rows (lib/pq waiting for its connection to
//     have something to read), each until the goroutine may run again, summed; none
//     when the rows had all come by the time lib/pq read them;
//   - the rest: from the statement's sending to the region's end, less those waits
//     (sending it, reading the rows, writing the page and the response, the access
//     log).
//
// It also counts the goroutines a read starts, by the function each starts in: at one
// client the second core is idle, and each new goroutine wakes it.
package readtrace

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"io"
	"maps"
	"net/http"
	"slices"
	"strings"
	"time"

	"golang.org/x/exp/trace"

	"github.com/parley-dev/parley/server"
)

// Read is the wall time of one read, in its three parts.
type Read struct {
	ToQuery, Postgres, Rest time.Duration
	PostgresWaits           int
}

// Phases is what a trace of a server says of its reads.
type Phases struct {
	Reads []Read
	// Started counts the goroutines started by reads, by the function each starts in.
	Started map[string]int
}

// Record records an execution trace of the Parley whose --debug-addr serves debugURL
// for secs seconds, while load reads from it (until its context ends, when the trace
// is taken), and returns its reads.
func Record(ctx context.Context, debugURL string, secs int, load func(context.Context) error) (*Phases, error) {
	lctx, stop := context.WithCancel(ctx)
	loaded := make(chan error, 1)
	go func() { loaded <- load(lctx) }()
	tr, err := fetch(ctx, debugURL, secs)
	stop()
	if lerr := <-loaded; lerr != nil && lctx.Err() == nil {
		return nil, lerr
	}
	if err != nil {
		return nil, err
	}
	return Parse(bytes.NewReader(tr))
}

func fetch(ctx context.Context, debugURL string, secs int) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, fmt.Sprintf("%s/debug/pprof/trace?seconds=%d", debugURL, secs), nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("trace the server: %w", err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err == nil && resp.StatusCode != http.StatusOK {
		err = fmt.Errorf("trace the server: %s: %.200s", resp.Status, b)
	}
	return b, err
}

// reading is a read in progress on its goroutine.
type reading struct {
	start      trace.Time // the region's
	queried    bool       // the statement has been sent
	waitedAt   trace.Time // the start of its current wait for Postgres
	inPostgres bool
	read       Read
}

// Parse reads an execution trace and returns the reads it holds.
func Parse(r io.Reader) (*Phases, error) {
	tr, err := trace.NewReader(r)
	if err != nil {
		return nil, err
	}
	p := &Phases{Started: map[string]int{}}
	reads := map[trace.GoID]*reading{}
	for {
		ev, err := tr.ReadEvent()
		if err == io.EOF {
			return p, nil
		}
		if err != nil {
			return nil, err
		}
		switch ev.Kind() {
		case trace.EventRegionBegin:
			if ev.Region().Type == server.RequestRegion {
				reads[ev.Goroutine()] = &reading{start: ev.Time()}
			}
		case trace.EventRegionEnd:
			if rd := reads[ev.Goroutine()]; rd != nil && ev.Region().Type == server.RequestRegion {
				delete(reads, ev.Goroutine())
				if rd.queried { // a read, not some other request
					rd.read.Rest = time.Duration(ev.Time()-rd.start) - rd.read.ToQuery - rd.read.Postgres
					p.Reads = append(p.Reads, rd.read)
				}
			}
		case trace.EventStateTransition:
			st := ev.StateTransition()
			if st.Resource.Kind != trace.ResourceGoroutine {
				break
			}
			from, to := st.Goroutine()
			switch {
			case from == trace.GoNotExist && to == trace.GoRunnable:
				if reads[ev.Goroutine()] != nil { // started by a read
					p.Started[firstFrame(st.Stack)]++
				}
			case from == trace.GoRunning && to == trace.GoSyscall:
				// lib/pq's first system call of a read writes its statement.
				if rd := reads[st.Resource.Goroutine()]; rd != nil && !rd.queried && inLibPQ(ev.Stack()) {
					rd.queried, rd.read.ToQuery = true, time.Duration(ev.Time()-rd.start)
				}
			case from == trace.GoRunning && to == trace.GoWaiting:
				// The stack is the waiting goroutine's: where it waits says what for.
				if rd := reads[st.Resource.Goroutine()]; rd != nil && rd.queried && inLibPQ(ev.Stack()) {
					rd.inPostgres, rd.waitedAt = true, ev.Time()
					rd.read.PostgresWaits++
				}
			case from == trace.GoWaiting && to == trace.GoRunnable:
				if rd := reads[st.Resource.Goroutine()]; rd != nil && rd.inPostgres {
					rd.inPostgres = false
					rd.read.Postgres += time.Duration(ev.Time() - rd.waitedAt)
				}
			}
		}
	}
}

// inLibPQ reports whether a waiting goroutine's stack waits in lib/pq: for Postgres.
func inLibPQ(s trace.Stack) bool {
	for f := range s.Frames() {
		if strings.HasPrefix(f.Func, "github.com/lib/pq.") {
			return true
		}
	}
	return false
}

func firstFrame(s trace.Stack) string {
	for f := range s.Frames() {
		return f.Func
	}
	return "?"
}

// Summary is Phases in figures: the p50 of each part of a read (and of the whole),
// the waits for Postgres a read, and the goroutines a read starts (those started by at
// least one read in twenty), most first.
type Summary struct {
	Reads                       int
	ToQuery, Postgres, Rest, In time.Duration
	PostgresWaits               float64
	Started                     []Started
}

// Started is how many goroutines starting in Func a read starts.
type Started struct {
	Func    string
	PerRead float64
}

// Summary returns p's figures; zero when it holds no read.
func (p *Phases) Summary() Summary {
	n := len(p.Reads)
	if n == 0 {
		return Summary{}
	}
	p50 := func(part func(Read) time.Duration) time.Duration {
		d := make([]time.Duration, n)
		for i, r := range p.Reads {
			d[i] = part(r)
		}
		slices.Sort(d)
		return d[n/2]
	}
	s := Summary{Reads: n,
		ToQuery:  p50(func(r Read) time.Duration { return r.ToQuery }),
		Postgres: p50(func(r Read) time.Duration { return r.Postgres }),
		Rest:     p50(func(r Read) time.Duration { return r.Rest }),
		In:       p50(func(r Read) time.Duration { return r.ToQuery + r.Postgres + r.Rest }),
	}
	waits := 0
	for _, r := range p.Reads {
		waits += r.PostgresWaits
	}
	s.PostgresWaits = float64(waits) / float64(n)
	for _, fn := range slices.SortedFunc(maps.Keys(p.Started), func(a, b string) int {
		return cmp.Or(cmp.Compare(p.Started[b], p.Started[a]), cmp.Compare(a, b))
	}) {
		if per := float64(p.Started[fn]) / float64(n); per >= 0.05 {
			s.Started = append(s.Started, Started{Func: fn, PerRead: per})
		}
	}
	return s
}

// TableHeader and Row write Summaries as the rows of a Markdown table, first column
// name.
const TableHeader = "| %s | reads | to the query | Postgres | the rest | in all | waits for Postgres a read | goroutines started a read |\n|---|---:|---:|---:|---:|---:|---:|---|\n"

// Row is s as a row of TableHeader's table.
func (s Summary) Row(name string) string {
	if s.Reads == 0 {
		return fmt.Sprintf("| %s | 0 | | | | | | |\n", name)
	}
	started := make([]string, len(s.Started))
	for i, st := range s.Started {
		started[i] = fmt.Sprintf("%.2f `%s`", st.PerRead, st.Func)
	}
	us := func(d time.Duration) string { return fmt.Sprintf("%d µs", d.Microseconds()) }
	return fmt.Sprintf("| %s | %d | %s | %s | %s | %s | %.2f | %s |\n", name, s.Reads,
		us(s.ToQuery), us(s.Postgres), us(s.Rest), us(s.In), s.PostgresWaits, strings.Join(started, ", "))
}
