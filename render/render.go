// Package render turns message text into the HTML the API serves in its html fields:
// Markdown (CommonMark with GitHub's extensions) rendered with goldmark and sanitized
// with bluemonday's user-generated-content policy, with recent renderings kept in a
// cache bounded by bytes.
//
// The domain keeps the text rules (parley.CleanText, parley.EscapeHTML); rendering is a
// presentation concern with its own dependencies and state, so the GraphQL adapter
// holds a *Renderer, built once where the server is wired.
package render

import (
	"bytes"
	"html"
	"regexp"
	"runtime"
	"strings"
	"time"

	"github.com/microcosm-cc/bluemonday"
	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/extension"
	"github.com/yuin/goldmark/renderer"
	gmhtml "github.com/yuin/goldmark/renderer/html"
	"github.com/yuin/goldmark/util"
)

// Config configures a Renderer. The zero value is the defaults.
type Config struct {
	// CacheBytes bounds the texts and renderings kept: DefaultCacheBytes when 0,
	// nothing kept when negative.
	CacheBytes int
	// MaxCachedText is the longest text whose rendering is kept: DefaultMaxCachedText
	// when 0.
	MaxCachedText int
	// ImageHosts are the hosts images in the text may load from by themselves, as
	// patterns ("images.example.com", "*.example.com"; "*" for every host). Images
	// elsewhere are rendered as links to them (see markdown.go). None by default.
	ImageHosts []string
	// MaxMarkdownBytes is the longest text rendered as Markdown: longer texts are
	// served as escaped text in a paragraph (DefaultMaxMarkdownBytes when 0).
	MaxMarkdownBytes int
	// Budget is how long one rendering may take before the caller gets escaped text
	// instead (DefaultBudget when 0); the rendering goes on in the background, at most
	// one per CPU at once, and its outcome is kept, so the text renders when read again.
	Budget time.Duration
}

// The defaults.
const (
	// DefaultCacheBytes bounds the cache.
	DefaultCacheBytes = 32 << 20
	// DefaultMaxCachedText is the longest text cached: every text rendered as Markdown
	// (DefaultMaxMarkdownBytes), since some inputs of that size cost seconds to render.
	DefaultMaxCachedText = DefaultMaxMarkdownBytes
	// DefaultMaxMarkdownBytes bounds the Markdown rendered: goldmark's parser is
	// quadratic on some inputs (nested block quotes, unclosed links, runs of emphasis
	// markers), so that 200 KB of '>' took 50 s; at 32 KiB the worst known input takes
	// seconds of one CPU, in the background (Budget).
	DefaultMaxMarkdownBytes = 32 << 10
	// DefaultBudget is how long a reader waits for one rendering.
	DefaultBudget = 250 * time.Millisecond
)

// Renderer renders text to sanitized HTML. It is safe for concurrent use.
type Renderer struct {
	markdown goldmark.Markdown
	// policy allows what user-generated Markdown renders to, and nothing that runs.
	policy        *bluemonday.Policy
	cache         *htmlCache // nil: nothing kept
	maxCachedText int
	maxMarkdown   int
	budget        time.Duration
	// slots holds one token per rendering running, one per CPU: a reader waits for
	// one within the budget.
	slots chan struct{}
}

// New returns a Renderer configured by cfg.
func New(cfg Config) *Renderer {
	if cfg.CacheBytes == 0 {
		cfg.CacheBytes = DefaultCacheBytes
	}
	if cfg.MaxCachedText == 0 {
		cfg.MaxCachedText = DefaultMaxCachedText
	}
	if cfg.MaxMarkdownBytes <= 0 {
		cfg.MaxMarkdownBytes = DefaultMaxMarkdownBytes
	}
	if cfg.Budget <= 0 {
		cfg.Budget = DefaultBudget
	}
	r := &Renderer{
		markdown:      newMarkdown(cfg.ImageHosts),
		policy:        newPolicy(),
		maxCachedText: cfg.MaxCachedText,
		maxMarkdown:   cfg.MaxMarkdownBytes,
		budget:        cfg.Budget,
		slots:         make(chan struct{}, runtime.GOMAXPROCS(0)),
	}
	if cfg.CacheBytes > 0 {
		r.cache = newHTMLCache(cfg.CacheBytes)
	}
	return r
}

