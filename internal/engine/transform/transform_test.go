package transform

import (
	"encoding/json"
	"errors"
	"math"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/oar-operator/oar-operator/internal/engine/codepoint"
)

func sp(start, end int) Span { return Span{Start: start, End: end} }

func redact(rule string, spans ...Span) Transform {
	return Transform{Rule: rule, Action: Redact, Replacement: DefaultRedaction, Spans: spans}
}

func replace(rule, with string, spans ...Span) Transform {
	return Transform{Rule: rule, Action: Replace, Replacement: with, Spans: spans}
}

func annotate(rule, with string, spans ...Span) Transform {
	return Transform{Rule: rule, Action: Annotate, Replacement: with, Spans: spans}
}

func whole(rule string, a Action, with string) Transform {
	return Transform{Rule: rule, Action: a, Replacement: with, Whole: true}
}

func overlap(rule string, start, end int) Skip {
	return Skip{Rule: rule, Start: start, End: end, Reason: ReasonOverlap}
}

type applyCase struct {
	name    string
	content string
	ts      []Transform
	want    string
	skips   []Skip
}

func runApply(t *testing.T, cases []applyCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, skips := Apply(tc.content, codepoint.Count(tc.content), tc.ts)
			if got != tc.want {
				t.Errorf("content = %q, want %q", got, tc.want)
			}
			if !reflect.DeepEqual(skips, tc.skips) {
				t.Errorf("skips = %+v, want %+v", skips, tc.skips)
			}
			// The reference model of the test agrees on every table case.
			refOut, refSkips := reference(tc.content, tc.ts)
			if refOut != got || !reflect.DeepEqual(refSkips, skips) {
				t.Errorf("reference model gives %q %+v", refOut, refSkips)
			}
		})
	}
}

func TestOPS13_Actions(t *testing.T) {
	if n := utf8.RuneCountInString(DefaultRedaction); DefaultRedaction != "[REDACTED]" || n != 10 {
		t.Fatalf("DefaultRedaction = %q (%d code points), want the ten code points [REDACTED]", DefaultRedaction, n)
	}
	for _, name := range []string{"redact", "replace", "annotate"} {
		a, ok := ParseAction(name)
		if !ok || a.String() != name {
			t.Errorf("ParseAction(%q) = %v, %v", name, a, ok)
		}
	}
	for _, bad := range []string{"", "Redact", "delete", "mask"} {
		if _, ok := ParseAction(bad); ok {
			t.Errorf("ParseAction(%q) accepted", bad)
		}
	}
	if s := Action(9).String(); s != "Action(9)" {
		t.Errorf("Action(9).String() = %q", s)
	}
	runApply(t, []applyCase{
		{name: "redact without replacement", content: "key=abc123;", ts: []Transform{redact("r", sp(4, 10))}, want: "key=[REDACTED];"},
		{name: "redact with replacement", content: "key=abc123;", ts: []Transform{replace("r", "***", sp(4, 10))}, want: "key=***;"},
		{name: "redact with empty replacement deletes", content: "key=abc123;", ts: []Transform{{Rule: "r", Action: Redact, Spans: []Span{sp(4, 10)}}}, want: "key=;"},
		{name: "replace", content: "hello world", ts: []Transform{replace("r", "there", sp(6, 11))}, want: "hello there"},
		{name: "annotate", content: "hello world", ts: []Transform{annotate("r", " (!)", sp(0, 5))}, want: "hello (!) world"},
		{name: "whole redact", content: "all of it", ts: []Transform{whole("r", Redact, DefaultRedaction)}, want: "[REDACTED]"},
		{name: "whole replace", content: "all of it", ts: []Transform{whole("r", Replace, "none")}, want: "none"},
		{name: "whole annotate appends", content: "all of it", ts: []Transform{whole("r", Annotate, " [checked]")}, want: "all of it [checked]"},
		{name: "whole redact of empty content", content: "", ts: []Transform{whole("r", Redact, DefaultRedaction)}, want: "[REDACTED]"},
		{name: "whole annotate of empty content", content: "", ts: []Transform{whole("r", Annotate, "note")}, want: "note"},
		{name: "no transforms", content: "untouched", want: "untouched"},
		{name: "no spans", content: "untouched", ts: []Transform{redact("r")}, want: "untouched"},
	})
}

