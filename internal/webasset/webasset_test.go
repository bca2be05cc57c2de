package webasset

import (
	"compress/gzip"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"testing/fstest"
)

func TestAcceptsGzip(t *testing.T) {
	t.Parallel()
	for header, want := range map[string]bool{
		"":                      false,
		"gzip":                  true,
		"br, GZIP":              true,
		"gzip;q=0.5":            true,
		"gzip; q=0":             false,
		"gzip;q=0.000":          false,
		"deflate, br":           false,
		"x-gzip2, identity;q=1": false,
	} {
		if got := acceptsGzip(header); got != want {
			t.Errorf("acceptsGzip(%q) = %v, want %v", header, got, want)
		}
	}
}

func TestConnectSrc(t *testing.T) {
	t.Parallel()
	for host, want := range map[string]string{
		"127.0.0.1:8080":     "'self' ws://127.0.0.1:8080 wss://127.0.0.1:8080",
		"[::1]:80":           "'self' ws://[::1]:80 wss://[::1]:80",
		"":                   "'self'",
		"evil; script-src *": "'self'",
		"a b":                "'self'",
	} {
		if got := ConnectSrc(host); got != want {
			t.Errorf("ConnectSrc(%q) = %q, want %q", host, got, want)
		}
	}
}

func TestLoadAndServe(t *testing.T) {
	t.Parallel()
	fsys := fstest.MapFS{"assets/app.js": {Data: []byte("console.log(1)")}, "assets/app.css": {Data: []byte("p{}")}}
	assets := Load(fsys, "assets", "test", "app.js")
	js := assets["app.js"]
	if js == nil || js.HashedName == "app.js" || assets["app.css"] == nil {
		t.Fatalf("got %+v", assets)
	}
	req := httptest.NewRequest(http.MethodGet, "/"+js.HashedName, nil)
	req.Header.Set("Accept-Encoding", "gzip")
	rec := httptest.NewRecorder()
	js.ServeHTTP(rec, req)
	if rec.Header().Get("Content-Encoding") != "gzip" || rec.Header().Get("Content-Type") != "text/javascript; charset=utf-8" {
		t.Fatalf("headers %v", rec.Header())
	}
	zr, err := gzip.NewReader(rec.Body)
	if err != nil {
		t.Fatal(err)
	}
	if body, _ := io.ReadAll(zr); string(body) != "console.log(1)" {
		t.Errorf("body %q", body)
	}
	// The same ETag answers 304.
	again := httptest.NewRequest(http.MethodGet, "/"+js.HashedName, nil)
	again.Header.Set("Accept-Encoding", "gzip")
	again.Header.Set("If-None-Match", rec.Header().Get("ETag"))
	rec2 := httptest.NewRecorder()
	js.ServeHTTP(rec2, again)
	if rec2.Code != http.StatusNotModified {
		t.Errorf("got %d, want 304", rec2.Code)
	}
	defer func() {
		if recover() == nil {
			t.Error("a missing required asset: no panic")
		}
	}()
	Load(fsys, "assets", "test", "missing.js")
}
