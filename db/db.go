// Package db is Parley's PostgreSQL adapter: it implements the root package's services
// with sqlx over lib/pq.
package db

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"syscall"
	"time"

	"github.com/XSAM/otelsql"
	lru "github.com/hashicorp/golang-lru/v2"
	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	semconv "go.opentelemetry.io/otel/semconv/v1.40.0"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/parley-dev/parley"
)

// Config tunes a DB.
type Config struct {
	// Limits bound what a message may hold; zero fields take parley.DefaultLimits.
	Limits parley.Limits
	// MaxOpenConns bounds the pool (default 20).
	MaxOpenConns int
	// ToolPolicies decide tool calls as their requests are stored; nil leaves every
	// call pending.
	ToolPolicies *parley.ToolPolicies
	Logger       *slog.Logger
	// TracerProvider traces each transaction (a span named "db.transaction" under the
	// request's) and each statement (otelsql); nil traces nothing.
	TracerProvider trace.TracerProvider
	// Assemblers make the assembler of each provider stream format that
	// AppendProviderEvents reads (wire.New sets interop/openai's and interop/anthropic's).
	Assemblers map[parley.StreamFormat]func() parley.StreamAssembler
}

// DB is a connection pool to Parley's database, and the services built on it.
type DB struct {
	db       *sqlx.DB
	limits   parley.Limits
	policies *parley.ToolPolicies
	log      *slog.Logger
	tracer   trace.Tracer
	// stmts are the statements of the hottest paths, prepared on the pool when it
	// opens: see prepare. Read-only afterwards.
	stmts map[string]*sqlx.Stmt
	// live caches what checking a streaming message's next append needs.
	live       liveCache
	group      appendGroup // fast-path appends, committed together
	assemblers map[parley.StreamFormat]func() parley.StreamAssembler
	// awaitingScans holds a slot for each read of awaiting tool calls running (see
	// maxAwaitingScans).
	awaitingScans chan struct{}
	// origin names this DB in the notifications of its group commits (Listener skips
	// them: appended has delivered them), and appended receives each append committed
	// by a group commit (OnAppended).
	origin   string
	appended func(conversationID string, b *parley.DeltaBatch)
	// timed receives each group-committed append's times (OnGroupCommit).
	timed func(queued, written time.Duration)
	// copyRaw says the pool's connections are lib/pq's own (poolConn; no tracing wraps
	// them): an import's COPY then writes its rows' text itself (rawCopyIn), and a
	// conversation's page is read from lib/pq's rows (queryRaw).
	copyRaw bool
	// connector connects to the database outside the pool: to cancel a statement
	// (cancelBackend).
	connector driver.Connector
	// zone is the sessions' time zone as lib/pq loads it (nil when it cannot), which
	// the times of a page's rows are placed in as lib/pq would place them (timeColumn).
	zone *time.Location
	// notLines holds the keys of the conversations whose last FindConversationPage found
	// them not one line (branches, a shared history): their pages are read with
	// conversationPageSQL straight away. A hint only: a conversation it names that is
	// one line again is read right all the same, and dropped from it; one it does not
	// name is found out by linePageSQL.
	notLines *lru.Cache[string, struct{}]
	// largeMessages holds, for the conversations whose last FindConversationPage found
	// their page too large to be read without the byte budget's window (pageFits), the
	// bound of their messages' size it read (max_message_bytes, migration 000026): a
	// page that bound says does not fit is read by linePageSQL straight away. A hint
	// only, as notLines is: the bound only grows, so a page it says does not fit does
	// not, and one it says fits is checked by fittingLinePageSQL all the same.
	largeMessages *lru.Cache[string, int64]
}

// notLineHints is how many conversations DB.notLines remembers, the most recently read.
const notLineHints = 10000

// Origin returns the name this DB gives the notifications of the appends it delivers
// itself (OnAppended): a Listener of the same process skips them (ListenerConfig.Origin).
func (db *DB) Origin() string { return db.origin }

// OnAppended sets f to receive each append a group commit writes, once committed and
// before its writer is acknowledged, in commit order (the realtime Hub's PublishAppend):
// b nil says an append of the conversation may have been committed unseen, and its
// subscribers must read the database. Set it before the DB is used; f must not block.
// Its notifications name this DB's Origin, so that the process's Listener skips them.
func (db *DB) OnAppended(f func(conversationID string, b *parley.DeltaBatch)) { db.appended = f }

