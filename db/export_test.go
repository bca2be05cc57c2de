package db

import (
	"context"

	"github.com/jmoiron/sqlx"
)

// Transact exposes transact to the tests of package db_test.
func (db *DB) Transact(ctx context.Context, fn func(tx *sqlx.Tx) error) error {
	return db.transact(ctx, func(tx *txn) error { return fn(tx.Tx) })
}

// MaxAttempts is maxAttempts, for tests.
const MaxAttempts = maxAttempts

// PageSQL is pageSQL (forward: false, backward: true), for the plan tests.
var PageSQL = pageSQL
