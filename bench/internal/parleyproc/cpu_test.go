package parleyproc

import (
	"bufio"
	"os/exec"
	"testing"
	"time"
)

// TestTreeCPUKeepsExitedChildren: a child that burns CPU and exits leaves its CPU with
// its parent (cumulative times), so the tree's CPU never goes down and a measurement
// across the exit counts it.
func TestTreeCPUKeepsExitedChildren(t *testing.T) {
	t.Parallel()
	cmd := exec.Command("sh", "-c", `(i=0; while [ $i -lt 400000 ]; do i=$((i+1)); done); echo done; exec sleep 60`)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	before := TreeCPU(ReadProcs(), cmd.Process.Pid)
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil || line != "done\n" {
		t.Fatalf("got %q, %v from the child, want done", line, err)
	}
	after := TreeCPU(ReadProcs(), cmd.Process.Pid)
	// The loop costs well over 100 ms of CPU in any shell; the parent alone costs none.
	if after-before < 100*time.Millisecond {
		t.Errorf("got %s of CPU across the child's life, want at least 100ms: the exited child's CPU was lost", after-before)
	}
}
