package transport

import (
	"bytes"
	"errors"
	"runtime"
	"sync"
	"syscall"

	"github.com/parley-dev/parley"
)

// Batched sends. When a message is added to a conversation, the realtime hub serves its
// subscribers one after another from a few goroutines (parley.BatchReadier), and each
// subscriber's drain has one frame to write to its own connection: a thousand send
// system calls a message. A system call's entry and exit alone cost 1.8–2 µs on the
// virtual machines Parley is measured on (page-table isolation without PCID flushes the
// TLB both ways), a fifth of a delivery. So a drain served within a batch of wake-ups
// leaves its frames in the batch (sendBatch) instead of sending them, holding its
// connection's write locks, and the batch sends up to sendBatchEntries of them with one
// io_uring_enter when it is full or its wake-ups are done: each send is the same
// non-blocking send to the socket the drain would have made (MSG_DONTWAIT, which
// io_uring completes at once, with -EAGAIN when the socket is full), in the order the
// frames were left. What a socket does not take at once is written by a goroutine of
// its own, as the unbatched drain does, and an error closes the connection.
//
// Where io_uring cannot be had (another system, a kernel without it, a seccomp profile
// that forbids it), or the operator turned it off (Config.DisableIOUring), nothing is
// left in a batch and every drain sends its own frames.

// The bounds of one sendBatch: the sends one system call submits, and the bytes they
// carry (a larger write is sent by its drain, unbatched).
const (
	sendBatchEntries = 64
	sendBatchBytes   = 128 << 10
)

// sendRing submits batches of sends (the Linux io_uring of internal/uring).
type sendRing interface {
	// Send prepares a send of b to fd (b must stay as it is until its completion is
	// reaped); false when the ring holds no more.
	Send(fd int, b []byte, flags uint32, userData uint64) bool
	// Submit makes the prepared sends, in order, with one system call, and reports how
	// many the kernel took: on an error, the first taken of them (whose completions
	// are to be reaped), the rest withdrawn, never to be made.
	Submit() (taken int, err error)
	// Wait waits until n completions are ready; Reap passes each to f and counts them.
	Wait(n int) error
	Reap(f func(userData uint64, res int32)) int
	Close() error
}

// sendRings keeps the sendBatches (and their rings) not in use, for every websocket
// transport of the process: a ring is a file descriptor and a few pages of the
// kernel's, so there are at most a few per CPU, made as they are first needed, and
// a batch that finds none sends unbatched.
type sendRings struct {
	mu    sync.Mutex
	free  []*sendBatch
	made  int
	limit int
	off   bool  // no ring can be made: every send is unbatched
	err   error // why the first ring could not be made
	// newRing makes a ring (nil: newSendRing); tests give doubles.
	newRing func(entries int) (sendRing, error)
}

// theSendRings are the process's sendBatches.
var theSendRings = &sendRings{limit: 4 * runtime.GOMAXPROCS(0)}

// get returns a sendBatch not in use, or nil.
func (s *sendRings) get() *sendBatch {
	s.mu.Lock()
	defer s.mu.Unlock()
	if n := len(s.free); n > 0 {
		sb := s.free[n-1]
		s.free = s.free[:n-1]
		return sb
	}
	if s.off || s.made >= s.limit {
		return nil
	}
	newRing := s.newRing
	if newRing == nil {
		newRing = newSendRing
	}
	r, err := newRing(sendBatchEntries)
	if err != nil {
		s.off, s.err = true, err
		return nil
	}
	s.made++
	return &sendBatch{rings: s, ring: r, arena: make([]byte, 0, sendBatchBytes)}
}

// put gives sb back, empty; a batch whose ring failed is dropped, and no more are made.
func (s *sendRings) put(sb *sendBatch) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if sb.ring == nil {
		s.off = true
		return
	}
	s.free = append(s.free, sb)
}

