package db

import (
	"context"
	"fmt"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/parley-dev/parley"
)

// Transact exposes transact to the tests of package db_test.
func (db *DB) Transact(ctx context.Context, fn func(tx *sqlx.Tx) error) error {
	return db.transact(ctx, func(tx *txn) error { return fn(tx.sqlTx) })
}

// Autocommit exposes autocommit to the tests of package db_test.
func (db *DB) Autocommit(ctx context.Context, run func(ctx context.Context) error) error {
	return db.autocommit(ctx, run)
}

// SendBehind runs a transaction that sends behind (txn.sendBehind) and then, on the
// transaction's own goroutine, runs next with a query function that goes through txn
// (its GetContext), for the tests of package db_test.
func (db *DB) SendBehind(ctx context.Context, behind func(q *sqlx.Tx) error,
	next func(get func(dest any, query string, args ...any) error) error) error {
	return db.transactN(ctx, 1, func(tx *txn) error {
		if err := tx.sendBehind(behind); err != nil {
			return err
		}
		return next(func(dest any, query string, args ...any) error { return tx.GetContext(ctx, dest, query, args...) })
	})
}

// MaxAttempts is maxAttempts, for tests.
const MaxAttempts = maxAttempts

// PageSQL is pageSQL (forward: false, backward: true), for the plan tests.
var PageSQL = pageSQL

// LLMPageSQL is llmPageSQL, for the plan tests.
var LLMPageSQL = llmPageSQL

// LLMOnePageSQL is llmOnePageSQL, for the plan tests.
var LLMOnePageSQL = llmOnePageSQL

// FittingLLMOnePageSQL is fittingLLMOnePageSQL, for the plan tests.
var FittingLLMOnePageSQL = fittingLLMOnePageSQL

// ConversationPageSQL is conversationPageSQL, for the plan tests.
var ConversationPageSQL = conversationPageSQL

// LinePageSQL is linePageSQL, for the plan tests.
var LinePageSQL = linePageSQL

// FittingLinePageSQL is fittingLinePageSQL, for the plan tests.
var FittingLinePageSQL = fittingLinePageSQL

// NotALine reports whether DB.notLines names the conversation id.
func (db *DB) NotALine(id string) bool {
	key, _ := parley.ParseConversationID(id)
	return db.notLines.Contains(key)
}

// PlaceSQL, LockPlaceSQL and OnBranchSQL are placeSQL, lockPlaceSQL and onBranchSQL,
// for the plan tests.
const (
	PlaceSQL    = placeSQL
	OnBranchSQL = onBranchSQL
)

var LockPlaceSQL = lockPlaceSQL

// TestAppend is one append for FlushAppends: its message key, number and encoded deltas.
type TestAppend struct {
	Key, Deltas string
	Seq         int
	OK          bool
	Err         error
}

// FlushAppends writes appends as one group commit batch (appendGroup.flush), as owner,
// and reports how each went.
func (db *DB) FlushAppends(owner string, appends []*TestAppend) {
	batch := make([]*pendingAppend, len(appends))
	for i, a := range appends {
		batch[i] = &pendingAppend{key: a.Key, seq: a.Seq, deltas: a.Deltas, owner: owner, done: make(chan struct{})}
	}
	db.group.flush(batch)
	for i, p := range batch {
		appends[i].OK, appends[i].Err = p.ok, p.err
	}
}

// PageRowBytes reads the first n messages of conversation key, every column as
// FindMessageByID reads them, and returns each row's size as read (its text, calls,
// results, payload and provenance): what a page counts against its budget with
// body_bytes, whose agreement with this the tests check.
func (db *DB) PageRowBytes(ctx context.Context, key, owner string, n int) ([]int, error) {
	rows, err := db.db.QueryContext(ctx, `SELECT `+messageColumns+` FROM messages
		WHERE conversation_id = $1 AND `+ownedMessage("2")+` ORDER BY position LIMIT $3`, key, owner, n)
	read, err := scanMessages(rows, err, n)
	if err != nil {
		return nil, err
	}
	sizes := make([]int, len(read))
	for i, r := range read {
		sizes[i] = len(r.Content) + len(r.ToolCalls) + len(r.ToolResults) + len(r.Payload) + len(r.Provenance)
	}
	return sizes, nil
}

