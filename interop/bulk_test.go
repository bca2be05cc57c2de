package interop_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/parley-dev/parley/db"
	"github.com/parley-dev/parley/internal/sessiongen"
	"github.com/parley-dev/parley/internal/testserver"
)

// chatWithCalls is an OpenAI chat of n exchanges (a prompt, a call of Read, its result);
// answered says whether the last call has its result.
func chatWithCalls(n int, answered bool) string {
	var msgs []obj
	for i := range n {
		call := fmt.Sprintf("call_%d", i)
		msgs = append(msgs,
			obj{"role": "user", "content": fmt.Sprintf("step %d", i)},
			obj{"role": "assistant", "content": nil, "tool_calls": []obj{{"id": call, "type": "function",
				"function": obj{"name": "Read", "arguments": fmt.Sprintf(`{"path":"f%d.go"}`, i)}}}})
		if i < n-1 || answered {
			msgs = append(msgs, obj{"role": "tool", "tool_call_id": call, "content": fmt.Sprintf("package f%d", i)})
		}
	}
	b, _ := json.Marshal(msgs)
	return string(b)
}

// TestImportBatchesLinkCalls imports a history longer than one COPY batch (5,000
// messages), where a call at the end of the first batch is answered in the second, into
// a conversation holding an earlier import whose last call had no result yet: every
// result names its tool, and every call counts as answered (a second result for it is
// refused), whether its row was stored before, copied in an earlier batch or in the
// same one.
func TestImportBatchesLinkCalls(t *testing.T) {
	t.Parallel()
	srv := testserver.New(t)
	const n = 1700 // 5,100 messages; the call of exchange 1666 is message 5,000
	first := importData(t, srv, "OPENAI_CHAT", chatWithCalls(10, false), "", "calls")
	if first.Added != 29 {
		t.Fatalf("the first import: got %d messages, want 29", first.Added)
	}
	rep := importData(t, srv, "OPENAI_CHAT", chatWithCalls(n, true), first.Conversation.ID, "")
	if rep.AlreadyPresent != 29 || rep.Added != 3*n-29 || rep.Conversation.MessageCount != 3*n {
		t.Fatalf("the longer copy: got alreadyPresent %d, added %d, messageCount %d; want 29, %d, %d",
			rep.AlreadyPresent, rep.Added, rep.Conversation.MessageCount, 3*n-29, 3*n)
	}
	msgs := fetchMessages(t, srv, first.Conversation.ID)
	for i, m := range msgs {
		if int(m["position"].(float64)) != i+1 {
			t.Fatalf("message %d has position %v", i, m["position"])
		}
		if m["__typename"] == "ToolResultMessage" && m["toolName"] != "Read" {
			t.Errorf("the result at position %d: toolName %v, want Read", i+1, m["toolName"])
		}
	}
	for _, call := range []string{"call_9", "call_1666", "call_1667", "call_1699"} {
		r := srv.Do(t, `mutation($c: ID!, $i: MessageInput!) { addMessage(conversationId: $c, input: $i) { cursor } }`,
			map[string]any{"c": first.Conversation.ID, "i": obj{"toolResult": obj{"toolCallId": call, "status": "SUCCESS", "content": "again"}}})
		if got := r.ErrorCode(t); got != "CONFLICT" {
			t.Errorf("a second result for %s: got %s, want CONFLICT (the import's result is recorded)", call, got)
		}
	}
	// A result for a call no import made is refused, so the index has only real calls.
	r := srv.Do(t, `mutation($c: ID!, $i: MessageInput!) { addMessage(conversationId: $c, input: $i) { cursor } }`,
		map[string]any{"c": first.Conversation.ID, "i": obj{"toolResult": obj{"toolCallId": "call_x", "status": "SUCCESS", "content": "?"}}})
	if got := r.ErrorCode(t); got != "BAD_USER_INPUT" {
		t.Errorf("a result for an unknown call: got %s, want BAD_USER_INPUT", got)
	}
}

// TestImportRecordRepeatedAcrossBatches imports into a new conversation a Claude Code
// session longer than one COPY batch (5,000 messages) whose first records come again at
// its end, as a resumed session copies them: the import into a conversation it made
// knows what it has stored without asking the database (the parser folds most repeats
// before they reach it), and must still store each record once, like the clean file;
// a re-import, which asks the database, must add nothing.
func TestImportRecordRepeatedAcrossBatches(t *testing.T) {
	t.Parallel()
	srv := testserver.New(t)
	var buf strings.Builder
	if err := sessiongen.Write(&buf, 5200); err != nil {
		t.Fatal(err)
	}
	clean := buf.String()
	lines := strings.SplitAfter(clean, "\n")
	repeated := clean + strings.Join(lines[1:9], "") // the summary line stays first only
	want := importData(t, srv, "CLAUDE_CODE_JSONL", clean, "", "clean")
	if want.Added < 5100 {
		t.Fatalf("the clean session made %d messages, want more than one batch", want.Added)
	}
	got := importData(t, srv, "CLAUDE_CODE_JSONL", repeated, "", "repeated")
	if got.Added != want.Added || got.Conversation.MessageCount != want.Added {
		t.Fatalf("with its first records repeated at the end: added %d, messageCount %d; want %d as the clean file",
			got.Added, got.Conversation.MessageCount, want.Added)
	}
	again := importData(t, srv, "CLAUDE_CODE_JSONL", repeated, got.Conversation.ID, "")
	if again.Added != 0 || again.Conversation.MessageCount != want.Added {
		t.Fatalf("re-import: added %d, messageCount %d; want 0, %d", again.Added, again.Conversation.MessageCount, want.Added)
	}
}

