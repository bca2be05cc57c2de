package db_test

import (
	"database/sql"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/parley-dev/parley"
	"github.com/parley-dev/parley/db"
	"github.com/parley-dev/parley/internal/pgtest"
)

// TestGroupCommit: appends to many messages at once, each sent twice at the same time
// (a writer's retry racing its first try), are all acknowledged with their own number,
// stored once each, and written in fewer transactions than appends (rows written by one
// statement share their xmin).
func TestGroupCommit(t *testing.T) {
	t.Parallel()
	ctx := parley.WithOwner(t.Context(), parley.LocalOwner)
	d, err := db.Open(ctx, pgtest.NewDatabase(t), db.Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	const streams, appends = 40, 25
	ids := make([]string, streams)
	for i := range ids {
		c, err := d.CreateConversation(ctx, fmt.Sprintf("c%d", i))
		if err != nil {
			t.Fatal(err)
		}
		m, err := d.StartMessage(ctx, c.ID, parley.StartMessage{})
		if err != nil {
			t.Fatal(err)
		}
		ids[i] = m.Meta().ID
	}
	var wg sync.WaitGroup
	errs := make(chan error, streams*appends*2)
	for _, id := range ids {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for seq := 1; seq <= appends; seq++ {
				var tries sync.WaitGroup
				for range 2 {
					tries.Add(1)
					go func() {
						defer tries.Done()
						ack, err := d.AppendDeltas(ctx, id, seq, []parley.Delta{{Kind: parley.DeltaText, Text: fmt.Sprintf("t%d ", seq)}})
						if err == nil && ack.Seq != seq {
							err = fmt.Errorf("append %d to %s acknowledged %d", seq, id, ack.Seq)
						}
						if err != nil {
							errs <- err
						}
					}()
				}
				tries.Wait()
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	var want strings.Builder
	for seq := 1; seq <= appends; seq++ {
		fmt.Fprintf(&want, "t%d ", seq)
	}
	for _, id := range ids {
		m, err := d.EndMessage(ctx, id, parley.End{Status: parley.StatusCompleted})
		if err != nil {
			t.Fatal(err)
		}
		if got := m.(*parley.TextMessage).Body.Text(); got != want.String() {
			t.Errorf("%s: got %q, want %q", id, got, want.String())
		}
	}
	// EndMessage deleted the rows; the messages' stream_seq and the WAL are what is left.
	// Count the transactions of a second round instead, left in place.
	for i := range ids {
		c, err := d.CreateConversation(ctx, fmt.Sprintf("d%d", i))
		if err != nil {
			t.Fatal(err)
		}
		m, err := d.StartMessage(ctx, c.ID, parley.StartMessage{})
		if err != nil {
			t.Fatal(err)
		}
		ids[i] = m.Meta().ID
	}
	for _, id := range ids {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for seq := 1; seq <= appends; seq++ {
				if _, err := d.AppendDeltas(ctx, id, seq, []parley.Delta{{Kind: parley.DeltaText, Text: "x"}}); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	var rows, txs int
	if err := d.SQL().QueryRowContext(ctx, `SELECT count(*), count(DISTINCT xmin::text) FROM message_deltas`).Scan(&rows, &txs); err != nil {
		t.Fatal(err)
	}
	if rows != streams*appends || txs >= rows {
		t.Errorf("got %d rows written by %d transactions, want %d rows in fewer transactions", rows, txs, streams*appends)
	}
	t.Logf("%d appends in %d transactions", rows, txs)
}

// TestGroupCommitFailsAlone: an append Postgres refuses fails alone; the others of its
// batch are written.
func TestGroupCommitFailsAlone(t *testing.T) {
	t.Parallel()
	ctx := parley.WithOwner(t.Context(), parley.LocalOwner)
	d, err := db.Open(ctx, pgtest.NewDatabase(t), db.Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	var batch []*db.TestAppend
	for i, deltas := range []string{`[{"k":"TEXT","i":0,"t":"fine"}]`, `not JSON`} {
		c, err := d.CreateConversation(ctx, fmt.Sprintf("c%d", i))
		if err != nil {
			t.Fatal(err)
		}
		m, err := d.StartMessage(ctx, c.ID, parley.StartMessage{})
		if err != nil {
			t.Fatal(err)
		}
		key, _ := parley.ParseMessageID(m.Meta().ID)
		batch = append(batch, &db.TestAppend{Key: key, Seq: 1, Deltas: deltas})
	}
	d.FlushAppends(parley.LocalOwner, batch)
	if a := batch[0]; !a.OK || a.Err != nil {
		t.Errorf("the good append: ok %v, err %v; want it written", a.OK, a.Err)
	}
	if a := batch[1]; a.OK || a.Err == nil {
		t.Errorf("the bad append: ok %v, err %v; want an error", a.OK, a.Err)
	}
	for i, want := range []int{1, 0} {
		var seq int
		var n sql.NullInt64
		if err := d.SQL().QueryRowContext(ctx, `SELECT stream_seq, (SELECT count(*) FROM message_deltas WHERE message_id = $1)
			FROM messages WHERE id = $1`, batch[i].Key).Scan(&seq, &n); err != nil {
			t.Fatal(err)
		}
		if seq != want || int(n.Int64) != want {
			t.Errorf("message %d: stream_seq %d with %d rows, want %d", i, seq, n.Int64, want)
		}
	}
}
