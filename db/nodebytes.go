package db

import (
	"context"
	"fmt"

	"github.com/lib/pq"

	"github.com/parley-dev/parley"
)

// storedBytes is a message row's stored bytes in SQL, as rowBytes counts them: the
// column Postgres keeps of them (body_bytes, migration 000017), so that measuring a
// message reads an integer rather than detoasting its text and jsonb columns.
const storedBytes = `body_bytes`

// MessageBytes returns what the caller's messages of ids take as stored (text, calls,
// results, payload, provenance: what a page's budget counts), summed, without reading
// them: a list of messages by id cannot end early as a page does, so it is measured
// before it is read. Ids of no message, or of another owner's, count nothing.
func (db *DB) MessageBytes(ctx context.Context, ids []string) (int, error) {
	keys := make([]string, 0, len(ids))
	for _, id := range ids {
		if key, ok := parley.ParseMessageID(id); ok {
			keys = append(keys, key)
		}
	}
	if len(keys) == 0 {
		return 0, nil
	}
	owner, err := ownerOf(ctx)
	if err != nil {
		return 0, err
	}
	var n int64
	err = db.db.GetContext(ctx, &n, `SELECT coalesce(sum(`+storedBytes+`), 0) FROM messages WHERE id = ANY($1::uuid[]) AND `+ownedMessage("2"), pq.Array(keys), owner)
	if err != nil {
		return 0, classify(fmt.Errorf("measure messages: %w", err))
	}
	// The messages linked forks share, named by their derived ids (db/forkshared.go).
	shared, err := sharedBytes(ctx, db.db, keys, owner)
	if err != nil {
		return 0, classify(fmt.Errorf("measure messages: %w", err))
	}
	return int(n + shared), nil
}

// fitAwaiting keeps the awaiting calls, in order, whose tool request messages fit
// budget stored bytes, each message counted once (parley.FitsBudget: the first always
// fits), measured before any message is read.
func (db *DB) fitAwaiting(ctx context.Context, rows []awaitingRow, budget int) ([]awaitingRow, error) {
	ids := make([]string, 0, len(rows))
	seen := map[string]bool{}
	for _, r := range rows {
		if !seen[r.RequestID] {
			seen[r.RequestID] = true
			ids = append(ids, r.RequestID)
		}
	}
	var sizes []struct {
		ID    string `db:"id"`
		Bytes int64  `db:"bytes"`
	}
	if err := db.db.SelectContext(ctx, &sizes, `SELECT id::text AS id, `+storedBytes+` AS bytes
		FROM messages WHERE id = ANY($1::uuid[])`, pq.Array(ids)); err != nil {
		return nil, err
	}
	size := make(map[string]int, len(sizes))
	for _, s := range sizes {
		size[s.ID] = int(s.Bytes)
	}
	if len(sizes) < len(ids) {
		// The requests linked forks share, named by their derived ids (findAwaitingSQL).
		owner, err := ownerOf(ctx)
		if err != nil {
			return nil, err
		}
		shared, err := findSharedRows(ctx, db.db, ids, owner)
		if err != nil {
			return nil, err
		}
		for _, s := range shared {
			size[s.ID] = int(s.StoredBytes)
		}
	}
	counted := map[string]bool{}
	used := 0
	for i, r := range rows {
		if counted[r.RequestID] {
			continue
		}
		if !parley.FitsBudget(budget, used, size[r.RequestID], i) {
			return rows[:i], nil
		}
		counted[r.RequestID] = true
		used += size[r.RequestID]
	}
	return rows, nil
}
