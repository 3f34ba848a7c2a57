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

// TestCountAgreesWithDecode: Count, which skips to each 0xED byte, counts what walking s
// with Decode counts, wherever surrogates, other 0xED sequences and invalid bytes fall.
func TestCountAgreesWithDecode(t *testing.T) {
	hi := string(Append(nil, 0xD800))
	parts := []string{"", "a", "é", "\xed", "\xed\x9f\xbf", "\xed\xa0", hi, hi + hi, "\xff", "日本", "\xed\xed\xa0\x80"}
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
				if n, sur := walk(s); Count(s) != n || HasSurrogate(s) != sur {
					t.Errorf("%q: Count %d, HasSurrogate %t; Decode walk %d, %t", s, Count(s), HasSurrogate(s), n, sur)
				}
			}
		}
	}
}
