package realtime

import (
	"slices"

	"github.com/parley-dev/parley"
)

// The tail: the appends this process has just committed, kept by each conversation's
// topic so that its live subscribers at a stream's tail take them from memory instead of
// reading the database after every append. The writer's process hands each committed
// append to the Hub (PublishAppend) before acknowledging it; subscribers on other
// replicas are woken by the append's notification and read the database as before.
//
// What a subscriber takes from the tail is exactly what a read would give it: an append
// is published only once committed, a message's appends are kept only as one run of
// consecutive numbers, and a subscriber takes them only when that run continues its own
// number for the message. Anything else (a message it does not have open yet, a number
// the run does not reach back to, any other event, which marks it dirty) sends it to the
// database, whose read is authoritative. Nothing is ever taken from the tail that a read
// could not have given, so the two together stay gap-free, ordered and exactly-once.

// Bounds of a topic's tail: subscribers further behind read the database.
const (
	tailBatches  = 64        // appends kept per message
	tailBytes    = 256 << 10 // text kept per message (the newest append is kept whatever its size)
	tailMessages = 8         // messages with appends kept per conversation
)

// tail is a topic's recent appends, by message position.
type tail struct {
	version int64 // counts the appends published: a read from the tail is good for one version
	msgs    map[int]*msgTail
	// reads shares the reads made at version among subscribers at the same cursor, as
	// sharedRead does for the database's: the identity of their events.
	reads map[string]*liveRead
}

// msgTail is one message's latest appends: consecutive numbers, oldest first.
type msgTail struct {
	batches []parley.DeltaBatch
	bytes   int
	at      int64 // the tail's version when it last grew
}

func batchBytes(b *parley.DeltaBatch) int {
	n := 0
	for _, d := range b.Deltas {
		n += len(d.Text) + len(d.ToolCallID) + len(d.ToolName) + 16
	}
	return n
}

// add keeps b, the next committed append of its message. The caller holds t.mu.
func (t *tail) add(b parley.DeltaBatch) {
	t.version++
	if t.msgs == nil {
		t.msgs = map[int]*msgTail{}
	}
	m := t.msgs[b.Position]
	if m == nil {
		if len(t.msgs) >= tailMessages {
			oldest, at := 0, int64(-1)
			for pos, o := range t.msgs {
				if at < 0 || o.at < at {
					oldest, at = pos, o.at
				}
			}
			delete(t.msgs, oldest)
		}
		m = &msgTail{}
		t.msgs[b.Position] = m
	}
	if n := len(m.batches); n > 0 && (m.batches[n-1].Seq != b.Seq-1 || m.batches[n-1].MessageID != b.MessageID) {
		// Not the next of the run (an append came through another replica, or the
		// position holds another message): start again from this one.
		m.batches, m.bytes = nil, 0
	}
	m.batches = append(m.batches, b)
	m.bytes += batchBytes(&b)
	m.at = t.version
	for len(m.batches) > 1 && (len(m.batches) > tailBatches || m.bytes > tailBytes) {
		m.bytes -= batchBytes(&m.batches[0])
		m.batches = slices.Delete(m.batches, 0, 1)
	}
	clear(t.reads)
}

// read returns what a subscriber at c takes from the tail: the appends of its open
// messages after its numbers, shared with the subscribers at the same cursor (key). ok
// is false when the tail cannot serve it: an open message has appends in the tail that
// do not reach back to the subscriber's number. fresh says r was made for this call
// rather than shared. The caller holds t.mu.
func (t *tail) read(key string, c parley.StreamCursor) (r *liveRead, fresh, ok bool) {
	if r := t.reads[key]; r != nil {
		return r, false, true
	}
	var bs []parley.DeltaBatch
	for _, o := range c.Open {
		m := t.msgs[o.Position]
		if m == nil || m.batches[len(m.batches)-1].Seq <= o.Seq {
			continue
		}
		first := m.batches[0].Seq
		if first > o.Seq+1 {
			return nil, false, false
		}
		bs = append(bs, m.batches[o.Seq+1-first:]...)
	}
	r = &liveRead{r: parley.StreamRead{Batches: bs}}
	if t.reads == nil {
		t.reads = map[string]*liveRead{}
	}
	t.reads[key] = r
	return r, true, true
}

// PublishAppend hands the Hub an append this process has just committed to a message of
// the conversation, to be delivered to its live subscribers from memory. A nil b says
// an append may have been committed without its content being known here: the
// conversation's live subscribers read the database. It never blocks.
func (f *Hub) PublishAppend(conversationID string, b *parley.DeltaBatch) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	t := f.topics[conversationID]
	if t == nil {
		return
	}
	// A new epoch, so that a subscriber sent to the database after this append (one
	// behind the tail) does not share a read begun before it was committed.
	t.epoch.Add(1)
	if b != nil {
		t.mu.Lock()
		t.tail.add(*b)
		t.mu.Unlock()
	}
	// A subscriber at the tail takes the append from memory, without waiting: those
	// whose streams can be served so (parley.ReadyWaker) are woken one after another
	// from a goroutine of their own, within one batch (see serveReady), rather than
	// each from a goroutine of its own.
	var ready []*watcher
	for _, w := range t.watchers {
		if w != nil && w.kind == liveKind {
			if b == nil {
				w.dirty.Store(true)
			} else if w.onReady.Load() != nil {
				ready = append(ready, w)
				continue
			}
			w.wake()
		}
	}
	if len(ready) > 0 {
		go serveReady(ready, nil)
	}
}