// TestImportSourceIDRepeatedAcrossBatches imports into a new conversation a Claude Code
// session longer than one COPY batch whose last record is a new prompt under the uuid
// of a prompt in the first batch: not a copy (other time, other text), so two messages
// would share a source id. The import into a conversation it made does not look for
// its source ids among what it stored, for none can be there twice: it is refused,
// naming both lines, and leaves nothing.
func TestImportSourceIDRepeatedAcrossBatches(t *testing.T) {
	t.Parallel()
	srv := testserver.New(t)
	lines := sessionLines(t, 5200)
	first, uuid := 0, ""
	for i, l := range lines {
		var rec struct {
			Type, UUID string
			Message    struct{ Content any }
		}
		if err := json.Unmarshal([]byte(l), &rec); err != nil {
			t.Fatal(err)
		}
		if _, text := rec.Message.Content.(string); rec.Type == "user" && text {
			first, uuid = i+1, rec.UUID
			break
		}
	}
	if uuid == "" {
		t.Fatal("the session has no user prompt")
	}
	data := strings.Join(lines, "") + "\n" + jsonl(t, ccUser(uuid, "a new prompt under an old uuid"))
	r := srv.Do(t, importMutation, importVars("CLAUDE_CODE_JSONL", data, "", ""))
	if got := r.ErrorCode(t); got != "BAD_USER_INPUT" {
		t.Fatalf("got %s, want BAD_USER_INPUT", got)
	}
	want := fmt.Sprintf("line %d: source id %q is also the id of line %d", len(lines)+1, uuid, first)
	if got := r.Errors[0].Message; !strings.Contains(got, want) {
		t.Errorf("got %q, want it to say %q", got, want)
	}
	if stored := storedCounts(t, srv); stored.Conversations != 0 || stored.Messages != 0 {
		t.Errorf("the refused import left %d conversations and %d messages, want none", stored.Conversations, stored.Messages)
	}
}

// TestImportFailingBatchLeavesNothing imports Claude Code sessions of two COPY batches
// (5,000 messages each at most) where Postgres refuses a message (a trigger of the
// test's), in the first batch or in the last: the import fails and leaves nothing, no
// conversation and no message. A batch is stored while the next one is read and
// queued; when that next one is refused too (a truncated line at the end), the error
// reported is still the first batch's, as when the batches took turns.
func TestImportFailingBatchLeavesNothing(t *testing.T) {
	t.Parallel()
	srv := testserver.New(t)
	if _, err := srv.Store.SQL().ExecContext(t.Context(), `CREATE FUNCTION refuse_marked() RETURNS trigger LANGUAGE plpgsql AS $$
		BEGIN RAISE EXCEPTION 'refused by the test'; END $$;
		CREATE TRIGGER refuse_marked BEFORE INSERT ON messages FOR EACH ROW WHEN (NEW.content = 'REFUSE-ME') EXECUTE FUNCTION refuse_marked()`); err != nil {
		t.Fatal(err)
	}
	lines := sessionLines(t, 5200)
	marked := jsonl(t, ccUser("refused", "REFUSE-ME"))
	truncated := `{"type":"user","uuid":"u2","message":{"role":"us` + "\n"
	for _, tt := range []struct {
		name string
		data string
		want string
	}{
		{"refused in the first batch", strings.Join(lines[:20], "") + marked + strings.Join(lines[20:], ""), "INTERNAL_SERVER_ERROR"},
		{"refused in the first batch, the second truncated", strings.Join(lines[:20], "") + marked + strings.Join(lines[20:], "") + "\n" + truncated,
			"INTERNAL_SERVER_ERROR"},
		{"refused in the last batch", strings.Join(lines, "") + "\n" + marked, "INTERNAL_SERVER_ERROR"},
		{"the last batch truncated", strings.Join(lines, "") + "\n" + truncated, "BAD_USER_INPUT"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := srv.Do(t, importMutation, importVars("CLAUDE_CODE_JSONL", tt.data, "", ""))
			if got := r.ErrorCode(t); got != tt.want {
				t.Errorf("got %s, want %s", got, tt.want)
			}
			stored := storedCounts(t, srv)
			if stored.Conversations != 0 || stored.Messages != 0 {
				t.Errorf("the failed import left %d conversations and %d messages, want none", stored.Conversations, stored.Messages)
			}
		})
	}
}

