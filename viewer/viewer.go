// Package viewer serves the built-in history viewer: a list of conversations at
// /viewer/ and one conversation at /viewer/c/{id}, read through the same GraphQL
// endpoint (queries over HTTP, subscriptions over graphql-transport-ws) every other
// client uses. Pages are a small server-rendered shell (html/template, a strict
// Content-Security-Policy with no inline script) and viewer.js, plain JavaScript with
// no build step, which renders what the API returns. Every asset is embedded in the
// binary and served from the server's own origin: the viewer works offline.
//
// Third-party assets (graphql-ws's client, highlight.js's common bundle and two of its
// themes) are vendored from npm by update-assets.sh, pinned by integrity and listed in
// assets/VERSIONS.
package viewer

import (
	"bytes"
	"embed"
	"html/template"
	"net/http"
	"strings"
	"sync"

	"github.com/parley-dev/parley/internal/webasset"
)

// Prefix is the URL path the viewer is served under.
const Prefix = "/viewer/"

const assetPrefix = Prefix + "assets/"

// Handler serves the viewer's pages and assets under Prefix; endpoint is the GraphQL
// URL ("/graphql"). Only GET and HEAD are allowed.
func Handler(endpoint string) http.Handler {
	byName := loadAssets()
	h := &handler{endpoint: endpoint, assets: map[string]*webasset.Asset{}, urls: map[string]string{}}
	for name, a := range byName {
		h.assets[a.HashedName] = a
		h.urls[name] = assetPrefix + a.HashedName
	}
	return h
}

type handler struct {
	endpoint string
	assets   map[string]*webasset.Asset // by hashed name
	urls     map[string]string          // by file name
}

func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, http.StatusText(http.StatusMethodNotAllowed), http.StatusMethodNotAllowed)
		return
	}
	p := r.URL.Path
	switch {
	case p == "/viewer" || p == Prefix:
		if p == "/viewer" {
			http.Redirect(w, r, Prefix, http.StatusMovedPermanently)
			return
		}
		h.servePage(w, r, "list", "")
	case strings.HasPrefix(p, Prefix+"c/"):
		id := strings.TrimPrefix(p, Prefix+"c/")
		if id == "" || strings.Contains(id, "/") {
			http.NotFound(w, r)
			return
		}
		h.servePage(w, r, "conversation", id)
	case strings.HasPrefix(p, assetPrefix):
		a, ok := h.assets[strings.TrimPrefix(p, assetPrefix)]
		if !ok {
			http.NotFound(w, r)
			return
		}
		a.ServeHTTP(w, r)
	default:
		http.NotFound(w, r)
	}
}

var pageTemplate = template.Must(template.New("page").Parse(`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="color-scheme" content="light dark">
<meta name="referrer" content="no-referrer">
<title>Parley</title>
<link rel="icon" href="data:,">
<link rel="stylesheet" href="{{index .URLs "hljs-light.min.css"}}" media="(prefers-color-scheme: light)">
<link rel="stylesheet" href="{{index .URLs "hljs-dark.min.css"}}" media="(prefers-color-scheme: dark)">
<link rel="stylesheet" href="{{index .URLs "viewer.css"}}">
</head>
<body>
<a class="skip" href="#main">Skip to content</a>
<header class="bar">
<a class="brand" href="/viewer/" id="home">Parley</a>
<span id="banner" class="banner" role="status" hidden></span>
<nav aria-label="Elsewhere"><a href="/">Playground</a></nav>
</header>
<main id="main" tabindex="-1" data-page="{{.Page}}" data-id="{{.ID}}" data-endpoint="{{.Endpoint}}">
<p class="loading">Loading…</p>
<noscript>The viewer needs JavaScript.</noscript>
</main>
<div id="announce" class="sr-only" aria-live="polite"></div>
<script src="{{index .URLs "graphql-ws.min.js"}}"></script>
<script src="{{index .URLs "highlight.min.js"}}"></script>
<script src="{{index .URLs "viewer.js"}}"></script>
</body>
</html>
`))

func (h *handler) servePage(w http.ResponseWriter, r *http.Request, page, id string) {
	var buf bytes.Buffer
	err := pageTemplate.Execute(&buf, struct {
		Page, ID, Endpoint string
		URLs               map[string]string
	}{page, id, h.endpoint, h.urls})
	if err != nil {
		http.Error(w, http.StatusText(http.StatusInternalServerError), http.StatusInternalServerError)
		return
	}
	hdr := w.Header()
	hdr.Set("Content-Type", "text/html; charset=utf-8")
	hdr.Set("Content-Security-Policy", contentSecurityPolicy(r.Host))
	hdr.Set("Cache-Control", "no-store")
	hdr.Set("X-Content-Type-Options", "nosniff")
	// A share link carries its credential in the fragment, which no request sends; no
	// referrer either, so links followed from a message learn nothing of the page.
	hdr.Set("Referrer-Policy", "no-referrer")
	w.Write(buf.Bytes())
}

// contentSecurityPolicy allows the page its own scripts and styles only: no inline
// script, no eval, no inline style (viewer.js sets classes, never style attributes),
// images from data: URLs only (an image message's base64 bytes; images elsewhere are
// links, as the API's html renders them), and connections to its own origin, websockets
// included (spelled out for browsers before CSP Level 3 when Host is a plain host).
// Whatever a message holds, nothing in it can run or load from elsewhere.
func contentSecurityPolicy(host string) string {
	return strings.Join([]string{
		"default-src 'none'",
		"script-src 'self'",
		"style-src 'self'",
		"img-src data:",
		"connect-src " + webasset.ConnectSrc(host),
		"base-uri 'none'",
		"form-action 'none'",
		"frame-ancestors 'none'",
	}, "; ")
}

//go:embed assets/*.js assets/*.css
var assetsFS embed.FS

var loadAssets = sync.OnceValue(func() map[string]*webasset.Asset {
	return webasset.Load(assetsFS, "assets", "viewer",
		"viewer.js", "viewer.css", "graphql-ws.min.js", "highlight.min.js", "hljs-light.min.css", "hljs-dark.min.css")
})
