// Package bufpool pools the byte buffers GraphQL responses are written into, by package
// graph's page writer and by its HTTP transport, which share them: a page of 100
// messages is some 70 KiB, and allocating its buffers for each request was a good part
// of what the garbage collector had to do (bench/NOTES.md).
package bufpool

import "sync"

// buffers holds the pooled buffers, each in a box (a *[]byte: a sync.Pool holds
// pointers without allocating); boxes holds the boxes Get emptied, for Put to fill
// again, so that neither allocates (a box a Put was one allocation per websocket
// delivery).
var buffers, boxes sync.Pool

// Get returns an empty buffer, with room for a page.
func Get() []byte {
	if p, ok := buffers.Get().(*[]byte); ok {
		b := (*p)[:0]
		*p = nil
		boxes.Put(p)
		return b
	}
	return make([]byte, 0, 64<<10)
}

// Put gives b back for another Get; the caller must not use it afterwards. A rare huge
// buffer is left to the garbage collector.
func Put(b []byte) {
	if cap(b) > 4<<20 {
		return
	}
	p, _ := boxes.Get().(*[]byte)
	if p == nil {
		p = new([]byte)
	}
	*p = b[:0]
	buffers.Put(p)
}
