package render

import (
	"sync"

	"github.com/hashicorp/golang-lru/v2/simplelru"
)

// Rendering Markdown and sanitizing the result is the dearest part of reading a message
// with its html; and histories are read again and again (a frontend paging back and
// forth, an LLM backend re-reading the conversation every turn). So a Renderer keeps
// what it rendered, by text, in a cache bounded by bytes: the output depends on nothing
// but the text and this code, so an entry is never stale, and a restart (a new renderer
// or sanitizer policy) starts empty.

// htmlCache is an LRU cache of renderings, bounded by bytes.
type htmlCache struct {
	mu    sync.Mutex
	lru   *simplelru.LRU[string, string]
	bytes int
	max   int
}

func newHTMLCache(maxBytes int) *htmlCache {
	c := &htmlCache{max: maxBytes}
	// The count bound is never the one reached: bytes are.
	c.lru, _ = simplelru.NewLRU(maxBytes/64+1, func(text, html string) { c.bytes -= entrySize(text, html) })
	return c
}

// entrySize approximates what an entry holds: both strings and the LRU's bookkeeping.
func entrySize(text, html string) int { return len(text) + len(html) + 128 }

func (c *htmlCache) get(text string) (string, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.lru.Get(text)
}

func (c *htmlCache) add(text, html string) {
	size := entrySize(text, html)
	if size > c.max/8 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.lru.Contains(text) {
		return
	}
	c.lru.Add(text, html)
	c.bytes += size
	for c.bytes > c.max {
		c.lru.RemoveOldest()
	}
}
