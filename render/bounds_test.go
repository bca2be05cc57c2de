package render

import (
	"strings"
	"testing"
	"time"

	"github.com/parley-dev/parley/internal/poll"
)

// TestHTMLBounded: inputs on which goldmark is quadratic (200 KB of '>' took 50 s) are
// served within the budget: over MaxMarkdownBytes as escaped text, under it rendered
// in the background when they take longer than the budget, and the rendering kept, so
// that the text renders when read again.
func TestHTMLBounded(t *testing.T) {
	t.Parallel()
	nestedList := func(depth int) string {
		var b strings.Builder
		for i := range depth {
			b.WriteString(strings.Repeat("  ", i) + "- a\n")
		}
		return b.String()
	}
	under := func(s string) string { return s[:min(len(s), DefaultMaxMarkdownBytes)] }
	r := New(Config{})
	// Generous for two loaded cores under -race; the budget is 250 ms.
	const bound = 5 * time.Second
	for _, tt := range []struct{ name, text string }{
		{"200 KB of >", strings.Repeat(">", 200<<10)},
		{"[a]( repeated", strings.Repeat("[a](", 50<<10)},
		{"3,000-deep list", nestedList(3000)},
		{"*a runs", strings.Repeat("*a", 100<<10)},
		{"32 KiB of >", under(strings.Repeat(">", 200<<10))},
		{"32 KiB of [a](", under(strings.Repeat("[a](", 50<<10))},
		{"32 KiB of *a", under(strings.Repeat("*a", 100<<10))},
		{"32 KiB of _a", under(strings.Repeat("_a", 100<<10))},
	} {
		start := time.Now()
		html := r.HTML(tt.text)
		took := time.Since(start)
		t.Logf("%s (%d bytes): %s", tt.name, len(tt.text), took)
		if took > bound {
			t.Errorf("%s: took %s, want under %s", tt.name, took, bound)
		}
		if !strings.HasPrefix(html, "<p>") && !strings.HasPrefix(html, "<blockquote>") && !strings.HasPrefix(html, "<ul>") {
			t.Errorf("%s: got %.80q, want HTML", tt.name, html)
		}
	}
	if got := r.HTML(strings.Repeat(">", 200<<10)); got != "<p>"+strings.Repeat("&gt;", 200<<10)+"</p>" {
		t.Errorf("a text over MaxMarkdownBytes: got %.80q, want it escaped in a paragraph", got)
	}

	// A text past the budget is escaped now and rendered when read again, once done.
	slow := New(Config{Budget: time.Millisecond})
	text := under(strings.Repeat("*a", 100<<10))
	if got := slow.HTML(text); got != escaped(text) {
		t.Fatalf("past the budget: got %.80q, want escaped text", got)
	}
	want := slow.render(text)
	poll.For(t, "the background rendering to be kept", time.Minute, func() bool { return slow.HTML(text) == want })
}
