// Package jsonscan finds the next byte of a JSON string that its writer must look at,
// eight bytes at a time: package graph's page writer and its HTTP transport spend most of
// their time writing a page's long strings, which were scanned a byte at a time (15% of
// the CPU of a history read, issue 15 §6). Each word of eight bytes is tested with a few
// integer operations (the "determine if a word has a byte less than n" and "has a zero
// byte" tricks of Sean Eron Anderson's Bit Twiddling Hacks, both exact as tests of the
// whole word), and only a word that may hold such a byte is looked at byte by byte.
package jsonscan

const ones, highs = 0x0101010101010101, 0x8080808080808080

// load returns the eight bytes of s from i as a little-endian word (one load).
func load[T ~string | ~[]byte](s T, i int) uint64 {
	_ = s[i+7]
	return uint64(s[i]) | uint64(s[i+1])<<8 | uint64(s[i+2])<<16 | uint64(s[i+3])<<24 |
		uint64(s[i+4])<<32 | uint64(s[i+5])<<40 | uint64(s[i+6])<<48 | uint64(s[i+7])<<56
}

// less marks (in highs) the bytes of x below n (n at most 128); only whether any is
// marked is exact.
func less(x uint64, n byte) uint64 { return (x - ones*uint64(n)) &^ x }

// is marks (in highs) the bytes of x that are c; only whether any is marked is exact.
func is(x uint64, c byte) uint64 {
	y := x ^ ones*uint64(c)
	return (y - ones) &^ y
}

// Escaped returns the index of the first byte of s at or after i that JSON escapes in a
// string (a control character, a quote or a backslash), or len(s) when there is none.
func Escaped[T ~string | ~[]byte](s T, i int) int {
	for ; i+8 <= len(s); i += 8 {
		if x := load(s, i); (less(x, 0x20)|is(x, '"')|is(x, '\\'))&highs != 0 {
			break
		}
	}
	for ; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c == '"' || c == '\\' {
			return i
		}
	}
	return len(s)
}

// InString returns the index of the first byte of s at or after i that is marked in
// special, or len(s). special may mark control characters, '"', '\\', '<', '>', '&'
// and any byte from 0x80 (the words holding one of those are looked at byte by byte);
// any other byte it marks may be missed.
func InString[T ~string | ~[]byte](s T, i int, special *[256]bool) int {
	for ; i+8 <= len(s); i += 8 {
		x := load(s, i)
		if (x|less(x, 0x20)|is(x, '"')|is(x, '\\')|is(x, '<')|is(x, '>')|is(x, '&'))&highs == 0 {
			continue
		}
		for j := i; j < i+8; j++ {
			if special[s[j]] {
				return j
			}
		}
	}
	for ; i < len(s); i++ {
		if special[s[i]] {
			return i
		}
	}
	return len(s)
}
