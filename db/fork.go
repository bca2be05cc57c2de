package db

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"

	"github.com/lib/pq"

	"github.com/parley-dev/parley"
)

// Copy-free forks (migration 000025). A fork's history up to the message it was forked
// at is not copied: the fork's row holds a link, a flattened list of (conversation,
// segment, from) entries naming the rows it shares, and its own messages start after
// them (segment 0, depth and position base_depth + 1). Readers follow the link where
// they follow a branch's chain of segments; in the fork, a shared row takes an id
// derived from the fork's number and its depth (parley.ForkMessageKey), so both
// conversations keep ids of their own.
//
// Whatever would change a shared row, or the fork's view of one, makes the fork real
// first (materialize_fork: the copy a fork used to make, under the derived ids, so ids
// stay as they were): changing or deleting a message the fork shares, deleting the
// conversation it shares from, changing a shared message through the fork's id, adding
// a message under a shared one, switching the fork's branches, answering a shared tool
// call, an import into the fork. Reading, exporting, counting, searching, subscribing
// to and continuing a fork never do.

// linkEntry is one entry of a fork's link: the depths (from, next entry's from] of its
// branch are the rows of segment seg of conversation conv.
type linkEntry struct {
	conv string
	seg  int
	from int
}

// forkLink is what a conversation's row says of the rows it shares: none when depth is 0.
type forkLink struct {
	Depth int            `db:"base_depth"`
	Convs pq.StringArray `db:"link_convs"`
	Segs  pq.Int64Array  `db:"link_segs"`
	From  pq.Int64Array  `db:"link_from"`
}

func (l forkLink) entries() []linkEntry {
	out := make([]linkEntry, len(l.Convs))
	for i := range l.Convs {
		out[i] = linkEntry{conv: l.Convs[i], seg: int(l.Segs[i]), from: int(l.From[i])}
	}
	return out
}

// forkLinkColumns are what a conversations row says of its link.
const forkLinkColumns = `fork_no, base_depth`

// materializeFork makes the linked fork convKey real (materialize_fork); nothing when it
// is not linked.
func materializeFork(ctx context.Context, tx *txn, convKey string) error {
	if _, err := tx.ExecContext(ctx, `SELECT materialize_fork($1)`, convKey); err != nil {
		return fmt.Errorf("copy the shared history of %s: %w", parley.ConversationID(convKey), err)
	}
	return nil
}

// materializeForksOf makes real every fork that shares the row at depth of segment seg
// of conversation baseKey (a depth of 0: any row of it), before that row changes or
// goes. One probe of fork_links when there are none.
func materializeForksOf(ctx context.Context, tx *txn, baseKey string, seg, depth int) error {
	// The base's row is locked first, as a fork of it locks it (FOR SHARE): a fork made
	// meanwhile is either seen here or made after this change commits.
	var forks pq.StringArray
	err := tx.GetContext(ctx, &forks, `WITH base AS MATERIALIZED (SELECT id FROM conversations WHERE id = $1 FOR NO KEY UPDATE)
		SELECT ARRAY(SELECT c.id FROM fork_links fl JOIN conversations c ON c.id = fl.fork
			WHERE fl.base = base.id AND ($3::int = 0 OR EXISTS (
				SELECT 1 FROM fork_link_entries(c.id, c.base_depth) e
				WHERE e.conv = $1 AND e.seg = $2 AND e.lo < $3 AND e.hi >= $3))
			ORDER BY c.id)
		FROM base`, baseKey, seg, depth)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("find the forks sharing %s: %w", parley.ConversationID(baseKey), err)
	}
	for _, f := range forks {
		if err := materializeFork(ctx, tx, f); err != nil {
			return err
		}
	}
	return nil
}

// materializeShared makes real the fork of the owner's that a derived message key (a
// shared row's id in a fork: parley.ForkMessageKey) names, so that the key names a row
// of its own; nothing for any other key.
func materializeShared(ctx context.Context, tx *txn, key, owner string) error {
	forkNo, _, ok := parley.ParseForkMessageKey(key)
	if !ok {
		return nil
	}
	if _, err := tx.ExecContext(ctx, `SELECT materialize_fork(id) FROM conversations WHERE fork_no = $1 AND owner = $2`,
		forkNo, owner); err != nil {
		return fmt.Errorf("copy the shared history of message %s: %w", parley.MessageID(key), err)
	}
	return nil
}

