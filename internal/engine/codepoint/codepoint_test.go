package codepoint

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestRoundTripEveryCodePoint(t *testing.T) {
	for r := rune(0); r <= utf8.MaxRune; r++ {
		b := Append(nil, r)
		got, n := Decode(string(b))
		if got != r || n != len(b) {
			t.Fatalf("U+%04X: Append %x decodes as U+%04X, %d bytes", r, b, got, n)
		}
		if s := string(b); Count(s) != 1 || HasSurrogate(s) != IsSurrogate(r) {
			t.Fatalf("U+%04X: Count %d, HasSurrogate %t", r, Count(s), HasSurrogate(s))
		}
	}
}

// TestSurrogatesStayDistinct: a surrogate never equals, nor is found inside, another
// code point, and adjacent surrogates stay two.
func TestSurrogatesStayDistinct(t *testing.T) {
	hi, lo := string(Append(nil, 0xD83D)), string(Append(nil, 0xDE00))
	pair := hi + lo
	if Count(pair) != 2 || pair == "😀" || strings.Contains("😀", hi) || strings.Contains("😀", lo) {
		t.Fatalf("a surrogate pair must stay two code points distinct from U+1F600")
	}
	if strings.Contains(hi, "\uFFFD") || strings.Contains("\uFFFD", hi) || Count("a"+hi+"b"+lo) != 4 {
		t.Fatal("a surrogate must stay distinct from U+FFFD and count as one")
	}
	if Count("\xed\xa0") != 2 || Count("\xff") != 1 {
		t.Fatal("invalid bytes count one each")
	}
}

// TestCountAgreesWithDecode: Count, which goes eight bytes at a time over ASCII, counts
// what walking s with Decode counts, and Skip stops where that walk does, wherever
// surrogates, other 0xED sequences, invalid bytes and runs of ASCII long enough to be
// taken eight at a time fall.
func TestCountAgreesWithDecode(t *testing.T) {
	hi := string(Append(nil, 0xD800))
	parts := []string{"", "a", "é", "\xed", "\xed\x9f\xbf", "\xed\xa0", hi, hi + hi, "\xff", "日本", "\xed\xed\xa0\x80", "abcdefg", "abcdefgh", "abcdefghijklmnopq"}
	walk := func(s string) (n int, surrogate bool) {
		for len(s) > 0 {
			r, size := Decode(s)
			surrogate = surrogate || IsSurrogate(r)
			s = s[size:]
			n++
		}
		return n, surrogate
	}
	for _, a := range parts {
		for _, b := range parts {
			for _, c := range parts {
				s := a + b + c
				n, sur := walk(s)
				if Count(s) != n || HasSurrogate(s) != sur {
					t.Errorf("%q: Count %d, HasSurrogate %t; Decode walk %d, %t", s, Count(s), HasSurrogate(s), n, sur)
				}
				for k := 0; k <= n+1; k++ {
					if got, want := Skip(s, k), skipByDecode(s, k); got != want {
						t.Errorf("%q: Skip %d code points = byte %d; Decode walk stops at byte %d", s, k, got, want)
					}
				}
			}
		}
	}
}

// skipByDecode is Skip one Decode at a time.
func skipByDecode(s string, n int) int {
	i := 0
	for ; n > 0 && i < len(s); n-- {
		_, size := Decode(s[i:])
		i += size
	}
	return i
}

// TestWidthIsDecodes: width, which Count and Skip use, is the length Decode reads, for
// every first two bytes and the third and fourth bytes at each boundary of the ranges
// UTF-8 and the generalized surrogates allow, whole and cut short.
func TestWidthIsDecodes(t *testing.T) {
	edges := []byte{0x00, 0x7F, 0x80, 0x8F, 0x90, 0x9F, 0xA0, 0xBF, 0xC0, 0xFF}
	for b0 := 0x80; b0 <= 0xFF; b0++ {
		for b1 := 0; b1 <= 0xFF; b1++ {
			for _, b2 := range edges {
				for _, b3 := range edges {
					full := string([]byte{byte(b0), byte(b1), b2, b3})
					for n := 1; n <= len(full); n++ {
						s := full[:n]
						if _, want := Decode(s); width(s) != want {
							t.Fatalf("% x: width %d, Decode reads %d bytes", s, width(s), want)
						}
					}
				}
			}
		}
	}
}
