package server_test

import (
	"bytes"
	"io"
	"runtime/trace"
	"testing"

	xtrace "golang.org/x/exp/trace"

	"github.com/parley-dev/parley/internal/testserver"
	"github.com/parley-dev/parley/server"
)

// TestRequestsAreTraceRegions: while the execution tracer runs, each request is served
// in a region of its own (server.RequestRegion), begun and ended on the goroutine that
// serves it, so that a trace tells one request's time from the next's (bench/pair
// -trace). Other tests' requests may be traced too: the tracer is the process's.
func TestRequestsAreTraceRegions(t *testing.T) {
	srv := testserver.New(t)
	conv := srv.CreateConversation(t, "traced")
	srv.AddMessage(t, conv, testserver.Text("USER", "hello"))
	if trace.IsEnabled() {
		t.Skip("the execution tracer already runs (go test -trace): this test needs its own trace")
	}
	var buf bytes.Buffer
	if err := trace.Start(&buf); err != nil {
		t.Fatal(err)
	}
	const requests = 3
	for range requests {
		if r := srv.Do(t, `query($c: ID!) { conversation(id: $c) { messages(first: 10) { edges { cursor } } } }`,
			map[string]any{"c": conv}); len(r.Errors) > 0 {
			trace.Stop()
			t.Fatal(r.Errors)
		}
	}
	trace.Stop()

	r, err := xtrace.NewReader(&buf)
	if err != nil {
		t.Fatal(err)
	}
	open := map[xtrace.GoID]int{}
	begun, ended := 0, 0
	for {
		ev, err := r.ReadEvent()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		switch ev.Kind() {
		case xtrace.EventRegionBegin:
			if ev.Region().Type == server.RequestRegion {
				begun++
				open[ev.Goroutine()]++
			}
		case xtrace.EventRegionEnd:
			if ev.Region().Type == server.RequestRegion {
				ended++
				if open[ev.Goroutine()]--; open[ev.Goroutine()] < 0 {
					t.Fatalf("a %q region ended on goroutine %d, which began none", server.RequestRegion, ev.Goroutine())
				}
			}
		}
	}
	if begun < requests || ended < requests {
		t.Fatalf("%d requests traced: %d %q regions begun, %d ended; want one each a request", requests, begun, server.RequestRegion, ended)
	}
}