// rowQueryer is a database or a transaction, for one row.
type rowQueryer interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// findShared resolves a derived key of a linked fork of owner's: the fork and the depth.
// found is false when the key is not derived, or names no shared row (a fork since
// made real has the row itself). A linked fork shares every depth up to its base depth.
func findShared(ctx context.Context, q rowQueryer, key, owner string) (conv string, depth int, found bool, err error) {
	forkNo, depth, ok := parley.ParseForkMessageKey(key)
	if !ok {
		return "", 0, false, nil
	}
	err = q.QueryRowContext(ctx, `SELECT id::text FROM conversations WHERE fork_no = $1 AND owner = $2 AND base_depth >= $3`,
		forkNo, owner, depth).Scan(&conv)
	if errors.Is(err, sql.ErrNoRows) {
		return "", 0, false, nil
	} else if err != nil {
		return "", 0, false, err
	}
	return conv, depth, true, nil
}

// forkEntries returns the link of a fork at depth of the branch of source (whose row
// says link) through segment seg: the source's chain of segments to depth (chain and
// from, as message_segments holds them), its shared part replaced by its own link,
// cut at depth.
func forkEntries(sourceKey string, link forkLink, chain, from []int64, depth int) []linkEntry {
	var out []linkEntry
	for i, seg := range chain {
		lo := int(from[i])
		if lo >= depth {
			break
		}
		if seg == 0 && link.Depth > 0 {
			for _, e := range link.entries() {
				if e.from < depth {
					out = append(out, e)
				}
			}
			if link.Depth < depth {
				out = append(out, linkEntry{conv: sourceKey, seg: 0, from: link.Depth})
			}
			continue
		}
		out = append(out, linkEntry{conv: sourceKey, seg: int(seg), from: lo})
	}
	return out
}

// byPosition is a conversation's messages with a position above after, as a table named
// messages with messageColumns and body_bytes, for readers that follow a conversation
// by position (realtime replay, the tree's export): its own rows, and a linked fork's
// shared rows (positions 1..base_depth, their depths) as the fork's, at most limit of
// each, so that ORDER BY position LIMIT limit over it reads no more than two pages.
func byPosition(conv, after, limit string) string {
	return `(SELECT * FROM (SELECT ` + messageColumns + `, body_bytes FROM messages
			WHERE conversation_id = ` + conv + ` AND position > ` + after + ` ORDER BY position LIMIT ` + limit + `) o
		UNION ALL
		SELECT ` + sharedRowColumns("c") + `, m.body_bytes
		FROM conversations c
		CROSS JOIN LATERAL fork_link_entries(c.id, c.base_depth) e
		JOIN messages m ON m.conversation_id = e.conv AND m.segment = e.seg
			AND m.depth > GREATEST(e.lo, ` + after + `) AND m.depth <= LEAST(e.hi, ` + after + ` + ` + limit + `)
		WHERE c.id = ` + conv + ` AND c.base_depth > ` + after + `) messages`
}

// activeLeafOf is the id, as text, of the active leaf of the conversation whose row is
// own: a row of its own, or a linked fork's last shared row while it has none after it.
func activeLeafOf(own string) string {
	return idAtSQL(own+".id", own+".active_segment", leafDepthOf(own))
}

// sharedRowColumns are messageColumns of a row m that the linked fork whose row is own
// shares, as the fork's: its derived id, the fork's id, its depth as its position,
// segment 0 (of the same types, for a UNION with a table's rows).
func sharedRowColumns(own string) string {
	return messageColumnsOf("m", map[string]string{
		"id":              "fork_message_id(" + own + ".fork_no, m.depth) AS id",
		"conversation_id": own + ".id AS conversation_id",
		"position":        "m.depth AS position",
		"segment":         "0 AS segment",
	})
}

// messageColumnsOf is messageColumns of the row m, each qualified by m, but those
// rewrite gives an expression for.
func messageColumnsOf(m string, rewrite map[string]string) string {
	cols := strings.Split(strings.Join(strings.Fields(messageColumns), " "), ", ")
	for i, c := range cols {
		if r, ok := rewrite[c]; ok {
			cols[i] = r
		} else {
			cols[i] = m + "." + c
		}
	}
	return strings.Join(cols, ", ")
}

// sharedAt is the row the linked fork whose row is own shares at depth (an SQL
// expression), as the fork's (sharedRowColumns); no row when it shares none there.
func sharedAt(own, depth string) string {
	return `SELECT ` + sharedRowColumns(own) + `
		FROM fork_link_entries(` + own + `.id, ` + own + `.base_depth) e
		JOIN messages m ON m.conversation_id = e.conv AND m.segment = e.seg AND m.depth = ` + depth + `
		WHERE ` + own + `.base_depth >= ` + depth + ` AND e.lo < ` + depth + ` AND e.hi >= ` + depth
}
