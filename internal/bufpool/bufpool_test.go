//go:build !race

// (The race detector makes sync.Pool drop what it is given now and then.)

package bufpool

import "testing"

// A buffer's round trip through the pool allocates nothing once the pool holds one.
func TestGetPutAllocateNothing(t *testing.T) {
	Put(Get())
	if n := testing.AllocsPerRun(1000, func() { Put(append(Get(), "frame"...)) }); n != 0 {
		t.Errorf("got %v allocations per Get and Put, want 0", n)
	}
}
