//go:build !linux

package localpg

import "syscall"

// setParentDeathSignal does nothing where there is no parent-death signal: a postgres
// left by a dead parley is then reported by the next Start (see orphan.go).
func setParentDeathSignal(*syscall.SysProcAttr) {}
