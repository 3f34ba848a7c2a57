package copytext

import (
	"math/rand/v2"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/oar-operator/oar-operator/internal/engine/codepoint"
)

// marked strips the markers from a test template: each ^ stands where a diagnostic is
// reported and each @ where a message names a further offset. It returns the source and
// the code-point offsets of both kinds of marker, counted independently of the compiler.
func marked(s string) (src string, diags, named []int) {
	var b strings.Builder
	for _, r := range s {
		switch r {
		case '^':
			diags = append(diags, utf8.RuneCountInString(b.String()))
		case '@':
			named = append(named, utf8.RuneCountInString(b.String()))
		default:
			b.WriteRune(r)
		}
	}
	return b.String(), diags, named
}

var atOffset = regexp.MustCompile(`at offset (\d+)`)

// TestDiagnosticOffsets checks every offset of templates with many diagnostics, with
// multi-byte code points before and between them, against a count of the source's
// runes. It covers the offsets the compiler converts out of source order: a malformed
// construct's after the offset inside it, a second else's conditional, nested ones
// included, and conditionals left unclosed at the end.
func TestDiagnosticOffsets(t *testing.T) {
	closed := []string{
		"é€😀 {{ ^zz }}",
		"ü ^{% foo %} 😀😀",
		"€ ^{{ a @| b }}",
		"é ^{{ @acme. }} é",
		"ü {{ ^tool_args }}",
		"😀{% if ^fire_count_of %}x{% endif %}",
		"{% if not ^zz %}€{% endif %}",
		"é^{% endif %}€^{% else %}",
		"^{{ }}😀^{%  %}ü^{{ a b }}",
		"é^^{% endif x %}",
		"€^{% if a b c %}x{% endif %}",
		"😀@{% if tool %}é{% else %}€^{% else %}ü{% endif %}",
		"é@{% if tool %}é@{% if not policy_denied %}€{% else %}ü^{% else %}😀{% endif %}é{% else %}x^{% else %}{% endif %}",
	}
	unclosed := []string{
		"😀^@{% if tool %}é{% else %}€ {{ ^zz }}^{% else %}ü",
		"€^{% if policy_denied %}é ^{% foo %}",
		"€ ^{{ tool",
	}
	cases := append(slices.Clone(closed), unclosed...)
	cases = append(cases,
		strings.Repeat(strings.Join(closed, "x"), 50)+strings.Join(unclosed, "€"),
		strings.Repeat("é{{ ^zz }}😀^{% foo %}", 2000),
	)
	for _, tc := range cases {
		src, diags, named := marked(tc)
		_, errs := Compile(src, testSyms)
		var offsets, inMessages []int
		for _, e := range errs {
			offsets = append(offsets, e.Offset)
			for _, m := range atOffset.FindAllStringSubmatch(e.Message, -1) {
				n, _ := strconv.Atoi(m[1])
				inMessages = append(inMessages, n)
			}
		}
		if !slices.Equal(offsets, diags) {
			t.Errorf("Compile(%q) offsets %v, want %v: %v", src, offsets, diags, errs)
		}
		want := slices.Sorted(slices.Values(append(slices.Clone(diags), named...)))
		if slices.Sort(inMessages); !slices.Equal(inMessages, want) {
			t.Errorf("Compile(%q) offsets in messages %v, want %v: %v", src, inMessages, want, errs)
		}
	}
}

// TestOffsetCursor converts, in shuffled order, every byte offset the compiler may ask
// about (one at or just past an ASCII byte) of a source mixing UTF-8, generalized
// surrogates and bytes that are neither, and checks each against a count from the start.
func TestOffsetCursor(t *testing.T) {
	src := strings.Repeat("a{é€ \xed\xa0\x80b😀\xff{\xe2\x82{\xf0\x9f c\xed\xbf\xbf", 20)
	var ats []int
	for at := 0; at <= len(src); at++ {
		if at == 0 || at == len(src) || src[at] < utf8.RuneSelf || src[at-1] < utf8.RuneSelf {
			ats = append(ats, at)
		}
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 5 {
		rng.Shuffle(len(ats), func(i, j int) { ats[i], ats[j] = ats[j], ats[i] })
		c := &compiler{src: src}
		for _, at := range ats {
			if got, want := c.offset(at), codepoint.Count(src[:at]); got != want {
				t.Fatalf("offset(%d) = %d, want %d", at, got, want)
			}
		}
	}
}
