package transport

import (
	"bufio"
	"encoding/binary"
	"net"
	"net/http"
	"sync"
	"syscall"
	"unsafe"
)

// frameConn is a websocket's network connection, to which the transport writes its
// messages as websocket frames itself, several in one write, rather than through
// coder/websocket's Conn.Write. The library's write of a message takes two locks made of
// channels, checks its close state under a third, writes the frame's header into its
// buffer a byte at a time and flushes each message with a system call of its own: a
// sixth of a delivery's CPU besides the system call, for a frame that is a few header
// bytes before the payload (RFC 6455 section 5.2; a server's frames are not masked, and
// compression is off, so there is nothing else to it). coder/websocket still reads the
// connection and writes its own control frames (pong, close) to it: each of those is
// one write of a whole frame to frameConn, which mu keeps from interleaving with the
// transport's.
//
// Everything the transport sends goes through wsConn's writes, under mu, so no message
// of coder/websocket's is ever split around one of ours.
type frameConn struct {
	mu sync.Mutex // held across each write to Conn, so that frames stay whole
	// rawMu is held across each write to fd (writeNow), which never waits, and by Close
	// before it closes Conn: fd is never written to once it is closed, when its number
	// may be another file's. closed is set under it.
	rawMu  sync.Mutex
	closed bool
	// fd is Conn's file descriptor, for writes that never wait (-1: none). Written to
	// straight rather than through syscall.RawConn's Control, whose reference count on
	// the descriptor, net's wrapper and the function it calls were three objects more a
	// delivery touched, each a cache miss at a thousand subscribers.
	fd int
	net.Conn
}

// Write implements io.Writer: coder/websocket's writes (its control frames, and the
// handshake's rest).
func (c *frameConn) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.Conn.Write(p)
}

// Close implements net.Conn: no write to fd is under way or will be.
func (c *frameConn) Close() error {
	c.rawMu.Lock()
	c.closed = true
	c.rawMu.Unlock()
	return c.Conn.Close()
}

// writeNow writes what of b the network takes without waiting (the caller holds mu):
// one send system call, retried only if interrupted. err is nil when the network is
// merely full (n < len(b)).
//
// The call is raw (syscall.RawSyscall: the goroutine keeps its P, as for any call that
// cannot block): the socket is non-blocking, so the call returns as soon as the kernel
// has queued what fits, and the scheduler's hand-off of a P in a system call (entering
// and leaving it, and sysmon's retaking the P of a call it finds running, waking
// another thread for it) was a cost of its own at a thousand writes a message. It is
// sendto rather than write: a socket's own call, without the file system's layer
// (vfs_write, the file position's lock) that write goes through first.
func (c *frameConn) writeNow(b []byte) (n int, err error) {
	c.rawMu.Lock()
	defer c.rawMu.Unlock()
	if c.closed {
		return 0, net.ErrClosed
	}
	return sendNow(c.fd, b)
}

// sendNow writes what of b the socket fd takes without waiting: see frameConn.writeNow.
func sendNow(fd int, b []byte) (n int, err error) {
	for n < len(b) {
		m, _, e := syscall.RawSyscall6(syscall.SYS_SENDTO, uintptr(fd), uintptr(unsafe.Pointer(&b[n])), uintptr(len(b)-n),
			sendFlags, 0, 0)
		switch {
		case e == syscall.EINTR:
			continue
		case e == syscall.EAGAIN:
			return n, nil
		case e != 0:
			return n, e
		}
		n += int(m)
	}
	return n, nil
}

// appendTextFrame appends to b a server's text frame carrying p.
func appendTextFrame(b, p []byte) []byte {
	return append(appendTextHeader(b, len(p)), p...)
}

// appendTextHeader appends to b the header of a server's text frame of n bytes: FIN and
// the text opcode, no mask, the payload's length in 7, 7+16 or 7+64 bits.
func appendTextHeader(b []byte, n int) []byte {
	const finText = 0x80 | 0x1
	switch {
	case n <= 125:
		return append(b, finText, byte(n))
	case n <= 0xffff:
		b = append(b, finText, 126)
		return binary.BigEndian.AppendUint16(b, uint16(n))
	default:
		b = append(b, finText, 127)
		return binary.BigEndian.AppendUint64(b, uint64(n))
	}
}

// framingWriter is the upgrade's response writer, whose Hijack hands coder/websocket a
// frameConn in place of the connection, and a buffered writer over it.
type framingWriter struct {
	http.ResponseWriter
	// conn is the frameConn Hijack fills in (its Conn set then): the one given, a zero
	// frameConn the connection's own (see wsConn.fc), or else a new one.
	conn *frameConn
}

// Hijack implements http.Hijacker.
func (w *framingWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	nc, brw, err := http.NewResponseController(w.ResponseWriter).Hijack()
	if err != nil {
		return nil, nil, err
	}
	// Whatever the server still holds of its response goes out before the connection
	// is handed over (net/http has flushed it already; this costs nothing then).
	if err := brw.Writer.Flush(); err != nil {
		nc.Close()
		return nil, nil, err
	}
	if w.conn == nil {
		w.conn = new(frameConn)
	}
	w.conn.Conn, w.conn.fd = nc, -1
	if sc, ok := nc.(syscall.Conn); ok { // a TCP connection; not a TLS one
		if raw, err := sc.SyscallConn(); err == nil {
			raw.Control(func(fd uintptr) { w.conn.fd = int(fd) })
		}
	}
	return w.conn, bufio.NewReadWriter(brw.Reader, bufio.NewWriterSize(w.conn, 4096)), nil
}

// Unwrap lets http.ResponseController reach the server's writer.
func (w *framingWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
