//go:build !linux

package db

import "syscall"

// setUserTimeout does nothing where TCP_USER_TIMEOUT does not exist; keepalives still
// find a dead peer of an idle connection.
func setUserTimeout(string, string, syscall.RawConn) error { return nil }
