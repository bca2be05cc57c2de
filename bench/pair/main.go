// Command pair compares Parley binaries on `make bench`'s history read at one client,
// request by request. It starts a server of each binary on one database, the work
// directory that bin/parley-bench left with -keep (its PostgreSQL, and the 100-message
// conversation of mixed variants it seeded and reads), then sends the bench's history
// request to each server in turn, the first of each turn changing from turn to turn, so
// that whatever else loads the machine falls on every binary alike: on a shared machine
// the p50 of one binary moves by a third from one run of the bench to the next, more
// than a change is worth, while the same request alternating between servers shows
// differences of a few hundredths of a millisecond. It prints each binary's p25, p50
// and p75 (the client's own reading of the response included, the same for all), and
// the server's CPU time a read over them (user and system, from /proc: the process's
// own, however loaded the machine; at the clock tick's resolution, 10 ms over the run).
//
//	bin/parley-bench -only history -runs 1 -duration 1s -profile-for 0 -import-runs 0 -scale-messages 0 -keep -work /tmp/w
//	go run ./bench/pair -work /tmp/w -parley /tmp/parley-before,bin/parley
//
// With -trace SECONDS it then records an execution trace of each server in turn while
// reading from it alone, and says where a read's wall time goes (bench/internal/readtrace): before
// the query, waiting for Postgres, and after; and the goroutines each read starts.
//
//	go run ./bench/pair -work /tmp/w -parley bin/parley -trace 3
//
// With -profile SECONDS it takes a CPU profile of each server in turn, one client
// reading from it alone, and leaves it in the work directory as pair-N.prof: where the
// CPU of a read at one client goes (bin/parley-bench profiles under 16 clients).
//
// A binary given as BIN@DATABASE serves that database of the cluster instead of
// "parley": a copy made before a newer binary migrated it (CREATE DATABASE parley_old
// TEMPLATE parley), for a binary that refuses a schema newer than its own.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/jmoiron/sqlx"
	_ "github.com/lib/pq"

	"github.com/parley-dev/parley"
	"github.com/parley-dev/parley/bench/internal/parleyproc"
	"github.com/parley-dev/parley/bench/internal/readtrace"
	"github.com/parley-dev/parley/internal/selection"
	"github.com/parley-dev/parley/localpg"
)

