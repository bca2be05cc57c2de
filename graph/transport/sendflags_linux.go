package transport

import "syscall"

// sendFlags are writeNow's send flags: never wait, and no SIGPIPE for a peer gone.
const sendFlags = syscall.MSG_DONTWAIT | syscall.MSG_NOSIGNAL
