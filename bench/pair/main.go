// Command pair compares Parley binaries on `make bench`'s history read at one client,
// request by request. It starts a server of each binary on one database, the work
// directory that bin/parley-bench left with -keep (its PostgreSQL, and the 100-message
// conversation of mixed variants it seeded and reads), then sends the bench's history
// request to each server in turn, the first of each turn changing from turn to turn, so
// that whatever else loads the machine falls on every binary alike: on a shared machine
// the p50 of one binary moves by a third from one run of the bench to the next, more
// than a change is worth, while the same request alternating between servers shows
// differences of a few hundredths of a millisecond. It prints each binary's p25, p50
// and p75 (the client's own reading of the response included, the same for all).
//
//	bin/parley-bench -only history -runs 1 -duration 1s -profile-for 0 -import-runs 0 -scale-messages 0 -keep -work /tmp/w
//	go run ./bench/pair -work /tmp/w -parley /tmp/parley-before,bin/parley
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
	"os/exec"
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
	"github.com/parley-dev/parley/internal/selection"
	"github.com/parley-dev/parley/localpg"
)

// historyQuery is bin/parley-bench's history read: the first 100 messages of a
// conversation, every field.
const historyQuery = `query History($c: ID!) { conversation(id: $c) { messages(first: 100) {
	edges { cursor node {` + selection.MessageFields + `} } } } }`

func main() {
	work := flag.String("work", "", "a work directory bin/parley-bench kept (-keep -work DIR)")
	bins := flag.String("parley", "", "the parley binaries to compare, comma-separated")
	n := flag.Int("n", 3000, "timed requests to each server")
	warmup := flag.Int("warmup", 300, "untimed requests to each server first")
	flag.Parse()
	if *work == "" || *bins == "" {
		fmt.Fprintln(os.Stderr, "pair: -work and -parley are required")
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, *work, strings.Split(*bins, ","), *n, *warmup); err != nil {
		fmt.Fprintln(os.Stderr, "pair:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, work string, bins []string, n, warmup int) error {
	cluster, err := localpg.Start(ctx, localpg.Config{DataDir: filepath.Join(work, "pg"), Fast: true})
	if err != nil {
		return err
	}
	defer cluster.Stop(context.Background())
	dsn := cluster.DSN("parley")
	conv, err := historyConversation(ctx, dsn)
	if err != nil {
		return err
	}
	body, err := json.Marshal(map[string]any{"query": historyQuery, "variables": map[string]any{"c": conv}})
	if err != nil {
		return err
	}
	urls := make([]string, len(bins))
	for i, bin := range bins {
		srv, err := serve(ctx, bin, dsn, filepath.Join(work, fmt.Sprintf("pair-%d.log", i)))
		if err != nil {
			return err
		}
		defer srv.Process.Signal(syscall.SIGTERM)
		urls[i] = srv.url
	}
	client := &http.Client{Transport: &http.Transport{DisableCompression: true}}
	load := parleyproc.LoadAverage()
	times := make([][]time.Duration, len(bins))
	var buf bytes.Buffer
	for turn := range warmup + n {
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
	fmt.Println("| binary | p25 | p50 | p75 |")
	fmt.Println("|---|---:|---:|---:|")
	for i, t := range times {
		slices.Sort(t)
		fmt.Printf("| %s | %.3f ms | %.3f ms | %.3f ms |\n", bins[i], ms(t[len(t)/4]), ms(t[len(t)/2]), ms(t[len(t)*3/4]))
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

// server is a running `parley serve`.
type server struct {
	*os.Process
	url string // its GraphQL endpoint
}

// serve starts bin serve on dsn on a free loopback port, as bin/parley-bench starts it,
// with its log in logPath, and returns once it is ready (within a minute).
func serve(ctx context.Context, bin, dsn, logPath string) (*server, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	addr := ln.Addr().String()
	ln.Close()
	logFile, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	defer logFile.Close()
	cmd := exec.Command(bin, "serve", "--addr", addr, "--database-url", dsn)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", bin, err)
	}
	go cmd.Wait()
	srv := &server{Process: cmd.Process, url: "http://" + addr + "/graphql"}
	deadline := time.Now().Add(time.Minute)
	for {
		resp, err := http.Get("http://" + addr + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return srv, nil
			}
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			srv.Signal(syscall.SIGTERM)
			return nil, errors.Join(fmt.Errorf("%s is not ready within a minute; see %s", bin, logPath), ctx.Err())
		}
		time.Sleep(50 * time.Millisecond)
	}
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
