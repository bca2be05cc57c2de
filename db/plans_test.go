package db_test

import (
	"context"
	"database/sql"
	"fmt"
	"testing"
	"time"

	"github.com/lib/pq"

	"github.com/parley-dev/parley"
	"github.com/parley-dev/parley/db"
	"github.com/parley-dev/parley/internal/pgtest"
	"github.com/parley-dev/parley/internal/poll"
)

// Every hot statement must find its rows through an index once the tables are large:
// a sequential scan of messages or tool_calls costs time in proportion to every owner's
// history, and a delete does it while holding the conversation's lock.
//
// The test counts the sequential scans Postgres itself records (pg_stat_user_tables)
// while each operation runs through the store's own methods, rather than EXPLAINing
// copies of their SQL: so it sees the statements as they are, and the ones no Go code
// spells, the foreign keys' ON DELETE actions, which are where the deletes scanned.

// bulkSQL fills the database with other owners' history: 2,500 conversations of 40
// messages (100,000), half of them tool requests with one call each, answered by the
// next message (50,000 tool calls), then ANALYZE, so the planner knows the sizes.
const bulkSQL = `
INSERT INTO conversations (owner, title, last_position, message_count)
	SELECT 'bulk' || (g % 50), 'bulk ' || g, 40, 40 FROM generate_series(1, 2500) g;
INSERT INTO messages (conversation_id, position, kind, role, content)
	SELECT c.id, p, CASE p % 2 WHEN 1 THEN 'tool_request' ELSE 'tool_result' END,
		CASE p % 2 WHEN 1 THEN 'invocation' ELSE 'result' END, ''
	FROM conversations c CROSS JOIN generate_series(1, 40) p WHERE c.owner LIKE 'bulk%';
INSERT INTO tool_calls (conversation_id, call_id, name, request_id, result_id, approval_status)
	SELECT q.conversation_id, 'call_' || q.position, 'echo', q.id, r.id, 'APPROVED'
	FROM messages q JOIN messages r ON r.conversation_id = q.conversation_id AND r.position = q.position + 1
	WHERE q.position % 2 = 1;
ANALYZE conversations, messages, tool_calls;`

// scannedTables are the tables whose sequential scans count.
var scannedTables = []string{"conversations", "messages", "tool_calls"}

// operation is one hot path, run through the store as owner alice.
type operation struct {
	name string
	run  func(ctx context.Context, t *testing.T, s *db.DB, f *fixture)
}

// fixture is alice's conversation: tool requests, some answered, one approved.
type fixture struct {
	conv      *parley.Conversation
	request   parley.Message // a request whose call is approved and unanswered
	requests  []string
	lastCalls int
	// fork is a fork of conv at requests[50] (depth 101), still linked (migration
	// 000025), and forkRequest its id of that request.
	fork        *parley.Conversation
	forkRequest string
}

func toolRequest(callID string) *parley.ToolRequestMessage {
	return &parley.ToolRequestMessage{ToolCalls: []parley.ToolCall{{ID: callID, Name: "echo", Arguments: parley.JSON(`{"text":"hi"}`)}}}
}

func toolResult(callID string) *parley.ToolResultMessage {
	return &parley.ToolResultMessage{ToolCallID: callID, Status: parley.ToolSuccess, Output: parley.JSON(`"hi"`)}
}