// HTML renders text as Markdown (CommonMark with GitHub's extensions and footnotes; raw
// HTML in the text shown as text; images from hosts not allowed as links) and sanitizes
// the result, for rich display.
// Renderings of recent texts are kept, so rendering a text again costs a lookup. A
// text over MaxMarkdownBytes is escaped text in a paragraph; so is one whose rendering
// (waiting for a CPU included) takes longer than the budget: it renders when read
// again, once the background rendering is done.
func (r *Renderer) HTML(text string) string {
	if text == "" {
		return ""
	}
	if len(text) > r.maxMarkdown {
		return escaped(text)
	}
	cacheable := r.cache != nil && len(text) <= r.maxCachedText
	if cacheable {
		if html, ok := r.cache.get(text); ok {
			return html
		}
	}
	timer := time.NewTimer(r.budget)
	defer timer.Stop()
	select {
	case r.slots <- struct{}{}:
	case <-timer.C:
		return escaped(text)
	}
	done := make(chan string, 1)
	go func() {
		defer func() { <-r.slots }()
		html := r.render(text)
		if cacheable {
			r.cache.add(text, html)
		}
		done <- html
	}()
	select {
	case html := <-done:
		return html
	case <-timer.C:
		return escaped(text)
	}
}

// newMarkdown returns the Markdown converter: GitHub's extensions (tables, task lists,
// strikethrough, autolinks), footnotes, and the overrides of markdown.go.
func newMarkdown(imageHosts []string) goldmark.Markdown {
	hosts := make([]string, len(imageHosts))
	for i, h := range imageHosts {
		hosts[i] = strings.ToLower(strings.TrimSpace(h))
	}
	o := &markdownOverrides{Config: gmhtml.NewConfig(), imageHosts: hosts}
	return goldmark.New(
		goldmark.WithExtensions(extension.GFM, extension.Footnote),
		goldmark.WithRendererOptions(renderer.WithNodeRenderers(util.Prioritized(o, overridePriority))),
	)
}

// newPolicy returns the sanitizer: bluemonday's policy for user-generated content, plus
// what the Markdown renders that a frontend needs and that cannot run: a fenced code
// block's language (class="language-go", for highlighters), task list checkboxes
// (disabled), and footnotes' classes and roles.
func newPolicy() *bluemonday.Policy {
	p := bluemonday.UGCPolicy()
	p.AllowAttrs("class").Matching(regexp.MustCompile(`^language-[\w.+#-]{1,40}$`)).OnElements("code")
	p.AllowAttrs("type").Matching(regexp.MustCompile(`^checkbox$`)).OnElements("input")
	p.AllowAttrs("checked", "disabled").Matching(regexp.MustCompile(`^$`)).OnElements("input")
	p.AllowAttrs("class").Matching(regexp.MustCompile(`^(footnote-ref|footnote-backref|footnotes)$`)).OnElements("a", "div")
	p.AllowAttrs("role").Matching(regexp.MustCompile(`^doc-(noteref|endnotes|backlink)$`)).OnElements("a", "div")
	return p
}

// escaped is text as HTML without Markdown: what html holds when rendering is refused.
func escaped(text string) string { return "<p>" + html.EscapeString(text) + "</p>" }

// render renders and sanitizes text, without the cache or bounds.
func (r *Renderer) render(text string) string {
	if text == "" {
		return ""
	}
	var buf bytes.Buffer
	if err := r.markdown.Convert([]byte(text), &buf); err != nil {
		return escaped(text)
	}
	return r.policy.Sanitize(buf.String())
}
