package playground_test

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"html"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"

	"github.com/parley-dev/parley/playground"
)

const prefix = "/playground/assets/"

// newServer mounts the playground the way Parley does: on "/" of a ServeMux, with the
// GraphQL endpoint beside it.
func newServer(t *testing.T) *httptest.Server {
	t.Helper()
	mux := http.NewServeMux()
	mux.Handle("/", playground.Handler("Parley <IDE>", "/graphql", prefix))
	mux.HandleFunc("/graphql", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"data":{"__typename":"Query"}}`)
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv
}

func get(t *testing.T, url string, header http.Header) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range header {
		req.Header[k] = v
	}
	// The transport would ask for gzip and decode it silently; ask explicitly instead.
	if req.Header.Get("Accept-Encoding") == "" {
		req.Header.Set("Accept-Encoding", "identity")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, body
}

var (
	srcHrefRE = regexp.MustCompile(`(?i)\s(?:src|href)\s*=\s*"([^"]*)"`)
	scriptRE  = regexp.MustCompile(`(?is)<script\b([^>]*)>(.*?)</script>`)
	styleRE   = regexp.MustCompile(`(?i)<style\b|\sstyle\s*=`)
)

// pageAssets returns the URLs of the scripts and stylesheets the page loads.
func pageAssets(t *testing.T, page string) []string {
	t.Helper()
	var urls []string
	for _, m := range srcHrefRE.FindAllStringSubmatch(page, -1) {
		u := html.UnescapeString(m[1])
		if u == "data:," { // the empty favicon
			continue
		}
		urls = append(urls, u)
	}
	return urls
}

func TestPage(t *testing.T) {
	t.Parallel()
	srv := newServer(t)
	resp, body := get(t, srv.URL+"/", nil)
	page := string(body)

	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /: got status %d, want 200", resp.StatusCode)
	}
	if got, want := resp.Header.Get("Content-Type"), "text/html; charset=utf-8"; got != want {
		t.Errorf("Content-Type: got %q, want %q", got, want)
	}
	if got, want := resp.Header.Get("Cache-Control"), "no-store"; got != want {
		t.Errorf("Cache-Control: got %q, want %q", got, want)
	}
	for _, s := range []string{"http://", "https://"} {
		if strings.Contains(page, s) {
			t.Errorf("page contains %q; it must load nothing from another origin:\n%s", s, page)
		}
	}
	if !strings.Contains(page, `<title>Parley &lt;IDE&gt;</title>`) {
		t.Errorf("page does not carry the escaped title:\n%s", page)
	}
	if !strings.Contains(page, `data-endpoint="/graphql"`) {
		t.Errorf("page does not name the endpoint /graphql:\n%s", page)
	}
	if !strings.Contains(html.UnescapeString(page), "conversations(first: 10)") {
		t.Errorf("page does not carry the default query:\n%s", page)
	}
	// The CSP forbids inline code, so the page must not need any.
	for _, m := range scriptRE.FindAllStringSubmatch(page, -1) {
		if strings.TrimSpace(m[2]) != "" || !strings.Contains(m[1], "src=") {
			t.Errorf("inline script %q: the CSP would block it", m[0])
		}
	}
	if styleRE.MatchString(page) {
		t.Errorf("page has inline styles: the CSP would block them:\n%s", page)
	}

	urls := pageAssets(t, page)
	var scripts, styles int
	for _, u := range urls {
		if !strings.HasPrefix(u, prefix) {
			t.Errorf("page references %q, want a same-origin URL under %s", u, prefix)
		}
		switch {
		case strings.HasSuffix(u, ".js"):
			scripts++
		case strings.HasSuffix(u, ".css"):
			styles++
		}
	}
	// React, ReactDOM, GraphiQL and playground.js; GraphiQL's and Parley's stylesheets.
	if scripts != 4 || styles != 2 {
		t.Errorf("page loads %d scripts and %d stylesheets, want 4 and 2: %q", scripts, styles, urls)
	}
}