var operations = []operation{
	{"add a tool request", func(ctx context.Context, t *testing.T, s *db.DB, f *fixture) {
		m, err := s.AddMessage(ctx, f.conv.ID, toolRequest("new"))
		must(t, err)
		f.request = m
	}},
	{"approve a call", func(ctx context.Context, t *testing.T, s *db.DB, f *fixture) {
		_, err := s.SetToolCallApproval(ctx, f.request.Meta().ID, "new",
			parley.ApprovalDecision{Status: parley.ApprovalApproved, DecidedBy: "test"})
		must(t, err)
	}},
	{"find awaiting calls of a conversation", func(ctx context.Context, t *testing.T, s *db.DB, f *fixture) {
		got, err := s.FindAwaitingToolCalls(ctx, parley.AwaitingFilter{ConversationID: f.conv.ID, Limit: 10})
		must(t, err)
		if len(got) != 1 {
			t.Errorf("got %d awaiting calls, want 1", len(got))
		}
	}},
	{"find awaiting calls of every conversation of the owner", func(ctx context.Context, t *testing.T, s *db.DB, f *fixture) {
		got, err := s.FindAwaitingToolCalls(ctx, parley.AwaitingFilter{Limit: 10})
		must(t, err)
		if len(got) != 1 {
			t.Errorf("got %d awaiting calls, want 1", len(got))
		}
	}},
	{"claim a call", func(ctx context.Context, t *testing.T, s *db.DB, f *fixture) {
		_, err := s.ClaimToolCall(ctx, parley.ToolCallClaim{MessageID: f.request.Meta().ID, ToolCallID: "new", Worker: "w"}) // the default lease
		must(t, err)
	}},
	{"add a tool result", func(ctx context.Context, t *testing.T, s *db.DB, f *fixture) {
		r := toolResult("new")
		r.Worker = "w" // the claimant: its claim lasts
		_, err := s.AddMessage(ctx, f.conv.ID, r)
		must(t, err)
	}},
	{"find a message", func(ctx context.Context, t *testing.T, s *db.DB, f *fixture) {
		_, err := s.FindMessageByID(ctx, f.requests[7])
		must(t, err)
	}},
	{"read pages", func(ctx context.Context, t *testing.T, s *db.DB, f *fixture) {
		first, last, after, before := 50, 50, parley.MessageCursor(20), parley.MessageCursor(150)
		for _, p := range []parley.PageRequest{{First: &first}, {First: &first, After: &after}, {Last: &last, Before: &before}, {Last: &last}} {
			page, err := s.FindMessages(ctx, f.conv, p)
			must(t, err)
			if len(page.Messages) == 0 {
				t.Errorf("page %+v: no messages", p)
			}
		}
	}},
	{"replay after a position", func(ctx context.Context, t *testing.T, s *db.DB, f *fixture) {
		_, _, err := s.MessagesAfter(ctx, f.conv.ID, 100, 50, 16<<20)
		must(t, err)
	}},
	{"list conversations", func(ctx context.Context, t *testing.T, s *db.DB, f *fixture) {
		first := 20
		_, err := s.FindConversations(ctx, parley.PageRequest{First: &first})
		must(t, err)
	}},
	{"fork a conversation", func(ctx context.Context, t *testing.T, s *db.DB, f *fixture) {
		var err error
		f.fork, err = s.ForkConversation(ctx, f.requests[50], "")
		must(t, err)
		var forkNo int64
		must(t, s.SQL().GetContext(ctx, &forkNo, `SELECT fork_no FROM conversations WHERE id = $1`, f.fork.ID[len("conv_"):]))
		f.forkRequest = parley.MessageID(parley.ForkMessageKey(forkNo, 101))
	}},
	{"find a message a fork shares", func(ctx context.Context, t *testing.T, s *db.DB, f *fixture) {
		m, err := s.FindMessageByID(ctx, f.forkRequest)
		must(t, err)
		if m.Meta().ConversationID != f.fork.ID {
			t.Errorf("the shared message: got it in %s, want %s", m.Meta().ConversationID, f.fork.ID)
		}
	}},
	{"add a tool request to a fork", func(ctx context.Context, t *testing.T, s *db.DB, f *fixture) {
		if _, err := s.AddMessage(ctx, f.fork.ID, toolRequest("c7")); parley.ErrorCode(err) != parley.EINVALID {
			t.Errorf("a call id the fork shares: got %v, want EINVALID", err)
		}
		_, err := s.AddMessage(ctx, f.fork.ID, toolRequest("forked"))
		must(t, err)
	}},
	{"add a message with a client id to a fork", func(ctx context.Context, t *testing.T, s *db.DB, f *fixture) {
		m := toolResult("forked")
		m.Meta().Live.ClientID = "k1"
		_, err := s.AddMessage(ctx, f.fork.ID, m)
		must(t, err)
	}},
	{"find awaiting calls with a fork", func(ctx context.Context, t *testing.T, s *db.DB, f *fixture) {
		_, err := s.FindAwaitingToolCalls(ctx, parley.AwaitingFilter{Limit: 10})
		must(t, err)
		_, err = s.FindAwaitingToolCalls(ctx, parley.AwaitingFilter{ConversationID: f.fork.ID, Limit: 10})
		must(t, err)
	}},
	{"delete a conversation with tool calls", func(ctx context.Context, t *testing.T, s *db.DB, f *fixture) {
		must(t, s.DeleteConversation(ctx, f.conv.ID))
	}},
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// TestHotStatementsUseIndexes runs each hot operation on a database holding 100,000
// messages and 50,000 tool calls of other owners, and fails on any sequential scan of
// conversations, messages or tool_calls it makes. Its control runs the same with the
// indexes of migration 5 dropped, and must see the scans that migration removed: the
// test can fail.
func TestHotStatementsUseIndexes(t *testing.T) {
	t.Parallel()
	t.Run("indexed", func(t *testing.T) {
		t.Parallel()
		for op, scans := range seqScans(t, false) {
			for table, n := range scans {
				if n > 0 {
					t.Errorf("%s: %d sequential scans of %s, want none", op, n, table)
				}
			}
		}
	})
	t.Run("control without the tool_calls indexes", func(t *testing.T) {
		t.Parallel()
		scans := seqScans(t, true)
		for op, n := range scans {
			t.Logf("without the indexes, %s: %v sequential scans", op, n)
		}
		for _, op := range []string{"claim a call", "delete a conversation with tool calls"} {
			if scans[op]["tool_calls"] == 0 {
				t.Errorf("%s: no sequential scan of tool_calls without its indexes; the test cannot see one", op)
			}
		}
	})
}

// seqScans loads the bulk history, builds alice's conversation and returns, for each
// operation, the sequential scans of each table it made.
func seqScans(t *testing.T, dropIndexes bool) map[string]map[string]int64 {
	dsn := pgtest.NewDatabase(t)
	ctx := t.Context()
	admin, err := sql.Open("postgres", dsn)
	must(t, err)
	defer admin.Close()
	admin.SetMaxOpenConns(1) // one session of ours, which the waits below leave out
	if dropIndexes {
		_, err := admin.ExecContext(ctx, `DROP INDEX tool_calls_request_idx; DROP INDEX tool_calls_result_idx`)
		must(t, err)
	}
	_, err = admin.ExecContext(ctx, bulkSQL)
	must(t, err)

	f := &fixture{}
	alice := parley.WithOwner(ctx, "alice")
	withStore(t, dsn, admin, func(s *db.DB) {
		f.conv, err = s.CreateConversation(alice, "alice's")
		must(t, err)
		for i := range 100 {
			id := fmt.Sprintf("c%d", i)
			m, err := s.AddMessage(alice, f.conv.ID, toolRequest(id))
			must(t, err)
			f.requests = append(f.requests, m.Meta().ID)
			_, err = s.AddMessage(alice, f.conv.ID, toolResult(id))
			must(t, err)
		}
	})
	_, err = admin.ExecContext(ctx, `ANALYZE conversations, messages, tool_calls`)
	must(t, err)

	out := map[string]map[string]int64{}
	for _, op := range operations {
		before := counters(t, admin)
		withStore(t, dsn, admin, func(s *db.DB) {
			start := time.Now()
			op.run(alice, t, s, f)
			t.Logf("%s took %s (indexes dropped: %v)", op.name, time.Since(start).Round(time.Microsecond), dropIndexes)
		})
		after := counters(t, admin)
		out[op.name] = map[string]int64{}
		for _, table := range scannedTables {
			out[op.name][table] = after[table] - before[table]
		}
	}
	// Operations that did no work would see no scans either.
	var left int
	must(t, admin.QueryRowContext(ctx, `SELECT count(*) FROM messages WHERE conversation_id = $1`,
		f.conv.ID[len("conv_"):]).Scan(&left))
	if left != 0 {
		t.Errorf("alice's conversation still has %d messages after its delete", left)
	}
	return out
}

// withStore runs f with a store of its own, then closes it and waits for its sessions
// to end (admin's single session aside): a session's table statistics reach pg_stat_user_tables at the latest when
// it exits, before it leaves pg_stat_activity.
func withStore(t *testing.T, dsn string, admin *sql.DB, f func(s *db.DB)) {
	t.Helper()
	s, err := db.Open(t.Context(), dsn, db.Config{})
	must(t, err)
	f(s)
	must(t, s.Close())
	poll.Until(t, "the closed store's sessions to end", 30*time.Second, func() error {
		var others int
		// Client backends only: an autovacuum worker's scans do not count, and its
		// statistics are its own.
		must(t, admin.QueryRowContext(t.Context(), `SELECT count(*) FROM pg_stat_activity
			WHERE datname = current_database() AND pid <> pg_backend_pid() AND backend_type = 'client backend'`).Scan(&others))
		if others > 0 {
			return fmt.Errorf("%d still open", others)
		}
		return nil
	})
}

// counters returns the sequential scans each table has had so far.
func counters(t *testing.T, admin *sql.DB) map[string]int64 {
	t.Helper()
	rows, err := admin.QueryContext(t.Context(), `SELECT relname, seq_scan FROM pg_stat_user_tables WHERE relname = ANY($1)`,
		pq.Array(scannedTables))
	must(t, err)
	defer rows.Close()
	out := map[string]int64{}
	for rows.Next() {
		var name string
		var n int64
		must(t, rows.Scan(&name, &n))
		out[name] = n
	}
	must(t, rows.Err())
	return out
}
