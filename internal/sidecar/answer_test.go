package sidecar

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/go-logr/logr"

	"github.com/oar-operator/oar-operator/internal/engine"
	"github.com/oar-operator/oar-operator/internal/engine/codepoint"
	"github.com/oar-operator/oar-operator/internal/engine/fixture"
)

// encodeReference is what writeJSON wrote for an answer before appendAnswer existed.
func encodeReference(t testing.TB, a Answer) []byte {
	t.Helper()
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(a); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func sameAnswer(t testing.TB, d *engine.Decision, bundle string, warnings ...Warning) {
	t.Helper()
	a := Answer{Decision: d, Bundle: bundle, Warnings: warnings}
	answerIsReference(t, appendAnswer(nil, a), a)
}

// answerIsReference fails unless got is encoding/json's encoding of ref, but for the
// surrogate escapes codepoint.AppendJSON writes where encoding/json writes U+FFFD.
func answerIsReference(t testing.TB, got []byte, ref Answer) {
	t.Helper()
	want := encodeReference(t, ref)
	if !bytes.Equal(got, want) && !sameButSurrogates(got, want) {
		t.Fatalf("appendAnswer differs from encoding/json:\n got %s\nwant %s", got, want)
	}
}

// sameButSurrogates reports whether got, read with lone surrogate escapes as U+FFFD,
// is the JSON encoding/json wrote (want): codepoint.AppendJSON departs from encoding/json only
// in writing a surrogate code point as its escape.
func sameButSurrogates(got, want []byte) bool {
	g, err := engine.DecodeJSON(got)
	if err != nil {
		return false
	}
	w, err := engine.DecodeJSON(want)
	return err == nil && reflect.DeepEqual(replaceSurrogates(g), w)
}

func replaceSurrogates(v any) any {
	switch x := v.(type) {
	case string:
		var b []byte
		for i := 0; i < len(x); {
			r, n := codepoint.Decode(x[i:])
			if codepoint.IsSurrogate(r) {
				// encoding/json wrote U+FFFD for each of its three bytes.
				b = append(b, "\uFFFD\uFFFD\uFFFD"...)
			} else {
				b = append(b, x[i:i+n]...)
			}
			i += n
		}
		return string(b)
	case map[string]any:
		m := make(map[string]any, len(x))
		for k, e := range x {
			m[replaceSurrogates(k).(string)] = replaceSurrogates(e)
		}
		return m
	case []any:
		for i, e := range x {
			x[i] = replaceSurrogates(e)
		}
	}
	return v
}

// TestLoneSurrogateIsWrittenAsItsEscape: a surrogate code point in an answer is written
// as its \udXXX escape, never U+FFFD, and a pair of them stays two escapes.
func TestLoneSurrogateIsWrittenAsItsEscape(t *testing.T) {
	s := "a" + string(codepoint.Append(nil, 0xD83D)) + string(codepoint.Append(nil, 0xDE00)) + "\\ud800" + string(codepoint.Append(nil, 0xDBFF))
	if got, want := string(codepoint.AppendJSON(nil, s)), `"a\ud83d\ude00\\ud800\udbff"`; got != want {
		t.Errorf("codepoint.AppendJSON = %s, want %s", got, want)
	}
}

// TestAnswerEncodingMatchesEncodingJSON holds appendAnswer to encoding/json's bytes for
// every decision of the conformance corpus, each fixture served by a sidecar's own
// runtime (detector_facts occurrences included: their failures are decisions too).
func TestAnswerEncodingMatchesEncodingJSON(t *testing.T) {
	var decisions int
	for _, path := range corpusFiles(t) {
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		f, err := fixture.Parse(data, strings.TrimSuffix(filepath.Base(path), ".json"))
		if err != nil || f.Expected.Error != nil {
			continue
		}
		sv, err := New(Options{Log: logr.Discard()}).Source().Install(fixtureBundle(t, f))
		if err != nil {
			continue
		}
		for _, o := range f.Occurrences {
			occ := o.Occurrence
			occ.SessionID = f.SessionID
			d := sv.Loaded.Program.Evaluate(sv.Runtime, &occ)
			sameAnswer(t, d, sv.Digest())
			decisions++
		}
	}
	if decisions < 500 {
		t.Fatalf("only %d decisions compared", decisions)
	}
}

// TestAnswerEncodingEdgeCases: every optional member present and absent, nil and empty
// lists, a copy of twenty members and a counter report, and strings encoding/json
// escapes.
func TestAnswerEncodingEdgeCases(t *testing.T) {
	odd := "a\"b\\c\b\f\n\r\t\x00\x1f\x7f <&> é \u2028\u2029 😀 \xff\xc3 end"
	content := "x" + odd
	many := map[string]string{}
	for i := range 20 {
		many[fmt.Sprintf("k%02d%s", 19-i, odd)] = odd
	}
	full := &engine.Decision{
		Decision: "block", Code: "C" + odd, Rule: "ns/R" + odd, Copy: engine.CopyOf(many),
		Advisories:        []engine.Advisory{{Code: odd, Rule: "r"}, {Code: "c", Rule: "r", Copy: engine.CopyOf(map[string]string{"b": "2", "a": odd})}},
		Transforms:        []engine.TransformRecord{{Rule: "r", Action: "redact", Target: odd, Replacement: odd}},
		Content:           &content,
		Applied:           []string{"a:fired", odd},
		OnFire:            []string{"publish_event"},
		Events:            []engine.Event{{Rule: "r", Anchor: "a", Effect: "warn"}, {Rule: "r", Anchor: "a", Effect: "warn", Session: odd}},
		SkippedTransforms: []engine.SkippedSpan{{Rule: "r", Start: -3, End: 1 << 40, Reason: odd}},
		Counters:          engine.CountersOf(map[string]engine.Counts{"b": {Fire: -1, Breaker: 1 << 62}, odd: {}}),
		Failures:          []engine.Failure{{Rule: "r", Error: odd}, {Rule: "r", Clause: "OAR-OPS-3", Error: "e"}},
	}
	empty := ""
	for _, d := range []*engine.Decision{
		full,
		{Decision: "none"},
		{Decision: "none", Copy: engine.Copy{}, Counters: engine.Counters{}, Failures: []engine.Failure{}, Content: &empty,
			Advisories: []engine.Advisory{}, Transforms: []engine.TransformRecord{}, Applied: []string{}, OnFire: []string{}, Events: []engine.Event{}, SkippedTransforms: []engine.SkippedSpan{}},
	} {
		sameAnswer(t, d, "sha256:"+odd)
		sameAnswer(t, d, "sha256:x", undeclaredAnchor(odd), Warning{Clause: odd, Field: odd, Value: odd, Message: odd})
	}
}

// TestAnswerEncodingKnowsEveryField fails when a type appendAnswer writes gains or
// loses a field: appendAnswer must then be changed with it.
func TestAnswerEncodingKnowsEveryField(t *testing.T) {
	for typ, fields := range map[reflect.Type]int{
		reflect.TypeFor[Answer]():                 3,
		reflect.TypeFor[Warning]():                4,
		reflect.TypeFor[engine.Decision]():        13,
		reflect.TypeFor[engine.Advisory]():        3,
		reflect.TypeFor[engine.TransformRecord](): 4,
		reflect.TypeFor[engine.Event]():           4,
		reflect.TypeFor[engine.SkippedSpan]():     4,
		reflect.TypeFor[engine.Counts]():          2,
		reflect.TypeFor[engine.Failure]():         3,
	} {
		if typ.NumField() != fields {
			t.Errorf("%s has %d fields; appendAnswer writes %d", typ, typ.NumField(), fields)
		}
	}
}

// FuzzAppendString: codepoint.AppendJSON quotes every string as encoding/json does.
func FuzzAppendString(f *testing.F) {
	for _, s := range []string{"", "plain", "a\"b\\c\b\f\n\r\t\x00\x1f\x7f", "<&>", "é\u2028\u2029😀", "\xff\xc3(\xe2\x82"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		answer := func(s string) Answer {
			return Answer{Decision: &engine.Decision{Decision: s, Copy: engine.CopyOf(map[string]string{s: s, "": s})}, Bundle: s}
		}
		// A high surrogate followed by a low one is written as two escapes, which a
		// JSON reader takes as the one code point they pair into: the reference
		// answer has that code point where s has the two halves.
		answerIsReference(t, appendAnswer(nil, answer(s)), answer(joinPairs(s)))
	})
}

// joinPairs replaces each high surrogate immediately followed by a low one, in their
// generalized UTF-8 form, by the UTF-8 of the code point they pair into.
func joinPairs(s string) string {
	var b []byte
	for i := 0; i < len(s); {
		r, n := codepoint.Decode(s[i:])
		if lo, ok := codepoint.Surrogate(s[i+n:]); ok && n == 3 && utf16.IsSurrogate(r) {
			if pair := utf16.DecodeRune(r, lo); pair != utf8.RuneError {
				b = utf8.AppendRune(b, pair)
				i += 6
				continue
			}
		}
		b = append(b, s[i:i+n]...)
		i += n
	}
	return string(b)
}
