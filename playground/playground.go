// Package playground serves the GraphiQL IDE from assets embedded in the binary, so the
// IDE works with no request leaving the server's origin (gqlgen's stock playground loads
// GraphiQL from a CDN and shows a blank page offline).
//
// The assets are GraphiQL 3.9.0's UMD build with React 18.3.1, fetched by
// update-assets.sh and listed with their licences in assets/VERSIONS, plus Parley's own
// playground.js and playground.css. They are served under content-hashed names with
// long-lived cache headers; the page itself is rendered per request with a strict
// Content-Security-Policy.
package playground

import (
	"bytes"
	"crypto/rand"
	"embed"
	"encoding/base64"
	"html/template"
	"net/http"
	"strings"
	"sync"

	"github.com/parley-dev/parley/internal/webasset"
)

// DefaultQuery is the query GraphiQL shows to a visitor who has none saved in the browser.
const DefaultQuery = `# The ten most recently updated conversations.
# Run with the play button or Ctrl-Enter.
{
  conversations(first: 10) {
    edges {
      node {
        id
        title
        messageCount
      }
    }
  }
}
`

// DefaultAssetPrefix is the URL path under which Parley serves the playground's assets.
const DefaultAssetPrefix = "/playground/assets/"

// Handler serves the GraphiQL page at "/" and its assets under assetPrefix (a URL path
// such as DefaultAssetPrefix, starting and ending with "/"); every other path is a 404.
// Paths are matched against r.URL.Path as received, so mount the handler without
// stripping a prefix: mux.Handle("/", h) serves both, or mount the same handler on "/"
// and on assetPrefix. Only GET and HEAD are allowed.
//
// endpoint is the GraphQL URL, e.g. "/graphql", resolved against the page's location.
// GraphiQL sends queries and mutations to it over HTTP and subscriptions over a websocket
// (graphql-transport-ws) at the same path, with ws: or wss: following the page's scheme.
//
// Handler panics if assetPrefix is not of that form: that is a programming error.
func Handler(title, endpoint, assetPrefix string) http.Handler {
	if !strings.HasPrefix(assetPrefix, "/") || !strings.HasSuffix(assetPrefix, "/") || assetPrefix == "/" {
		panic("playground: asset prefix must start and end with \"/\" and not be \"/\", got " + assetPrefix)
	}
	byName := loadAssets()
	h := &handler{
		title:    title,
		endpoint: endpoint,
		prefix:   assetPrefix,
		assets:   make(map[string]*webasset.Asset, len(byName)),
	}
	for _, a := range byName {
		h.assets[a.HashedName] = a
	}
	for _, name := range pageStyles {
		h.styles = append(h.styles, assetPrefix+byName[name].HashedName)
	}
	for _, name := range pageScripts {
		h.scripts = append(h.scripts, assetPrefix+byName[name].HashedName)
	}
	return h
}

// The page's stylesheets and scripts, in the order they must load: GraphiQL's UMD build
// expects the React and ReactDOM globals, playground.js expects all three.
var (
	pageStyles  = []string{"graphiql.min.css", "playground.css"}
	pageScripts = []string{"react.production.min.js", "react-dom.production.min.js", "graphiql.min.js", "playground.js"}
)

type handler struct {
	title, endpoint, prefix string
	assets                  map[string]*webasset.Asset // by hashed name
	styles, scripts         []string                   // URLs
}

func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	p := r.URL.Path
	if p != "/" && !strings.HasPrefix(p, h.prefix) {
		http.NotFound(w, r)
		return
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, http.StatusText(http.StatusMethodNotAllowed), http.StatusMethodNotAllowed)
		return
	}
	if p == "/" {
		h.servePage(w, r)
		return
	}
	a, ok := h.assets[strings.TrimPrefix(p, h.prefix)]
	if !ok {
		http.NotFound(w, r)
		return
	}
	a.ServeHTTP(w, r)
}