func TestPageSecurityHeaders(t *testing.T) {
	t.Parallel()
	srv := newServer(t)
	resp1, body := get(t, srv.URL+"/", nil)
	resp2, _ := get(t, srv.URL+"/", nil)
	csp := resp1.Header.Get("Content-Security-Policy")

	directives := map[string]string{}
	for _, d := range strings.Split(csp, ";") {
		name, value, _ := strings.Cut(strings.TrimSpace(d), " ")
		directives[name] = value
	}
	nonce := regexp.MustCompile(`'nonce-([A-Za-z0-9_-]{22,})'`).FindStringSubmatch(directives["style-src"])
	if nonce == nil {
		t.Fatalf("style-src %q has no nonce", directives["style-src"])
	}
	host := strings.TrimPrefix(srv.URL, "http://")
	tests := []struct {
		directive, want string
	}{
		{"default-src", "'none'"},
		{"script-src", "'self'"},
		{"style-src", "'self' 'nonce-" + nonce[1] + "'"},
		{"font-src", "data:"},
		{"img-src", "data:"},
		{"connect-src", "'self' ws://" + host + " wss://" + host},
		{"base-uri", "'none'"},
		{"form-action", "'none'"},
		{"frame-ancestors", "'none'"},
	}
	for _, tt := range tests {
		if got := directives[tt.directive]; got != tt.want {
			t.Errorf("CSP %s: got %q, want %q (whole policy: %s)", tt.directive, got, tt.want, csp)
		}
	}
	if len(directives) != len(tests) {
		t.Errorf("CSP has %d directives, want %d: %s", len(directives), len(tests), csp)
	}
	for _, bad := range []string{"unsafe-eval", "unsafe-inline", "*"} {
		if strings.Contains(csp, bad) {
			t.Errorf("CSP allows %s: %s", bad, csp)
		}
	}
	// playground.js hands the nonce to GraphiQL from its own script tag.
	if !strings.Contains(string(body), `nonce="`+nonce[1]+`"`) {
		t.Errorf("page does not carry the CSP nonce %q on its scripts", nonce[1])
	}
	if csp2 := resp2.Header.Get("Content-Security-Policy"); csp2 == csp {
		t.Errorf("two responses share the nonce: %s", csp)
	}
	if got := resp1.Header.Get("X-Content-Type-Options"); got != "nosniff" {
		t.Errorf("X-Content-Type-Options: got %q, want nosniff", got)
	}
}

func TestConnectSrcIgnoresOddHost(t *testing.T) {
	t.Parallel()
	h := playground.Handler("Parley", "/graphql", prefix)
	req := httptest.NewRequest(http.MethodGet, "/", nil)
	req.Host = "evil;script-src:*"
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	csp := rec.Header().Get("Content-Security-Policy")
	if strings.Contains(csp, "evil") || !strings.Contains(csp, "connect-src 'self';") {
		t.Errorf("CSP for Host %q: got %s, want connect-src 'self' alone", req.Host, csp)
	}
}