// OnGroupCommit sets f to receive, for each append written by a group commit, how long
// it waited for the batch in flight before its own batch began (queued), and how long
// its batch's statement and commit took (written): together, what group commit adds to
// an append's acknowledgement. Set it before the DB is used; f must not block.
func (db *DB) OnGroupCommit(f func(queued, written time.Duration)) { db.timed = f }

// Open connects to the database at dsn (a lib/pq URL or key=value string). It does not
// migrate: call Migrate first.
func Open(ctx context.Context, dsn string, cfg Config) (*DB, error) {
	pc, err := connector(dsn)
	if err != nil {
		return nil, fmt.Errorf("open database: %w", err)
	}
	var pool *sql.DB
	if cfg.TracerProvider != nil {
		// A span for every statement, reads as well as writes, with the stable
		// database semantic conventions (db.system.name, db.query.text: Parley's
		// statements, whose arguments are bound, never inlined).
		pool = otelsql.OpenDB(poolConnector{pc}, otelsql.WithTracerProvider(cfg.TracerProvider),
			otelsql.WithAttributes(semconv.DBSystemNamePostgreSQL),
			otelsql.WithSpanOptions(otelsql.SpanOptions{DisableErrSkip: true, OmitConnResetSession: true, OmitRows: true}))
	} else {
		pool = sql.OpenDB(poolConnector{pc})
	}
	conn := sqlx.NewDb(pool, "postgres")
	if cfg.MaxOpenConns <= 0 {
		cfg.MaxOpenConns = 20
	}
	conn.SetMaxOpenConns(cfg.MaxOpenConns)
	conn.SetMaxIdleConns(cfg.MaxOpenConns)
	conn.SetConnMaxIdleTime(5 * time.Minute)
	if err := conn.PingContext(ctx); err != nil {
		conn.Close()
		return nil, fmt.Errorf("connect to database: %w", err)
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	lim := cfg.Limits
	if lim.MaxToolOutputBytes == 0 {
		lim.MaxToolOutputBytes = parley.DefaultLimits.MaxToolOutputBytes
	}
	if lim.MaxImageBytes == 0 {
		lim.MaxImageBytes = parley.DefaultLimits.MaxImageBytes
	}
	db := &DB{db: conn, limits: lim, policies: cfg.ToolPolicies, log: cfg.Logger, tracer: noop.NewTracerProvider().Tracer(""),
		copyRaw: cfg.TracerProvider == nil, connector: pc,
		assemblers: cfg.Assemblers, awaitingScans: make(chan struct{}, maxAwaitingScans)}
	db.group.db = db
	db.origin = fmt.Sprintf("%016x", rand.Uint64()) // unique enough among a database's processes
	// lru.New fails only for a size below 1.
	db.notLines, _ = lru.New[string, struct{}](notLineHints)
	db.largeMessages, _ = lru.New[string, int64](notLineHints)
	if cfg.TracerProvider != nil {
		db.tracer = cfg.TracerProvider.Tracer("github.com/parley-dev/parley/db")
	}
	db.zone = sessionZone(ctx, conn)
	db.prepare(ctx)
	return db, nil
}

// sessionZone returns the time zone of the pool's sessions as lib/pq loads it from the
// server's TimeZone parameter, nil when it cannot (and lib/pq then uses none either).
func sessionZone(ctx context.Context, conn *sqlx.DB) *time.Location {
	var name string
	if err := conn.GetContext(ctx, &name, `SELECT current_setting('TimeZone')`); err != nil {
		return nil
	}
	zone, err := time.LoadLocation(name)
	if err != nil {
		return nil
	}
	return zone
}

// hotStatements are the statements prepared when the pool opens: saving a message (the
// insert, or an import's, and its notification; a message placed in the tree, the lock
// and the placement), reading a conversation and a page of its history (of a named
// branch too; apart, and in one statement, of a conversation that is one line or not,
// and of one whose page fits its byte budget; of one with branches, with the tree
// fields or without), and appending to a streaming message.
var hotStatements = []string{insertMessageSQL, insertPlacedSQL, insertUnderSQL, lockPlaceSQL, placeSQL, notifySQL, findConversationSQL, branchEndSQL,
	pageSQL[false], pageSQL[true], llmOnePageSQL[false], fittingLLMOnePageSQL[false], conversationPageSQL[false], conversationPageSQL[true],
	linePageSQL[false], linePageSQL[true], fittingLinePageSQL[false], fittingLinePageSQL[true],
	fittingConversationPageSQL[false], fittingConversationPageSQL[true],
	treelessConversationPageSQL[false], treelessConversationPageSQL[true],
	treelessFittingConversationPageSQL[false], treelessFittingConversationPageSQL[true], appendGroupSQL}

// prepare prepares the statements of the hottest paths on the pool. database/sql then
// prepares each once on every connection that runs it and keeps it, so running one is
// a single round trip where lib/pq needs two for an unprepared statement with arguments
// (parse and describe, then bind and execute), and Postgres plans it once per
// connection rather than every time. They are prepared here, while the pool is idle:
// preparing on the pool later, from inside a transaction, could wait forever for a
// connection when every one is held by a transaction doing the same. A statement that
// cannot be prepared (the tables are not migrated yet) runs unprepared. (Prepared
// statements, like LISTEN, need PgBouncer in session mode.)
func (db *DB) prepare(ctx context.Context) {
	db.stmts = make(map[string]*sqlx.Stmt, len(hotStatements))
	for _, q := range hotStatements {
		stmt, err := db.db.PreparexContext(ctx, q)
		if err != nil {
			db.log.Debug("statement not prepared; it will run unprepared", "err", err)
			continue
		}
		db.stmts[q] = stmt
	}
}

// stmt returns query as prepared by prepare, or nil.
func (db *DB) stmt(query string) *sqlx.Stmt { return db.stmts[query] }

// query runs query with args on the pool: prepared, when prepare prepared it.
func (db *DB) query(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	if s := db.stmt(query); s != nil {
		return s.QueryContext(ctx, args...)
	}
	return db.db.QueryContext(ctx, query, args...)
}

// get runs query with args on the pool into dest (sqlx's Get): prepared, when prepare
// prepared it.
func (db *DB) get(ctx context.Context, dest any, query string, args ...any) error {
	if s := db.stmt(query); s != nil {
		return s.GetContext(ctx, dest, args...)
	}
	return db.db.GetContext(ctx, dest, query, args...)
}

// Close closes the pool.
func (db *DB) Close() error {
	for _, s := range db.stmts {
		s.Close()
	}
	return db.db.Close()
}

// SQL returns the underlying pool, for health checks and tests.
func (db *DB) SQL() *sqlx.DB { return db.db }

// Ping checks that the database answers.
func (db *DB) Ping(ctx context.Context) error {
	if err := db.db.PingContext(ctx); err != nil {
		return classify(err)
	}
	return nil
}

// txn is a transaction of transact's. It carries the time the transaction started as
// Postgres sees it (now(), which stays the same for the whole transaction): a
// statement that runs anyway reads it along (transaction_timestamp()) and records it
// with setNow, so rules that need the time get it without a round trip of its own.
type txn struct {
	// sqlTx is the transaction itself, not embedded: txn has only the methods of it that
	// db uses (db/behind.go), each waiting for what was sent behind, so that a use of
	// one it lacks is a compile error rather than a statement sent in the middle of a
	// batch's COPY.
	sqlTx *sqlx.Tx
	// conn is the connection the transaction runs on, held as a *sql.Conn, for an
	// import's COPY to reach the driver (rawCopyIn); nil for other transactions.
	conn *sqlx.Conn
	now  time.Time
	// behind is the end of statements sent on a goroutine of their own (sendBehind),
	// nil when none are; behindErr is the first error they ended with (db/behind.go).
	behind    chan error
	behindErr error
}

// setNow records the transaction's start time, read by a statement of tx.
func (tx *txn) setNow(t time.Time) { tx.now = t }

// Now returns the transaction's start time: as a statement already read it, or, when
// none did, read now.
func (tx *txn) Now(ctx context.Context) (time.Time, error) {
	if tx.now.IsZero() {
		if err := tx.GetContext(ctx, &tx.now, `SELECT transaction_timestamp()`); err != nil {
			return time.Time{}, err
		}
	}
	return tx.now, nil
}

// maxAttempts bounds how often transact runs a transaction that Postgres aborted to
// resolve a conflict with a concurrent one.
const maxAttempts = 4

// transact runs fn in a transaction, committing when it returns nil. Every write goes
// through here (one transaction shape everywhere), but a write that is one statement
// and nothing else, which autocommit runs on its own. A transaction aborted by a
// serialization failure or a deadlock (SQLSTATE 40001, 40P01) is run again from the
// start, up to maxAttempts times in all, after a short jittered wait: Postgres rolled
// it back whole, and running it again is what it asks for. fn must therefore start
// from the same state on every call: it may set what it returns, but must not build on
// what an earlier call left behind.
func (db *DB) transact(ctx context.Context, fn func(tx *txn) error) error {
	return db.transactN(ctx, maxAttempts, fn)
}

// transactN is transact running fn at most attempts times: once for a transaction that
// cannot start over (a streamed import, whose input is read as it goes).
func (db *DB) transactN(ctx context.Context, attempts int, fn func(tx *txn) error) (err error) {
	return db.transactOn(ctx, attempts, false, fn)
}

// transactOn is transactN with the transaction's connection held as a *sql.Conn
// (txn.conn) when pinned and the pool's connections are lib/pq's (copyRaw): an import's.
func (db *DB) transactOn(ctx context.Context, attempts int, pinned bool, fn func(tx *txn) error) error {
	return db.retried(ctx, attempts, func(ctx context.Context) error { return db.attempt(ctx, pinned && db.copyRaw, fn) })
}

// autocommit runs a write of one statement on the pool, run, in the transaction
// Postgres gives a statement sent outside one (autocommit): no BEGIN, no COMMIT. It
// gets what transact gives a transaction: its span, its retries (a statement aborted
// by a concurrent transaction was rolled back whole, so it is run again) and the
// classification of its error. run must be one statement, and nothing that can fail
// may follow it: it commits when it ends.
func (db *DB) autocommit(ctx context.Context, run func(ctx context.Context) error) error {
	return db.retried(ctx, maxAttempts, run)
}

// retried runs a transaction, run, at most attempts times while Postgres aborts it for
// a conflict with a concurrent one (retryable), under a span named "db.transaction",
// and classifies the error it ends with.
func (db *DB) retried(ctx context.Context, attempts int, run func(ctx context.Context) error) (err error) {
	ctx, span := db.tracer.Start(ctx, "db.transaction", trace.WithSpanKind(trace.SpanKindClient),
		trace.WithAttributes(semconv.DBSystemNamePostgreSQL))
	attempt := 1
	defer func() {
		if attempt > 1 {
			span.SetAttributes(attribute.Int("db.attempts", attempt))
		}
		if err != nil {
			span.SetStatus(codes.Error, parley.ErrorCode(err))
		}
		span.End()
	}()
	for ; ; attempt++ {
		err = run(ctx)
		if err == nil {
			return nil
		}
		if attempt >= attempts || !retryable(err) {
			break
		}
		db.log.DebugContext(ctx, "transaction aborted by a concurrent one; retrying", "attempt", attempt, "err", err)
		if werr := wait(ctx, backoff(attempt)); werr != nil {
			break
		}
	}
	cerr := classify(err)
	if pe := (*pq.Error)(nil); cerr != err && errors.As(err, &pe) {
		// The client sees only the classified message: the driver's text stays here.
		db.log.WarnContext(ctx, "transaction failed", "code", string(pe.Code), "err", err, "attempts", attempt)
	}
	return cerr
}

// attempt runs fn in one transaction, on a connection held as a *sql.Conn when pinned.
func (db *DB) attempt(ctx context.Context, pinned bool, fn func(tx *txn) error) error {
	t, err := db.begin(ctx, pinned)
	if err != nil {
		return err
	}
	tx := t.sqlTx
	// Rolled back after what was sent behind has ended, even when fn panics: a rollback
	// in the middle of a batch's COPY would be sent inside it. The connection goes back
	// to the pool after.
	defer func() {
		_ = t.settle()
		tx.Rollback()
		if t.conn != nil {
			t.conn.Close()
		}
	}()
	err = fn(t)
	// What fn sent behind (txn.sendBehind) ends before the transaction does; its error
	// is of something fn did before whatever failed after it, and so the one returned.
	if serr := t.settle(); serr != nil {
		return serr
	}
	if err != nil {
		return err
	}
	return tx.Commit()
}

// begin starts a transaction; when pinned, on a connection the pool lends as a
// *sql.Conn (txn.conn). sql.DB's BeginTx tries another connection when the one it took
// turns out to be broken (driver.ErrBadConn: the server closed it while it was idle);
// so does this, as often.
func (db *DB) begin(ctx context.Context, pinned bool) (*txn, error) {
	if !pinned {
		tx, err := db.db.BeginTxx(ctx, nil)
		if err != nil {
			return nil, err
		}
		return &txn{sqlTx: tx}, nil
	}
	for try := 1; ; try++ {
		conn, err := db.db.Connx(ctx)
		if err != nil {
			return nil, err
		}
		tx, err := conn.BeginTxx(ctx, nil)
		if err == nil {
			return &txn{sqlTx: tx, conn: conn}, nil
		}
		conn.Close()
		if !errors.Is(err, driver.ErrBadConn) || try > 2 {
			return nil, err
		}
	}
}

// retryable reports whether err is Postgres aborting a transaction for a conflict with
// a concurrent one, which running it again can resolve.
func retryable(err error) bool {
	var pe *pq.Error
	return errors.As(err, &pe) && (pe.Code == "40001" || pe.Code == "40P01")
}

// backoff is how long to wait before the attempt after attempt: 5 ms doubling each
// time, jittered over its upper half so the transactions that collided do not collide
// again in step.
func backoff(attempt int) time.Duration {
	d := 5 * time.Millisecond << (attempt - 1)
	return d/2 + rand.N(d/2)
}

// wait waits for d, or until ctx ends.
func wait(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// classify turns driver errors that a user can act on into *parley.Error by SQLSTATE,
// and leaves the rest as internal errors. The driver's own text never goes into the
// message a client sees: it stays in the wrapped error, for the log.
func classify(err error) error {
	var pe *pq.Error
	var perr *parley.Error
	switch {
	case err == nil || errors.As(err, &perr):
		return err
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return err
	case errors.As(err, &pe):
		switch pe.Code.Class() {
		case "08", "57": // connection exception; operator intervention (shutdown, starting up, terminated)
			if pe.Code == "57014" { // query_canceled: the request's context ended (lib/pq cancels), or statement_timeout
				return fmt.Errorf("%w (%w)", context.Canceled, err)
			}
			return fmt.Errorf("%w (%w)", errUnavailable, err)
		case "53": // insufficient resources (too many connections...)
			return fmt.Errorf("%w (%w)", &parley.Error{Code: parley.EUNAVAILABLE, Message: "The database is overloaded; try again shortly."}, err)
		case "54": // program limit exceeded: jsonb nested too deep ("stack depth limit exceeded"), too many columns...
			what := "too large"
			if pe.Code == "54001" {
				what = "too deeply nested"
			}
			return fmt.Errorf("%w (%w)", parley.Errorf(parley.ERESOURCELIMIT, "a value is %s to be stored", what), err)
		case "22": // data exception: a value Postgres cannot store
			why, ok := dataExceptions[pe.Code]
			if !ok {
				why = "it is not valid for its column"
			}
			return fmt.Errorf("%w (%w)", parley.Errorf(parley.EINVALID, "a value could not be stored: %s", why), err)
		case "40": // serialization failure, deadlock (left after transact's retries)
			return fmt.Errorf("%w (%w)", &parley.Error{Code: parley.EUNAVAILABLE, Message: "A concurrent change got in the way; try again."}, err)
		}
	case lostConnection(err):
		return fmt.Errorf("%w (%w)", errUnavailable, err)
	}
	return err
}

// dataExceptions says, in the API's words, why Postgres refused a value, for the data
// exceptions (class 22) a client's input can cause.
var dataExceptions = map[pq.ErrorCode]string{
	"22001": "a text is longer than its column allows",
	"22003": "a number is out of range",
	"22007": "a date or time is malformed",
	"22008": "a date or time is out of range",
	"22021": "a text holds a byte sequence that is not valid UTF-8",
	"22P02": "a value is malformed for its type",
	"22P05": "a text holds a character Postgres cannot store (such as \\u0000)",
	"2200N": "an XML value is malformed",
	"22030": "a JSON value is duplicated or malformed",
	"22032": "a JSON text is malformed",
}

// errUnavailable is what a request that cannot reach the database gets.
var errUnavailable = &parley.Error{Code: parley.EUNAVAILABLE, Message: "The database is unavailable; try again shortly."}

// lostConnection reports whether err says the database could not be reached or the
// connection broke: the shapes lib/pq and database/sql give these, as seen when Postgres
// is stopped, restarted or unreachable. lib/pq turns FATAL server errors on a connection
// ("the database system is shutting down") into driver.ErrBadConn; a refused or failed
// dial (no socket file, connection refused, connect_timeout) is a *net.OpError; a
// connection cut mid-reply is io.ErrUnexpectedEOF or io.EOF.
func lostConnection(err error) bool {
	var netErr net.Error
	return errors.Is(err, driver.ErrBadConn) || errors.As(err, &netErr) || errors.Is(err, sql.ErrConnDone) ||
		errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNREFUSED) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE)
}