func TestOPS16_AccumulatedOrder(t *testing.T) {
	runApply(t, []applyCase{
		{
			name:    "later offsets are original offsets",
			content: "aaa bbb ccc",
			ts: []Transform{
				replace("r1", "A-LONGER-REPLACEMENT", sp(0, 3)),
				replace("r2", "C", sp(8, 11)),
			},
			want: "A-LONGER-REPLACEMENT bbb C",
		},
		{
			name:    "a shortening edit before a later span",
			content: "0123456789",
			ts:      []Transform{replace("r1", "", sp(0, 5)), replace("r2", "x", sp(7, 8))},
			want:    "56x89",
		},
		{
			name:    "a later rewrite of an earlier rewrite is skipped, not clamped",
			content: "secret=hunter2 rest",
			ts:      []Transform{redact("r1", sp(7, 14)), replace("r2", "<pw>", sp(10, 16))},
			want:    "secret=[REDACTED] rest",
			skips:   []Skip{overlap("r2", 10, 16)},
		},
		{
			name:    "overlapping targets of two transforms are applied in order, never merged",
			content: "abcdefgh",
			ts:      []Transform{replace("r1", "1", sp(0, 4)), replace("r2", "2", sp(2, 6)), replace("r3", "3", sp(4, 8))},
			want:    "13",
			skips:   []Skip{overlap("r2", 2, 6)},
		},
		{
			name:    "order is accumulation order, not span order",
			content: "abcdefgh",
			ts:      []Transform{replace("r1", "X", sp(2, 6)), replace("r2", "Y", sp(0, 4)), replace("r3", "Z", sp(6, 8))},
			want:    "abXZ",
			skips:   []Skip{overlap("r2", 0, 4)},
		},
		{
			name:    "touching rewrites of two transforms both apply",
			content: "abcdef",
			ts:      []Transform{replace("r1", "1", sp(0, 3)), replace("r2", "2", sp(3, 6))},
			want:    "12",
		},
		{
			name:    "whole content after a span rewrite is skipped",
			content: "abcdef",
			ts:      []Transform{replace("r1", "1", sp(1, 2)), whole("r2", Redact, DefaultRedaction)},
			want:    "a1cdef",
			skips:   []Skip{overlap("r2", 0, 6)},
		},
		{
			name:    "spans after whole content are skipped",
			content: "abcdef",
			ts:      []Transform{whole("r1", Redact, DefaultRedaction), redact("r2", sp(4, 6), sp(0, 1))},
			want:    "[REDACTED]",
			skips:   []Skip{overlap("r2", 4, 6), overlap("r2", 0, 1)},
		},
		{
			name:    "a transform partly skipped applies its other spans",
			content: "one two three four",
			ts:      []Transform{redact("r1", sp(4, 7)), replace("r2", "#", sp(14, 18), sp(6, 9), sp(0, 3))},
			want:    "# [REDACTED] three #",
			skips:   []Skip{overlap("r2", 6, 9)},
		},
	})
}

