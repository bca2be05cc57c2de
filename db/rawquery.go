package db

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/lib/pq"
)

// A history page read through database/sql cost, at one client, two goroutines started
// and woken on the other core (database/sql's Rows.awaitDone and lib/pq's
// stmt.watchCancel, both because the request's context can end), and, for each of a
// page's 2,400 columns, database/sql's locking and conversion (Rows.Next, Rows.Scan,
// convertAssign) of the value lib/pq had already decoded. queryRaw reads a statement's
// rows from lib/pq itself, on a connection of the pool held through sql.Conn.Raw, as an
// import's COPY does (copyraw.go): the statement prepared on that connection once
// (poolConn), run with a context that cannot end, so neither goroutine starts; the
// request's context still ends the statement, through context.AfterFunc, which costs
// no goroutine until it fires: the backend is asked to cancel it (pg_cancel_backend,
// from a connection of its own, as lib/pq sends its cancel request from one), and the
// connection is then dropped rather than reused.

// poolConnector makes the pool's connections: lib/pq's, each a poolConn.
type poolConnector struct{ pq *pq.Connector }

func (c poolConnector) Connect(ctx context.Context) (driver.Conn, error) {
	cn, err := c.pq.Connect(ctx)
	if err != nil {
		return nil, err
	}
	pc, ok := cn.(pqConn)
	if !ok {
		cn.Close()
		return nil, fmt.Errorf("the driver's connection (%T) lacks an interface database/sql uses", cn)
	}
	return &poolConn{pqConn: pc}, nil
}

func (c poolConnector) Driver() driver.Driver { return c.pq.Driver() }

// pqConn is what database/sql and Parley use of a lib/pq connection: poolConn has all
// of it, and nothing else of lib/pq's, so that database/sql treats a poolConn exactly
// as the lib/pq connection in it.
type pqConn interface {
	driver.Conn
	driver.ConnPrepareContext
	driver.ConnBeginTx
	driver.QueryerContext
	driver.ExecerContext
	driver.Pinger
	driver.SessionResetter
	driver.Validator
	driver.NamedValueChecker
}

// poolConn is a connection of the pool: lib/pq's, and what queryRaw keeps of it, used
// only while database/sql lends it (one user at a time).
type poolConn struct {
	pqConn
	// pid is the connection's backend's process id (0: not read yet), which a statement
	// is cancelled by.
	pid int
	// stmts are the statements queryRaw prepared on the connection, by their text.
	stmts map[string]driver.Stmt
}

// prepared returns query prepared on c, preparing it the first time.
func (c *poolConn) prepared(ctx context.Context, query string) (driver.StmtQueryContext, error) {
	if st, ok := c.stmts[query]; ok {
		return st.(driver.StmtQueryContext), nil
	}
	st, err := c.PrepareContext(ctx, query)
	if err != nil {
		return nil, err
	}
	q, ok := st.(driver.StmtQueryContext)
	if !ok {
		st.Close()
		return nil, fmt.Errorf("the driver's statement (%T) cannot be queried with a context", st)
	}
	if c.stmts == nil {
		c.stmts = map[string]driver.Stmt{}
	}
	c.stmts[query] = st
	return q, nil
}

// backend returns the process id of c's backend, reading it the first time.
func (c *poolConn) backend(ctx context.Context) (int, error) {
	if c.pid != 0 {
		return c.pid, nil
	}
	rows, err := c.QueryContext(ctx, `SELECT pg_backend_pid()`, nil)
	if err != nil {
		return 0, err
	}
	v := make([]driver.Value, 1)
	err = rows.Next(v)
	// Closed once: lib/pq's rows, closed a second time, may take their context for
	// ended.
	if cerr := rows.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return 0, err
	}
	pid, ok := v[0].(int64)
	if !ok || pid == 0 {
		return 0, fmt.Errorf("pg_backend_pid(): got %T %v", v[0], v[0])
	}
	c.pid = int(pid)
	return c.pid, nil
}

// queryRaw runs query with args on a connection of the pool, prepared on it, and hands
// its rows to read, as lib/pq decodes them (rawRows). When ctx ends before the rows are
// read, the statement is cancelled, and the error is ctx's; the connection then goes.
// It needs the pool's connections to be poolConns (copyRaw).
func (db *DB) queryRaw(ctx context.Context, query string, args []any, read func(rows *rawRows) error) error {
	named := make([]driver.NamedValue, len(args))
	for i, a := range args {
		v, err := driverValue(a)
		if err != nil {
			return fmt.Errorf("argument $%d: %w", i+1, err)
		}
		named[i] = driver.NamedValue{Ordinal: i + 1, Value: v}
	}
	for try := 1; ; try++ {
		started := false
		err := db.queryRawOnce(ctx, query, named, func(rows *rawRows) error {
			started = true
			return read(rows)
		})
		// A connection found broken before any row was read (the server closed it while
		// it was idle, or restarted) is dropped, and another tried, as database/sql's
		// QueryContext does; until a new one, made once every idle one has been found
		// broken (database/sql tries two idle ones, then a new one, which sql.Conn
		// cannot ask for).
		if err == nil || started || !errors.Is(err, driver.ErrBadConn) || ctx.Err() != nil ||
			try > max(db.db.Stats().MaxOpenConnections, 2) {
			return err
		}
	}
}

