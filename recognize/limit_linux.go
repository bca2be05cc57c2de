package recognize

import "golang.org/x/sys/unix"

// limitMemory caps the address space of the process pid at max bytes.
func limitMemory(pid int, max uint64) error {
	return unix.Prlimit(pid, unix.RLIMIT_AS, &unix.Rlimit{Cur: max, Max: max}, nil)
}
