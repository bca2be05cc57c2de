//go:build !linux

package transport

import "errors"

// newSendRing fails: batched sends need Linux's io_uring.
func newSendRing(int) (sendRing, error) {
	return nil, errors.New("no io_uring on this system")
}