// queryRawOnce is queryRaw on one connection of the pool.
func (db *DB) queryRawOnce(ctx context.Context, query string, args []driver.NamedValue, read func(rows *rawRows) error) error {
	// Waiting for a connection ends with ctx.
	conn, err := db.db.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	return conn.Raw(func(dc any) error {
		c, ok := dc.(*poolConn)
		if !ok {
			return fmt.Errorf("the pool's connection (%T) is not lib/pq's", dc)
		}
		return db.runRaw(ctx, c, query, args, read)
	})
}

// runRaw is queryRaw on c. An error that ends the connection wraps driver.ErrBadConn,
// for Raw to drop it.
func (db *DB) runRaw(ctx context.Context, c *poolConn, query string, args []driver.NamedValue, read func(rows *rawRows) error) error {
	// Preparing and reading the pid happen once a connection, with ctx.
	st, err := c.prepared(ctx, query)
	if err != nil {
		return err
	}
	pid, err := c.backend(ctx)
	if err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	cancelled := make(chan struct{})
	stop := context.AfterFunc(ctx, func() {
		defer close(cancelled)
		db.cancelBackend(pid)
	})
	defer stop() // when read panics: no cancel once the connection has gone
	rows, err := st.QueryContext(context.Background(), args)
	if err == nil {
		r := rawRows{rows: rows, values: make([]driver.Value, len(rows.Columns()))}
		err = read(&r)
		if cerr := r.Close(); err == nil {
			err = cerr
		}
	}
	if !stop() {
		// ctx ended: the statement was cancelled, or was over when the cancel came, which
		// then waits on the backend for its next statement, or is ignored: the connection
		// is not lent again either way.
		<-cancelled
		return fmt.Errorf("%w (%w)", ctx.Err(), driver.ErrBadConn)
	}
	return err
}

// cancelTimeout bounds cancelling a statement: connecting, and asking.
const cancelTimeout = 10 * time.Second

// cancelBackend asks Postgres to cancel the statement that the backend pid runs, from
// a connection of its own (the pool may have none to spare: its connections may all be
// waiting on what is to be cancelled).
func (db *DB) cancelBackend(pid int) {
	ctx, cancel := context.WithTimeout(context.Background(), cancelTimeout)
	defer cancel()
	cn, err := db.connector.Connect(ctx)
	if err != nil {
		db.log.Warn("cancel a statement: connect", "pid", pid, "err", err)
		return
	}
	defer cn.Close()
	ex, ok := cn.(driver.ExecerContext)
	if !ok {
		return
	}
	if _, err := ex.ExecContext(ctx, `SELECT pg_cancel_backend(`+strconv.Itoa(pid)+`)`, nil); err != nil {
		db.log.Warn("cancel a statement", "pid", pid, "err", err)
	}
}

// driverValue is a as database/sql hands it to lib/pq: the values Parley's statements
// take as they are, any other through database/sql's default conversion (an int as
// int64, a driver.Valuer's value).
func driverValue(a any) (driver.Value, error) {
	switch v := a.(type) {
	case string, int64, bool, nil:
		return v, nil
	case int:
		return int64(v), nil
	}
	return driver.DefaultParameterConverter.ConvertValue(a)
}

// rawRows are a statement's rows as lib/pq returns them, scanned as database/sql's
// Rows.Scan scans them into the destinations scanRows gives (assign).
type rawRows struct {
	rows   driver.Rows
	values []driver.Value
	err    error
	closed bool
}

// Next reads the next row, reporting false at the end or on an error (Err).
func (r *rawRows) Next() bool {
	if r.closed || r.err != nil {
		return false
	}
	if err := r.rows.Next(r.values); err != nil {
		if err != io.EOF {
			r.err = err
		}
		return false
	}
	return true
}

// Scan assigns the row's columns to dest, in order.
func (r *rawRows) Scan(dest ...any) error {
	if len(dest) != len(r.values) {
		return fmt.Errorf("scan: expected %d destination arguments, not %d", len(r.values), len(dest))
	}
	for i, d := range dest {
		if err := assign(d, r.values[i]); err != nil {
			return fmt.Errorf("scan column %d: %w", i, err)
		}
	}
	return nil
}

// Err is the error that ended Next.
func (r *rawRows) Err() error { return r.err }

// Close reads what is left of the statement's rows; once.
func (r *rawRows) Close() error {
	if r.closed {
		return nil
	}
	r.closed = true
	return r.rows.Close()
}

// assign stores v, a column as lib/pq decodes it, in dest, as database/sql's
// convertAssign does for the destinations scanRows uses: a string, a NullString, a
// bool, RawBytes (lib/pq's bytes, valid until the next row, as database/sql hands
// them), or a Scanner.
func assign(dest any, v driver.Value) error {
	switch d := dest.(type) {
	case *sql.RawBytes:
		switch v := v.(type) {
		case []byte:
			*d = v
			return nil
		case nil:
			*d = nil
			return nil
		case string:
			*d = append((*d)[:0], v...)
			return nil
		}
	case *string:
		switch v := v.(type) {
		case string:
			*d = v
			return nil
		case []byte:
			*d = string(v)
			return nil
		}
	case *sql.NullString:
		switch v := v.(type) {
		case string:
			*d = sql.NullString{String: v, Valid: true}
			return nil
		case []byte:
			*d = sql.NullString{String: string(v), Valid: true}
			return nil
		case nil:
			*d = sql.NullString{}
			return nil
		}
	case *bool:
		if b, ok := v.(bool); ok {
			*d = b
			return nil
		}
	case sql.Scanner:
		return d.Scan(v)
	}
	return fmt.Errorf("unsupported scan, storing driver.Value type %T into type %T", v, dest)
}
