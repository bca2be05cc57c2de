package parley_test

import (
	"strings"
	"testing"

	"github.com/parley-dev/parley"
)

func TestCleanText(t *testing.T) {
	tests := []struct {
		name, in, want string
		errHas         string
	}{
		{name: "plain", in: "hello", want: "hello"},
		{name: "keeps tab newline carriage return", in: "a\tb\nc\rd", want: "a\tb\nc\rd"},
		{name: "drops C0, DEL and C1", in: "a\x00b\x01c\x1bd\x7fe\u0080f\u009fg", want: "abcdefg"},
		{name: "keeps emoji and joiners", in: "👩‍💻 e\u0301", want: "👩‍💻 e\u0301"},
		{name: "keeps bidi text", in: "abc \u05e9\u05dc\u05d5\u05dd \u202bx\u202c", want: "abc \u05e9\u05dc\u05d5\u05dd \u202bx\u202c"},
		{name: "invalid UTF-8 names the byte", in: "ok\xffno", errHas: "invalid UTF-8 at byte 2"},
		{name: "truncated sequence", in: "ab\xe2\x82", errHas: "at byte 2"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parley.CleanText("field", tt.in)
			if tt.errHas != "" {
				if err == nil || !strings.Contains(parley.ErrorMessage(err), tt.errHas) || parley.ErrorCode(err) != parley.EINVALID {
					t.Fatalf("got %q, %v; want an EINVALID error mentioning %q", got, err, tt.errHas)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("got %q, %v; want %q", got, err, tt.want)
			}
		})
	}
}

func TestEscapeRoundTrip(t *testing.T) {
	for _, s := range []string{"<a href='x'>&amp;</a>", `"quoted" & 'single'`, "&lt;already&gt;", "plain"} {
		if got := parley.UnescapeHTML(parley.EscapeHTML(s)); got != s {
			t.Errorf("unescape(escape(%q)) = %q", s, got)
		}
		if esc := parley.EscapeHTML(s); strings.ContainsAny(esc, "<>\"'") {
			t.Errorf("escape(%q) = %q still holds markup characters", s, esc)
		}
	}
}

func TestCleanPath(t *testing.T) {
	tests := []struct{ in, want, errHas string }{
		{in: "a/./b//c.go", want: "a/b/c.go"},
		{in: "/abs/path.txt", want: "/abs/path.txt"},
		{in: "dir/", want: "dir"},
		{in: "..", errHas: "traversal"},
		{in: "a/../b", errHas: "traversal"},
		{in: `a\..\b`, errHas: "traversal"},
		{in: "a/..hidden", want: "a/..hidden"},
		{in: "  ", errHas: "empty"},
		{in: "a\x00b", want: "ab"},
	}
	for _, tt := range tests {
		got, err := parley.CleanPath("path", tt.in)
		if tt.errHas != "" {
			if err == nil || !strings.Contains(parley.ErrorMessage(err), tt.errHas) {
				t.Errorf("CleanPath(%q) = %q, %v; want an error mentioning %q", tt.in, got, err, tt.errHas)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("CleanPath(%q) = %q, %v; want %q", tt.in, got, err, tt.want)
		}
	}
}
