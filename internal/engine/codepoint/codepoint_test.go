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
