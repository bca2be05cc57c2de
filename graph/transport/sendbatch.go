package transport

import (
	"bytes"
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
// that forbids it) nothing is left in a batch and every drain sends its own frames.

// The bounds of one sendBatch: the sends one system call submits, and the bytes they
// carry (a larger write is sent by its drain, unbatched).
const (
	sendBatchEntries = 64
	sendBatchBytes   = 128 << 10
)

// sendRing submits batches of sends (the Linux io_uring of internal/uring).
type sendRing interface {
	// Send prepares a send of b to fd (b must stay as it is until Submit returns).
	Send(fd int, b []byte, flags uint32, userData uint64) bool
	// Submit makes the prepared sends, in order, with one system call.
	Submit() error
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
	off   bool // no ring can be made: every send is unbatched
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
	r, err := newSendRing(sendBatchEntries)
	if err != nil {
		s.off = true
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

// flush sends the frames the batch holds, and lets their connections go.
func (sb *sendBatch) flush() {
	if len(sb.sends) == 0 {
		return
	}
	if !sb.submit() {
		// The ring failed (it is closed: what it had not taken is dropped): each
		// connection's frames are sent with a system call of their own, as unbatched.
		if sb.ring != nil {
			sb.ring.Close()
			sb.ring = nil
		}
		for i := range sb.sends {
			p := &sb.sends[i]
			n, err := sendNow(p.c.frames.fd, sb.arena[p.off:p.off+p.n])
			sb.complete(p, n, err)
		}
	} else {
		for i := range sb.sends {
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
	}
	clear(sb.sends)
	sb.sends, sb.arena = sb.sends[:0], sb.arena[:0]
}

// submit sends the frames through the ring and puts each send's result in its
// pendingSend; false when the ring failed before taking them.
func (sb *sendBatch) submit() bool {
	if sb.ring == nil {
		return false
	}
	for i := range sb.sends {
		p := &sb.sends[i]
		sb.ring.Send(p.c.frames.fd, sb.arena[p.off:p.off+p.n], sendFlags, uint64(i))
	}
	if err := sb.ring.Submit(); err != nil {
		return false
	}
	reap := func(i uint64, res int32) { sb.sends[i].res = res }
	// Non-blocking sends complete within the submission; Wait is for a kernel that
	// would complete one later (the arena must not be reused before).
	for got := sb.ring.Reap(reap); got < len(sb.sends); got += sb.ring.Reap(reap) {
		if err := sb.ring.Wait(len(sb.sends) - got); err != nil {
			panic("transport: io_uring wait: " + err.Error()) // sends under way on memory that must not be reused
		}
	}
	return true
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
