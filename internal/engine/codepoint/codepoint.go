// Package codepoint reads and writes the engine's strings as sequences of Unicode code
// points ([OAR-FACT-23]), surrogates included. A Go string holds UTF-8, which has no
// encoding for a surrogate; the engine writes a lone surrogate code point as its
// generalized UTF-8 form, the three bytes 0xED 0xA0..0xBF 0x80..0xBF, which valid UTF-8
// never contains. Byte equality, prefix, suffix and substring search therefore stay
// exact over such strings (UTF-8 is self-synchronising), and only what counts or walks
// code points, or writes JSON, needs this package. Two surrogates are never combined
// into one supplementary code point: each is one element of the string.
package codepoint

import (
	"strings"
	"unicode/utf8"
)

// IsSurrogate reports whether r is a surrogate code point, U+D800..U+DFFF.
func IsSurrogate(r rune) bool { return r >= 0xD800 && r <= 0xDFFF }

// Append appends r to b: UTF-8 for a scalar value, the generalized three-byte form for
// a surrogate.
func Append(b []byte, r rune) []byte {
	if IsSurrogate(r) {
		return append(b, 0xED, byte(0x80|(r>>6)&0x3F), byte(0x80|r&0x3F))
	}
	return utf8.AppendRune(b, r)
}

// Surrogate returns the surrogate code point whose generalized form starts s, if one does.
func Surrogate(s string) (rune, bool) {
	if len(s) < 3 || s[0] != 0xED || s[1] < 0xA0 || s[1] > 0xBF || s[2] < 0x80 || s[2] > 0xBF {
		return 0, false
	}
	return 0xD000 | rune(s[1]&0x3F)<<6 | rune(s[2]&0x3F), true
}

// Decode returns the code point s starts with and its length in bytes. A byte that
// starts neither UTF-8 nor a generalized surrogate decodes as utf8.RuneError of
// length 1, as utf8.DecodeRuneInString does.
func Decode(s string) (rune, int) {
	if len(s) > 0 && s[0] < utf8.RuneSelf {
		return rune(s[0]), 1
	}
	if r, ok := Surrogate(s); ok {
		return r, 3
	}
	return utf8.DecodeRuneInString(s)
}

// Count returns the number of code points in s. Text is mostly ASCII, so it goes eight
// bytes at a time while they are ASCII, and decodes only what is not.
func Count(s string) int {
	n, i := 0, 0
	for i < len(s) {
		if i+8 <= len(s) && ascii8(s[i:i+8]) {
			n, i = n+8, i+8
			continue
		}
		if s[i] < utf8.RuneSelf {
			n, i = n+1, i+1
			continue
		}
		n, i = n+1, i+width(s[i:])
	}
	return n
}

// Skip returns the byte offset in s after its first n code points, or len(s) when s
// holds fewer.
func Skip(s string, n int) int {
	i := 0
	for n > 0 && i < len(s) {
		if n >= 8 && i+8 <= len(s) && ascii8(s[i:i+8]) {
			n, i = n-8, i+8
			continue
		}
		if s[i] < utf8.RuneSelf {
			n, i = n-1, i+1
			continue
		}
		n, i = n-1, i+width(s[i:])
	}
	return i
}

// width is the length in bytes of the code point s starts with, as Decode reads it,
// for a non-empty s that does not start with ASCII: a UTF-8 sequence, a generalized
// surrogate (0xED 0xA0..0xBF, which is where it differs from UTF-8), or one byte that
// starts neither. Counting needs only this, not the code point.
func width(s string) int {
	cont := func(i int) bool { return i < len(s) && s[i]&0xC0 == 0x80 }
	in := func(i int, lo, hi byte) bool { return i < len(s) && s[i] >= lo && s[i] <= hi }
	switch b := s[0]; {
	case b >= 0xC2 && b <= 0xDF:
		if cont(1) {
			return 2
		}
	case b == 0xE0:
		if in(1, 0xA0, 0xBF) && cont(2) {
			return 3
		}
	case b >= 0xE1 && b <= 0xEF:
		if cont(1) && cont(2) {
			return 3
		}
	case b == 0xF0:
		if in(1, 0x90, 0xBF) && cont(2) && cont(3) {
			return 4
		}
	case b >= 0xF1 && b <= 0xF3:
		if cont(1) && cont(2) && cont(3) {
			return 4
		}
	case b == 0xF4:
		if in(1, 0x80, 0x8F) && cont(2) && cont(3) {
			return 4
		}
	}
	return 1
}

// ascii8 reports whether the eight bytes of s are all ASCII.
func ascii8(s string) bool {
	_ = s[7]
	w := uint64(s[0]) | uint64(s[1])<<8 | uint64(s[2])<<16 | uint64(s[3])<<24 |
		uint64(s[4])<<32 | uint64(s[5])<<40 | uint64(s[6])<<48 | uint64(s[7])<<56
	return w&0x8080808080808080 == 0
}

// HasSurrogate reports whether s holds a surrogate code point.
func HasSurrogate(s string) bool { return nextSurrogate(s, 0) >= 0 }

// nextSurrogate is the byte offset of the first generalized surrogate in s at or after
// from, or -1. Every such form starts with 0xED, which the search skips to.
func nextSurrogate(s string, from int) int {
	for from < len(s) {
		i := strings.IndexByte(s[from:], 0xED)
		if i < 0 {
			return -1
		}
		if _, ok := Surrogate(s[from+i:]); ok {
			return from + i
		}
		from += i + 1
	}
	return -1
}
