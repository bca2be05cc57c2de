package interop_test

import (
	"context"
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
