package db

import (
	"bufio"
	"bytes"
	"io"
	"net"
	"sync/atomic"
	"testing"
)

// countingConn counts the reads of its connection.
type countingConn struct {
	net.Conn
	reads *atomic.Int64
}

func (c countingConn) Read(p []byte) (int, error) {
	c.reads.Add(1)
	return c.Conn.Read(p)
}

// TestReadAheadReadsWhatHasArrived checks that a page's rows that have all arrived are
// read through lib/pq's 4 KiB buffer in one read of the connection, not one for each
// 4 KiB, and come out as they went in.
func TestReadAheadReadsWhatHasArrived(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	rows := bytes.Repeat([]byte("a page's rows "), 46<<10/14)
	sent := make(chan error, 1)
	go func() {
		c, err := ln.Accept()
		if err == nil {
			_, err = c.Write(rows)
			c.Close()
		}
		sent <- err
	}()
	var reads atomic.Int64
	conn, err := readAhead(net.Dial("tcp", ln.Addr().String()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if err := <-sent; err != nil {
		t.Fatal(err)
	}
	ra := conn.(readAheadConn)
	ra.r.Reset(countingConn{ra.Conn, &reads})
	got, err := io.ReadAll(bufio.NewReader(ra)) // lib/pq's reader: 4 KiB
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, rows) {
		t.Fatalf("read %d bytes, not the %d sent", len(got), len(rows))
	}
	// One read for the rows, one for the end.
	if n := reads.Load(); n > 2 {
		t.Errorf("got %d reads of the connection for %d bytes that had arrived, want 2", n, len(rows))
	}
}
