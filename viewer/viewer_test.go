package viewer

import (
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
)

func get(t *testing.T, h http.Handler, path string) *http.Response {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
	return rec.Result()
}

func TestPages(t *testing.T) {
	t.Parallel()
	h := Handler("/graphql")
	tests := []struct {
		name, path, page, id string
	}{
		{"list", "/viewer/", "list", ""},
		{"conversation", "/viewer/c/conv_1", "conversation", "conv_1"},
		{"escaped id", "/viewer/c/%22%3E%3Cscript%3E", "conversation", "&#34;&gt;&lt;script&gt;"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			resp := get(t, h, tt.path)
			body, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("GET %s: got %d, want 200", tt.path, resp.StatusCode)
			}
			if want := `data-page="` + tt.page + `" data-id="` + tt.id + `"`; !strings.Contains(string(body), want) {
				t.Errorf("GET %s: page lacks %s:\n%s", tt.path, want, body)
			}
			csp := resp.Header.Get("Content-Security-Policy")
			for _, want := range []string{"default-src 'none'", "script-src 'self'", "style-src 'self'", "img-src data:"} {
				if !strings.Contains(csp, want) {
					t.Errorf("CSP %q lacks %q", csp, want)
				}
			}
			if strings.Contains(csp, "unsafe") {
				t.Errorf("CSP %q allows something unsafe", csp)
			}
			// Every asset the page names is served, from the server's own origin.
			for _, m := range regexp.MustCompile(`(?:src|href)="([^"]+)"`).FindAllStringSubmatch(string(body), -1) {
				u := m[1]
				if !strings.HasPrefix(u, assetPrefix) {
					if strings.Contains(u, "://") {
						t.Errorf("page loads %s from elsewhere", u)
					}
					continue
				}
				if r := get(t, h, u); r.StatusCode != http.StatusOK || !strings.Contains(r.Header.Get("Cache-Control"), "immutable") {
					t.Errorf("GET %s: got %d %q, want 200 immutable", u, r.StatusCode, r.Header.Get("Cache-Control"))
				}
			}
		})
	}
}

func TestNotFound(t *testing.T) {
	t.Parallel()
	h := Handler("/graphql")
	for _, p := range []string{"/viewer/c/", "/viewer/c/a/b", "/viewer/assets/viewer.js", "/viewer/nothing"} {
		if got := get(t, h, p).StatusCode; got != http.StatusNotFound {
			t.Errorf("GET %s: got %d, want 404", p, got)
		}
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/viewer/", nil))
	if rec.Code != http.StatusMethodNotAllowed {
		t.Errorf("POST /viewer/: got %d, want 405", rec.Code)
	}
}
