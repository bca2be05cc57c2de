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
