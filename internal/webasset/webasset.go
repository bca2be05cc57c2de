// Package webasset serves the files a page embeds in the binary (the playground's and the
// history viewer's scripts and styles) under names that carry their content hash, so a
// browser may keep them for ever, gzipped once on first use; and it spells the
// connect-src those pages' Content-Security-Policy needs to reach their own origin.
package webasset

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"io/fs"
	"net/http"
	"path"
	"strings"
	"sync"
	"time"
)

// Asset is one embedded file.
type Asset struct {
	Name        string // file name in its directory
	HashedName  string // Name with the content hash before the extension: the URL's last element
	contentType string
	body        []byte
	etag        string
	gzipped     func() []byte // compressed on first use, then kept
}

var contentTypes = map[string]string{
	".js":  "text/javascript; charset=utf-8",
	".css": "text/css; charset=utf-8",
}

// Load reads every file of dir in fsys and names each by its content hash. The files are
// compiled into the binary, so a directory that cannot be read or a file of required that
// is missing is a build defect: Load panics, naming owner.
func Load(fsys fs.FS, dir, owner string, required ...string) map[string]*Asset {
	entries, err := fs.ReadDir(fsys, dir)
	if err != nil {
		panic(owner + ": embedded assets: " + err.Error())
	}
	assets := make(map[string]*Asset, len(entries))
	for _, e := range entries {
		name := e.Name()
		body, err := fs.ReadFile(fsys, path.Join(dir, name))
		if err != nil {
			panic(owner + ": embedded assets: " + err.Error())
		}
		sum := sha256.Sum256(body)
		hash := hex.EncodeToString(sum[:])[:16]
		ext := path.Ext(name)
		assets[name] = &Asset{
			Name:        name,
			HashedName:  strings.TrimSuffix(name, ext) + "." + hash + ext,
			contentType: contentTypes[ext],
			body:        body,
			etag:        `"` + hash + `"`,
			gzipped:     sync.OnceValue(func() []byte { return gzipBytes(body) }),
		}
	}
	for _, name := range required {
		if assets[name] == nil {
			panic(owner + ": embedded assets: missing " + name)
		}
	}
	return assets
}

func gzipBytes(b []byte) []byte {
	var buf bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&buf, gzip.BestCompression) // a valid level never fails
	zw.Write(b)
	zw.Close() // writes to a bytes.Buffer cannot fail
	return buf.Bytes()
}

// ServeHTTP answers with the file, gzipped when the client accepts it.
func (a *Asset) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	hdr := w.Header()
	hdr.Set("Content-Type", a.contentType)
	// The URL changes whenever the content does, so the browser may keep it forever.
	hdr.Set("Cache-Control", "public, max-age=31536000, immutable")
	hdr.Set("X-Content-Type-Options", "nosniff")
	hdr.Add("Vary", "Accept-Encoding")
	body, etag := a.body, a.etag
	if acceptsGzip(r.Header.Get("Accept-Encoding")) {
		body = a.gzipped()
		etag = a.etag[:len(a.etag)-1] + `-gzip"`
		hdr.Set("Content-Encoding", "gzip")
	}
	hdr.Set("ETag", etag)
	// ServeContent answers If-None-Match with 304, and HEAD and Range requests.
	http.ServeContent(w, r, a.Name, time.Time{}, bytes.NewReader(body))
}

// acceptsGzip reports whether an Accept-Encoding header value admits gzip.
func acceptsGzip(header string) bool {
	for _, part := range strings.Split(header, ",") {
		coding, params, _ := strings.Cut(part, ";")
		if !strings.EqualFold(strings.TrimSpace(coding), "gzip") {
			continue
		}
		q, found := strings.CutPrefix(strings.ReplaceAll(strings.TrimSpace(params), " ", ""), "q=")
		if !found {
			return true
		}
		return strings.Trim(q, "0.") != "" // q=0, q=0.0, q=0.000 refuse it
	}
	return false
}

// ConnectSrc is the connect-src of a page that talks to its own origin over HTTP and
// websockets. CSP Level 3 browsers let 'self' match ws:/wss: on the page's host; older
// ones need the host spelled out, which is done only when the Host header is a plain
// host[:port], so that nothing can be injected into the policy.
func ConnectSrc(host string) string {
	if plainHost(host) {
		return "'self' ws://" + host + " wss://" + host
	}
	return "'self'"
}

// plainHost reports whether host consists only of characters found in DNS names, IPv4 and
// bracketed IPv6 addresses, and ports.
func plainHost(host string) bool {
	if host == "" || len(host) > 255 {
		return false
	}
	for _, c := range host {
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		case c == '.', c == '-', c == ':', c == '[', c == ']':
		default:
			return false
		}
	}
	return true
}
