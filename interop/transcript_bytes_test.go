package interop_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/parley-dev/parley"
	"github.com/parley-dev/parley/db"
	"github.com/parley-dev/parley/internal/pgtest"
	"github.com/parley-dev/parley/interop"
)

// readCounter counts the stored bytes of the messages a transcript reads.
type readCounter struct {
	parley.MessageService
	read, largest int
}

func (c *readCounter) FindMessages(ctx context.Context, conv *parley.Conversation, page parley.PageRequest) (*parley.MessagePage, error) {
	p, err := c.MessageService.FindMessages(ctx, conv, page)
	if err == nil {
		c.read += p.Bytes
		if len(p.Messages) > 0 {
			c.largest = max(c.largest, p.Bytes/len(p.Messages))
		}
	}
	return p, err
}

// A transcript of a history over the limit stops reading at the limit: it reads at
// most the limit and one message more, never the whole history, and is refused with
// ETRANSCRIPTTOOLARGE; the same history exports under a larger limit.
func TestTranscriptReadStopsAtLimit(t *testing.T) {
	t.Parallel()
	ctx := parley.WithOwner(context.Background(), parley.LocalOwner)
	store, err := db.Open(ctx, pgtest.NewDatabase(t), db.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	const n, size = 40, 50 << 10 // 2 MiB of text, messages of equal size
	msgs := make([]obj, n)
	for i := range msgs {
		msgs[i] = textMsg("USER", fmt.Sprintf("%02d%s", i, strings.Repeat("x", size)))
	}
	rep, err := interop.New(store, store, store).ImportConversation(ctx, parley.ImportParleyJSON, strings.NewReader(parleyDoc(t, msgs...)), parley.ImportTarget{})
	if err != nil {
		t.Fatal(err)
	}
	const limit = 512 << 10
	counter := &readCounter{MessageService: store}
	_, err = interop.New(store, store, counter).WithMaxBytes(limit).Transcript(ctx, rep.Conversation.ID, parley.TranscriptMarkdown, parley.TranscriptOptions{})
	if code := parley.ErrorCode(err); code != parley.ETRANSCRIPTTOOLARGE {
		t.Fatalf("got %v, want %s", err, parley.ETRANSCRIPTTOOLARGE)
	}
	if counter.read > limit+counter.largest {
		t.Errorf("read %d bytes, want at most the limit %d and one message (%d)", counter.read, limit, counter.largest)
	}

	whole := &readCounter{MessageService: store}
	tr, err := interop.New(store, store, whole).WithMaxBytes(4<<20).Transcript(ctx, rep.Conversation.ID, parley.TranscriptMarkdown, parley.TranscriptOptions{})
	if err != nil {
		t.Fatalf("under a 4 MiB limit: %v", err)
	}
	if whole.read <= 2*limit || len(tr.Body) < n*size {
		t.Errorf("under a 4 MiB limit: read %d bytes, transcript of %d, want the whole history (%d bytes of text)", whole.read, len(tr.Body), n*size)
	}
}

// An incremental export (after, no maxTokens) reads what follows its cursor, not the
// history before it: on a history of 2 MiB it reads a few KiB and exports under a
// limit the history is far over; its body is what the whole transcript holds after the
// cursor, byte for byte. When what follows the cursor cannot be planned alone (a result
// whose call was made before the cursor, a compaction the transcript would start at)
// it reads the whole history, and its body is still the whole transcript's tail.
func TestIncrementReadsWhatFollows(t *testing.T) {
	t.Parallel()
	ctx := parley.WithOwner(context.Background(), parley.LocalOwner)
	store, err := db.Open(ctx, pgtest.NewDatabase(t), db.Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() }) // after the parallel subtests
	// 2 MiB of turns, then a short turn with a tool call.
	const n, size = 40, 50 << 10
	var msgs []obj
	for i := range n {
		role := "USER"
		if i%2 == 1 {
			role = "ASSISTANT"
		}
		msgs = append(msgs, textMsg(role, fmt.Sprintf("%02d%s", i, strings.Repeat("x", size))))
	}
	msgs = append(msgs, textMsg("USER", "Search for it."), callMsg("Searching.", "call_1"), resultMsg("call_1", "found it"),
		textMsg("ASSISTANT", "Found."))
	rep, err := interop.New(store, store, store).ImportConversation(ctx, parley.ImportParleyJSON, strings.NewReader(parleyDoc(t, msgs...)), parley.ImportTarget{})
	if err != nil {
		t.Fatal(err)
	}
	conv := rep.Conversation.ID
	const limit = 512 << 10
	if _, err := interop.New(store, store, store).WithMaxBytes(limit).Transcript(ctx, conv, parley.TranscriptOpenAIChat, parley.TranscriptOptions{}); parley.ErrorCode(err) != parley.ETRANSCRIPTTOOLARGE {
		t.Fatalf("the whole history under a %d-byte limit: got %v, want %s", limit, err, parley.ETRANSCRIPTTOOLARGE)
	}
	whole, err := interop.New(store, store, store).WithMaxBytes(8<<20).Transcript(ctx, conv, parley.TranscriptOpenAIChat, parley.TranscriptOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var all []json.RawMessage
	if err := json.Unmarshal(whole.Body, &all); err != nil {
		t.Fatal(err)
	}

	for _, tt := range []struct {
		name    string
		after   int
		limit   int  // the byte limit the export runs under
		bounded bool // reads only what follows the cursor
	}{
		{"after the long turns", n, limit, true},
		{"after the prompt", n + 1, limit, true},
		{"between a call and its result", n + 2, 8 << 20, false},
		{"at the end", n + 4, limit, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			counter := &readCounter{MessageService: store}
			after := tt.after
			inc, err := interop.New(store, store, counter).WithMaxBytes(tt.limit).Transcript(ctx, conv, parley.TranscriptOpenAIChat, parley.TranscriptOptions{After: &after})
			if err != nil {
				t.Fatal(err)
			}
			var got []json.RawMessage
			if err := json.Unmarshal(inc.Body, &got); err != nil {
				t.Fatal(err)
			}
			// One chat message per stored message here: the tail after the cursor.
			want := all[min(tt.after, len(all)):]
			if len(got) != len(want) {
				t.Fatalf("got %d messages, want %d: %s", len(got), len(want), inc.Body)
			}
			for i := range got {
				if string(got[i]) != string(want[i]) {
					t.Errorf("message %d: got %s, want %s", i, got[i], want[i])
				}
			}
			if tt.bounded && counter.read > 16<<10 {
				t.Errorf("read %d bytes, want only what follows the cursor (under 16 KiB)", counter.read)
			}
			if !tt.bounded && counter.read < n*size {
				t.Errorf("read %d bytes, want the whole history (%d bytes of text): what follows the cursor does not stand alone", counter.read, n*size)
			}
			if end := inc.Report.EndPosition; end != max(tt.after, n+4) {
				t.Errorf("endPosition: got %d, want %d", end, max(tt.after, n+4))
			}
		})
	}
}

