package jsonscan

import (
	"bytes"
	"testing"
)

// naive is what Escaped and InString must return: the first byte at or after i that
// marked says is special.
func naive(s []byte, i int, marked func(byte) bool) int {
	for ; i < len(s); i++ {
		if marked(s[i]) {
			return i
		}
	}
	return len(s)
}

func escapes(c byte) bool { return c < 0x20 || c == '"' || c == '\\' }

// htmlSpecial marks what appendData looks for; finalSpecial adds control characters, as
// package graph's finalStr does.
var htmlSpecial, finalSpecial [256]bool

func init() {
	for _, c := range []byte{'\\', '"', '<', '>', '&', 0xE2} {
		htmlSpecial[c], finalSpecial[c] = true, true
	}
	for c := range 0x20 {
		finalSpecial[c] = true
	}
}

// TestEveryByteEverywhere puts every byte value at every offset of strings of up to 20
// bytes of plain text, after every start, and compares with a byte-by-byte scan.
func TestEveryByteEverywhere(t *testing.T) {
	for n := 1; n <= 20; n++ {
		for at := range n {
			for c := range 256 {
				s := bytes.Repeat([]byte("a"), n)
				s[at] = byte(c)
				for i := 0; i <= n; i++ {
					if got, want := Escaped(s, i), naive(s, i, escapes); got != want {
						t.Fatalf("Escaped(%q, %d) = %d, want %d", s, i, got, want)
					}
					if got, want := Escaped(string(s), i), naive(s, i, escapes); got != want {
						t.Fatalf("Escaped(string %q, %d) = %d, want %d", s, i, got, want)
					}
					if got, want := InString(s, i, &htmlSpecial), naive(s, i, func(c byte) bool { return htmlSpecial[c] }); got != want {
						t.Fatalf("InString(%q, %d) = %d, want %d", s, i, got, want)
					}
					if got, want := InString(string(s), i, &finalSpecial), naive(s, i, func(c byte) bool { return finalSpecial[c] }); got != want {
						t.Fatalf("InString(string %q, %d) with control characters = %d, want %d", s, i, got, want)
					}
				}
			}
		}
	}
}

// FuzzScans compares both scans with a byte-by-byte one on any input.
func FuzzScans(f *testing.F) {
	f.Add([]byte("plain text with \"quotes\", <tags> & \u2028 and \\ backslashes\n"), 3)
	f.Fuzz(func(t *testing.T, s []byte, i int) {
		if i < 0 || i > len(s) {
			return
		}
		if got, want := Escaped(s, i), naive(s, i, escapes); got != want {
			t.Fatalf("Escaped(%q, %d) = %d, want %d", s, i, got, want)
		}
		if got, want := InString(s, i, &htmlSpecial), naive(s, i, func(c byte) bool { return htmlSpecial[c] }); got != want {
			t.Fatalf("InString(%q, %d) = %d, want %d", s, i, got, want)
		}
		if got, want := InString(s, i, &finalSpecial), naive(s, i, func(c byte) bool { return finalSpecial[c] }); got != want {
			t.Fatalf("InString(%q, %d) with control characters = %d, want %d", s, i, got, want)
		}
	})
}

func BenchmarkEscaped(b *testing.B) {
	s := bytes.Repeat([]byte("package main, the quick brown fox jumps over the lazy dog. "), 40)
	b.SetBytes(int64(len(s)))
	for b.Loop() {
		if Escaped(s, 0) != len(s) {
			b.Fatal("found")
		}
	}
}