func main() {
	work := flag.String("work", "", "a work directory bin/parley-bench kept (-keep -work DIR)")
	bins := flag.String("parley", "", "the parley binaries to compare, comma-separated")
	n := flag.Int("n", 3000, "timed requests to each server")
	warmup := flag.Int("warmup", 300, "untimed requests to each server first")
	traceSecs := flag.Int("trace", 0, "after the timed requests, trace each server for this many seconds and say where a read's wall time goes (0: no trace)")
	profSecs := flag.Int("profile", 0, "after the timed requests, take a CPU profile of each server for this many seconds while one client reads from it alone, written in -work as pair-N.prof (0: no profile)")
	flag.Parse()
	if *work == "" || *bins == "" {
		fmt.Fprintln(os.Stderr, "pair: -work and -parley are required")
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, *work, strings.Split(*bins, ","), *n, *warmup, *traceSecs, *profSecs); err != nil {
		fmt.Fprintln(os.Stderr, "pair:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, work string, bins []string, n, warmup, traceSecs, profSecs int) error {
	cluster, err := localpg.Start(ctx, localpg.Config{DataDir: filepath.Join(work, "pg"), Fast: true})
	if err != nil {
		return err
	}
	defer cluster.Stop(context.Background())
	dsns := make([]string, len(bins))
	var conv string
	for i, bin := range bins {
		dbname := "parley"
		if b, name, ok := strings.Cut(bin, "@"); ok {
			bins[i], dbname = b, name
		}
		dsns[i] = cluster.DSN(dbname)
		c, err := historyConversation(ctx, dsns[i])
		if err != nil {
			return fmt.Errorf("%s: %w", dbname, err)
		}
		if conv != "" && c != conv {
			return fmt.Errorf("%s: the history conversation is %s, not %s: not a copy of the same database", dbname, c, conv)
		}
		conv = c
	}
	body, err := json.Marshal(map[string]any{"query": selection.HistoryQuery, "variables": map[string]any{"c": conv}})
	if err != nil {
		return err
	}
	urls, debugURLs := make([]string, len(bins)), make([]string, len(bins))
	var servers []*parleyproc.Server
	for i, bin := range bins {
		// At the log level bin/parley-bench serves at (info: the access log on), where
		// parleyproc's own is warn.
		flags := []string{"--log-level", "info"}
		if traceSecs > 0 || profSecs > 0 {
			port, err := parleyproc.FreePort()
			if err != nil {
				return err
			}
			debugURLs[i] = fmt.Sprintf("http://127.0.0.1:%d", port)
			flags = append(flags, "--debug-addr", fmt.Sprintf("127.0.0.1:%d", port))
		}
		srv, err := parleyproc.Start(ctx, bin, dsns[i], filepath.Join(work, fmt.Sprintf("pair-%d.log", i)), flags...)
		if err != nil {
			return err
		}
		defer srv.Stop()
		servers = append(servers, srv)
		urls[i] = srv.URL + "/graphql"
	}
	client := &http.Client{Transport: &http.Transport{DisableCompression: true}}
	load := parleyproc.LoadAverage()
	times := make([][]time.Duration, len(bins))
	// cpu is each server's CPU time (user and system, /proc) over the timed requests:
	// its own, the requests alternating, whatever else loads the machine.
	cpu := make([]time.Duration, len(bins))
	var buf bytes.Buffer
	for turn := range warmup + n {
		if turn == warmup || turn == warmup+n-1 {
			for i, srv := range servers {
				t, err := srv.CPUTime()
				if err != nil {
					return err
				}
				cpu[i] = t - cpu[i]
			}
		}
		for k := range bins {
			i := (turn + k) % len(bins)
			start := time.Now()
			if err := read(ctx, client, urls[i], body, &buf); err != nil {
				return fmt.Errorf("%s: %w", bins[i], err)
			}
			if turn >= warmup {
				times[i] = append(times[i], time.Since(start))
			}
		}
	}
	fmt.Printf("history read, one client alternating between servers, %d requests each (load average %s, then %s)\n\n",
		n, load, parleyproc.LoadAverage())
	fmt.Println("| binary | p25 | p50 | p75 | the server's CPU a read |")
	fmt.Println("|---|---:|---:|---:|---:|")
	for i, t := range times {
		slices.Sort(t)
		fmt.Printf("| %s | %.3f ms | %.3f ms | %.3f ms | %d µs |\n", bins[i], ms(t[len(t)/4]), ms(t[len(t)/2]), ms(t[len(t)*3/4]),
			cpu[i].Microseconds()/int64(max(n-1, 1)))
	}
	// readAlone is one client reading from the i-th server until ctx ends.
	// reads counts the requests of readAlone.
	var reads int
	readAlone := func(i int) func(context.Context) error {
		return func(ctx context.Context) error {
			var buf bytes.Buffer
			for ctx.Err() == nil {
				if err := read(ctx, client, urls[i], body, &buf); err != nil {
					return err
				}
				reads++
			}
			return nil
		}
	}
	for i := range bins {
		if profSecs == 0 {
			break
		}
		file := filepath.Join(work, fmt.Sprintf("pair-%d.prof", i))
		reads = 0
		before, err := servers[i].CPUTime()
		if err != nil {
			return err
		}
		lctx, stop := context.WithCancel(ctx)
		loaded := make(chan error, 1)
		go func() { loaded <- readAlone(i)(lctx) }()
		err = parleyproc.CPUProfile(ctx, debugURLs[i], profSecs, file)
		stop()
		if lerr := <-loaded; lerr != nil && lctx.Err() == nil {
			err = lerr
		}
		if err != nil {
			return fmt.Errorf("%s: %w", bins[i], err)
		}
		after, err := servers[i].CPUTime()
		if err != nil {
			return err
		}
		fmt.Printf("\nCPU profile of %s, one client, %d s (%d reads, %d µs of the server's CPU a read, profiling included): go tool pprof %s %s\n",
			bins[i], profSecs, reads, (after-before).Microseconds()/int64(max(reads, 1)), bins[i], file)
	}
	if traceSecs == 0 {
		return nil
	}
	fmt.Printf("\nwhere the wall time of a read goes (an execution trace of each server for %d s, one client reading from it alone; p50 of each part):\n\n", traceSecs)
	fmt.Printf(readtrace.TableHeader, "binary")
	for i := range bins {
		p, err := readtrace.Record(ctx, debugURLs[i], traceSecs, readAlone(i))
		if err != nil {
			return fmt.Errorf("%s: %w", bins[i], err)
		}
		fmt.Print(p.Summary().Row(bins[i]))
	}
	return nil
}

// historyConversation returns the public id of the conversation the bench reads: the
// one it titled "history".
func historyConversation(ctx context.Context, dsn string) (string, error) {
	db, err := sqlx.Open("postgres", dsn)
	if err != nil {
		return "", err
	}
	defer db.Close()
	var key string
	if err := db.GetContext(ctx, &key, `SELECT id::text FROM conversations WHERE title = 'history'`); err != nil {
		return "", fmt.Errorf("the bench's history conversation: %w", err)
	}
	return parley.ConversationID(key), nil
}

// read posts body to url and reads the response into buf: a page of edges, not errors.
func read(ctx context.Context, client *http.Client, url string, body []byte, buf *bytes.Buffer) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	buf.Reset()
	if _, err := io.Copy(buf, resp.Body); err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK || !bytes.Contains(buf.Bytes(), []byte(`"edges":[{`)) || bytes.Contains(buf.Bytes(), []byte(`"errors"`)) {
		return fmt.Errorf("got %s: %.200s", resp.Status, buf.Bytes())
	}
	return nil
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
