//go:build !linux

package recognize

// limitMemory does nothing here: only Linux has prlimit.
func limitMemory(pid int, max uint64) error { return nil }
