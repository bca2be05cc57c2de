package uring

import (
	"bytes"
	"syscall"
	"testing"
)

// Submit reports every send taken, each completes with its result, and the ring takes
// the next batch: the frames reach the peer whole and in order.
func TestSubmitReportsTheSendsTaken(t *testing.T) {
	t.Parallel()
	r, err := New(8)
	if err != nil {
		t.Skipf("no io_uring here: %v", err)
	}
	defer r.Close()
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Close(fds[0])
	defer syscall.Close(fds[1])
	var want []byte
	for batch := range 3 {
		msgs := [][]byte{[]byte("one "), []byte("two "), []byte("three ")}[:batch+1]
		for i, m := range msgs {
			if !r.Send(fds[0], m, syscall.MSG_DONTWAIT|syscall.MSG_NOSIGNAL, uint64(i)) {
				t.Fatalf("batch %d: send %d refused", batch, i)
			}
			want = append(want, m...)
		}
		taken, err := r.Submit()
		if err != nil || taken != len(msgs) {
			t.Fatalf("batch %d: got %d taken, %v; want %d, nil", batch, taken, err, len(msgs))
		}
		got := 0
		for got < taken {
			got += r.Reap(func(i uint64, res int32) {
				if int(res) != len(msgs[i]) {
					t.Errorf("batch %d, send %d: got %d, want %d", batch, i, res, len(msgs[i]))
				}
			})
			if got < taken {
				if err := r.Wait(taken - got); err != nil {
					t.Fatal(err)
				}
			}
		}
		if taken, err := r.Submit(); taken != 0 || err != nil {
			t.Fatalf("batch %d: an empty submission: got %d, %v; want 0, nil", batch, taken, err)
		}
	}
	got := make([]byte, 2*len(want))
	n, err := syscall.Read(fds[1], got)
	if err != nil || !bytes.Equal(got[:n], want) {
		t.Errorf("got %q, %v; want %q", got[:n], err, want)
	}
}
