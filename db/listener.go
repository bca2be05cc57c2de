package db

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strings"
	"sync"
	"time"

	"github.com/lib/pq"

	"github.com/parley-dev/parley"
)

// ListenerConfig tunes a Listener.
type ListenerConfig struct {
	// OnEvent receives every message event any replica commits. OnResync is called
	// whenever events may have been lost: after the listening connection is (re)made,
	// and when a notification cannot be read. Both are called from one goroutine and
	// must not block.
	OnEvent  func(parley.MessageEvent)
	OnResync func()
	// OnReconnect, when set, is called (before OnResync) each time the listening
	// connection is made again after it was lost: for metrics.
	OnReconnect func()
	// Origin, when set, is the DB.Origin of the process's store: the notifications of
	// the appends it has delivered itself (DB.OnAppended) are skipped.
	Origin string
	// ApplicationName names the listening connection in pg_stat_activity (default
	// "parley-listener"), so operators can find it.
	ApplicationName string
	// MinReconnectInterval and MaxReconnectInterval bound the backoff between attempts
	// to reconnect (defaults 100ms and 5s).
	MinReconnectInterval, MaxReconnectInterval time.Duration
	// PingInterval is how often the connection is checked (default 10s); PingTimeout is
	// how long the server may take to answer before the connection is taken for
	// half-open and replaced (default 5s).
	PingInterval, PingTimeout time.Duration
	// Dial opens the listening connection (default: a net.Dialer with a 10s timeout and
	// TCP keepalive). Tests use it to hold a reconnection back.
	Dial   func(ctx context.Context, network, address string) (net.Conn, error)
	Logger *slog.Logger
}

// Listener is a process's one listening connection to Postgres: it receives every
// replica's message events and hands them to OnEvent. lib/pq's Listener reconnects with
// backoff; on top of it this detects half-open connections (a ping that gets no answer
// drops the connection) and reports every (re)connection as a resync, since
// notifications sent while disconnected are lost for good.
type Listener struct {
	cfg    ListenerConfig
	pl     *pq.Listener
	dialer *listenerDialer
	log    *slog.Logger

	stop      chan struct{} // closed by Close
	closeOnce sync.Once
	done      sync.WaitGroup // the dispatching and pinging goroutines
}

