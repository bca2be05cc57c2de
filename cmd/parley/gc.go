package main

import (
	"errors"
	"fmt"
	"os"
	"runtime/debug"

	"github.com/KimMachineGun/automemlimit/memlimit"
)

// Unless GOGC and GOMEMLIMIT say otherwise, parley serve collects garbage when the heap
// has grown by 400% rather than Go's 100%, under a soft memory limit: 90% of the
// container's (its cgroup's memory limit, read by automemlimit) when it runs in one
// with a limit, else 512 MiB. A server's live heap is a few MiB, so at 100% the
// collector ran hundreds of times a second under load, about a fifth of the CPU of
// reading history (bench/report.md); the heap grows by some tens of MiB instead. The
// limit keeps a burst of large requests (inline images, imports) from growing the heap
// fivefold, and keeps a container from being killed for memory the collector could
// have freed: near it the collector runs as often as it must. The tenth left over is
// for what the Go runtime does not count (goroutine stacks are counted; cgo, mapped
// files and the kernel's page cache charged to the cgroup are not).
const (
	serveGCPercent       = 400
	serveMemoryLimit     = 512 << 20
	serveCgroupLimitPart = 0.9
)

// tuneGC applies serveGCPercent and a memory limit where the environment sets neither,
// and says which limit it chose, for the log.
func tuneGC() string {
	if _, set := os.LookupEnv("GOGC"); !set {
		debug.SetGCPercent(serveGCPercent)
	}
	if _, set := os.LookupEnv("GOMEMLIMIT"); set {
		return "GOMEMLIMIT"
	}
	limit, source := memoryLimit(memlimit.FromCgroup)
	debug.SetMemoryLimit(limit)
	return source
}

// memoryLimit is the soft memory limit for a container whose limit cgroup reports:
// serveCgroupLimitPart of it, or serveMemoryLimit when there is no cgroup or it sets
// no limit.
func memoryLimit(cgroup memlimit.Provider) (int64, string) {
	n, err := cgroup()
	if err != nil || n == 0 {
		reason := "no cgroup memory limit"
		if err != nil && !errors.Is(err, memlimit.ErrNoLimit) && !errors.Is(err, memlimit.ErrNoCgroup) {
			reason = "cgroup memory limit unreadable: " + err.Error()
		}
		return serveMemoryLimit, fmt.Sprintf("default (%s)", reason)
	}
	limit := int64(float64(n) * serveCgroupLimitPart)
	return limit, fmt.Sprintf("%.0f%% of the cgroup's memory limit of %d bytes", serveCgroupLimitPart*100, n)
}
