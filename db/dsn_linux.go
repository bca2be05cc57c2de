package db

import (
	"syscall"
	"time"
)

// tcpUserTimeoutOpt is Linux's TCP_USER_TIMEOUT socket option (linux/tcp.h), which the
// syscall package does not name.
const tcpUserTimeoutOpt = 0x12

// setUserTimeout makes a TCP connection fail once data it sent has gone unacknowledged
// for tcpUserTimeout (see keepAliveIdle). Other networks (Unix sockets) are left as
// they are.
func setUserTimeout(network, _ string, c syscall.RawConn) error {
	if network != "tcp" && network != "tcp4" && network != "tcp6" {
		return nil
	}
	var serr error
	err := c.Control(func(fd uintptr) {
		serr = syscall.SetsockoptInt(int(fd), syscall.IPPROTO_TCP, tcpUserTimeoutOpt, int(tcpUserTimeout/time.Millisecond))
	})
	if err != nil {
		return err
	}
	return serr
}
