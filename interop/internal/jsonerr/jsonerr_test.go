package jsonerr

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestTruncateKeepsCharacters(t *testing.T) {
	long := strings.Repeat("é", 40) // 80 bytes
	got := Truncate(long)
	if !utf8.ValidString(got) || !strings.HasSuffix(got, "...") || len(got) > 60 {
		t.Errorf("Truncate: got %q (%d bytes), want valid UTF-8 of at most 60 bytes ending in ...", got, len(got))
	}
	if got := Truncate("short"); got != "short" {
		t.Errorf("Truncate(short) = %q", got)
	}
}

func TestProblems(t *testing.T) {
	var v struct {
		Name string `json:"name"`
	}
	err := json.Unmarshal([]byte(`{"name": 3}`), &v)
	if got, want := FieldProblem(err, "an object"), ".name: want a string, got number"; got != want {
		t.Errorf("FieldProblem: got %q, want %q", got, want)
	}
	for _, tt := range []struct{ raw, want string }{
		{`{"a":`, "it ends early: the line is truncated"},
		{`{"a" 1}`, "invalid character '1' after object key at byte 6"},
		{`  `, "empty"},
	} {
		if got := SyntaxProblem([]byte(tt.raw), "line"); got != tt.want {
			t.Errorf("SyntaxProblem(%q): got %q, want %q", tt.raw, got, tt.want)
		}
	}
	for raw, want := range map[string]string{`{}`: "an object", `[]`: "an array", `"x"`: "a string", `true`: "a boolean", `null`: "null", `1`: "a number", ``: "nothing"} {
		if got := Kind([]byte(raw)); got != want {
			t.Errorf("Kind(%q) = %q, want %q", raw, got, want)
		}
	}
}
