package main

import (
	"os"
	"runtime/debug"
)

// Unless GOGC and GOMEMLIMIT say otherwise, parley serve collects garbage when the heap
// has grown by 400% rather than Go's 100%, under a soft limit of 512 MiB. A server's
// live heap is a few MiB, so at 100% the collector ran hundreds of times a second under
// load, about a fifth of the CPU of reading history (bench/report.md); the heap grows by
// some tens of MiB instead. The limit keeps a burst of large requests (inline images,
// imports) from growing the heap fivefold: near it the collector runs as often as it
// must.
const (
	serveGCPercent   = 400
	serveMemoryLimit = 512 << 20
)

// tuneGC applies serveGCPercent and serveMemoryLimit where the environment sets neither.
func tuneGC() {
	if _, set := os.LookupEnv("GOGC"); !set {
		debug.SetGCPercent(serveGCPercent)
	}
	if _, set := os.LookupEnv("GOMEMLIMIT"); !set {
		debug.SetMemoryLimit(serveMemoryLimit)
	}
}