func TestAssets(t *testing.T) {
	t.Parallel()
	srv := newServer(t)
	_, page := get(t, srv.URL+"/", nil)
	urls := pageAssets(t, string(page))
	if len(urls) == 0 {
		t.Fatal("page references no assets")
	}
	for _, u := range urls {
		t.Run(u, func(t *testing.T) {
			t.Parallel()
			resp, body := get(t, srv.URL+u, nil)
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("got status %d, want 200", resp.StatusCode)
			}
			wantType := map[bool]string{true: "text/javascript; charset=utf-8", false: "text/css; charset=utf-8"}[strings.HasSuffix(u, ".js")]
			if got := resp.Header.Get("Content-Type"); got != wantType {
				t.Errorf("Content-Type: got %q, want %q", got, wantType)
			}
			if got, want := resp.Header.Get("Cache-Control"), "public, max-age=31536000, immutable"; got != want {
				t.Errorf("Cache-Control: got %q, want %q", got, want)
			}
			if got := resp.Header.Get("X-Content-Type-Options"); got != "nosniff" {
				t.Errorf("X-Content-Type-Options: got %q, want nosniff", got)
			}
			if len(body) == 0 {
				t.Fatal("empty body")
			}
			// The name carries a prefix of the content's SHA-256, so a new build gets a new URL.
			sum := sha256.Sum256(body)
			if hash := hex.EncodeToString(sum[:])[:16]; !strings.Contains(u, "."+hash+".") {
				t.Errorf("URL %s does not carry the content hash %s", u, hash)
			}
			etag := resp.Header.Get("ETag")
			if etag == "" {
				t.Fatal("no ETag")
			}
			resp, _ = get(t, srv.URL+u, http.Header{"If-None-Match": {etag}})
			if resp.StatusCode != http.StatusNotModified {
				t.Errorf("If-None-Match %s: got status %d, want 304", etag, resp.StatusCode)
			}

			resp, gz := get(t, srv.URL+u, http.Header{"Accept-Encoding": {"br, gzip;q=0.8"}})
			if got := resp.Header.Get("Content-Encoding"); got != "gzip" {
				t.Fatalf("Accept-Encoding gzip: got Content-Encoding %q, want gzip", got)
			}
			if resp.Header.Get("ETag") == etag {
				t.Errorf("gzip and identity bodies share the ETag %s", etag)
			}
			zr, err := gzip.NewReader(bytes.NewReader(gz))
			if err != nil {
				t.Fatal(err)
			}
			unzipped, err := io.ReadAll(zr)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(unzipped, body) {
				t.Errorf("gzip body decodes to %d bytes that differ from the %d-byte identity body", len(unzipped), len(body))
			}
		})
	}
}

func TestNotFoundAndMethods(t *testing.T) {
	t.Parallel()
	srv := newServer(t)
	_, page := get(t, srv.URL+"/", nil)
	some := pageAssets(t, string(page))[0]

	tests := []struct {
		name, method, path string
		want               int
	}{
		{"unknown asset", http.MethodGet, prefix + "nope.js", http.StatusNotFound},
		{"asset without hash", http.MethodGet, prefix + "graphiql.min.js", http.StatusNotFound},
		{"licence file", http.MethodGet, prefix + "LICENSE.graphiql", http.StatusNotFound},
		{"versions file", http.MethodGet, prefix + "VERSIONS", http.StatusNotFound},
		{"asset directory", http.MethodGet, prefix, http.StatusNotFound},
		{"asset in subdirectory", http.MethodGet, prefix + "x/" + strings.TrimPrefix(some, prefix), http.StatusNotFound},
		{"other path", http.MethodGet, "/index.html", http.StatusNotFound},
		{"favicon", http.MethodGet, "/favicon.ico", http.StatusNotFound},
		{"POST page", http.MethodPost, "/", http.StatusMethodNotAllowed},
		{"DELETE asset", http.MethodDelete, some, http.StatusMethodNotAllowed},
		{"HEAD page", http.MethodHead, "/", http.StatusOK},
		{"HEAD asset", http.MethodHead, some, http.StatusOK},
		{"endpoint beside it", http.MethodPost, "/graphql", http.StatusOK},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			req, err := http.NewRequest(tt.method, srv.URL+tt.path, nil)
			if err != nil {
				t.Fatal(err)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != tt.want {
				t.Errorf("%s %s: got status %d, want %d", tt.method, tt.path, resp.StatusCode, tt.want)
			}
		})
	}
}

// TestMountedTwice checks the other documented mounting: the same handler on "/" and on
// the asset prefix of a ServeMux.
func TestMountedTwice(t *testing.T) {
	t.Parallel()
	h := playground.Handler("Parley", "/graphql", prefix)
	mux := http.NewServeMux()
	mux.Handle("/{$}", h)
	mux.Handle(prefix, h)
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)

	_, page := get(t, srv.URL+"/", nil)
	for _, u := range pageAssets(t, string(page)) {
		if resp, _ := get(t, srv.URL+u, nil); resp.StatusCode != http.StatusOK {
			t.Errorf("GET %s: got status %d, want 200", u, resp.StatusCode)
		}
	}
}

func TestHandlerRejectsBadPrefix(t *testing.T) {
	t.Parallel()
	for _, p := range []string{"", "/", "assets/", "/assets"} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("Handler with asset prefix %q: got no panic, want one", p)
				}
			}()
			playground.Handler("Parley", "/graphql", p)
		}()
	}
}
