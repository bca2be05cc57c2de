package db_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/golang-migrate/migrate/v4"
	"github.com/jmoiron/sqlx"

	"github.com/parley-dev/parley"
	"github.com/parley-dev/parley/db"
	"github.com/parley-dev/parley/internal/pgtest"
)

// messageBytesBoundMigration is the number of the migration that keeps a bound of each
// conversation's message sizes on its row (000026_message_bytes_bound).
const messageBytesBoundMigration = 26

// startingBound is where a conversation's bound starts (the column's default), which
// every message up to that size is within: only larger messages move it.
const startingBound = 16384

// boundOf returns a conversation's bound of its messages' size (max_message_bytes) and
// the size of the largest message a page of it can read (body_bytes): its own rows, and
// for a linked fork the rows it shares.
func boundOf(t *testing.T, q sqlx.QueryerContext, conv string) (bound, largest int) {
	t.Helper()
	key, ok := parley.ParseConversationID(conv)
	if !ok {
		key = conv
	}
	err := sqlx.GetContext(t.Context(), q, &bound, `SELECT max_message_bytes FROM conversations WHERE id = $1`, key)
	if err != nil {
		t.Fatal(err)
	}
	err = sqlx.GetContext(t.Context(), q, &largest, `SELECT greatest(
			(SELECT coalesce(max(body_bytes), 0) FROM messages WHERE conversation_id = c.id),
			(SELECT coalesce(max(m.body_bytes), 0) FROM fork_link_entries(c.id, c.base_depth) e
				JOIN messages m ON m.conversation_id = e.conv AND m.segment = e.seg AND m.depth > e.lo AND m.depth <= e.hi))
		FROM conversations c WHERE c.id = $1`, key)
	if err != nil {
		t.Fatal(err)
	}
	return bound, largest
}