func TestOPS19_SpansFromFact(t *testing.T) {
	n := func(s string) json.Number { return json.Number(s) }
	span := func(start, end any) map[string]any { return map[string]any{"start": start, "end": end} }
	good := []struct {
		name    string
		members []map[string]any
		len     int
		want    []Span
	}{
		{"json numbers", []map[string]any{span(n("0"), n("3")), span(n("5"), n("9"))}, 10, []Span{sp(0, 3), sp(5, 9)}},
		{"int and int64", []map[string]any{span(1, int64(2)), span(int64(0), 0)}, 2, []Span{sp(1, 2), sp(0, 0)}},
		{"other members are allowed", []map[string]any{{"start": n("1"), "end": n("2"), "type": "aws_key", "score": n("0.9")}}, 5, []Span{sp(1, 2)}},
		{"empty span at the end is inside", []map[string]any{span(n("5"), n("5"))}, 5, []Span{sp(5, 5)}},
		{"whole content", []map[string]any{span(n("0"), n("5"))}, 5, []Span{sp(0, 5)}},
		{"reaching past the end is dropped, not clamped", []map[string]any{span(n("3"), n("6")), span(n("0"), n("1"))}, 5, []Span{sp(0, 1)}},
		{"starting past the end is dropped", []map[string]any{span(n("7"), n("9"))}, 5, []Span{}},
		{"empty span past the end is dropped", []map[string]any{span(n("6"), n("6"))}, 5, []Span{}},
		{"integers beyond int64 are outside", []map[string]any{span(n("1"), n("18446744073709551616")), span(n("18446744073709551616"), n("18446744073709551617"))}, 5, []Span{}},
		{"no members", nil, 5, []Span{}},
	}
	for _, tc := range good {
		got, err := SpansFromFact(tc.members, tc.len)
		if err != nil || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: SpansFromFact = %v, %v; want %v", tc.name, got, err, tc.want)
		}
	}
	bad := []struct {
		name    string
		members []map[string]any
		msg     string
	}{
		{"missing start", []map[string]any{{"end": n("3")}}, "start is missing"},
		{"missing end", []map[string]any{{"start": n("3")}}, "end is missing"},
		{"negative start", []map[string]any{span(n("-1"), n("3"))}, "start is -1"},
		{"negative end", []map[string]any{span(0, -2)}, "end is -2"},
		{"fractional", []map[string]any{span(n("1.5"), n("3"))}, "number 1.5"},
		{"integral value with a fraction", []map[string]any{span(n("1.0"), n("3"))}, "number 1.0"},
		{"exponent spelling", []map[string]any{span(n("1"), n("3e0"))}, "number 3e0"},
		{"float64", []map[string]any{span(1.0, 3.0)}, "number 1"},
		{"string", []map[string]any{span("1", "3")}, `string "1"`},
		{"null", []map[string]any{span(nil, n("3"))}, "null"},
		{"bool", []map[string]any{span(n("1"), true)}, "boolean true"},
		{"start exceeds end", []map[string]any{span(n("4"), n("3"))}, "start 4 exceeds end 3"},
		{"start exceeds end beyond int64", []map[string]any{span(n("18446744073709551617"), n("18446744073709551616"))}, "exceeds"},
		{"huge start, small end", []map[string]any{span(n("18446744073709551617"), n("1"))}, "exceeds"},
		{"huge negative", []map[string]any{span(n("-18446744073709551617"), n("1"))}, "-18446744073709551617"},
		// A malformed member fails the whole fact even when it is also outside the
		// content, and even after well-formed members.
		{"malformed after good", []map[string]any{span(n("0"), n("1")), span(n("90"), n("80"))}, "member 1"},
	}
	for _, tc := range bad {
		got, err := SpansFromFact(tc.members, 10)
		if !errors.Is(err, ErrMalformedSpan) || got != nil {
			t.Errorf("%s: SpansFromFact = %v, %v; want ErrMalformedSpan", tc.name, got, err)
			continue
		}
		if !strings.Contains(err.Error(), tc.msg) || !strings.Contains(err.Error(), "OAR-OPS-19") {
			t.Errorf("%s: error %q does not say %q", tc.name, err, tc.msg)
		}
	}
	// Apply drops an out-of-content span it is handed directly, as SpansFromFact does.
	runApply(t, []applyCase{{
		name:    "out of content spans are not applied and not skipped",
		content: "abc",
		ts:      []Transform{redact("r", sp(2, 4), sp(5, 5), sp(-1, 1), sp(2, 1), sp(0, 1))},
		want:    "[REDACTED]bc",
	}})
}