// An incremental export whose cursor precedes a compaction is the transcript from the
// compaction, which holds the messages before the cursor it does not cover, as is one
// from the first message: both read what they need and equal the whole transcript.
func TestIncrementFromCompaction(t *testing.T) {
	t.Parallel()
	ctx := parley.WithOwner(context.Background(), parley.LocalOwner)
	store, err := db.Open(ctx, pgtest.NewDatabase(t), db.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	msgs := []obj{textMsg("USER", "one"), textMsg("ASSISTANT", "two"), textMsg("USER", "three"), textMsg("ASSISTANT", "four")}
	rep, err := interop.New(store, store, store).ImportConversation(ctx, parley.ImportParleyJSON, strings.NewReader(parleyDoc(t, msgs...)), parley.ImportTarget{})
	if err != nil {
		t.Fatal(err)
	}
	conv := rep.Conversation.ID
	if _, err := store.AddMessage(ctx, conv, &parley.CompactionMessage{Body: parley.TextBody("We counted to two."), CoversThrough: 2}); err != nil {
		t.Fatal(err)
	}
	if _, err := store.AddMessage(ctx, conv, &parley.TextMessage{MessageMeta: parley.MessageMeta{Role: parley.RoleUser}, Body: parley.TextBody("five")}); err != nil {
		t.Fatal(err)
	}
	svc := interop.New(store, store, store)
	whole, err := svc.Transcript(ctx, conv, parley.TranscriptOpenAIChat, parley.TranscriptOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(whole.Body), "We counted to two.") || !strings.Contains(string(whole.Body), "three") || strings.Contains(string(whole.Body), `"one"`) {
		t.Fatalf("the whole transcript does not start at the compaction: %s", whole.Body)
	}
	for _, after := range []int{0, 4} {
		inc, err := svc.Transcript(ctx, conv, parley.TranscriptOpenAIChat, parley.TranscriptOptions{After: &after})
		if err != nil {
			t.Fatal(err)
		}
		if string(inc.Body) != string(whole.Body) {
			t.Errorf("after %d: got %s, want the whole transcript %s", after, inc.Body, whole.Body)
		}
	}
}
