package engine

import (
	"reflect"
	"strings"
	"testing"

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
func agrees(t *testing.T, data []byte) {
	t.Helper()
	want, wantErr := decodeReference(data)
	got, err := DecodeJSON(data)
	if (err == nil) != (wantErr == nil) || err != nil && err.Error() != wantErr.Error() {
		t.Fatalf("%q: DecodeJSON error %v, reference %v", data, err, wantErr)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("%q: DecodeJSON = %#v, reference %#v", data, got, want)
	}
	if fast, ok := strictjson.Decode(data); ok && (wantErr != nil || !reflect.DeepEqual(fast, want)) {
		t.Fatalf("%q: strictjson.Decode = %#v, reference %#v, %v", data, fast, want, wantErr)
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
