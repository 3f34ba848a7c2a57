package transform

import (
	"encoding/json"
	"errors"
	"math/rand/v2"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/oar-operator/oar-operator/internal/engine/codepoint"
)

// reference is a deliberately naive second implementation of [OAR-OPS-16] used to
// cross-check Apply: it keeps one cell per original code point and a list of
// insertions before each point, and merges spans by comparing every pair. A surrogate
// in generalized UTF-8 (how the engine holds one, codepoint) is one unit, and any other
// byte that is not valid UTF-8 is one unit too, kept as it is: both as codepoint.Count
// counts them.
func reference(content string, ts []Transform) (string, []Skip) {
	var units []string
	for rest := content; rest != ""; {
		_, size := codepoint.Decode(rest)
		units = append(units, rest[:size])
		rest = rest[size:]
	}
	n := len(units)
	owner := make([]int, n) // rewrite that removed each code point, or -1
	for i := range owner {
		owner[i] = -1
	}
	type ins struct {
		point int
		text  string
	}
	before := make([][]ins, n+1) // insertions rendered before code point p
	var replacements []string    // by rewrite number
	var skips []Skip

	insert := func(p int, text string) {
		at := p
		// Strictly inside a rewrite: code points p-1 and p were removed by the same one.
		if p > 0 && p < n && owner[p] >= 0 && owner[p-1] == owner[p] {
			for at < n && owner[at] == owner[p] {
				at++
			}
		}
		before[at] = append(before[at], ins{point: p, text: text})
	}
	for _, t := range ts {
		var spans []Span
		if t.Whole {
			spans = []Span{{0, n}}
		} else {
			for _, s := range t.Spans {
				if 0 <= s.Start && s.Start <= s.End && s.End <= n {
					spans = append(spans, s)
				}
			}
			spans = mergeByPairs(spans)
		}
		for _, s := range spans {
			switch {
			case t.Action == Annotate:
				insert(s.End, t.Replacement)
			case s.Start == s.End:
				insert(s.Start, t.Replacement)
			default:
				hit := false
				for p := s.Start; p < s.End; p++ {
					hit = hit || owner[p] >= 0
				}
				if hit {
					skips = append(skips, Skip{Rule: t.Rule, Start: s.Start, End: s.End, Reason: "overlap"})
					continue
				}
				for p := s.Start; p < s.End; p++ {
					owner[p] = len(replacements)
					kept := before[p][:0]
					for _, in := range before[p] {
						if in.point < s.Start || in.point >= s.End {
							kept = append(kept, in)
						}
					}
					before[p] = kept
				}
				replacements = append(replacements, t.Replacement)
			}
		}
	}
	var b strings.Builder
	for p := 0; p <= n; p++ {
		for _, in := range before[p] {
			b.WriteString(in.text)
		}
		switch {
		case p == n:
		case owner[p] < 0:
			b.WriteString(units[p])
		case p == 0 || owner[p-1] != owner[p]:
			b.WriteString(replacements[owner[p]])
		}
	}
	return b.String(), skips
}

// mergeByPairs joins non-empty spans that share a code point until none do, then
// orders the result by start and end descending.
func mergeByPairs(spans []Span) []Span {
	out := slices.Clone(spans)
	for merged := true; merged; {
		merged = false
		for i := 0; i < len(out) && !merged; i++ {
			for j := i + 1; j < len(out) && !merged; j++ {
				a, b := out[i], out[j]
				if a.Start < a.End && b.Start < b.End && a.Start < b.End && b.Start < a.End {
					out[i] = Span{min(a.Start, b.Start), max(a.End, b.End)}
					out = slices.Delete(out, j, j+1)
					merged = true
				}
			}
		}
	}
	slices.SortFunc(out, func(a, b Span) int {
		if a.Start != b.Start {
			return b.Start - a.Start
		}
		return b.End - a.End
	})
	return out
}

var fuzzReplacements = []string{"", DefaultRedaction, "X", "é", "😀!", "<note>", "{}", "a\u00a0b"}

// decodeProgram turns fuzz bytes into transforms over content of n code points. Span
// offsets pass through SpansFromFact as a detector's list<map> would, so some fall
// outside the content and some are malformed; a transform whose target fact is
// malformed is dropped, as its rule would take its on_error path.
func decodeProgram(t *testing.T, program []byte, n int) []Transform {
	next := func() int {
		if len(program) == 0 {
			return 0
		}
		b := program[0]
		program = program[1:]
		return int(b)
	}
	var ts []Transform
	for i := 0; len(program) > 0 && i < 16; i++ {
		h := next()
		tr := Transform{
			Rule:        "ns/rule-" + strconv.Itoa(i),
			Action:      Action(h % 3),
			Replacement: fuzzReplacements[(h>>2)%len(fuzzReplacements)],
			Whole:       h&0x80 != 0 && h&0x40 != 0,
		}
		if !tr.Whole {
			count := next() % 9
			members := make([]map[string]any, count)
			for j := range members {
				a, b := next(), next()
				start, end := a%(n+3)-1, b%(n+3)-1
				if a&0x80 == 0 && start > end {
					start, end = end, start
				}
				members[j] = map[string]any{"start": json.Number(strconv.Itoa(start)), "end": json.Number(strconv.Itoa(end)), "kind": "fuzz"}
			}
			spans, err := SpansFromFact(members, n)
			if err != nil {
				if !errors.Is(err, ErrMalformedSpan) {
					t.Fatalf("SpansFromFact error %v does not wrap ErrMalformedSpan", err)
				}
				continue
			}
			tr.Spans = spans
		}
		ts = append(ts, tr)
	}
	return ts
}

