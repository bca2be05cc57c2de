// Package uring submits socket sends in batches through Linux's io_uring: one system
// call for many sends, on many sockets.
//
// It is the part of io_uring Parley uses (set-up, sends, completions) written here
// rather than taken from a library, because none builds and is kept up: giouring
// (pawelgaczynski/giouring, a port of liburing, last changed in 2023) and iceber's
// iouring-go fail to link with Go 1.23 and later (each reaches into the syscall
// package's unexported functions through go:linkname, which the linker now refuses),
// and godzie44's go-uring, which links, has not changed since 2022. The system call
// numbers come from golang.org/x/sys/unix, so they are right on every architecture.
package uring

import (
	"errors"
	"sync/atomic"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

const (
	sysSetup = unix.SYS_IO_URING_SETUP
	sysEnter = unix.SYS_IO_URING_ENTER

	opSend = 26

	offSQRing = 0
	offCQRing = 0x8000000
	offSQEs   = 0x10000000

	featSingleMmap = 1 << 0
	setupSubmitAll = 1 << 7

	enterGetEvents = 1 << 0
)

type sqringOffsets struct {
	head, tail, ringMask, ringEntries, flags, dropped, array, resv1 uint32
	userAddr                                                        uint64
}

type cqringOffsets struct {
	head, tail, ringMask, ringEntries, overflow, cqes, flags, resv1 uint32
	userAddr                                                        uint64
}

type params struct {
	sqEntries, cqEntries, flags, sqThreadCPU, sqThreadIdle, features, wqFD uint32
	resv                                                                   [3]uint32
	sqOff                                                                  sqringOffsets
	cqOff                                                                  cqringOffsets
}

type sqe struct {
	opcode      uint8
	flags       uint8
	ioprio      uint16
	fd          int32
	off         uint64
	addr        uint64
	len         uint32
	msgFlags    uint32
	userData    uint64
	bufIndex    uint16
	personality uint16
	spliceFDIn  int32
	addr3       uint64
	pad         uint64
}

type cqe struct {
	userData uint64
	res      int32
	flags    uint32
}

// Ring is an io_uring used by one goroutine at a time.
type Ring struct {
	fd              int
	sqHead, sqTail  *uint32
	sqMask          uint32
	sqEntries       uint32
	sqes            []sqe
	cqHead, cqTail  *uint32
	cqMask          uint32
	cqes            []cqe
	tail            uint32 // next SQE's index, not yet published
	pending         uint32 // prepared, not yet submitted
	ringMem, sqeMem []byte
}

// New sets up a ring with room for entries sends in a batch.
func New(entries uint32) (*Ring, error) {
	var p params
	p.flags = setupSubmitAll
	fd, _, e := syscall.Syscall(sysSetup, uintptr(entries), uintptr(unsafe.Pointer(&p)), 0)
	if e != 0 {
		return nil, e
	}
	r := &Ring{fd: int(fd)}
	if p.features&featSingleMmap == 0 {
		syscall.Close(r.fd)
		return nil, errors.New("io_uring without single mmap")
	}
	size := max(p.sqOff.array+p.sqEntries*4, p.cqOff.cqes+p.cqEntries*uint32(unsafe.Sizeof(cqe{})))
	mem, err := syscall.Mmap(r.fd, offSQRing, int(size), syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_SHARED|syscall.MAP_POPULATE)
	if err != nil {
		syscall.Close(r.fd)
		return nil, err
	}
	sqeMem, err := syscall.Mmap(r.fd, offSQEs, int(p.sqEntries)*int(unsafe.Sizeof(sqe{})), syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_SHARED|syscall.MAP_POPULATE)
	if err != nil {
		syscall.Munmap(mem)
		syscall.Close(r.fd)
		return nil, err
	}
	r.ringMem, r.sqeMem = mem, sqeMem
	base := unsafe.Pointer(&mem[0])
	r.sqHead = (*uint32)(unsafe.Add(base, p.sqOff.head))
	r.sqTail = (*uint32)(unsafe.Add(base, p.sqOff.tail))
	r.sqMask = *(*uint32)(unsafe.Add(base, p.sqOff.ringMask))
	r.sqEntries = *(*uint32)(unsafe.Add(base, p.sqOff.ringEntries))
	array := unsafe.Slice((*uint32)(unsafe.Add(base, p.sqOff.array)), p.sqEntries)
	for i := range array {
		array[i] = uint32(i)
	}
	r.cqHead = (*uint32)(unsafe.Add(base, p.cqOff.head))
	r.cqTail = (*uint32)(unsafe.Add(base, p.cqOff.tail))
	r.cqMask = *(*uint32)(unsafe.Add(base, p.cqOff.ringMask))
	r.cqes = unsafe.Slice((*cqe)(unsafe.Add(base, p.cqOff.cqes)), p.cqEntries)
	r.sqes = unsafe.Slice((*sqe)(unsafe.Pointer(&sqeMem[0])), p.sqEntries)
	r.tail = atomic.LoadUint32(r.sqTail)
	return r, nil
}

// Send prepares a send of b on fd, reported with userData; false when the batch is full.
// b must stay as it is until its completion is reaped.
func (r *Ring) Send(fd int, b []byte, flags uint32, userData uint64) bool {
	if r.pending >= r.sqEntries {
		return false
	}
	s := &r.sqes[r.tail&r.sqMask]
	*s = sqe{opcode: opSend, fd: int32(fd), addr: uint64(uintptr(unsafe.Pointer(&b[0]))), len: uint32(len(b)), msgFlags: flags, userData: userData}
	r.tail++
	r.pending++
	return true
}

// Submit submits the prepared sends, in order, in one system call (more only if the
// kernel takes part of them), and reports how many the kernel took: sends that do not
// wait complete within the call, the others later (Wait, Reap). On an error the sends
// after the taken ones are withdrawn, never to be made (the caller makes them otherwise
// or not at all), and the ring is left empty and usable: taken is what is to be reaped.
func (r *Ring) Submit() (taken int, err error) {
	if r.pending == 0 {
		return 0, nil
	}
	first := r.tail - r.pending // the first prepared entry's index
	atomic.StoreUint32(r.sqTail, r.tail)
	n := r.pending
	for n > 0 {
		m, _, e := syscall.RawSyscall6(sysEnter, uintptr(r.fd), uintptr(n), 0, 0, 0, 0)
		if e == syscall.EINTR {
			continue
		}
		if e == 0 && m == 0 {
			e = syscall.EAGAIN // it saw none of them: do not spin
		}
		if e != 0 {
			err = e
			break
		}
		n -= uint32(m)
	}
	r.pending = 0
	if err == nil {
		return int(r.tail - first), nil
	}
	// The kernel's head is past every entry it took (it consumes them in order, and
	// publishes its head before io_uring_enter returns). Without a polling thread it
	// reads the tail only within io_uring_enter, so setting the tail back to the head
	// withdraws the rest.
	head := atomic.LoadUint32(r.sqHead)
	r.tail = head
	atomic.StoreUint32(r.sqTail, head)
	return int(head - first), err
}

// Wait waits, letting the goroutine's thread block, until at least n completions are
// ready to reap.
func (r *Ring) Wait(n int) error {
	for {
		_, _, e := syscall.Syscall6(sysEnter, uintptr(r.fd), 0, uintptr(n), enterGetEvents, 0, 0)
		if e != syscall.EINTR {
			if e != 0 {
				return e
			}
			return nil
		}
	}
}

// Reap calls f with each completion, and reports how many.
func (r *Ring) Reap(f func(userData uint64, res int32)) int {
	head := atomic.LoadUint32(r.cqHead)
	tail := atomic.LoadUint32(r.cqTail)
	n := 0
	for ; head != tail; head++ {
		c := &r.cqes[head&r.cqMask]
		f(c.userData, c.res)
		n++
	}
	atomic.StoreUint32(r.cqHead, head)
	return n
}

// Close releases the ring.
func (r *Ring) Close() error {
	syscall.Munmap(r.sqeMem)
	syscall.Munmap(r.ringMem)
	return syscall.Close(r.fd)
}
