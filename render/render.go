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

	"github.com/microcosm-cc/bluemonday"
	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/extension"
)

// Config configures a Renderer. The zero value is the defaults.
type Config struct {
	// CacheBytes bounds the texts and renderings kept: DefaultCacheBytes when 0,
	// nothing kept when negative.
	CacheBytes int
	// MaxCachedText is the longest text whose rendering is kept: DefaultMaxCachedText
	// when 0.
	MaxCachedText int
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
		markdown:      goldmark.New(goldmark.WithExtensions(extension.GFM)),
		policy:        bluemonday.UGCPolicy(),
		maxCachedText: cfg.MaxCachedText,
	}
	if cfg.CacheBytes > 0 {
		r.cache = newHTMLCache(cfg.CacheBytes)
	}
	return r
}

// HTML renders text as Markdown (CommonMark with GitHub's extensions; raw HTML in the
// text is dropped by the renderer) and sanitizes the result, for rich display.
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