// Listen connects to the database at dsn and listens to NotifyChannel. It returns once
// the connection is listening, or with ctx's error.
func Listen(ctx context.Context, dsn string, cfg ListenerConfig) (*Listener, error) {
	if cfg.OnEvent == nil || cfg.OnResync == nil {
		return nil, errors.New("listen: ListenerConfig needs OnEvent and OnResync")
	}
	if cfg.ApplicationName == "" {
		cfg.ApplicationName = "parley-listener"
	}
	if cfg.MinReconnectInterval <= 0 {
		cfg.MinReconnectInterval = 100 * time.Millisecond
	}
	if cfg.MaxReconnectInterval <= 0 {
		cfg.MaxReconnectInterval = 5 * time.Second
	}
	if cfg.PingInterval <= 0 {
		cfg.PingInterval = 10 * time.Second
	}
	if cfg.PingTimeout <= 0 {
		cfg.PingTimeout = 5 * time.Second
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Dial == nil {
		d := &net.Dialer{Timeout: 10 * time.Second, KeepAlive: 15 * time.Second}
		cfg.Dial = d.DialContext
	}
	name, err := withApplicationName(dsn, cfg.ApplicationName)
	if err != nil {
		return nil, err
	}
	l := &Listener{
		cfg:    cfg,
		dialer: &listenerDialer{dial: cfg.Dial},
		log:    cfg.Logger.With("component", "listener"),
		stop:   make(chan struct{}),
	}
	l.pl = pq.NewDialListener(l.dialer, name, cfg.MinReconnectInterval, cfg.MaxReconnectInterval, l.onConnEvent)
	l.done.Add(1)
	go l.dispatch()

	// pq's Listen waits for the first connection however long that takes; ctx bounds it.
	listened := make(chan error, 1)
	go func() { listened <- l.pl.Listen(NotifyChannel) }()
	select {
	case err = <-listened:
	case <-ctx.Done():
		err = ctx.Err()
	}
	if err != nil {
		l.Close()
		return nil, fmt.Errorf("listen to %s: %w", NotifyChannel, err)
	}
	l.done.Add(1)
	go l.ping()
	return l, nil
}

// Close stops listening and waits for the listener's goroutines to end.
func (l *Listener) Close() error {
	l.closeOnce.Do(func() {
		close(l.stop)
		// lib/pq's reconnect loop dials again after Close if Close comes while it sleeps
		// between attempts; a closed dialer refuses, so the loop ends instead.
		l.dialer.close()
		l.pl.Close()
	})
	l.done.Wait()
	return nil
}

// dispatch hands notifications to OnEvent until the pq.Listener closes its channel,
// which it does once its own goroutine has ended.
func (l *Listener) dispatch() {
	defer l.done.Done()
	for n := range l.pl.Notify {
		if n == nil {
			// pq's "reconnected": onConnEvent has already asked for a resync.
			continue
		}
		evs, origin, err := decodeEvents(n.Extra)
		if err != nil {
			l.log.Error("unreadable notification; resyncing every subscriber", "err", err)
			l.cfg.OnResync()
			continue
		}
		if origin != "" && origin == l.cfg.Origin {
			continue
		}
		for _, ev := range evs {
			l.cfg.OnEvent(ev)
		}
	}
}

// onConnEvent runs in pq's connection loop. A (re)connection is reported after LISTEN
// has been issued on the new connection, so a resync from here reads everything that
// no notification will announce.
func (l *Listener) onConnEvent(ev pq.ListenerEventType, err error) {
	switch ev {
	case pq.ListenerEventConnected:
		l.log.Debug("listening", "channel", NotifyChannel)
		l.cfg.OnResync()
	case pq.ListenerEventReconnected:
		l.log.Info("listening again after a disconnection; resyncing every subscriber", "channel", NotifyChannel)
		if l.cfg.OnReconnect != nil {
			l.cfg.OnReconnect()
		}
		l.cfg.OnResync()
	case pq.ListenerEventDisconnected:
		select {
		case <-l.stop:
		default:
			l.log.Warn("listening connection lost; reconnecting", "err", err)
		}
	case pq.ListenerEventConnectionAttemptFailed:
		select {
		case <-l.stop:
		default:
			l.log.Warn("cannot reconnect the listening connection; retrying", "err", err)
		}
	}
}

// ping checks the connection every PingInterval. A connection whose peer vanished
// without a FIN or RST (a dead host, a dropped NAT entry) accepts writes and never
// answers; pq would wait on it for as long as TCP retransmits. A ping that gets no
// answer within PingTimeout closes the socket, which makes pq reconnect.
func (l *Listener) ping() {
	defer l.done.Done()
	t := time.NewTicker(l.cfg.PingInterval)
	defer t.Stop()
	for {
		select {
		case <-l.stop:
			return
		case <-t.C:
		}
		answered := make(chan error, 1)
		go func() { answered <- l.pl.Ping() }()
		timeout := time.NewTimer(l.cfg.PingTimeout)
		select {
		case <-answered:
			// An error means no connection, which pq is already mending.
		case <-timeout.C:
			l.log.Warn("listening connection does not answer; dropping it", "timeout", l.cfg.PingTimeout)
			l.dialer.dropCurrent()
			<-answered
		case <-l.stop:
			// Close waits for pq's lock, which the ping holds until it is answered.
			l.dialer.dropCurrent()
			<-answered
		}
		timeout.Stop()
	}
}

// listenerDialer dials for pq's Listener and keeps the current connection, so that
// a half-open one can be closed from outside pq.
type listenerDialer struct {
	dial func(ctx context.Context, network, address string) (net.Conn, error)

	mu      sync.Mutex
	current net.Conn
	closed  bool
}

var errListenerClosed = errors.New("listener closed")

func (d *listenerDialer) Dial(network, address string) (net.Conn, error) {
	return d.DialContext(context.Background(), network, address)
}

func (d *listenerDialer) DialTimeout(network, address string, timeout time.Duration) (net.Conn, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	return d.DialContext(ctx, network, address)
}

func (d *listenerDialer) DialContext(ctx context.Context, network, address string) (net.Conn, error) {
	if d.isClosed() {
		return nil, errListenerClosed
	}
	c, err := d.dial(ctx, network, address)
	if err != nil {
		return nil, err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		c.Close()
		return nil, errListenerClosed
	}
	d.current = c
	return c, nil
}

func (d *listenerDialer) isClosed() bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.closed
}

func (d *listenerDialer) dropCurrent() {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.current != nil {
		d.current.Close()
	}
}

func (d *listenerDialer) close() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.closed = true
}

// withApplicationName returns dsn, a URL or key=value string, as a key=value string
// with application_name set.
func withApplicationName(dsn, name string) (string, error) {
	if strings.HasPrefix(dsn, "postgres://") || strings.HasPrefix(dsn, "postgresql://") {
		var err error
		if dsn, err = pq.ParseURL(dsn); err != nil {
			return "", fmt.Errorf("listen: database URL: %w", err)
		}
	}
	// In a key=value string a later key overrides an earlier one.
	return dsn + " application_name=" + quoteDSNValue(name), nil
}

// quoteDSNValue quotes a key=value DSN value as lib/pq parses them.
func quoteDSNValue(s string) string {
	if s != "" && !strings.ContainsAny(s, " '\\\t\n") {
		return s
	}
	return "'" + strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(s) + "'"
}
