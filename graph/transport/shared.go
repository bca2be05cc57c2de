package transport

import (
	"bytes"
	"context"
	"encoding/json"
	"sync"
	"sync/atomic"
	"unique"

	"github.com/99designs/gqlgen/graphql"
	lru "github.com/hashicorp/golang-lru/v2"

	"github.com/parley-dev/parley"
)

// sharedResults lets the subscribers of one event share its result. When a message is
// added to a conversation with a thousand subscribers, each used to run gqlgen's
// execution of its selection on the same message (about half of a delivery's CPU);
// now the first to get there executes it and the others frame the same bytes.
// Operations alike (the same document, operation name, variables and owner: shareKey)
// given the same event (the key its poll returned) get the same bytes. The results are
// kept briefly (an LRU of recent events), and those who arrive while the first is
// executing wait for its bytes rather than execute it too.
type sharedResults struct {
	recent *lru.Cache[sharedKey, []byte]
	// last is the result stored last: the one the subscribers of an event ask for, one
	// after another, read without the LRU's lock (which the CPUs serving them contend
	// for) or hashing the key.
	last atomic.Pointer[sharedEntry]

	mu      sync.Mutex
	running map[sharedKey]*sharedCall
}

// sharedEntry is a result and its key.
type sharedEntry struct {
	key  sharedKey
	data []byte
}

// sharedKey names one operation's result for one event.
type sharedKey struct {
	op    string
	event any
}

// sharedResultsSize bounds the results kept: one per (operation alike, event) recently
// delivered. An entry is only useful while the subscribers of one event are being
// served, a moment; the bound keeps memory flat whatever the traffic.
const sharedResultsSize = 4096

func newSharedResults() *sharedResults {
	c, err := lru.New[sharedKey, []byte](sharedResultsSize)
	if err != nil {
		panic(err) // only for a size below 1
	}
	return &sharedResults{recent: c, running: map[sharedKey]*sharedCall{}}
}

// shareKey identifies what an operation's results depend on besides the event: its
// document, operation name and variables, and whom it runs for. "" when it cannot be
// shared (variables that do not encode).
func shareKey(ctx context.Context, rc *graphql.OperationContext) string {
	vars, err := json.Marshal(rc.Variables) // map keys sorted: the same variables, the same bytes
	if err != nil {
		return ""
	}
	owner, _ := parley.OwnerFrom(ctx)
	var b bytes.Buffer
	b.Grow(len(rc.RawQuery) + len(rc.OperationName) + len(vars) + len(owner) + 3)
	b.WriteString(rc.RawQuery)
	b.WriteByte(0)
	b.WriteString(rc.OperationName)
	b.WriteByte(0)
	b.Write(vars)
	b.WriteByte(0)
	b.WriteString(owner)
	// One string for all the operations alike, so that comparing their keys (a look-up
	// a delivery) finds the same pointer rather than reading each one's own copy.
	return unique.Make(b.String()).Value()
}

// result returns the data of the operation's result for the event, executing it with
// execute (which must put the event where the operation reads it, and run it) only when
// no operation alike has or is doing so: those that arrive while one executes wait for
// its bytes. A result that is not plain data (errors, extensions) is never shared: then
// result returns nil data and the response to send, executed here (by a caller that
// waited, for itself); a nil response means the operation is over.
func (s *sharedResults) result(op string, event any, execute func() *graphql.Response) (data []byte, own *graphql.Response) {
	k := sharedKey{op, event}
	if e := s.last.Load(); e != nil && e.key.event == event && e.key.op == op {
		return e.data, nil
	}
	if d, ok := s.recent.Get(k); ok {
		return d, nil
	}
	s.mu.Lock()
	if c := s.running[k]; c != nil {
		s.mu.Unlock()
		<-c.done
		if c.data != nil {
			return c.data, nil
		}
		return nil, execute()
	}
	// A call that finished between the look-up above and the lock has put its result
	// in recent before leaving running: look again before executing it a second time.
	if d, ok := s.recent.Get(k); ok {
		s.mu.Unlock()
		return d, nil
	}
	c := &sharedCall{done: make(chan struct{})}
	s.running[k] = c
	s.mu.Unlock()
	resp := execute()
	if plainData(resp) {
		c.data = bytes.Clone(resp.Data) // shared from now on: nobody may reuse its buffer
		s.recent.Add(k, c.data)
		s.last.Store(&sharedEntry{k, c.data})
	}
	s.mu.Lock()
	delete(s.running, k)
	s.mu.Unlock()
	close(c.done)
	if c.data != nil {
		return c.data, nil
	}
	return nil, resp
}

// sharedCall is an execution under way whose result others wait for.
type sharedCall struct {
	done chan struct{} // closed when data is set (nil: not shared)
	data []byte
}

// plainData reports whether resp is data alone, the result of an event: what can be
// framed by hand and shared.
func plainData(resp *graphql.Response) bool {
	return resp != nil && len(resp.Errors) == 0 && len(resp.Extensions) == 0 && len(resp.Data) > 0 &&
		resp.Label == "" && resp.Path == nil && resp.HasNext == nil
}
