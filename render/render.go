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
	"strings"

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
}

// The defaults.
const (
	// DefaultCacheBytes bounds the cache.
	DefaultCacheBytes = 32 << 20
	// DefaultMaxCachedText is the longest text cached: longer ones are rare, dear to
	// keep and cheap relative to their size to render again.
	DefaultMaxCachedText = 64 << 10
)

// Renderer renders text to sanitized HTML. It is safe for concurrent use.
type Renderer struct {
	markdown goldmark.Markdown
	// policy allows what user-generated Markdown renders to, and nothing that runs.
	policy        *bluemonday.Policy
	cache         *htmlCache // nil: nothing kept
	maxCachedText int
}

// New returns a Renderer configured by cfg.
func New(cfg Config) *Renderer {
	if cfg.CacheBytes == 0 {
		cfg.CacheBytes = DefaultCacheBytes
	}
	if cfg.MaxCachedText == 0 {
		cfg.MaxCachedText = DefaultMaxCachedText
	}
	r := &Renderer{
		markdown:      newMarkdown(cfg.ImageHosts),
		policy:        newPolicy(),
		maxCachedText: cfg.MaxCachedText,
	}
	if cfg.CacheBytes > 0 {
		r.cache = newHTMLCache(cfg.CacheBytes)
	}
	return r
}

// HTML renders text as Markdown (CommonMark with GitHub's extensions and footnotes; raw
// HTML in the text shown as text; images from hosts not allowed as links) and sanitizes
// the result, for rich display.
// Renderings of recent texts are kept, so rendering a text again costs a lookup.
func (r *Renderer) HTML(text string) string {
	if text == "" || r.cache == nil || len(text) > r.maxCachedText {
		return r.render(text)
	}
	if html, ok := r.cache.get(text); ok {
		return html
	}
	html := r.render(text)
	r.cache.add(text, html)
	return html
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

// render renders and sanitizes text, without the cache.
func (r *Renderer) render(text string) string {
	if text == "" {
		return ""
	}
	var buf bytes.Buffer
	if err := r.markdown.Convert([]byte(text), &buf); err != nil {
		return "<p>" + html.EscapeString(text) + "</p>"
	}
	return r.policy.Sanitize(buf.String())
}