func FuzzApply(f *testing.F) {
	f.Add("hello world", []byte{0x00, 2, 0, 5, 6, 11})
	f.Add("é日本😀x🔑key=sêcret;", []byte{0x01, 3, 3, 4, 10, 16, 0, 1, 0x02, 1, 1, 5, 0x00, 1, 1, 5})
	f.Add("", []byte{0xc0, 0xc2})
	f.Add("abcdef", []byte{0x02, 1, 0, 3, 0x00, 1, 0, 3, 0x00, 1, 2, 5, 0x06, 2, 4, 4, 1, 6})
	f.Fuzz(func(t *testing.T, content string, program []byte) {
		n := codepoint.Count(content)
		ts := decodeProgram(t, program, n)
		got, skips := Apply(content, codepoint.Count(content), ts)
		if utf8.ValidString(content) && !utf8.ValidString(got) {
			t.Fatalf("output is not valid UTF-8: %q", got)
		}
		for _, s := range skips {
			if s.Reason != ReasonOverlap || s.Start >= s.End || s.Start < 0 || s.End > n {
				t.Fatalf("skip %+v is not a non-empty in-content span skipped for overlap", s)
			}
		}
		want, wantSkips := reference(content, ts)
		if got != want || !reflect.DeepEqual(skips, wantSkips) {
			t.Fatalf("Apply(%q, %+v)\n = %q %+v\nreference %q %+v", content, ts, got, skips, want, wantSkips)
		}
	})
}

// TestApplyManySpansMatchesReference cross-checks Apply against the reference on span
// sets far larger than the fuzzer builds: thousands of spans over thousands of code
// points, so that zero-width spans, overlaps within and across transforms, adjacent
// spans, insertions inside and beside rewrites and consumed insertions all occur many
// times in one call.
func TestApplyManySpansMatchesReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(16, 23))
	units := []string{"a", "b", " ", "é", "日", "😀", "\xff", "\xed\xa0\x80"}
	for round := range 6 {
		var b strings.Builder
		for range 2000 + rng.IntN(2000) {
			b.WriteString(units[rng.IntN(len(units))])
		}
		content := b.String()
		n := codepoint.Count(content)
		// Longer spans make overlaps, and so merges and skips, more likely.
		longest := []int{2, 8, 40}[round%3]
		var ts []Transform
		for i := range 12 {
			tr := Transform{
				Rule:        "ns/rule-" + strconv.Itoa(i),
				Action:      Action(rng.IntN(3)),
				Replacement: fuzzReplacements[rng.IntN(len(fuzzReplacements))],
				Whole:       rng.IntN(40) == 0,
			}
			at := rng.IntN(n + 1)
			for range rng.IntN(600) {
				switch rng.IntN(4) {
				case 0: // adjacent to the span before
				case 1: // beside or inside the span before
					at = max(0, at-rng.IntN(longest+1))
				default:
					at = rng.IntN(n + 2)
				}
				width := 0
				if rng.IntN(3) > 0 {
					width = 1 + rng.IntN(longest)
				}
				tr.Spans = append(tr.Spans, Span{at, at + width})
				at += width
			}
			ts = append(ts, tr)
		}
		got, skips := Apply(content, n, ts)
		want, wantSkips := reference(content, ts)
		if got != want || !reflect.DeepEqual(skips, wantSkips) {
			t.Fatalf("round %d: Apply differs from the reference:\n got %q %+v\nwant %q %+v", round, got, skips, want, wantSkips)
		}
	}
}

func benchContent() string {
	var b strings.Builder
	for b.Len() < 4096 {
		b.WriteString("The quick brown fox jumps over the lazy dog; clé=sêcret 😀 ")
	}
	return b.String()
}

func BenchmarkApply50Spans(b *testing.B) {
	content := benchContent()
	n := utf8.RuneCountInString(content)
	step := n / 50
	spanAt := func(i int) Span { return Span{Start: i * step, End: i*step + step/2} }

	one := Transform{Rule: "ns/secrets", Action: Redact, Replacement: DefaultRedaction}
	for i := range 50 {
		one.Spans = append(one.Spans, spanAt(i))
	}
	var five []Transform
	for k := range 5 {
		t := Transform{Rule: "ns/r" + strconv.Itoa(k), Action: Action(k % 3), Replacement: "<" + strconv.Itoa(k) + ">"}
		for i := range 10 {
			t.Spans = append(t.Spans, spanAt(i*5+k))
		}
		five = append(five, t)
	}
	for _, bc := range []struct {
		name string
		ts   []Transform
	}{{"1x50", []Transform{one}}, {"5x10", five}} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(content)))
			for b.Loop() {
				Apply(content, codepoint.Count(content), bc.ts)
			}
		})
	}
}

// BenchmarkApplyManySpans is the shape that was once quadratic: a zero-width span
// after every other code point, then a one-code-point rewrite ending at each of them,
// which therefore consumes none.
func BenchmarkApplyManySpans(b *testing.B) {
	const n = 20000
	content := strings.Repeat("x", 2*n)
	points := Transform{Rule: "ns/secrets", Action: Redact, Replacement: DefaultRedaction}
	cells := Transform{Rule: "ns/pii", Action: Replace, Replacement: "#"}
	for i := range n {
		points.Spans = append(points.Spans, Span{2*i + 1, 2*i + 1})
		cells.Spans = append(cells.Spans, Span{2 * i, 2*i + 1})
	}
	mixed := Transform{Rule: "ns/mixed", Action: Replace, Replacement: "#", Spans: append(slices.Clone(points.Spans), cells.Spans...)}
	for _, bc := range []struct {
		name string
		ts   []Transform
	}{{"2x20000", []Transform{points, cells}}, {"1x40000", []Transform{mixed}}} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				Apply(content, len(content), bc.ts)
			}
		})
	}
}
