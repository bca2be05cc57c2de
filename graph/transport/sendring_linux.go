package transport

import "github.com/parley-dev/parley/internal/uring"

// newSendRing returns an io_uring for batches of entries sends.
func newSendRing(entries int) (sendRing, error) {
	return uring.New(uint32(entries))
}
