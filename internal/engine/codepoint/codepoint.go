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

// Count returns the number of code points in s.
func Count(s string) int {
	n := utf8.RuneCountInString(s)
	for i := nextSurrogate(s, 0); i >= 0; i = nextSurrogate(s, i+3) {
		// RuneCountInString counted its three bytes as three.
		n -= 2
	}
	return n
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