// IOUringAvailable reports why websocket deliveries cannot go out in batches through
// io_uring here (nil: they can), so that a server can say so at start: it sets up the
// process's first send ring if none is yet, kept for the first batch. A transport
// whose Config.DisableIOUring is set makes no ring whatever this says.
func IOUringAvailable() error {
	return theSendRings.available()
}

// available reports why no ring can be made (nil: one can), making one if none is yet.
func (s *sendRings) available() error {
	if sb := s.get(); sb != nil {
		s.put(sb)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.err != nil:
		return s.err
	case s.off:
		return errors.New("a send ring failed")
	}
	return nil
}

// noSendBatch is left in a parley.ReadyBatch that found no sendBatch, so that its other
// wake-ups do not ask again.
type noSendBatch struct{}

func (noSendBatch) FinishBatch() {}

// batchOf returns the sendBatch left in b, leaving one there first if there is none;
// nil if none can be had.
func (s *sendRings) batchOf(b *parley.ReadyBatch) *sendBatch {
	if f := b.Left(s); f != nil {
		sb, _ := f.(*sendBatch)
		return sb
	}
	if sb := s.get(); sb != nil {
		b.Leave(s, sb)
		return sb
	}
	b.Leave(s, noSendBatch{})
	return nil
}

// sendBatch is the frames left by the drains of one batch of wake-ups, to be sent
// together. Each connection in it is held (wmu, its frameConn's mu and rawMu) from the
// moment its frames are left until they are sent: nothing else is written to it
// meanwhile, and its descriptor stays open.
type sendBatch struct {
	rings *sendRings
	ring  sendRing // nil once it has failed
	arena []byte   // the frames, back to back (never grown: the ring points into it)
	sends []pendingSend
}

// pendingSend is one connection's frames in a sendBatch: arena[off:off+n].
type pendingSend struct {
	c      *wsConn
	off, n int
	res    int32 // the send's result, once made
}

// FinishBatch implements parley.BatchFinisher: the frames left are sent, and the batch
// is given back.
func (sb *sendBatch) FinishBatch() {
	sb.flush()
	sb.rings.put(sb)
}

// leave leaves wire, n whole frames for c, in the batch b, and reports whether it did:
// false when they are to be written as if there were no batch (wsConn.writeNow), as
// when there is no ring, the write is too large, or the connection is held by a write
// of another's. err is the connection's end, as writeNow reports it.
func (s *sendRings) leave(b *parley.ReadyBatch, c *wsConn, wire []byte) (ok bool, err error) {
	if c.frames == nil || c.frames.fd < 0 || len(wire) > sendBatchBytes {
		return false, nil
	}
	sb := s.batchOf(b)
	if sb == nil {
		return false, nil
	}
	if c.batched.Load() == sb {
		// Frames of another subscription of the same connection are in this batch: the
		// connection is held by it. Frames right after them are added to their send;
		// otherwise what the batch holds is sent first, which lets the connection go.
		if last := &sb.sends[len(sb.sends)-1]; last.c == c && len(sb.arena)+len(wire) <= cap(sb.arena) {
			sb.arena = append(sb.arena, wire...)
			last.n += len(wire)
			return true, nil
		}
		sb.flush()
	}
	if !c.wmu.TryLock() {
		return false, nil
	}
	if c.closed || c.t.shutdown.Err() != nil {
		c.wmu.Unlock()
		return true, errConnClosed
	}
	if !c.frames.mu.TryLock() { // coder/websocket writing a control frame
		c.wmu.Unlock()
		return false, nil
	}
	c.frames.rawMu.Lock()
	if c.frames.closed {
		c.frames.rawMu.Unlock()
		c.frames.mu.Unlock()
		err := c.done(errConnClosed)
		c.wmu.Unlock()
		return true, err
	}
	if sb.ring == nil || len(sb.sends) == sendBatchEntries || len(sb.arena)+len(wire) > cap(sb.arena) {
		sb.flush()
	}
	sb.sends = append(sb.sends, pendingSend{c: c, off: len(sb.arena), n: len(wire)})
	sb.arena = append(sb.arena, wire...)
	c.batched.Store(sb)
	return true, nil
}

