package render

import (
	"fmt"
	"strings"
	"testing"
)

func TestHTMLCachedIsRendered(t *testing.T) {
	t.Parallel()
	r := New(Config{MaxCachedText: 1024})
	tests := []struct{ name, text string }{
		{"empty", ""},
		{"markdown", "**bold** and <script>x</script>"},
		{"long", strings.Repeat("word ", 400)},
	}
	for _, tc := range tests {
		want := r.render(tc.text)
		for i := range 2 { // rendered, then from the cache
			if got := r.HTML(tc.text); got != want {
				t.Errorf("%s, call %d: got %q, want %q", tc.name, i+1, got, want)
			}
		}
	}
	if _, ok := r.cache.get("**bold** and <script>x</script>"); !ok {
		t.Errorf("a short text's rendering was not kept")
	}
	if _, ok := r.cache.get(tests[2].text); ok {
		t.Errorf("a text over MaxCachedText was kept")
	}
}

func TestHTMLWithoutCache(t *testing.T) {
	t.Parallel()
	r := New(Config{CacheBytes: -1})
	if got, want := r.HTML("**bold**"), New(Config{}).HTML("**bold**"); got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	if r.cache != nil {
		t.Errorf("CacheBytes -1 made a cache")
	}
}

func TestHTMLCacheBoundedByBytes(t *testing.T) {
	t.Parallel()
	c := newHTMLCache(10 * entrySize("text-00", "html-00"))
	for i := range 50 {
		c.add(fmt.Sprintf("text-%02d", i), fmt.Sprintf("html-%02d", i))
		if c.bytes > c.max {
			t.Fatalf("after %d adds: %d bytes kept, want at most %d", i+1, c.bytes, c.max)
		}
	}
	if _, ok := c.get("text-00"); ok {
		t.Errorf("the oldest entry is still there")
	}
	if got, ok := c.get("text-49"); !ok || got != "html-49" {
		t.Errorf("newest entry: got %q, %v; want html-49, true", got, ok)
	}
	if n := c.lru.Len(); n != 10 {
		t.Errorf("got %d entries, want 10", n)
	}
	c.add("huge", strings.Repeat("x", c.max))
	if _, ok := c.get("huge"); ok {
		t.Errorf("an entry larger than an eighth of the cache was kept")
	}
}

// pageTexts are the texts a page of the benchmark history renders (bench/workload.go's
// mixed history: prompts, tool call notes, tool output, an MCP resource).
func pageTexts() []string {
	var texts []string
	for i := range 100 {
		switch i % 7 {
		case 0:
			t := fmt.Sprintf("Please look at **item %d** and tell me what <it> does.", i)
			texts = append(texts, t, t) // parts { html } and html
		case 1:
			texts = append(texts, "Reading it.")
		case 2:
			texts = append(texts, strings.Repeat("package main\n", 20))
		case 4:
			texts = append(texts, "CREATE TABLE t (a int);")
		}
	}
	return texts
}

// BenchmarkRenderPageCold renders a page's texts without the cache: what a read costs
// the first time, or after the renderings were evicted.
func BenchmarkRenderPageCold(b *testing.B) {
	texts := pageTexts()
	r := New(Config{})
	for b.Loop() {
		for _, t := range texts {
			r.render(t)
		}
	}
}

// BenchmarkRenderPageCached is the same once the renderings are cached.
func BenchmarkRenderPageCached(b *testing.B) {
	texts := pageTexts()
	r := New(Config{})
	for b.Loop() {
		for _, t := range texts {
			r.HTML(t)
		}
	}
}
