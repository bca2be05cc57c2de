package localpg

import "syscall"

// setParentDeathSignal makes the kernel send the postmaster SIGINT, a fast and clean
// shutdown, when its parent dies (see orphan.go).
func setParentDeathSignal(a *syscall.SysProcAttr) { a.Pdeathsig = syscall.SIGINT }