// TestMessageBytesBoundOnEveryWrite checks the bound of a conversation's message sizes
// (max_message_bytes, migration 000026), which lets a page that fits its byte budget be
// read without summing it (fittingLinePageSQL), after every write that creates or grows
// a message: a save, a streaming message's start, an append that grows its provenance,
// its end, a file's resolution, an import, a fork (whose shared rows are another
// conversation's) and the fork made real. A small message leaves the starting bound;
// after a write that grows the largest message past it, the bound is exactly its size
// (the bound follows it); after a tombstone it stays.
func TestMessageBytesBoundOnEveryWrite(t *testing.T) {
	t.Parallel()
	d, err := db.Open(t.Context(), pgtest.NewDatabase(t), db.Config{Assemblers: map[parley.StreamFormat]func() parley.StreamAssembler{
		parley.FormatOpenAIChat: func() parley.StreamAssembler { return &namingAssembler{} },
	}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	ctx := parley.WithOwner(t.Context(), "bound")
	conv, err := d.CreateConversation(ctx, "bound")
	if err != nil {
		t.Fatal(err)
	}
	// exact: the largest message is past the starting bound, and the bound is its size.
	exact := func(step, conv string) {
		t.Helper()
		bound, largest := boundOf(t, d.SQL(), conv)
		if largest <= startingBound || bound != largest {
			t.Errorf("after %s: got a bound of %d, want the largest message's %d (more than %d)", step, bound, largest, startingBound)
		}
	}
	starting := func(step, conv string) {
		t.Helper()
		if bound, largest := boundOf(t, d.SQL(), conv); bound != startingBound || largest > bound {
			t.Errorf("after %s: got a bound of %d (largest message %d), want %d", step, bound, largest, startingBound)
		}
	}
	starting("a new conversation", conv.ID)
	addText(t, ctx, d, conv.ID, "small", parley.Placement{})
	starting("a small message's save", conv.ID)
	large := addText(t, ctx, d, conv.ID, strings.Repeat("a large message ", 4000), parley.Placement{})
	exact("a larger save", conv.ID)

	// A streaming message: started, grown by its provider's events (its provenance, in
	// the group commit's statement), ended with more text than any message before it.
	live, err := d.CreateConversation(ctx, "live")
	if err != nil {
		t.Fatal(err)
	}
	m, err := d.StartMessage(ctx, live.ID, parley.StartMessage{})
	if err != nil {
		t.Fatal(err)
	}
	starting("a streaming message's start", live.ID)
	startBound, _ := boundOf(t, d.SQL(), live.ID)
	if _, err := d.AppendProviderEvents(ctx, m.Meta().ID, parley.FormatOpenAIChat, 1, []parley.JSON{parley.JSON(`{"text": "hi"}`)}); err != nil {
		t.Fatal(err)
	}
	if bound, _ := boundOf(t, d.SQL(), live.ID); bound <= startBound {
		t.Errorf("an append that grew the message's provenance: got a bound of %d, want more than the start's %d", bound, startBound)
	}
	exact("an append that grew the message", live.ID)
	for seq := 2; seq <= 5; seq++ {
		ev := parley.JSON(`{"text": "` + strings.Repeat("streamed text ", 3000) + `"}`)
		if _, err := d.AppendProviderEvents(ctx, m.Meta().ID, parley.FormatOpenAIChat, seq, []parley.JSON{ev}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := d.EndMessage(ctx, m.Meta().ID, parley.End{Status: parley.StatusCompleted}); err != nil {
		t.Fatal(err)
	}
	exact("a streaming message's end", live.ID)

	// A file's resolution, an update that grows a message.
	ref, err := d.AddMessage(ctx, conv.ID, &parley.FileReferenceMessage{MessageMeta: parley.MessageMeta{Role: parley.RoleUser}, Path: "big.txt"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.SetFileResolution(ctx, ref.Meta().ID, parley.FileResolution{Status: parley.ProcessingCompleted,
		Content: strings.Repeat("file contents ", 20000)}); err != nil {
		t.Fatal(err)
	}
	exact("a file's resolution", conv.ID)

	// A tombstone shrinks the message; the bound stays (it only grows).
	before, _ := boundOf(t, d.SQL(), conv.ID)
	if _, err := d.DeleteMessage(ctx, ref.Meta().ID); err != nil {
		t.Fatal(err)
	}
	if bound, largest := boundOf(t, d.SQL(), conv.ID); bound != before || bound < largest {
		t.Errorf("after a tombstone: got a bound of %d (largest message %d), want %d", bound, largest, before)
	}

	// An import (COPY into a staging table, then one insert).
	rep, err := d.ImportMessages(ctx, parley.ImportTarget{Title: "imported"}, &parley.Import{Messages: []parley.ImportedMessage{
		{Message: &parley.TextMessage{MessageMeta: parley.MessageMeta{Role: parley.RoleUser, SourceID: "a"}, Body: parley.TextBody("short")}, Origin: "messages[0]"},
		{Message: &parley.TextMessage{MessageMeta: parley.MessageMeta{Role: parley.RoleAssistant, SourceID: "b"}, Body: parley.TextBody(strings.Repeat("imported ", 30000))}, Origin: "messages[1]"},
	}})
	if err != nil {
		t.Fatal(err)
	}
	exact("an import", rep.Conversation.ID)

	// A fork at the large message shares it: its bound covers it before it has a row
	// of its own, and after it is made real.
	fork, err := d.ForkConversation(ctx, large.Meta().ID, "fork")
	if err != nil {
		t.Fatal(err)
	}
	// Its bound is its source's, which covers the shared rows (and the source's later
	// ones, larger here).
	srcBound, _ := boundOf(t, d.SQL(), conv.ID)
	covered := func(step string) {
		t.Helper()
		bound, largest := boundOf(t, d.SQL(), fork.ID)
		if largest < len("a large message ")*4000 || bound != srcBound {
			t.Errorf("after %s: got a bound of %d (largest message %d), want its source's %d", step, bound, largest, srcBound)
		}
	}
	covered("a fork")
	addText(t, ctx, d, fork.ID, "the fork's own", parley.Placement{})
	covered("a fork's own save")
	forkKey, _ := parley.ParseConversationID(fork.ID)
	if _, err := d.SQL().ExecContext(t.Context(), `SELECT materialize_fork($1)`, forkKey); err != nil {
		t.Fatal(err)
	}
	covered("the fork made real")
}

// namingAssembler is a provider stream's assembler whose events are {"text": ...} and
// name a model of 20,000 letters: the message's provenance grows past the starting
// bound with the first.
type namingAssembler struct{}

func (*namingAssembler) AddJSON(raw []byte) ([]parley.Delta, error) {
	var ev struct{ Text string }
	if err := json.Unmarshal(raw, &ev); err != nil {
		return nil, parley.Errorf(parley.EINVALID, "event: %v", err)
	}
	return []parley.Delta{{Kind: parley.DeltaText, Text: ev.Text}}, nil
}

func (*namingAssembler) Provenance() parley.Provenance {
	return parley.Provenance{Provider: "stub", Model: strings.Repeat("m", 20000)}
}

// TestMessageBytesBoundMigration: going up to 000026 sets every conversation's bound
// from the messages stored before (a linked fork's from the conversations its link
// names), and going down and up again works.
func TestMessageBytesBoundMigration(t *testing.T) {
	t.Parallel()
	_, conn, m := newMigrator(t)
	if err := m.Migrate(messageBytesBoundMigration - 1); err != nil && !errors.Is(err, migrate.ErrNoChange) {
		t.Fatalf("migrate to %d: %v", messageBytesBoundMigration-1, err)
	}
	q := sqlx.NewDb(conn, "postgres")
	ctx := context.Background()
	var src, empty, fork string
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(q.GetContext(ctx, &src, `INSERT INTO conversations (owner, last_position, message_count) VALUES ('o', 3, 3) RETURNING id`))
	must(q.GetContext(ctx, &empty, `INSERT INTO conversations (owner) VALUES ('o') RETURNING id`))
	_, err := q.ExecContext(ctx, `INSERT INTO messages (conversation_id, position, kind, role, content)
		VALUES ($1, 1, 'text', 'user', 'a'), ($1, 2, 'text', 'assistant', repeat('b', 20000)), ($1, 3, 'text', 'user', 'c')`, src)
	must(err)
	// A linked fork sharing src's first two messages, with none of its own.
	must(q.GetContext(ctx, &fork, `INSERT INTO conversations (owner, fork_no, base_depth, last_position, message_count, active_depth)
		VALUES ('o', nextval('conversations_fork_no_seq'), 2, 2, 2, 2) RETURNING id`))
	_, err = q.ExecContext(ctx, `WITH p AS (INSERT INTO fork_paths VALUES ($2, ARRAY[$1::uuid], '{0}', '{0}'))
		INSERT INTO fork_links VALUES ($1, $2)`, src, fork)
	must(err)

	if err := m.Migrate(messageBytesBoundMigration); err != nil {
		t.Fatalf("migrate up: %v", err)
	}
	for _, tc := range []struct {
		name, conv string
		large      bool // holding a message larger than the starting bound
	}{{"a conversation", src, true}, {"an empty conversation", empty, false}, {"a linked fork", fork, true}} {
		bound, largest := boundOf(t, q, tc.conv)
		if bound != max(largest, startingBound) || (largest > startingBound) != tc.large {
			t.Errorf("%s after migrating up: got a bound of %d, want %d (its largest message's %d)", tc.name, bound, max(largest, startingBound), largest)
		}
	}

	if err := m.Migrate(messageBytesBoundMigration - 1); err != nil {
		t.Fatalf("migrate down: %v", err)
	}
	var columns int
	must(q.GetContext(ctx, &columns, `SELECT count(*) FROM information_schema.columns
		WHERE table_name = 'conversations' AND column_name = 'max_message_bytes'`))
	if columns != 0 {
		t.Errorf("after migrating down: conversations still has max_message_bytes")
	}
	_, err = q.ExecContext(ctx, `INSERT INTO messages (conversation_id, position, kind, role, content) VALUES ($1, 4, 'text', 'user', 'd')`, src)
	must(err) // no trigger left behind naming the column
	if err := m.Migrate(messageBytesBoundMigration); err != nil {
		t.Fatalf("migrate up again: %v", err)
	}
	if bound, largest := boundOf(t, q, src); bound != largest {
		t.Errorf("after migrating up again: got a bound of %d, want %d", bound, largest)
	}
}
