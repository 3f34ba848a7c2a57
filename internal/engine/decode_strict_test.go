package engine

import (
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/oar-operator/oar-operator/internal/engine/codepoint"
	"github.com/oar-operator/oar-operator/internal/engine/strictjson"
)

// fastCases are inputs strictjson.Decode must decode itself (fast) or leave to the reference
// path (!fast); either way DecodeJSON must answer as the reference path does.
var fastCases = []struct {
	in   string
	fast bool
}{
	{`{"anchor":"tool.pre_invoke","session_id":"s1","tool_call":{"name":"read","arguments":{"path":"/x","limit":20}}}`, true},
	{` {"a": [1, -0, 0.5, -1.25e+10, 3E-2, 1e5], "b": {}, "c": [], "d": [true, false, null]} `, true},
	{`"\"\\\/\b\f\n\r\t\u00e9\u2028\ud83d\ude00"`, true},
	{`"héllo wörld ☃ 😀"`, true},
	{`"\ud83d"`, true},
	{`"\ud83dx"`, true},
	{`"\ud83d\u0041"`, true},
	{`"\ude00\ud83d"`, true},
	{`"a\u0000b"`, true},
	{`{"\u0061":1,"b":2}`, true},
	{`123`, true},
	{`null`, true},
	{"\t[\r\n]\n", true},
	{`{"a":1,"a":2}`, false},
	{`{"a":1,"\u0061":2}`, false},
	{`{"x":{"a":1,"a":2}}`, false},
	{`[{"a":1},{"a":1}]`, true},
	{"\"\xff\"", false},
	{"\"\xed\xa0\x80\"", false},
	{"\"a\\n\xc3\"", false},
	{"\"\x01\"", false},
	{`"\x"`, false},
	{`"\u12g4"`, false},
	{`"abc`, false},
	{`01`, false},
	{`1.`, false},
	{`.5`, false},
	{`-`, false},
	{`1e`, false},
	{`+1`, false},
	{`[1,]`, false},
	{`{"a":1,}`, false},
	{`{"a" 1}`, false},
	{`{1:2}`, false},
	{`[1 2]`, false},
	{`tru`, false},
	{`nulls`, false},
	{`{} {}`, false},
	{`{}x`, false},
	{``, false},
	{`   `, false},
	{"\xef\xbb\xbf{}", false},
	{strings.Repeat("[", 257) + strings.Repeat("]", 257), true},
	{strings.Repeat("[", 257) + "1" + strings.Repeat("]", 257), false},
	{strings.Repeat("[", 256) + "1" + strings.Repeat("]", 256), true},
	{strings.Repeat(`{"a":`, 257) + "1" + strings.Repeat("}", 257), false},
}

func TestDecodeFastAgrees(t *testing.T) {
	for _, c := range fastCases {
		_, ok := strictjson.Decode([]byte(c.in))
		if ok != c.fast {
			t.Errorf("%q: strictjson.Decode ok = %v, want %v", c.in, ok, c.fast)
		}
		agrees(t, []byte(c.in))
	}
}

// agrees checks DecodeJSON against the reference path, and strictjson never accepting
// what the reference path refuses or decoding it differently.
// Two departures from the reference path are deliberate: bytes that are not UTF-8 are
// refused, and a lone surrogate escape is that code point where encoding/json writes
// U+FFFD; the results are compared with every surrogate read as U+FFFD.
func agrees(t *testing.T, data []byte) {
	t.Helper()
	got, err := DecodeJSON(data)
	if !utf8.Valid(data) {
		if err == nil || !strings.Contains(err.Error(), "is not UTF-8") {
			t.Fatalf("%q: DecodeJSON = %#v, %v; want a refusal of the bytes that are not UTF-8", data, got, err)
		}
		return
	}
	want, wantErr := decodeReference(data)
	if (err == nil) != (wantErr == nil) || err != nil && err.Error() != wantErr.Error() {
		t.Fatalf("%q: DecodeJSON error %v, reference %v", data, err, wantErr)
	}
	if !reflect.DeepEqual(asReplacement(got), want) {
		t.Fatalf("%q: DecodeJSON = %#v, reference %#v", data, got, want)
	}
	if fast, ok := strictjson.Decode(data); ok && (wantErr != nil || !reflect.DeepEqual(asReplacement(fast), want)) {
		t.Fatalf("%q: strictjson.Decode = %#v, reference %#v, %v", data, fast, want, wantErr)
	}
	// Sharing strings between documents changes where they live, never what they are:
	// a document decodes the same on its own and after others.
	for _, s := range []*SharedJSON{{}, sharedAcross} {
		shared, sharedErr := s.Decode(data)
		if (sharedErr == nil) != (err == nil) || err != nil && sharedErr.Error() != err.Error() || !reflect.DeepEqual(shared, got) {
			t.Fatalf("%q: SharedJSON.Decode = %#v, %v; DecodeJSON %#v, %v", data, shared, sharedErr, got, err)
		}
	}
	fast, fastOK := strictjson.Decode(data)
	if fastShared, ok := new(strictjson.Shared).Decode(data); ok != fastOK || !reflect.DeepEqual(fastShared, fast) {
		t.Fatalf("%q: strictjson.Shared.Decode = %#v, %v; Decode %#v, %v", data, fastShared, ok, fast, fastOK)
	}
}

