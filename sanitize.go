package parley

import (
	"html"
	"strings"
	"unicode"
	"unicode/utf8"
)

// CleanText applies seed 001's rules to free text before it is stored: invalid UTF-8 is
// refused (with the byte offset, under field's name), control characters other than tab,
// newline and carriage return are removed, and everything else (emoji, CJK, combining
// marks, right-to-left text) is kept byte for byte.
func CleanText(field, s string) (string, error) {
	if cleanAlready(s) {
		return s, nil
	}
	if !utf8.ValidString(s) {
		off := 0
		for off < len(s) {
			r, n := utf8.DecodeRuneInString(s[off:])
			if r == utf8.RuneError && n <= 1 {
				break
			}
			off += n
		}
		return "", Errorf(EINVALID, "%s: invalid UTF-8 at byte %d", field, off)
	}
	return strings.Map(func(r rune) rune {
		if isStripped(r) {
			return -1
		}
		return r
	}, s), nil
}

// cleanAlready reports whether CleanText keeps s as it is: valid UTF-8 with nothing to
// remove.
func cleanAlready(s string) bool {
	if !utf8.ValidString(s) {
		return false
	}
	for _, r := range s {
		if isStripped(r) {
			return false
		}
	}
	return true
}

func isStripped(r rune) bool {
	return unicode.IsControl(r) && r != '\t' && r != '\n' && r != '\r'
}

// EscapeHTML is how free text is kept at rest: safe to put in innerHTML as it is.
func EscapeHTML(s string) string { return html.EscapeString(s) }

// UnescapeHTML recovers the author's text from its stored, escaped form.
func UnescapeHTML(s string) string {
	if !strings.ContainsRune(s, '&') {
		return s
	}
	return html.UnescapeString(s)
}