func TestOPS20_SpansOfOneTransform(t *testing.T) {
	runApply(t, []applyCase{
		{
			name:    "spans in any order apply against the original",
			content: "a1 b2 c3 d4",
			ts:      []Transform{replace("r", "##", sp(3, 5), sp(9, 11), sp(0, 2), sp(6, 8))},
			want:    "## ## ## ##",
		},
		{
			name:    "overlapping spans merge into one covering span, rewritten once",
			content: "abcdefghij",
			ts:      []Transform{replace("r", "X", sp(1, 4), sp(3, 6), sp(8, 9))},
			want:    "aXghXj",
		},
		{
			name:    "a chain of overlaps merges transitively",
			content: "abcdefghij",
			ts:      []Transform{replace("r", "X", sp(6, 9), sp(0, 3), sp(2, 5), sp(4, 7))},
			want:    "Xj",
		},
		{
			name:    "a contained span merges into its container",
			content: "abcdefghij",
			ts:      []Transform{redact("r", sp(2, 4), sp(1, 8))},
			want:    "a[REDACTED]ij",
		},
		{
			name:    "duplicate spans are rewritten once",
			content: "abcdef",
			ts:      []Transform{replace("r", "X", sp(1, 3), sp(1, 3))},
			want:    "aXdef",
		},
		{
			name:    "touching spans do not merge",
			content: "abcdef",
			ts:      []Transform{replace("r", "X", sp(0, 3), sp(3, 5))},
			want:    "XXf",
		},
		{
			name:    "a zero-width span overlaps nothing and inserts",
			content: "abcdef",
			ts:      []Transform{replace("r", "|", sp(3, 3))},
			want:    "abc|def",
		},
		{
			name:    "a zero-width span inside a span of the same transform is consumed by it",
			content: "abcdef",
			ts:      []Transform{replace("r", "X", sp(1, 4), sp(2, 2))},
			want:    "aXef",
		},
		{
			name:    "a zero-width span at the end of a span of the same transform survives",
			content: "abcdef",
			ts:      []Transform{replace("r", "X", sp(1, 4), sp(4, 4))},
			want:    "aXXef",
		},
		{
			name:    "annotate spans merge too",
			content: "abcdef",
			ts:      []Transform{annotate("r", "*", sp(0, 2), sp(1, 3), sp(4, 5))},
			want:    "abc*de*f",
		},
		{
			name:    "annotations at one point in one transform",
			content: "abcdef",
			ts:      []Transform{annotate("r", "*", sp(0, 3), sp(3, 3), sp(2, 3))},
			want:    "abc**def",
		},
	})
}

