package server_test

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/parley-dev/parley/auth"
	"github.com/parley-dev/parley/db"
	"github.com/parley-dev/parley/internal/testserver"
	"github.com/parley-dev/parley/server"
)

const appOrigin = "https://app.example.com"

// TestCORS: a page on a trusted origin gets its preflight answered before
// authentication, and its answers (errors included) readable, with X-Request-Id
// exposed; other origins get no CORS header, in local mode and with authentication.
func TestCORS(t *testing.T) {
	t.Parallel()
	trusted := func(c *server.Config) { c.TrustedOrigins = []string{appOrigin} }
	servers := map[string]*testserver.Server{
		"local": testserver.NewWith(t, testserver.Options{Configure: trusted}),
		"auth": testserver.NewWith(t, testserver.Options{Configure: trusted, Auth: func(store *db.DB) auth.Config {
			return auth.Config{Tokens: store, JWTSecret: jwtSecret}
		}}),
	}
	for mode, srv := range servers {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			for _, tt := range []struct {
				name, origin string
				allowed      bool
			}{
				{"trusted origin", appOrigin, true},
				{"other origin", "https://evil.example", false},
			} {
				req, _ := http.NewRequest(http.MethodOptions, srv.URL+"/graphql", nil)
				req.Header.Set("Origin", tt.origin)
				req.Header.Set("Access-Control-Request-Method", "POST")
				req.Header.Set("Access-Control-Request-Headers", "authorization,content-type,x-request-id")
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				resp.Body.Close()
				got := resp.Header.Get("Access-Control-Allow-Origin")
				if tt.allowed {
					if resp.StatusCode/100 != 2 {
						t.Errorf("%s: preflight status %d, want 2xx", tt.name, resp.StatusCode)
					}
					if got != tt.origin {
						t.Errorf("%s: Access-Control-Allow-Origin %q, want %q", tt.name, got, tt.origin)
					}
					if c := resp.Header.Get("Access-Control-Allow-Credentials"); c != "true" {
						t.Errorf("%s: Access-Control-Allow-Credentials %q, want true", tt.name, c)
					}
					h := strings.ToLower(resp.Header.Get("Access-Control-Allow-Headers"))
					for _, want := range []string{"authorization", "content-type", "x-request-id"} {
						if !strings.Contains(h, want) {
							t.Errorf("%s: Access-Control-Allow-Headers %q lacks %s", tt.name, h, want)
						}
					}
				} else if got != "" {
					t.Errorf("%s: Access-Control-Allow-Origin %q, want none", tt.name, got)
				}

				// The actual request: without a token in auth mode it is a 401 the page can read.
				post, _ := http.NewRequest(http.MethodPost, srv.URL+"/graphql", strings.NewReader(`{"query":"{ __typename }"}`))
				post.Header.Set("Content-Type", "application/json")
				post.Header.Set("Origin", tt.origin)
				post.Header.Set("Sec-Fetch-Site", "cross-site")
				resp, err = http.DefaultClient.Do(post)
				if err != nil {
					t.Fatal(err)
				}
				resp.Body.Close()
				want := map[bool]int{true: 200, false: 403}[tt.allowed]
				if tt.allowed && mode == "auth" {
					want = 401
				}
				if resp.StatusCode != want {
					t.Errorf("%s: POST status %d, want %d", tt.name, resp.StatusCode, want)
				}
				got = resp.Header.Get("Access-Control-Allow-Origin")
				if tt.allowed {
					if got != tt.origin {
						t.Errorf("%s: POST Access-Control-Allow-Origin %q, want %q", tt.name, got, tt.origin)
					}
					if e := resp.Header.Get("Access-Control-Expose-Headers"); !strings.Contains(e, "X-Request-Id") {
						t.Errorf("%s: Access-Control-Expose-Headers %q, want X-Request-Id in it", tt.name, e)
					}
				} else if got != "" {
					t.Errorf("%s: POST Access-Control-Allow-Origin %q, want none", tt.name, got)
				}
			}
		})
	}
}