// TreeSQL is treeSQL, for the plan tests.
var TreeSQL = treeSQL

// SearchSQL is the statement Search runs for req as owner, and its arguments, for the
// plan tests (the query parsed as Search parses it).
func (db *DB) SearchSQL(ctx context.Context, owner string, req parley.SearchRequest) (string, []any, error) {
	if err := checkSearchPage(&req); err != nil {
		return "", nil, err
	}
	cfg, query, err := db.searchQuery(ctx, req)
	if err != nil {
		return "", nil, err
	}
	return searchSQL(&req, nil, owner, cfg, query)
}

// ScanTimes selects each of values as a timestamptz in a session of the time zone zone,
// and returns it as lib/pq scans it (want) and as a page scans it (got: pageTime, then
// timeColumn).
func (db *DB) ScanTimes(ctx context.Context, zone string, values []string) (got, want []time.Time, err error) {
	conn, err := db.db.Connx(ctx)
	if err != nil {
		return nil, nil, err
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, `SELECT set_config('TimeZone', $1, false)`, zone); err != nil {
		return nil, nil, err
	}
	loc, err := time.LoadLocation(zone)
	if err != nil {
		return nil, nil, err
	}
	for _, v := range values {
		var w, g time.Time
		if err := conn.QueryRowxContext(ctx, `SELECT $1::timestamptz, `+pageTime(`$1::timestamptz`), v).Scan(&w, timeColumn{t: &g, zone: loc}); err != nil {
			return nil, nil, fmt.Errorf("%s: %w", v, err)
		}
		got, want = append(got, g), append(want, w)
	}
	return got, want, nil
}

// CopyBothWays runs setup, then copies rows into sqlTable through database/sql and into
// rawTable written by rawCopyIn, in one import's transaction, then runs check: for the
// tests of package db_test.
func (db *DB) CopyBothWays(ctx context.Context, setup, sqlTable, rawTable string, columns []string, rows [][]any,
	check func(q *sqlx.Tx) error) error {
	return db.transactOn(ctx, 1, true, func(tx *txn) error {
		if tx.conn == nil {
			return fmt.Errorf("the import's transaction holds no connection")
		}
		if _, err := tx.ExecContext(ctx, setup); err != nil {
			return err
		}
		if err := copyIn(ctx, tx.sqlTx, nil, sqlTable, columns, rows); err != nil {
			return err
		}
		if err := copyIn(ctx, tx.sqlTx, tx.conn, rawTable, columns, rows); err != nil {
			return err
		}
		return check(tx.sqlTx)
	})
}

// FittingConversationPageSQL is fittingConversationPageSQL, for the plan tests.
var FittingConversationPageSQL = fittingConversationPageSQL

// TreelessConversationPageSQL and TreelessFittingConversationPageSQL are
// treelessConversationPageSQL and treelessFittingConversationPageSQL, for the plan
// tests.
var (
	TreelessConversationPageSQL        = treelessConversationPageSQL
	TreelessFittingConversationPageSQL = treelessFittingConversationPageSQL
)

// HeadedPage runs conversationPageSQL, or with fits fittingConversationPageSQL, with
// args as FindConversationPage does, and returns what Postgres sent after the
// conversation's row: each row's message id and its parent's, as scanHeadedPage
// resolves the parents (no byte budget applied in Go: every row sent).
func (db *DB) HeadedPage(ctx context.Context, fits, backward bool, args ...any) (ids, parents []string, found bool, err error) {
	q := conversationPageSQL[backward]
	if fits {
		q = fittingConversationPageSQL[backward]
	}
	var head conversationHead
	rows, _, err := db.readHeadedPage(ctx, q, args, 0, 0, &head)
	for _, r := range rows {
		ids, parents = append(ids, r.id), append(parents, r.parentID)
	}
	return ids, parents, head.found, err
}

// HeadedPageSQL is headedPageSQL, the statements FindConversationPage reads with.
var HeadedPageSQL = headedPageSQL

// Prepared reports whether the pool prepared query when it opened (prepare).
func (db *DB) Prepared(query string) bool { return db.stmt(query) != nil }
