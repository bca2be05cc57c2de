package main

import (
	"fmt"
	"github.com/parley-dev/parley/internal/uring"
	"io"
	"net"
	"runtime"
	"syscall"
	"testing"
	"time"
	"unsafe"
)

// BenchmarkLoopbackWriteFloor measures the floor under a delivery's system call: one
// write of a subscription's frame (the size of the benchmark's messageAdded result) to
// each of 1,000 loopback TCP connections whose other ends goroutines read, as the
// benchmark's subscribers do. It reports the writing thread's CPU per write
// (cpu-ns/write, from getrusage(RUSAGE_THREAD): on loopback the kernel runs the
// receiver's TCP processing and wake-up inside the sender's call, so this is what a
// server pays per write whatever it does around it) beside the wall time. Rounds run
// back to back, or 100 ms apart as the benchmark's messages are (the readers then
// sleep between rounds, and the first writes of a round wake them). The sendto rounds
// send as the server's websocket transport does (frameConn.writeNow: a raw sendto on
// the non-blocking descriptor) rather than through net.Conn's Write; the uring rounds
// as batched deliveries do (sendBatch: the same sends, N to a system call, through
// io_uring).
//
//	go test -run '^$' -bench LoopbackWriteFloor -benchtime 100x ./bench/fanout
func BenchmarkLoopbackWriteFloor(b *testing.B) {
	b.Run("back-to-back", func(b *testing.B) { loopbackWrites(b, 0, false, 0) })
	b.Run("100ms-apart", func(b *testing.B) { loopbackWrites(b, 100*time.Millisecond, false, 0) })
	b.Run("back-to-back-sendto", func(b *testing.B) { loopbackWrites(b, 0, true, 0) })
	b.Run("100ms-apart-sendto", func(b *testing.B) { loopbackWrites(b, 100*time.Millisecond, true, 0) })
	for _, batch := range []int{16, 64, 1000} {
		b.Run(fmt.Sprintf("100ms-apart-uring-%d", batch), func(b *testing.B) { loopbackWrites(b, 100*time.Millisecond, true, batch) })
	}
}

func loopbackWrites(b *testing.B, pause time.Duration, sendto bool, uringBatch int) {
	const conns = 1000
	frame := make([]byte, 260) // a text frame of the benchmark's messageAdded result
	frame[0], frame[1] = 0x81, 126
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan net.Conn, conns)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			accepted <- c
		}
	}()
	var servers []net.Conn
	var fds []uintptr
	for range conns {
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			b.Fatal(err)
		}
		defer c.Close()
		go io.Copy(io.Discard, c)
		s := <-accepted
		defer s.Close()
		servers = append(servers, s)
		raw, err := s.(*net.TCPConn).SyscallConn()
		if err != nil {
			b.Fatal(err)
		}
		raw.Control(func(fd uintptr) { fds = append(fds, fd) })
	}
	var ring *uring.Ring
	if uringBatch > 0 {
		ring, err = uring.New(uint32(uringBatch))
		if err != nil {
			b.Fatal(err)
		}
		defer ring.Close()
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var cpu, wall time.Duration
	b.ResetTimer()
	for range b.N {
		cpu0, start := threadCPU(b), time.Now()
		for i, s := range servers {
			if ring != nil {
				ring.Send(int(fds[i]), frame, syscall.MSG_DONTWAIT|syscall.MSG_NOSIGNAL, uint64(i))
				if (i+1)%uringBatch == 0 || i == len(servers)-1 {
					if _, err := ring.Submit(); err != nil {
						b.Fatal(err)
					}
					want := (i % uringBatch) + 1
					if got := ring.Reap(func(_ uint64, res int32) {
						if int(res) != len(frame) {
							b.Fatalf("send: %d", res)
						}
					}); got != want {
						b.Fatalf("%d sends completed within the submission, want %d", got, want)
					}
				}
				continue
			}
			if sendto {
				// The descriptors stay open until the benchmark returns.
				if n, _, e := syscall.RawSyscall6(syscall.SYS_SENDTO, fds[i], uintptr(unsafe.Pointer(&frame[0])), uintptr(len(frame)),
					syscall.MSG_DONTWAIT|syscall.MSG_NOSIGNAL, 0, 0); e != 0 || int(n) != len(frame) {
					b.Fatalf("sendto: %d, %v", n, e)
				}
				continue
			}
			if _, err := s.Write(frame); err != nil {
				b.Fatal(err)
			}
		}
		cpu, wall = cpu+threadCPU(b)-cpu0, wall+time.Since(start)
		time.Sleep(pause)
	}
	b.StopTimer()
	writes := float64(b.N * conns)
	b.ReportMetric(float64(cpu.Nanoseconds())/writes, "cpu-ns/write")
	b.ReportMetric(float64(wall.Nanoseconds())/writes, "ns/write")
}

// threadCPU returns the calling thread's CPU time (user and system).
func threadCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_THREAD, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
