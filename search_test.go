package parley

import (
	"strings"
	"testing"
)

func TestParseSearchQuery(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name, q    string
		prefix     bool
		web, pword string
		code       string
	}{
		{name: "words", q: "flaky deploy", web: "flaky deploy"},
		{name: "phrase kept", q: `"deploy script" or x -y`, web: `"deploy script" or x -y`},
		{name: "path becomes a phrase of parts", q: "see db.go", web: "see \"db.\x01go\""},
		{name: "excluded path", q: "-a/b", web: "-\"a/\x01b\""},
		{name: "path in a phrase", q: `"open a/b now"`, web: "\"open a/\x01b now\""},
		{name: "prefix takes the last word", q: "otters ho", prefix: true, web: "otters", pword: "ho"},
		{name: "prefix of a path", q: "internal/pgt", prefix: true, web: "", pword: "internal/\x01pgt"},
		{name: "prefix not of an exclusion", q: "a -b", prefix: true, web: "a -b"},
		{name: "prefix not of a phrase", q: `a "b c"`, prefix: true, web: `a "b c"`},
		{name: "prefix word quotes dropped", q: `it's`, prefix: true, pword: "it s"},
		{name: "control characters are blanks", q: "a\x01b\x02c", web: "a b c"},
		{name: "unclosed quote", q: `"a b`, web: `"a b`},
		{name: "empty", q: "", code: ESEARCHQUERYEMPTY},
		{name: "blank", q: " \t\n", code: ESEARCHQUERYEMPTY},
		{name: "too long", q: strings.Repeat("a", MaxSearchQueryBytes+1), code: ESEARCHQUERYTOOLONG},
		{name: "not UTF-8", q: "a\xff", code: EINVALID},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseSearchQuery(tt.q, tt.prefix)
			if c := ErrorCode(err); c != tt.code {
				t.Fatalf("got error %v, want code %q", err, tt.code)
			}
			if err == nil && (got.Web != tt.web || got.Prefix != tt.pword) {
				t.Errorf("got %q prefix %q, want %q prefix %q", got.Web, got.Prefix, tt.web, tt.pword)
			}
		})
	}
}

func TestMakeSnippet(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct{ name, in, html, text string }{
		{"plain", "a \x02b\x03 c", "a <mark>b</mark> c", "a b c"},
		{"escaped stays escaped", "&lt;script&gt;\x02x\x03&lt;/script&gt;", "&lt;script&gt;<mark>x</mark>&lt;/script&gt;", "<script>x</script>"},
		{"split marks removed", "internal/\x01\x02pgtest\x03/\x01db.\x01go", "internal/<mark>pgtest</mark>/db.go", "internal/pgtest/db.go"},
		{"a broken entity is escaped", "a &lt b &", "a &lt; b &amp;", "a < b &"},
		{"unbalanced marks", "\x03a\x02b", "a<mark>b</mark>", "ab"},
		{"quotes", `&#34;q&#39;`, "&#34;q&#39;", `"q'`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := MakeSnippet(tt.in)
			if s.HTML != tt.html || s.Text != tt.text {
				t.Errorf("got %q / %q, want %q / %q", s.HTML, s.Text, tt.html, tt.text)
			}
		})
	}
}

func TestToolNameLike(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{"read_file": `read\_file`, "mcp__*": `mcp\_\_%`, "a?c": "a_c", `100%\`: `100\%\\`} {
		if got := ToolNameLike(in); got != want {
			t.Errorf("ToolNameLike(%q): got %q, want %q", in, got, want)
		}
	}
}

func TestSearchCursor(t *testing.T) {
	t.Parallel()
	key := "0b1c7b0e-8d9e-4f7a-9a55-1d2b3c4d5e6f"
	for _, c := range []SearchCursor{{Order: SearchByRelevance, Rank: 0.0607927, Key: key}, {Order: SearchByNewest, Micro: 1763942400123456, Key: key}} {
		got, err := ParseSearchCursor("after", c.String(), c.Order)
		if err != nil || got != c {
			t.Errorf("round trip of %+v: got %+v, %v", c, got, err)
		}
		other := SearchByNewest
		if c.Order == SearchByNewest {
			other = SearchByRelevance
		}
		if _, err := ParseSearchCursor("after", c.String(), other); ErrorCode(err) != EINVALID || !strings.Contains(err.Error(), "other order") {
			t.Errorf("cursor of %s read as %s: got %v, want EINVALID naming the other order", c.Order, other, err)
		}
	}
	for _, bad := range []string{"", "x", MessageCursor(3), cursorEncoding.EncodeToString([]byte("s:r:NaN:" + key)),
		cursorEncoding.EncodeToString([]byte("s:r:1:not-a-uuid")), cursorEncoding.EncodeToString([]byte("s:n:99999999999999999:" + key))} {
		if _, err := ParseSearchCursor("after", bad, SearchByRelevance); ErrorCode(err) != EINVALID {
			t.Errorf("cursor %q: got %v, want EINVALID", bad, err)
		}
	}
}