// TestOPS21_AnnotateAndRedactEquivalence covers both consequences of [OAR-OPS-21]
// and the identity of redact and replace.
func TestOPS21_AnnotateAndRedactEquivalence(t *testing.T) {
	runApply(t, []applyCase{
		// Consequence 1: an insertion belongs to the content beginning at its point.
		{
			name:    "annotate then redact the same span keeps the annotation after the redaction",
			content: "token=abc123 ok",
			ts:      []Transform{annotate("a", " (secret)", sp(6, 12)), redact("r", sp(6, 12))},
			want:    "token=[REDACTED] (secret) ok",
		},
		{
			name:    "a rewrite ending at the insertion point preserves it",
			content: "abcdef",
			ts:      []Transform{annotate("a", "!", sp(0, 3)), replace("r", "X", sp(1, 3))},
			want:    "aX!def",
		},
		{
			name:    "a rewrite beginning at the insertion point consumes it",
			content: "abcdef",
			ts:      []Transform{annotate("a", "!", sp(0, 3)), replace("r", "X", sp(3, 5))},
			want:    "abcXf",
		},
		{
			name:    "a rewrite strictly containing the insertion point consumes it",
			content: "abcdef",
			ts:      []Transform{annotate("a", "!", sp(0, 3)), replace("r", "X", sp(2, 5))},
			want:    "abXf",
		},
		{
			name:    "whole-content annotate survives a whole-content redact",
			content: "text",
			ts:      []Transform{whole("a", Annotate, " [flagged]"), whole("r", Redact, DefaultRedaction)},
			want:    "[REDACTED] [flagged]",
		},
		// Consequence 2: an annotate records a zero-width range and is never skipped.
		{
			name:    "redact then annotate the same span yields both, in that order",
			content: "token=abc123 ok",
			ts:      []Transform{redact("r", sp(6, 12)), annotate("a", " (secret)", sp(6, 12))},
			want:    "token=[REDACTED] (secret) ok",
		},
		{
			name:    "an annotation whose end is inside an earlier rewrite follows that rewrite",
			content: "abcdefgh",
			ts:      []Transform{replace("r", "X", sp(1, 6)), annotate("a", "!", sp(0, 3))},
			want:    "aX!gh",
		},
		{
			name:    "an annotation never blocks a later rewrite of its span",
			content: "abcdef",
			ts:      []Transform{annotate("a", "!", sp(1, 4)), replace("r", "X", sp(0, 6))},
			want:    "X",
		},
		{
			name:    "two annotations at the same point appear in the order applied",
			content: "abcdef",
			ts:      []Transform{annotate("a1", "1", sp(0, 3)), annotate("a2", "2", sp(2, 3)), whole("a3", Annotate, "3"), annotate("a4", "4", sp(3, 6))},
			want:    "abc12def34",
		},
		{
			name:    "a zero-width replace does not consume an annotation at its point",
			content: "abcdef",
			ts:      []Transform{annotate("a", "!", sp(0, 3)), replace("r", "|", sp(3, 3))},
			want:    "abc!|def",
		},
		{
			name:    "a zero-width span strictly inside an earlier rewrite is not skipped",
			content: "abcdef",
			ts:      []Transform{replace("r1", "X", sp(1, 5)), replace("r2", "|", sp(3, 3))},
			want:    "aX|f",
		},
		{
			name:    "an insertion before a later rewrite at the same point precedes it",
			content: "abcdef",
			ts:      []Transform{replace("r1", "X", sp(3, 5)), annotate("a", "!", sp(0, 3))},
			want:    "abc!Xf",
		},
	})

	// redact and replace with the same replacement are identical.
	content := "naïve 😀 secret text ok"
	targets := [][]Span{{sp(0, 5)}, {sp(8, 14), sp(6, 7)}, {sp(3, 3)}, {sp(2, 9), sp(4, 12)}}
	for _, with := range []string{DefaultRedaction, "", "▮▮"} {
		for _, spans := range targets {
			for _, first := range [][]Transform{nil, {annotate("a", "~", sp(1, 6))}, {replace("p", "P", sp(10, 13))}} {
				r := append(append([]Transform{}, first...), Transform{Rule: "x", Action: Redact, Replacement: with, Spans: spans})
				p := append(append([]Transform{}, first...), Transform{Rule: "x", Action: Replace, Replacement: with, Spans: spans})
				ro, rs := Apply(content, codepoint.Count(content), r)
				po, ps := Apply(content, codepoint.Count(content), p)
				if ro != po || !reflect.DeepEqual(rs, ps) {
					t.Errorf("redact %q %v gives %q %v, replace gives %q %v", with, spans, ro, rs, po, ps)
				}
			}
			wr, _ := Apply(content, codepoint.Count(content), []Transform{{Rule: "x", Action: Redact, Replacement: with, Whole: true}})
			wp, _ := Apply(content, codepoint.Count(content), []Transform{{Rule: "x", Action: Replace, Replacement: with, Whole: true}})
			if wr != with || wp != with {
				t.Errorf("whole-content redact/replace with %q: %q, %q", with, wr, wp)
			}
		}
	}
}

