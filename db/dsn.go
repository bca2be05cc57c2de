package db

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"regexp"
	"strings"
	"time"

	"github.com/lib/pq"
)

// DefaultConnectTimeout is lib/pq's connect_timeout (in whole seconds) when a DSN does
// not set one: lib/pq's own default is to wait for as long as TCP does, so a request
// made while the database host is unreachable would hang for minutes instead of failing.
const DefaultConnectTimeout = 5 * time.Second

// The pool's TCP connections are checked for a dead peer after keepAliveIdle of
// silence, every keepAliveInterval, keepAliveCount times; and on Linux data the peer
// has not acknowledged for tcpUserTimeout fails the connection. Without them a query
// in flight when the database host vanishes (no FIN, no RST: a crash, a partition)
// waits out TCP's retransmissions, about 15 minutes, even after its request's context
// ends: lib/pq cancels a query by asking the server, which is not there to answer.
const (
	keepAliveIdle     = 10 * time.Second
	keepAliveInterval = 5 * time.Second
	keepAliveCount    = 3
	tcpUserTimeout    = 30 * time.Second
)

// connector returns a lib/pq connector for dsn (a URL or key=value string) that fails
// fast when the database is gone: connect_timeout defaults to DefaultConnectTimeout, and
// TCP connections detect a dead peer (see keepAliveIdle).
func connector(dsn string) (*pq.Connector, error) {
	dsn, err := withDefaultParam(dsn, "connect_timeout", fmt.Sprint(int(DefaultConnectTimeout/time.Second)))
	if err != nil {
		return nil, err
	}
	c, err := pq.NewConnector(dsn)
	if err != nil {
		return nil, err
	}
	c.Dialer(fastFailDialer{&net.Dialer{
		KeepAliveConfig: net.KeepAliveConfig{Enable: true, Idle: keepAliveIdle, Interval: keepAliveInterval, Count: keepAliveCount},
		Control:         setUserTimeout,
	}})
	return c, nil
}

// fastFailDialer is a pq.Dialer (and pq.DialerContext) over a net.Dialer. Its
// connections read ahead (readAheadConn).
type fastFailDialer struct{ d *net.Dialer }

func (f fastFailDialer) Dial(network, address string) (net.Conn, error) {
	return readAhead(f.d.Dial(network, address))
}

func (f fastFailDialer) DialTimeout(network, address string, timeout time.Duration) (net.Conn, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	return readAhead(f.d.DialContext(ctx, network, address))
}

func (f fastFailDialer) DialContext(ctx context.Context, network, address string) (net.Conn, error) {
	return readAhead(f.d.DialContext(ctx, network, address))
}

// readAheadConn is a connection to Postgres read through a buffer of readAheadBytes.
// lib/pq reads through a bufio.Reader of its own of 4 KiB, which it does not let
// callers size: a page of 100 messages, some 46 KiB of rows that Postgres has mostly
// sent by the time the first is read, took a dozen read system calls, each its share
// of a core at one client. Read through this buffer first, what has arrived comes in
// one call. Everything else (writes, deadlines, Close) is the connection's own.
type readAheadConn struct {
	net.Conn
	r *bufio.Reader
}

// readAheadBytes is the read-ahead buffer of each of the pool's connections: the rows
// of a page of 100 messages of mixed variants fit, with room.
const readAheadBytes = 64 << 10

func (c readAheadConn) Read(p []byte) (int, error) { return c.r.Read(p) }

func readAhead(c net.Conn, err error) (net.Conn, error) {
	if err != nil {
		return nil, err
	}
	return readAheadConn{Conn: c, r: bufio.NewReaderSize(c, readAheadBytes)}, nil
}

// dsnKey finds a key of a key=value DSN: at the start or after white space.
func dsnKey(key string) *regexp.Regexp {
	return regexp.MustCompile(`(^|\s)` + regexp.QuoteMeta(key) + `\s*=`)
}

// withDefaultParam returns dsn as a key=value string with key set to value unless it
// sets key already. URLs are converted (a URL's query parameters become keys).
func withDefaultParam(dsn, key, value string) (string, error) {
	if strings.HasPrefix(dsn, "postgres://") || strings.HasPrefix(dsn, "postgresql://") {
		var err error
		if dsn, err = pq.ParseURL(dsn); err != nil {
			return "", fmt.Errorf("database URL: %w", err)
		}
	}
	if dsnKey(key).MatchString(dsn) {
		return dsn, nil
	}
	if strings.TrimSpace(dsn) == "" {
		return key + "=" + quoteDSNValue(value), nil
	}
	return dsn + " " + key + "=" + quoteDSNValue(value), nil
}
