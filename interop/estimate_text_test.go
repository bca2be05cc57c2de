package interop_test

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/parley-dev/parley/interop"
)

// TestEstimateTextCountsEachByte: EstimateText, which counts ASCII eight bytes at a
// time, gives what counting a byte or a rune at a time gives: a quarter token per
// ASCII byte, rounded up, and a token per other rune (an invalid byte counts as one),
// for a non-ASCII rune or invalid byte at every offset of a word and runs of every
// length around it.
func TestEstimateTextCountsEachByte(t *testing.T) {
	t.Parallel()
	oneAtATime := func(s string) int {
		ascii, other := 0, 0
		for i := 0; i < len(s); {
			if s[i] < utf8.RuneSelf {
				ascii++
				i++
				continue
			}
			_, size := utf8.DecodeRuneInString(s[i:])
			other++
			i += size
		}
		return (ascii+3)/4 + other
	}
	cases := []string{"", "a", "abcdefg", "abcdefgh", "abcdefghi", "日本語", "\xff", "\xe2\x80"}
	for _, odd := range []string{"é", "日", "😀", "\xff", "\xe2\x80", "\u2028"} {
		for before := range 18 {
			for _, after := range []int{0, 1, 7, 8, 9, 17} {
				cases = append(cases, strings.Repeat("x", before)+odd+strings.Repeat("y", after),
					strings.Repeat("x", before)+odd+odd+strings.Repeat("y", after)+odd)
			}
		}
	}
	for _, s := range cases {
		if got, want := interop.EstimateText(s), oneAtATime(s); got != want {
			t.Errorf("EstimateText(%q): got %d, want %d", s, got, want)
		}
	}
}
