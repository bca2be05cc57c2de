package parleyproc

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// clockTick is the unit of /proc/<pid>/stat's times (USER_HZ, 100 on Linux).
const clockTick = 10 * time.Millisecond

// ProcStat is what TreeCPU needs of a process's /proc/<pid>/stat.
type ProcStat struct {
	PID, PPID int
	Comm      string
	// cpu is the process's own CPU (utime + stime) plus that of its children that have
	// exited and been waited for (cutime + cstime). Without the latter a Postgres backend
	// that exits during a measurement (a pool closing an idle connection, an autovacuum
	// worker finishing) takes its CPU with it: the tree's sum goes down, and a sample can
	// come out negative. Its parent's cumulative times carry it on instead.
	CPU time.Duration
}

// ReadProcs reads the stat of every process.
func ReadProcs() []ProcStat {
	paths, _ := filepath.Glob("/proc/[0-9]*/stat")
	out := make([]ProcStat, 0, len(paths))
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			continue // exited
		}
		// pid (comm) state ppid ... utime(14) stime(15): comm may hold spaces.
		s := string(b)
		open, close := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
		if open < 0 || close < open {
			continue
		}
		pid, _ := strconv.Atoi(strings.TrimSpace(s[:open]))
		f := strings.Fields(s[close+1:])
		if len(f) < 15 {
			continue
		}
		ppid, _ := strconv.Atoi(f[1])
		var ticks int64
		for _, field := range f[11:15] { // utime, stime, cutime, cstime
			n, _ := strconv.ParseInt(field, 10, 64)
			ticks += n
		}
		out = append(out, ProcStat{PID: pid, PPID: ppid, Comm: s[open+1 : close], CPU: time.Duration(ticks) * clockTick})
	}
	return out
}

// TreeCPU sums the CPU of root and its descendants.
func TreeCPU(procs []ProcStat, root int) time.Duration {
	if root == 0 {
		return 0
	}
	children := map[int][]int{}
	cpu := map[int]time.Duration{}
	for _, p := range procs {
		children[p.PPID] = append(children[p.PPID], p.PID)
		cpu[p.PID] = p.CPU
	}
	var sum time.Duration
	stack := []int{root}
	for len(stack) > 0 {
		pid := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		sum += cpu[pid]
		stack = append(stack, children[pid]...)
	}
	return sum
}

// SelfCPU is the calling process's own CPU time (the load generator's).
func SelfCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// PostmasterPID reads the postmaster's pid from its data directory.
func PostmasterPID(pgdata string) int {
	b, err := os.ReadFile(filepath.Join(pgdata, "postmaster.pid"))
	if err != nil {
		return 0
	}
	line, _, _ := strings.Cut(string(b), "\n")
	pid, _ := strconv.Atoi(strings.TrimSpace(line))
	return pid
}
