package localpg

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"time"
)

// A parley that dies without stopping its postgres (kill -9, a crash, the OOM killer)
// leaves it running: the postmaster is in a process group of its own, and nothing else
// tells it. On Linux the postmaster is started with a parent-death signal, SIGINT, so it
// shuts down cleanly on its own when that happens (setParentDeathSignal), and the next
// Start on the data directory waits for it to finish (waitForStoppingPostmaster) instead
// of failing. A postgres found running normally on the directory is still refused and
// left alone (ErrAlreadyRunning): it may be someone's.

// errOtherStopping says that postgres refused to start because another postmaster,
// now shutting down, still held the data directory.
var errOtherStopping = errors.New("another postmaster is shutting down on the data directory")

// launch starts the postmaster from a goroutine locked to its OS thread, which is kept
// until the postmaster exits: Linux sends the parent-death signal when the thread that
// forked the child ends, not the process, so that thread must live as long as postgres.
func launch(cmd *exec.Cmd, lock *os.File) (*process, error) {
	p := &process{cmd: cmd, exited: make(chan struct{}), lock: lock}
	started := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		if err := cmd.Start(); err != nil {
			runtime.UnlockOSThread()
			started <- err
			return
		}
		started <- nil
		p.waitErr = cmd.Wait()
		close(p.exited)
		// Returning while locked retires the thread, which has no child left to signal.
	}()
	if err := <-started; err != nil {
		return nil, err
	}
	return p, nil
}

// pidFileStatus returns the status postmaster.pid gives (line 8: starting, ready,
// stopping...), or "".
func (c *Cluster) pidFileStatus() string {
	lines, err := readPIDFile(c.pgdata)
	if err != nil || len(lines) < 8 {
		return ""
	}
	return strings.TrimSpace(lines[7])
}

// waitForStoppingPostmaster waits until a postmaster that is shutting down on the data
// directory, as the one a dead parley left does, has exited. Any other state is left
// for postgres to judge.
func (c *Cluster) waitForStoppingPostmaster(ctx context.Context) error {
	pid := c.runningPID()
	if pid == 0 || c.pidFileStatus() != "stopping" {
		return nil
	}
	c.log.Info("waiting for the postgres shutting down on the data directory to exit", "pid", pid)
	ctx, cancel := context.WithTimeout(ctx, startTimeout)
	defer cancel()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for c.runningPID() == pid {
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w: postgres pid %d is shutting down on %s and has not exited: %w",
				ErrAlreadyRunning, pid, c.pgdata, ctx.Err())
		case <-tick.C:
		}
	}
	return nil
}