// TestImportVectorsRefusedLeaveNothing imports Claude Code sessions of two batches where
// the search vectors of a marked message cannot be computed on the connection the
// import borrows for its later batches' vectors (db/vectors.go): the test's
// message_search_vectors refuses it outside a transaction that has written, which the
// import's insert, computing the first batch's vectors, is not. Marked in the first
// batch, the import succeeds; marked in the last, it fails and leaves nothing.
func TestImportVectorsRefusedLeaveNothing(t *testing.T) {
	t.Parallel()
	srv := testserver.New(t)
	if _, err := srv.Store.SQL().ExecContext(t.Context(), `ALTER FUNCTION message_search_vectors(regconfig, text, text, jsonb, jsonb, jsonb)
			RENAME TO message_search_vectors_real;
		CREATE FUNCTION message_search_vectors(cfg regconfig, kind text, content text, payload jsonb, tool_calls jsonb, tool_results jsonb)
			RETURNS SETOF tsvector LANGUAGE plpgsql AS $$
		BEGIN
			IF content = 'REFUSE-ME' AND txid_current_if_assigned() IS NULL THEN
				RAISE EXCEPTION 'refused by the test';
			END IF;
			RETURN QUERY SELECT message_search_vectors_real(cfg, kind, content, payload, tool_calls, tool_results);
		END $$`); err != nil {
		t.Fatal(err)
	}
	lines := sessionLines(t, 5200)
	marked := jsonl(t, ccUser("refused", "REFUSE-ME"))
	for _, tt := range []struct {
		name string
		data string
		want string // the error's code, "" for none
	}{
		{"marked in the first batch", strings.Join(lines[:20], "") + marked + strings.Join(lines[20:], ""), ""},
		{"marked in the last batch", strings.Join(lines, "") + "\n" + marked, "INTERNAL_SERVER_ERROR"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			before := storedCounts(t, srv)
			r := srv.Do(t, importMutation, importVars("CLAUDE_CODE_JSONL", tt.data, "", ""))
			got := ""
			if len(r.Errors) > 0 {
				got = r.ErrorCode(t)
			}
			if got != tt.want {
				t.Fatalf("got error %q, want %q", got, tt.want)
			}
			after := storedCounts(t, srv)
			if tt.want != "" && after != before {
				t.Errorf("the failed import left %d conversations and %d messages, want none",
					after.Conversations-before.Conversations, after.Messages-before.Messages)
			}
			if tt.want == "" && after.Messages-before.Messages < 5100 {
				t.Errorf("the import added %d messages, want more than a batch", after.Messages-before.Messages)
			}
		})
	}
}

// TestImportWithPoolOfOne imports a session of three batches through a server whose
// pool has one connection, which the import's transaction holds: the import lends no
// second one for its vectors, computes them in its inserts, and stores the trigger's.
func TestImportWithPoolOfOne(t *testing.T) {
	t.Parallel()
	srv := testserver.NewWith(t, testserver.Options{DB: db.Config{MaxOpenConns: 1}})
	var buf strings.Builder
	if err := sessiongen.Write(&buf, 12000); err != nil {
		t.Fatal(err)
	}
	rep := importData(t, srv, "CLAUDE_CODE_JSONL", buf.String(), "", "")
	if rep.Added < 10000 {
		t.Fatalf("got %d messages, want more than two batches", rep.Added)
	}
	var differing int
	if err := srv.Store.SQL().GetContext(t.Context(), &differing, `SELECT count(*) FROM messages
		WHERE conversation_id = $1 AND search_vector IS DISTINCT FROM
			message_search_vector((SELECT config FROM search_config), kind, content, payload, tool_calls, tool_results)`,
		strings.TrimPrefix(rep.Conversation.ID, "conv_")); err != nil {
		t.Fatal(err)
	}
	if differing != 0 {
		t.Errorf("%d of %d imported messages have a vector other than the trigger's", differing, rep.Added)
	}
}

// sessionLines is a generated Claude Code session of n messages, line by line, each
// line with its newline but the last.
func sessionLines(t *testing.T, n int) []string {
	t.Helper()
	var buf strings.Builder
	if err := sessiongen.Write(&buf, n); err != nil {
		t.Fatal(err)
	}
	return strings.SplitAfter(strings.TrimSuffix(buf.String(), "\n"), "\n")
}

// storedRows are the database's conversations and messages.
type storedRows struct {
	Conversations int `db:"conversations"`
	Messages      int `db:"messages"`
}

// storedCounts counts what the database stores.
func storedCounts(t *testing.T, srv *testserver.Server) storedRows {
	t.Helper()
	var s storedRows
	if err := srv.Store.SQL().GetContext(t.Context(), &s, `SELECT (SELECT count(*) FROM conversations) AS conversations,
		(SELECT count(*) FROM messages) AS messages`); err != nil {
		t.Fatal(err)
	}
	return s
}
