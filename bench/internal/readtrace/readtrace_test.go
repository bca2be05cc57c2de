package readtrace_test

import (
	"bytes"
	"fmt"
	"runtime/trace"
	"testing"
	"time"

	"github.com/parley-dev/parley/bench/internal/readtrace"
	"github.com/parley-dev/parley/internal/pgtest"
	"github.com/parley-dev/parley/internal/selection"
	"github.com/parley-dev/parley/internal/testserver"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// TestPhasesOfTracedReads: Parse finds each history read of a trace of a server
// reading, with the time before its statement and after, the reads' waits for
// Postgres (a read whose rows have all come when lib/pq reads them waits for none),
// and the goroutines started: none of the watchers database/sql and lib/pq start for a
// query given a cancellable context, which a page's read no longer gives them (it is
// cancelled through context.AfterFunc: db/rawquery.go), while net/http's background
// read still starts once a request.
func TestPhasesOfTracedReads(t *testing.T) {
	srv := testserver.New(t)
	conv := srv.CreateConversation(t, "history")
	for i := range 20 {
		srv.AddMessage(t, conv, testserver.Text("USER", fmt.Sprintf("message %d", i)))
	}
	if trace.IsEnabled() {
		t.Skip("the execution tracer already runs (go test -trace): this test needs its own trace")
	}
	var buf bytes.Buffer
	if err := trace.Start(&buf); err != nil {
		t.Fatal(err)
	}
	const reads = 10
	for range reads {
		if r := srv.Do(t, selection.HistoryQuery, map[string]any{"c": conv}); len(r.Errors) > 0 {
			trace.Stop()
			t.Fatal(r.Errors)
		}
	}
	trace.Stop()

	p, err := readtrace.Parse(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Reads) != reads {
		t.Fatalf("found %d reads, want %d", len(p.Reads), reads)
	}
	var postgres time.Duration
	for i, r := range p.Reads {
		if r.ToQuery <= 0 || r.Rest <= 0 {
			t.Errorf("read %d: %+v: want time before its statement and after", i, r)
		}
		postgres += r.Postgres
	}
	if postgres <= 0 {
		t.Errorf("no read waited for Postgres: %+v", p.Reads)
	}
	for _, watcher := range []string{"github.com/lib/pq.(*stmt).watchCancel.func1", "database/sql.(*Rows).awaitDone"} {
		if got := p.Started[watcher]; got != 0 {
			t.Errorf("%s started %d times in %d reads, want none (started: %v)", watcher, got, reads, p.Started)
		}
	}
	if got := p.Started["net/http.(*connReader).backgroundRead"]; got < reads {
		t.Errorf("net/http's background read started %d times in %d reads, want one a read at least (started: %v)", got, reads, p.Started)
	}
	s := p.Summary()
	if s.Reads != reads || s.In < s.ToQuery+s.Postgres {
		t.Errorf("summary %+v of %d reads", s, reads)
	}
}