// sharedAcross decodes every document agrees sees, so each is decoded after others.
var sharedAcross = &SharedJSON{}

// asReplacement returns v with every surrogate code point in its strings, keys
// included, replaced by U+FFFD, as encoding/json decodes a lone surrogate escape.
func asReplacement(v any) any {
	switch x := v.(type) {
	case string:
		var b []byte
		for i := 0; i < len(x); {
			r, n := codepoint.Decode(x[i:])
			if codepoint.IsSurrogate(r) {
				r = utf8.RuneError
			}
			b = utf8.AppendRune(b, r)
			i += n
		}
		return string(b)
	case map[string]any:
		m := make(map[string]any, len(x))
		for k, e := range x {
			m[asReplacement(k).(string)] = asReplacement(e)
		}
		return m
	case []any:
		a := make([]any, len(x))
		for i, e := range x {
			a[i] = asReplacement(e)
		}
		return a
	}
	return v
}

// TestLoneSurrogateEscapesAreKept: a lone surrogate escape is that code point, a valid
// pair is one supplementary code point, and raw bytes that are not UTF-8 are refused.
func TestLoneSurrogateEscapesAreKept(t *testing.T) {
	hi, lo := string(codepoint.Append(nil, 0xD83D)), string(codepoint.Append(nil, 0xDE00))
	for in, want := range map[string]string{
		`"\ud83d"`:              hi,
		`"a\ude00b"`:            "a" + lo + "b",
		`"\ude00\ud83d"`:        lo + hi,
		`"\ud83d\u0041"`:        hi + "A",
		`"\ud83d\ude00"`:        "😀",
		`"é\ud83d\ud83d\ude00"`: "é" + hi + "😀",
	} {
		got, err := DecodeJSON([]byte(in))
		if err != nil || got != want {
			t.Errorf("%s: got %q, %v; want %q", in, got, err, want)
		}
		if fast, ok := strictjson.Decode([]byte(in)); !ok || fast != want {
			t.Errorf("%s: strictjson got %q, %v; want %q", in, fast, ok, want)
		}
	}
	// YAML refuses a surrogate escape and raw bytes that are not UTF-8; neither is coerced.
	for _, in := range []string{"a: \"\\ud800\"\n", "a: \"x\xffy\"\n"} {
		if v, err := DecodeDocuments([]byte(in)); err == nil {
			t.Errorf("%q: YAML decoded to %q, want a refusal", in, v)
		}
	}
	for in, off := range map[string]string{"\"\xff\"": "offset 1", "{\"a\": \"\xed\xa0\x80\"}": "offset 7", "[\"\\n\xc3\"]": "offset 4"} {
		if _, err := DecodeJSON([]byte(in)); err == nil || !strings.Contains(err.Error(), "is not UTF-8") || !strings.Contains(err.Error(), off) {
			t.Errorf("%q: want a refusal naming %s, got %v", in, off, err)
		}
	}
}

// FuzzDecodeJSON: the one-pass decoder agrees with encoding/json and the key scan on
// every input.
func FuzzDecodeJSON(f *testing.F) {
	for _, c := range fastCases {
		f.Add([]byte(c.in))
	}
	f.Fuzz(func(t *testing.T, data []byte) { agrees(t, data) })
}

// SharedJSON cuts keys and strings without escapes from one copy of its document,
// and boxes a string value once for all its documents: a document met again allocates
// at least one object fewer than with DecodeJSON for each plain key and string, and
// one fewer again for each string value, less the one copy.
func TestSharedJSONCutsStrings(t *testing.T) {
	const plain, values = 8 + 7, 8 // eight plain keys and seven plain strings: when has escapes
	data := []byte(`{"oar":"1.0","id":"READ","namespace":"acme.tools","kind":"policy",` +
		`"anchor":"tool.pre_invoke","effect":"warn","when":"tool == \"read\"","status":"stable"}`)
	decode := func(f func([]byte) (any, error)) float64 {
		return testing.AllocsPerRun(100, func() {
			if _, err := f(data); err != nil {
				t.Fatal(err)
			}
		})
	}
	var s SharedJSON
	first, err := s.Decode(data)
	if err != nil {
		t.Fatal(err)
	}
	if copied, again := decode(DecodeJSON), decode(s.Decode); again > copied-plain-values+1 {
		t.Errorf("SharedJSON allocates %v times for a document met again, DecodeJSON %v: want at least %d fewer, less the one copy", again, copied, plain+values)
	}
	if again, _ := s.Decode(data); !reflect.DeepEqual(again, first) || first.(map[string]any)["when"] != `tool == "read"` {
		t.Errorf("decoded again: %#v; first %#v", again, first)
	}
}
