package db

import (
	"context"
	"database/sql"
	"fmt"
	"runtime/debug"

	"github.com/jmoiron/sqlx"
)

// A transaction's statements can be sent on a goroutine of their own (sendBehind), so
// that this process prepares what comes next while Postgres runs them: an import stores
// a batch while the next one is encoded (bulkWriter.flush), where the two took turns
// before. The connection still runs one statement at a time: every use of the
// transaction through txn waits for what was sent behind to end (settle), and sees its
// error. The methods below are sqlx.Tx's that db uses, each settling first (txn does
// not embed the sqlx.Tx, so a method missing here does not compile); what was sent
// behind uses the sqlx.Tx itself.

// sendBehind runs send on its own goroutine, once what was sent before has ended. It
// returns that one's error, if any, without running send.
func (tx *txn) sendBehind(send func(q *sqlx.Tx) error) error {
	if err := tx.settle(); err != nil {
		return err
	}
	done := make(chan error, 1)
	tx.behind = done
	go func() {
		// A panic becomes the transaction's internal error.
		done <- recovered("statements sent behind: ", func() error { return send(tx.sqlTx) })
	}()
	return nil
}

// recovered runs fn, on a goroutine of its own that a request started, and returns its
// error, or its panic as an error whose message starts with what: a panic there would
// end the process, the request's own recover (the API's) being on another goroutine.
func recovered(what string, fn func() error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%spanic: %v\n%s", what, r, debug.Stack())
		}
	}()
	return fn()
}

// settle waits for what was sent behind to end and returns its error: the first one, at
// every call after (Postgres has aborted the transaction).
func (tx *txn) settle() error {
	if tx.behind != nil {
		tx.behindErr = <-tx.behind
		tx.behind = nil
	}
	return tx.behindErr
}

// ExecContext is sql.Tx's, once what was sent behind has ended.
func (tx *txn) ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error) {
	if err := tx.settle(); err != nil {
		return nil, err
	}
	return tx.sqlTx.ExecContext(ctx, query, args...)
}

// GetContext is sqlx.Tx's, once what was sent behind has ended.
func (tx *txn) GetContext(ctx context.Context, dest any, query string, args ...any) error {
	if err := tx.settle(); err != nil {
		return err
	}
	return tx.sqlTx.GetContext(ctx, dest, query, args...)
}

// SelectContext is sqlx.Tx's, once what was sent behind has ended.
func (tx *txn) SelectContext(ctx context.Context, dest any, query string, args ...any) error {
	if err := tx.settle(); err != nil {
		return err
	}
	return tx.sqlTx.SelectContext(ctx, dest, query, args...)
}

// PrepareContext is sql.Tx's, once what was sent behind has ended.
func (tx *txn) PrepareContext(ctx context.Context, query string) (*sql.Stmt, error) {
	if err := tx.settle(); err != nil {
		return nil, err
	}
	return tx.sqlTx.PrepareContext(ctx, query)
}

// QueryContext is sql.Tx's, once what was sent behind has ended.
func (tx *txn) QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	if err := tx.settle(); err != nil {
		return nil, err
	}
	return tx.sqlTx.QueryContext(ctx, query, args...)
}

// QueryxContext is sqlx.Tx's, once what was sent behind has ended.
func (tx *txn) QueryxContext(ctx context.Context, query string, args ...any) (*sqlx.Rows, error) {
	if err := tx.settle(); err != nil {
		return nil, err
	}
	return tx.sqlTx.QueryxContext(ctx, query, args...)
}

// QueryRowContext is sql.Tx's, once what was sent behind has ended. It cannot return
// that one's error: its statement fails in the aborted transaction, and the import that
// sent it reports the error it ended with (importFrom). So do QueryRowxContext and
// StmtxContext.
func (tx *txn) QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row {
	_ = tx.settle()
	return tx.sqlTx.QueryRowContext(ctx, query, args...)
}

// QueryRowxContext is sqlx.Tx's, once what was sent behind has ended.
func (tx *txn) QueryRowxContext(ctx context.Context, query string, args ...any) *sqlx.Row {
	_ = tx.settle()
	return tx.sqlTx.QueryRowxContext(ctx, query, args...)
}

// StmtxContext is sqlx.Tx's, once what was sent behind has ended: the statement it
// returns is used at once, never across a flush.
func (tx *txn) StmtxContext(ctx context.Context, stmt any) *sqlx.Stmt {
	_ = tx.settle()
	return tx.sqlTx.StmtxContext(ctx, stmt)
}
