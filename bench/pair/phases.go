package main

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

// With -trace, pair also says where each server's wall time of a read goes, which a CPU
// profile cannot: at one client a read spends much of its time waiting (for Postgres,
// for the scheduler to run it again), and the profile sees only the CPU. It records an
// execution trace of each server (runtime/trace, from --debug-addr's
// /debug/pprof/trace) while reading from it alone, after the timed turns so that
// tracing slows none of them. A server serves each request in a trace region
// (server.RequestRegion), and a read is that region, in three parts:
//
//   - to the query: from the region's start to the first wait for Postgres (reading and
//     decoding the request, the middleware, gqlgen, the resolver, sending the
//     statement);
//   - Postgres: the waits for Postgres's rows (lib/pq reading its connection), each
//     until the goroutine may run again, summed;
//   - the rest: from the first rows to the region's end, less the later waits for
//     Postgres (reading the rows, writing the page and the response, the access log).
//
// It also counts the goroutines a read starts, by the function each starts in: at one
// client the second core is idle, and each new goroutine wakes it.

// tracedRead is the wall time of one read, in its three parts.
type tracedRead struct {
	toQuery, postgres, rest time.Duration
	postgresWaits           int
}

// phases is what a trace of a server says of its reads.
type phases struct {
	reads   []tracedRead
	started map[string]int // goroutines started by reads, by the function each starts in
}

// traceServer records an execution trace of the server whose --debug-addr serves
// debugURL for secs seconds, while one client reads from it, and returns its phases.
func traceServer(ctx context.Context, client *http.Client, debugURL, url string, body []byte, secs int) (*phases, error) {
	traced := make(chan error, 1)
	var tr []byte
	go func() {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, fmt.Sprintf("%s/debug/pprof/trace?seconds=%d", debugURL, secs), nil)
		if err != nil {
			traced <- err
			return
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			traced <- err
			return
		}
		defer resp.Body.Close()
		if tr, err = io.ReadAll(resp.Body); err == nil && resp.StatusCode != http.StatusOK {
			err = fmt.Errorf("trace: %s: %.200s", resp.Status, tr)
		}
		traced <- err
	}()
	var buf bytes.Buffer
	for {
		select {
		case err := <-traced:
			if err != nil {
				return nil, err
			}
			return readPhases(bytes.NewReader(tr))
		default:
		}
		if err := read(ctx, client, url, body, &buf); err != nil {
			return nil, err
		}
	}
}

// reading is a read in progress on its goroutine.
type reading struct {
	start      trace.Time // the region's
	waitedAt   trace.Time // the start of its current wait for Postgres
	inPostgres bool
	read       tracedRead
}

// readPhases reads an execution trace and returns the reads it holds (see tracedRead).
func readPhases(r io.Reader) (*phases, error) {
	tr, err := trace.NewReader(r)
	if err != nil {
		return nil, err
	}
	p := &phases{started: map[string]int{}}
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
				if rd.read.postgresWaits > 0 { // a read, not some other request
					rd.read.rest = time.Duration(ev.Time()-rd.start) - rd.read.toQuery - rd.read.postgres
					p.reads = append(p.reads, rd.read)
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
					p.started[firstFrame(st.Stack)]++
				}
			case from == trace.GoRunning && to == trace.GoWaiting:
				// The stack is the waiting goroutine's: where it waits says what for.
				if rd := reads[st.Resource.Goroutine()]; rd != nil && inLibPQ(ev.Stack()) {
					if rd.read.postgresWaits == 0 {
						rd.read.toQuery = time.Duration(ev.Time() - rd.start)
					}
					rd.inPostgres, rd.waitedAt = true, ev.Time()
					rd.read.postgresWaits++
				}
			case from == trace.GoWaiting && to == trace.GoRunnable:
				if rd := reads[st.Resource.Goroutine()]; rd != nil && rd.inPostgres {
					rd.inPostgres = false
					rd.read.postgres += time.Duration(ev.Time() - rd.waitedAt)
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

// printPhases writes each binary's phases as a Markdown table.
func printPhases(bins []string, ps []*phases, secs int) {
	fmt.Printf("\nwhere the wall time of a read goes (an execution trace of each server for %d s, one client reading from it alone; p50 of each part):\n\n", secs)
	fmt.Println("| binary | reads | to the query | Postgres | the rest | in all | waits for Postgres a read | goroutines started a read |")
	fmt.Println("|---|---:|---:|---:|---:|---:|---:|---|")
	for i, p := range ps {
		n := len(p.reads)
		if n == 0 {
			fmt.Printf("| %s | 0 | | | | | | |\n", bins[i])
			continue
		}
		part := func(f func(tracedRead) time.Duration) string {
			d := make([]time.Duration, n)
			for k, r := range p.reads {
				d[k] = f(r)
			}
			slices.Sort(d)
			return fmt.Sprintf("%d µs", d[n/2].Microseconds())
		}
		waits := 0
		for _, r := range p.reads {
			waits += r.postgresWaits
		}
		var started []string
		for _, fn := range slices.SortedFunc(maps.Keys(p.started), func(a, b string) int { return cmp.Compare(p.started[b], p.started[a]) }) {
			if per := float64(p.started[fn]) / float64(n); per >= 0.05 {
				started = append(started, fmt.Sprintf("%.2f `%s`", per, fn))
			}
		}
		fmt.Printf("| %s | %d | %s | %s | %s | %s | %.2f | %s |\n", bins[i], n,
			part(func(r tracedRead) time.Duration { return r.toQuery }),
			part(func(r tracedRead) time.Duration { return r.postgres }),
			part(func(r tracedRead) time.Duration { return r.rest }),
			part(func(r tracedRead) time.Duration { return r.toQuery + r.postgres + r.rest }),
			float64(waits)/float64(n), strings.Join(started, ", "))
	}
}