// flush sends the frames the batch holds, and lets their connections go. Each
// connection has one send in the batch (leave flushes before it adds a second), so the
// sends the ring did not take can be made apart from the others without reordering
// anyone's frames.
func (sb *sendBatch) flush() {
	if len(sb.sends) == 0 {
		return
	}
	taken := sb.submit()
	for i := range sb.sends[:taken] {
		p := &sb.sends[i]
		switch res := p.res; {
		case res >= 0:
			sb.complete(p, int(res), nil)
		case syscall.Errno(-res) == syscall.EAGAIN || syscall.Errno(-res) == syscall.EINTR:
			sb.complete(p, 0, nil)
		default:
			sb.complete(p, 0, syscall.Errno(-res))
		}
	}
	// What the ring did not take (all of it when there is no ring) is sent with a
	// system call of its own, as unbatched.
	for i := range sb.sends[taken:] {
		p := &sb.sends[taken+i]
		n, err := sendNow(p.c.frames.fd, sb.arena[p.off:p.off+p.n])
		sb.complete(p, n, err)
	}
	clear(sb.sends)
	sb.sends, sb.arena = sb.sends[:0], sb.arena[:0]
}

// submit sends the frames through the ring, puts each send's result in its
// pendingSend, and reports how many of sb.sends, the first, the ring took (made or
// failed, each with its result); the rest are not made. Every send taken is reaped
// before submit returns, even when the submission failed part-way: the kernel reads
// the arena until then, and the connection is held until its send's result is known.
// A ring that fails for want of resources for the moment (EAGAIN, EBUSY, ENOMEM) is
// kept for the next batch; one that fails otherwise is closed, once it has nothing
// under way, and none are made any more (sendRings.put).
func (sb *sendBatch) submit() int {
	if sb.ring == nil {
		return 0
	}
	prepared := 0
	for i := range sb.sends {
		p := &sb.sends[i]
		if !sb.ring.Send(p.c.frames.fd, sb.arena[p.off:p.off+p.n], sendFlags, uint64(i)) {
			break
		}
		prepared++
	}
	taken, err := sb.ring.Submit()
	taken = min(max(taken, 0), prepared)
	reap := func(i uint64, res int32) {
		if i < uint64(taken) {
			sb.sends[i].res = res
		}
	}
	// Non-blocking sends complete within the submission; Wait is for a kernel that
	// would complete one later (the arena must not be reused before).
	for got := sb.ring.Reap(reap); got < taken; got += sb.ring.Reap(reap) {
		if err := sb.ring.Wait(taken - got); err != nil {
			panic("transport: io_uring wait: " + err.Error()) // sends under way on memory that must not be reused
		}
	}
	if err != nil && !transientRingError(err) {
		sb.ring.Close()
		sb.ring = nil
	}
	return taken
}

// transientRingError reports whether a submission failed only for want of the
// kernel's resources at the moment (io_uring_enter(2)), which leaves the ring usable.
func transientRingError(err error) bool {
	return errors.Is(err, syscall.EAGAIN) || errors.Is(err, syscall.EBUSY) || errors.Is(err, syscall.ENOMEM)
}

// complete ends p's send, which wrote n bytes (err: it failed), and lets its
// connection go: what the socket did not take is written by a goroutine of its own,
// within the write timeout, the connection held until then (as wsConn.writeNow's rest).
func (sb *sendBatch) complete(p *pendingSend, n int, err error) {
	c := p.c
	c.batched.Store(nil)
	c.frames.rawMu.Unlock()
	if err != nil || n == p.n {
		c.frames.mu.Unlock()
		c.done(err)
		c.wmu.Unlock()
		return
	}
	rest := bytes.Clone(sb.arena[p.off+n : p.off+p.n])
	go func() {
		defer c.wmu.Unlock()
		c.timed(func() error {
			_, err := c.frames.Conn.Write(rest)
			c.frames.mu.Unlock()
			return err
		})
	}()
}