// TestCORSOffWithoutTrustedOrigins: with no trusted origin nothing is granted, and a
// preflight is refused as before (405).
func TestCORSOffWithoutTrustedOrigins(t *testing.T) {
	t.Parallel()
	srv := testserver.New(t)
	req, _ := http.NewRequest(http.MethodOptions, srv.URL+"/graphql", nil)
	req.Header.Set("Origin", appOrigin)
	req.Header.Set("Access-Control-Request-Method", "POST")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if got := resp.Header.Get("Access-Control-Allow-Origin"); got != "" {
		t.Errorf("Access-Control-Allow-Origin %q, want none", got)
	}
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("status %d, want 405", resp.StatusCode)
	}
}

// TestCompression: a large answer is gzipped for a client that accepts it and is the
// same JSON once decompressed; a client that does not ask gets it plain; an SSE stream
// is never compressed and its first event arrives while the stream is open.
func TestCompression(t *testing.T) {
	t.Parallel()
	srv := testserver.New(t)
	conv := srv.CreateConversation(t, "big")
	var first string
	for i := 0; i < 40; i++ {
		var out struct{ AddMessage struct{ Cursor string } }
		srv.MustDo(t, `mutation($c: ID!, $t: String!) { addMessage(conversationId: $c, input: {text: {role: USER, content: $t}}) { cursor } }`,
			map[string]any{"c": conv, "t": strings.Repeat("a compressible sentence. ", 20)}, &out)
		if i == 0 {
			first = out.AddMessage.Cursor
		}
	}
	body := `{"query":"query($c: ID!) { conversation(id: $c) { messages(first: 100) { edges { node { ... on TextMessage { text html } } } } } }","variables":{"c":"` + conv + `"}}`
	fetch := func(encoding string) (*http.Response, []byte) {
		req, _ := http.NewRequest(http.MethodPost, srv.URL+"/graphql", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		if encoding != "" {
			req.Header.Set("Accept-Encoding", encoding)
		}
		// A Transport of its own, so that Go's client does not ask for gzip and
		// decompress behind the test's back.
		resp, err := (&http.Client{Transport: &http.Transport{DisableCompression: true}}).Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		return resp, b
	}
	plainResp, plain := fetch("")
	if ce := plainResp.Header.Get("Content-Encoding"); ce != "" {
		t.Errorf("without Accept-Encoding: Content-Encoding %q, want none", ce)
	}
	gzResp, gz := fetch("gzip")
	if ce := gzResp.Header.Get("Content-Encoding"); ce != "gzip" {
		t.Fatalf("Accept-Encoding gzip: Content-Encoding %q, want gzip", ce)
	}
	if !strings.Contains(gzResp.Header.Get("Vary"), "Accept-Encoding") {
		t.Errorf("Vary %q, want Accept-Encoding in it", gzResp.Header.Get("Vary"))
	}
	zr, err := gzip.NewReader(bytes.NewReader(gz))
	if err != nil {
		t.Fatal(err)
	}
	unzipped, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(unzipped, plain) {
		t.Errorf("gunzipped body differs from the plain one (%d and %d bytes)", len(unzipped), len(plain))
	}
	if !json.Valid(plain) || len(gz)*4 > len(plain) {
		t.Errorf("gzip made %d bytes of %d, want at most a quarter", len(gz), len(plain))
	}
	t.Logf("page of 40 messages: %d bytes, %d gzipped", len(plain), len(gz))

	// SSE: the replayed messages arrive as events while the stream stays open.
	req, _ := http.NewRequest(http.MethodPost, srv.URL+"/graphql",
		strings.NewReader(`{"query":"subscription($c: ID!, $a: String) { messageAdded(conversationId: $c, after: $a) { cursor } }","variables":{"c":"`+conv+`","a":"`+first+`"}}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Accept-Encoding", "gzip")
	client := &http.Client{Transport: &http.Transport{DisableCompression: true}, Timeout: 60 * time.Second}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ce := resp.Header.Get("Content-Encoding"); ce != "" {
		t.Errorf("SSE: Content-Encoding %q, want none", ce)
	}
	// The stream never ends by itself: finding an event proves nothing waits for it to.
	lines := bufio.NewScanner(resp.Body)
	for lines.Scan() {
		if lines.Text() == "event: next" {
			return
		}
	}
	t.Errorf("SSE: no event before the stream ended (%v)", lines.Err())
}
