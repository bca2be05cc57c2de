//go:build !linux

package transport

import "syscall"

// sendFlags are writeNow's send flags: never wait. Systems without MSG_NOSIGNAL raise
// SIGPIPE for a peer gone, which the Go runtime ignores for descriptors other than 1
// and 2 (the send fails with EPIPE).
const sendFlags = syscall.MSG_DONTWAIT