func TestOPS23_SkippedTransforms(t *testing.T) {
	runApply(t, []applyCase{
		{
			name:    "skips in accumulated order, then descending start and end",
			content: "0123456789abcdef",
			ts: []Transform{
				replace("ns/first", "_", sp(2, 4), sp(8, 10)),
				replace("ns/second", "S", sp(0, 3), sp(9, 12), sp(3, 5), sp(14, 16)),
				replace("ns/third", "T", sp(1, 2), sp(7, 9), sp(12, 13)),
			},
			want: "0T_4567_abTdS",
			// second, spans descending: [14,16) applied; [9,12), [3,5) and [0,3)
			// skipped. third: [12,13) applied, [7,9) skipped, [1,2) applied.
			skips: []Skip{
				overlap("ns/second", 9, 12), overlap("ns/second", 3, 5), overlap("ns/second", 0, 3),
				overlap("ns/third", 7, 9),
			},
		},
		{
			name:    "a merged span is skipped as one, with its covering offsets",
			content: "0123456789",
			ts:      []Transform{replace("r1", "X", sp(4, 5)), replace("r2", "Y", sp(2, 4), sp(3, 6), sp(8, 9))},
			want:    "0123X567Y9",
			skips:   []Skip{overlap("r2", 2, 6)},
		},
		{
			name:    "same start: longer span first",
			content: "0123456789",
			ts:      []Transform{replace("r1", "X", sp(5, 6)), replace("r2", "Y", sp(5, 9)), replace("r3", "Z", sp(5, 7), sp(5, 5))},
			want:    "01234ZX6789",
			skips:   []Skip{overlap("r2", 5, 9), overlap("r3", 5, 7)},
		},
		{
			name:    "zero-width ranges inside a rewritten range are not skipped",
			content: "0123456789",
			ts:      []Transform{redact("r1", sp(2, 8)), redact("r2", sp(5, 5)), annotate("r3", "!", sp(3, 4))},
			want:    "01[REDACTED][REDACTED]!89",
		},
		{
			name:    "out-of-content spans are not overlap skips",
			content: "0123",
			ts:      []Transform{whole("r1", Redact, DefaultRedaction), redact("r2", sp(3, 9), sp(5, 6))},
			want:    "[REDACTED]",
		},
		{
			name:    "an annotation is never skipped",
			content: "0123",
			ts:      []Transform{whole("r1", Replace, "X"), annotate("r2", "!", sp(0, 2)), whole("r3", Annotate, "?")},
			want:    "X!?",
		},
	})
}

func TestCodePointOffsets(t *testing.T) {
	// "é" is 2 bytes, "日本" 3 bytes each, "😀" 4 bytes and one code point (two UTF-16
	// units): offsets counted in any other unit would land elsewhere.
	content := "é日本😀x🔑key=sêcret;"
	runApply(t, []applyCase{
		{name: "emoji", content: content, ts: []Transform{replace("r", "E", sp(3, 4))}, want: "é日本Ex🔑key=sêcret;"},
		{name: "after multi-byte", content: content, ts: []Transform{redact("r", sp(10, 16))}, want: "é日本😀x🔑key=[REDACTED];"},
		{name: "several", content: content, ts: []Transform{replace("r", "_", sp(0, 1), sp(1, 3), sp(5, 6))}, want: "__😀x_key=sêcret;"},
		{name: "annotate after emoji", content: content, ts: []Transform{annotate("r", "(key)", sp(5, 6))}, want: "é日本😀x🔑(key)key=sêcret;"},
		{name: "whole", content: content, ts: []Transform{whole("r", Annotate, "✓")}, want: content + "✓"},
		{name: "two transforms", content: content, ts: []Transform{replace("r1", "🙈🙈🙈", sp(1, 3)), redact("r2", sp(10, 16)), annotate("r3", "‼", sp(0, 1))}, want: "é‼🙈🙈🙈😀x🔑key=[REDACTED];"},
	})
	spans, err := SpansFromFact([]map[string]any{{"start": json.Number("16"), "end": json.Number("17")}, {"start": json.Number("17"), "end": json.Number("18")}}, utf8.RuneCountInString(content))
	if err != nil || !reflect.DeepEqual(spans, []Span{sp(16, 17)}) {
		t.Errorf("content length is counted in code points: %v %v", spans, err)
	}
}

func TestApplyDoesNotModifyItsInput(t *testing.T) {
	spans := []Span{sp(6, 8), sp(0, 2), sp(1, 3)}
	ts := []Transform{redact("r", spans...)}
	Apply("abcdefghij", codepoint.Count("abcdefghij"), ts)
	if !reflect.DeepEqual(ts[0].Spans, []Span{sp(6, 8), sp(0, 2), sp(1, 3)}) {
		t.Errorf("Apply reordered the caller's spans: %v", ts[0].Spans)
	}
}

func TestLargeOffsets(t *testing.T) {
	got, _ := Apply("abc", codepoint.Count("abc"), []Transform{redact("r", sp(math.MaxInt-1, math.MaxInt), sp(0, math.MaxInt))})
	if got != "abc" {
		t.Errorf("out-of-range spans changed the content: %q", got)
	}
}
