package db_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/jmoiron/sqlx"

	"github.com/parley-dev/parley/db"
)

// TestTreePlansProbeEachMessage EXPLAINs the statement that reads the tree fields of a
// page (parent and siblings of each message), prepared, custom and generic, on a table
// whose statistics are stale (analyzed at ten messages, then grown to thousands in one
// conversation, with a fork), and on the same table analyzed. Every read of messages must
// be a probe of an index that finds its rows without a filter: reading the tree of a
// page must cost in proportion to the page, not to the page times the conversation.
func TestTreePlansProbeEachMessage(t *testing.T) {
	t.Parallel()
	d := openDB(t)
	sql, ctx := d.SQL(), t.Context()
	const big = 5000
	exec := func(q string, args ...any) {
		t.Helper()
		if _, err := sql.ExecContext(ctx, q, args...); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	exec(`ALTER TABLE messages SET (autovacuum_enabled = false)`)
	exec(`ALTER TABLE message_segments SET (autovacuum_enabled = false)`)
	conn, err := sql.Connx(ctx) // PREPARE and SET hold for one session
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, `PREPARE tree AS `+db.TreeSQL); err != nil {
		t.Fatalf("prepare: %v", err)
	}
	// First a conversation of 100 messages in a table never analyzed (a new installation,
	// and every benchmark's first minutes): the planner's guesses alone.
	var small string
	if err := sql.GetContext(ctx, &small, `INSERT INTO conversations (owner, last_position, message_count) VALUES ('tree', 100, 100) RETURNING id`); err != nil {
		t.Fatal(err)
	}
	exec(`INSERT INTO messages (conversation_id, position, depth, kind, role, content)
		SELECT $1, p, p, 'text', 'user', 'm' || p FROM generate_series(1, 100) p`, small)
	var ids []string
	if err := conn.SelectContext(ctx, &ids, `SELECT id::text FROM messages WHERE conversation_id = $1 ORDER BY depth`, small); err != nil {
		t.Fatal(err)
	}
	checkTreePlans(t, conn, "never analyzed", ids)
	exec(`ANALYZE messages`)
	exec(`ANALYZE message_segments`)
	// The statistics now say: 100 messages. Grow past them: a long conversation with a
	// fork after its 2,500th message (segment 1 holds a second child of that message and
	// ten more).
	var large string
	if err := sql.GetContext(ctx, &large, `INSERT INTO conversations (owner, last_position, message_count, segments) VALUES ('tree', $1, $1, 1) RETURNING id`, big+11); err != nil {
		t.Fatal(err)
	}
	exec(`INSERT INTO messages (conversation_id, position, depth, kind, role, content)
		SELECT $1, p, p, 'text', 'user', 'm' || p FROM generate_series(1, $2) p`, large, big)
	exec(`INSERT INTO message_segments (conversation_id, segment, parent_segment, fork_depth) VALUES ($1, 1, 0, 2500)`, large)
	exec(`INSERT INTO messages (conversation_id, position, segment, depth, kind, role, content)
		SELECT $1, $2 + d, 1, 2500 + d, 'text', 'user', 'f' || d FROM generate_series(1, 11) d`, large, big)

	// A page of 100 around the fork on the main line, and the fork's own messages.
	ids = nil
	if err := conn.SelectContext(ctx, &ids, `SELECT id::text FROM messages WHERE conversation_id = $1
		AND ((segment = 0 AND depth BETWEEN 2451 AND 2550) OR segment = 1) ORDER BY segment, depth`, large); err != nil {
		t.Fatal(err)
	}
	checkTreePlans(t, conn, "stale", ids)
	exec(`ANALYZE messages`)
	exec(`ANALYZE message_segments`)
	checkTreePlans(t, conn, "analyzed", ids)
}

// checkTreePlans EXPLAINs the prepared tree statement for ids, custom and generic.
func checkTreePlans(t *testing.T, conn *sqlx.Conn, stats string, ids []string) {
	t.Helper()
	ctx := t.Context()
	{
		for _, mode := range []string{"force_custom_plan", "force_generic_plan"} {
			if _, err := conn.ExecContext(ctx, `SET plan_cache_mode = `+mode); err != nil {
				t.Fatal(err)
			}
			var out string
			if err := conn.GetContext(ctx, &out, fmt.Sprintf(`EXPLAIN (ANALYZE, FORMAT JSON) EXECUTE tree('{%s}')`, strings.Join(ids, ","))); err != nil {
				t.Fatalf("%s, %s: %v", stats, mode, err)
			}
			var plans []struct{ Plan planNode }
			if err := json.Unmarshal([]byte(out), &plans); err != nil || len(plans) != 1 {
				t.Fatalf("%s, %s: EXPLAIN output %q: %v", stats, mode, out, err)
			}
			root := plans[0].Plan
			if root.Rows != len(ids) {
				t.Errorf("%s, %s: got %d rows, want %d", stats, mode, root.Rows, len(ids))
			}
			// The messages asked for are found by their ids (one scan, any index); every
			// other read of messages is a probe per message.
			// (How it finds them is the planner's choice by the table's size: a sequential
			// scan of a table it believes small, the primary key otherwise; it runs once.)
			read := 0
			for _, s := range root.find(func(n *planNode) bool { return n.Relation == "messages" }) {
				if strings.Contains(s.Cond+s.Filter+s.Recheck, "= ANY") {
					if s.Loops > 1 {
						t.Errorf("%s, %s: the messages asked for were looked up %d times, want once:\n%s", stats, mode, s.Loops, out)
					}
					continue
				}
				read += (s.Rows + s.Removed) * max(s.Loops, 1)
				if s.Index != "messages_branch_idx" || s.Removed != 0 || !strings.Contains(s.Cond, "segment =") {
					t.Errorf("%s, %s: got %s on %s (index cond %s, filter %q removing %d), want probes of messages_branch_idx on all its columns:\n%s",
						stats, mode, s.Type, s.Index, s.Cond, s.Filter, s.Removed, out)
				}
			}
			// Each message: its parent and its siblings (two at the fork).
			if limit := 3 * len(ids); read > limit {
				t.Errorf("%s, %s: read %d rows of messages for the tree of %d messages, want at most %d:\n%s", stats, mode, read, len(ids), limit, out)
			}
		}
	}
}
