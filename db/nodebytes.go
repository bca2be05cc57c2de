package db

import (
	"context"
	"fmt"

	"github.com/lib/pq"

	"github.com/parley-dev/parley"
)

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
	err = db.db.GetContext(ctx, &n, `SELECT coalesce(sum(octet_length(content) + coalesce(octet_length(tool_calls::text), 0)
		+ coalesce(octet_length(tool_results::text), 0) + octet_length(payload::text) + coalesce(octet_length(provenance::text), 0)), 0)
		FROM messages WHERE id = ANY($1::uuid[]) AND `+ownedMessage("2"), pq.Array(keys), owner)
	if err != nil {
		return 0, classify(fmt.Errorf("measure messages: %w", err))
	}
	return int(n), nil
}