var pageTemplate = template.Must(template.New("page").Parse(`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{{.Title}}</title>
<link rel="icon" href="data:,">
{{range .Styles}}<link rel="stylesheet" href="{{.}}">
{{end}}</head>
<body>
<div id="graphiql" data-endpoint="{{.Endpoint}}" data-default-query="{{.DefaultQuery}}">Loading GraphiQL…</div>
<noscript>GraphiQL needs JavaScript.</noscript>
{{range .Scripts}}<script src="{{.}}" nonce="{{$.Nonce}}"></script>
{{end}}</body>
</html>
`))

func (h *handler) servePage(w http.ResponseWriter, r *http.Request) {
	nonce := newNonce()
	var buf bytes.Buffer
	err := pageTemplate.Execute(&buf, struct {
		Title, Endpoint, DefaultQuery, Nonce string
		Styles, Scripts                      []string
	}{h.title, h.endpoint, DefaultQuery, nonce, h.styles, h.scripts})
	if err != nil {
		// The template and its data are fixed: only a broken build gets here.
		http.Error(w, http.StatusText(http.StatusInternalServerError), http.StatusInternalServerError)
		return
	}
	hdr := w.Header()
	hdr.Set("Content-Type", "text/html; charset=utf-8")
	hdr.Set("Content-Security-Policy", contentSecurityPolicy(nonce, r.Host))
	// The nonce changes with every response, so a stored copy would be stale.
	hdr.Set("Cache-Control", "no-store")
	hdr.Set("X-Content-Type-Options", "nosniff")
	hdr.Set("Referrer-Policy", "no-referrer")
	w.Write(buf.Bytes())
}

// contentSecurityPolicy allows the page only what GraphiQL 3 was seen to need in Chromium:
//   - scripts: the same-origin files; no inline script and no eval (GraphiQL 3 needs neither).
//   - styles: the same-origin stylesheets, plus <style> elements carrying the page's nonce,
//     which react-remove-scroll adds while a dialog is open. Style attributes set from script
//     (React's style prop, CodeMirror's layout) go through the CSSOM, which CSP does not
//     restrict, so no 'unsafe-inline'.
//   - fonts: GraphiQL's stylesheet embeds its fonts as data: URLs; it loads no font files.
//   - images: data: only, for the images GraphiQL's CSS embeds (and the empty favicon,
//     which spares the browser a request for /favicon.ico).
//   - connect: the GraphQL endpoint over HTTP and websocket. CSP Level 3 browsers let 'self'
//     match ws:/wss: on the page's host; older ones need the host spelled out, which is done
//     only when the Host header is a plain host[:port] so nothing can be injected.
func contentSecurityPolicy(nonce, host string) string {
	return strings.Join([]string{
		"default-src 'none'",
		"script-src 'self'",
		"style-src 'self' 'nonce-" + nonce + "'",
		"font-src data:",
		"img-src data:",
		"connect-src " + webasset.ConnectSrc(host),
		"base-uri 'none'",
		"form-action 'none'",
		"frame-ancestors 'none'",
	}, "; ")
}

// newNonce returns 128 random bits in URL-safe base64, which CSP accepts as a nonce and
// HTML needs no escaping for.
func newNonce() string {
	b := make([]byte, 16)
	rand.Read(b) // never fails: it crashes the program if the system has no randomness
	return base64.RawURLEncoding.EncodeToString(b)
}

// assetsFS holds the files the page loads. VERSIONS and the licence files stay out of the
// binary; they document the assets in the repository.
//
//go:embed assets/*.js assets/*.css
var assetsFS embed.FS

// loadAssets reads the embedded assets once and names them by content hash.
var loadAssets = sync.OnceValue(func() map[string]*webasset.Asset {
	return webasset.Load(assetsFS, "assets", "playground", append(append([]string{}, pageStyles...), pageScripts...)...)
})
