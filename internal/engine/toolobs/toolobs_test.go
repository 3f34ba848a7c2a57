package toolobs

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"testing"

	"github.com/oar-operator/oar-operator/internal/engine/types"
)

// decode reads JSON text the way a host does, numbers as json.Number.
func decode(t testing.TB, text string) any {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(text))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		t.Fatalf("decode %q: %v", text, err)
	}
	return v
}

// digest hashes a canonical form written out by hand, independently of the encoder.
func digest(canonical string) string {
	sum := sha256.Sum256([]byte("oar-tool-1.0\x00" + canonical))
	return hex.EncodeToString(sum[:])
}

func TestFACT28_CanonicalJSON(t *testing.T) {
	cases := []struct {
		name string
		v    any
		want string
	}{
		{"null", nil, `null`},
		{"booleans", []any{true, false}, `[true,false]`},
		{"empty containers", map[string]any{"a": []any{}, "b": map[string]any{}}, `{"a":[],"b":{}}`},
		{"nil containers", []any{map[string]any(nil), []any(nil), []string(nil), map[string]string(nil), []map[string]any(nil)}, `[{},[],[],{},[]]`},
		{"no insignificant whitespace", decode(t, "{ \"a\" : [ 1 , { \"b\" : null } ] ,\n\t\"c\" : \"x y\" }"), `{"a":[1.0,{"b":null}],"c":"x y"}`},
		{"array order is kept", decode(t, `["b","a",3,1,2]`), `["b","a",3.0,1.0,2.0]`},
		{
			"keys sort by code point, non-ASCII included",
			decode(t, `{"b":1,"a":2,"é":3,"z":4,"日":5,"😀":6,"Z":7,"aa":8,"":9,"｡":10,"_":11}`),
			// U+FF61 sorts before U+1F600 by code point, although UTF-16 order would put
			// the emoji's surrogates first.
			`{"":9.0,"Z":7.0,"_":11.0,"a":2.0,"aa":8.0,"b":1.0,"z":4.0,"é":3.0,"日":5.0,"｡":10.0,"😀":6.0}`,
		},
		{"nested objects sort too", decode(t, `{"z":{"y":1,"x":[{"b":0,"a":0}]},"a":0}`), `{"a":0.0,"z":{"x":[{"a":0.0,"b":0.0}],"y":1.0}}`},
		{"map[string]string", map[string]string{"k2": "v", "k1": "w"}, `{"k1":"w","k2":"v"}`},
		{"[]string", []string{"x", "\n"}, `["x","\u000a"]`},
		{"[]map[string]any", []map[string]any{{"end": 3, "start": int64(1)}}, `[{"end":3.0,"start":1.0}]`},

		{"quote and backslash", `say "hi" \ bye`, `"say \"hi\" \\ bye"`},
		{"control characters as lowercase \\u00xx", "\x00\x01\b\t\n\v\f\r\x1b\x1f", `"\u0000\u0001\u0008\u0009\u000a\u000b\u000c\u000d\u001b\u001f"`},
		{"no other escapes", "/ < > & \x7f \u0080 \u2028 \u2029 \ufeff é 😀", "\"/ < > & \x7f \u0080 \u2028 \u2029 \ufeff é 😀\""},
		{"escaped input is written directly", decode(t, `"\u00e9\ud83d\ude00\/\u000A"`), `"é😀/\u000a"`},
		{"control characters in keys", map[string]any{"a\tb": true}, `{"a\u0009b":true}`},

		{"integers are written as doubles", []any{0, 5, -5, int64(42)}, `[0.0,5.0,-5.0,42.0]`},
		{"integral json numbers", decode(t, `[5, -0, 1E2, 5.0, 5e0]`), `[5.0,0.0,100.0,5.0,5.0]`},
		{"small numbers without exponent", decode(t, `[1e-7, 0.0000001, -2.5e-3]`), `[0.0000001,0.0000001,-0.0025]`},
		{"large numbers without exponent", decode(t, `[1e21, 1.5e300]`), `[1000000000000000000000.0,` + "15" + strings.Repeat("0", 299) + `.0]`},
		{"shortest round-trip", []any{0.1, 1.0 / 3, 123456789.125, math.Copysign(0, -1), math.SmallestNonzeroFloat64 * 0}, `[0.1,0.3333333333333333,123456789.125,0.0,0.0]`},
		{"doubles round to nearest", decode(t, `[0.30000000000000004441, 1e-400, 9007199254740993.0]`), `[0.30000000000000004,0.0,9007199254740992.0]`},
		{"largest exact integers", decode(t, `[9007199254740992, -9007199254740992, 9223372036854775807e0]`), `[9007199254740992.0,-9007199254740992.0,9223372036854776000.0]`},
		// Exact integers are still written in the shortest form that round-trips
		// ([OAR-COPY-10]), not digit for digit.
		{"least int64 is exact", []any{int64(math.MinInt64), decode(t, "-9223372036854775808")}, `[-9223372036854776000.0,-9223372036854776000.0]`},
		{"integers beyond int64 that binary64 holds", decode(t, `[18446744073709551616, -36893488147419103232]`), `[18446744073709552000.0,-36893488147419103000.0]`},
	}
	for _, tc := range cases {
		got, err := CanonicalJSON(tc.v)
		if err != nil || string(got) != tc.want {
			t.Errorf("%s: CanonicalJSON = %s, %v; want %s", tc.name, got, err, tc.want)
		}
	}
}

func TestFACT28_Refusals(t *testing.T) {
	cases := []struct {
		name string
		v    any
		msg  string
	}{
		{"integer json number above 2^53 that binary64 cannot hold", decode(t, `{"n":9007199254740993}`), "9007199254740993"},
		{"negative inexact integer", decode(t, `[-9007199254740993]`), "-9007199254740993"},
		{"inexact int64", int64(9007199254740993), "9007199254740993"},
		{"max int64", int64(math.MaxInt64), "9223372036854775807"},
		{"max int64 as json number", json.Number("9223372036854775807"), "9223372036854775807"},
		{"inexact integer beyond int64", json.Number("18446744073709551617"), "18446744073709551617"},
		{"integer beyond binary64", json.Number("1" + strings.Repeat("0", 400)), "401 digits"},
		{"integer just beyond binary64", json.Number("2" + strings.Repeat("0", 308)), "no exact binary64"},
		{"double overflow", decode(t, `[1e400]`), "1e400"},
		{"negative double overflow", json.Number("-1.8e308"), "-1.8e308"},
		{"NaN", math.NaN(), "non-finite"},
		{"infinity", []any{math.Inf(1)}, "non-finite"},
		{"not a JSON number", json.Number("0x10"), "malformed"},
		{"Inf spelling", json.Number("Inf"), "malformed"},
		{"leading zero", json.Number("01"), "malformed"},
		{"empty number", json.Number(""), "malformed"},
		{"trailing dot", json.Number("1."), "malformed"},
		{"bare exponent", json.Number("1e"), "malformed"},
		{"invalid UTF-8 string", []any{"ok", "bad\xff"}, "UTF-8"},
		{"invalid UTF-8 after valid non-ASCII", []any{"é\"\xff"}, "UTF-8"},
		{"invalid UTF-8 before an escape", []any{"\xc3\n"}, "UTF-8"},
		{"invalid UTF-8 key", map[string]any{"k\xc3": 1}, "UTF-8"},
		{"invalid UTF-8 in []string", []string{"\xed\xa0\x80"}, "UTF-8"},
		{"invalid UTF-8 in map[string]string", map[string]string{"k": "\xff"}, "UTF-8"},
		{"not decoded JSON", struct{}{}, "struct {}"},
		{"float32", float32(1), "float32"},
		{"nested failure", map[string]any{"a": []any{map[string]any{"b": math.Inf(-1)}}}, "non-finite"},
		{"failure inside []map[string]any", []map[string]any{{"x": math.NaN()}}, "non-finite"},
	}
	for _, tc := range cases {
		got, err := CanonicalJSON(tc.v)
		if !errors.Is(err, ErrNotCanonical) || got != nil {
			t.Errorf("%s: CanonicalJSON = %s, %v; want ErrNotCanonical", tc.name, got, err)
			continue
		}
		if !strings.Contains(err.Error(), tc.msg) {
			t.Errorf("%s: error %q does not mention %q", tc.name, err, tc.msg)
		}
	}
}

func TestFACT28_Fingerprint(t *testing.T) {
	cases := []struct {
		name      string
		tool      string
		args      map[string]any
		canonical string
	}{
		{"simple", "shell", decode(t, `{"timeout":5,"cmd":"ls -la"}`).(map[string]any), `["shell",{"cmd":"ls -la","timeout":5.0}]`},
		{"nested, non-ASCII, escaped", "fs.read", decode(t, `{"q":"a\nb","path":"/etc/café","opts":{"lines":[1,2.5]}}`).(map[string]any),
			`["fs.read",{"opts":{"lines":[1.0,2.5]},"path":"/etc/café","q":"a\u000ab"}]`},
		{"no arguments", "ping", map[string]any{}, `["ping",{}]`},
		{"nil arguments are the empty object", "ping", nil, `["ping",{}]`},
		{"tool name is escaped like any string", "to\"ol\t", map[string]any{"x": nil}, `["to\"ol\u0009",{"x":null}]`},
	}
	for _, tc := range cases {
		got, err := Fingerprint(tc.tool, tc.args)
		if want := digest(tc.canonical); err != nil || got != want {
			t.Errorf("%s: Fingerprint = %q, %v; want %q (sha256 of %s)", tc.name, got, err, want, tc.canonical)
		}
	}
	// Pinned digests, computed outside Go from the canonical text above.
	pinned := map[string]string{
		`["shell",{"cmd":"ls -la","timeout":5.0}]`:                                   "02c0966729292f4e01f504043cb63028e98dddd2bd8e4caa61c331e742a0a91f",
		`["fs.read",{"opts":{"lines":[1.0,2.5]},"path":"/etc/café","q":"a\u000ab"}]`: "5e8f90ef381a9ed6390ade5d5063577ff4128c9d5f8118a7a62af9b3f273f9f8",
	}
	for canonical, want := range pinned {
		if got := digest(canonical); got != want {
			t.Errorf("digest(%s) = %s, want %s", canonical, got, want)
		}
	}
}

func TestFACT28_FingerprintProperties(t *testing.T) {
	args := decode(t, `{"path":"/tmp/x","recursive":true}`).(map[string]any)
	a, errA := Fingerprint("fs.delete", args)
	b, errB := Fingerprint("fs.read", args)
	if errA != nil || errB != nil || a == b {
		t.Errorf("identical arguments to different tools must differ: %q %q (%v %v)", a, b, errA, errB)
	}
	if len(a) != 64 || strings.ToLower(a) != a {
		t.Errorf("fingerprint %q is not 64 lowercase hex digits", a)
	}
	// An absent tool call has an empty fingerprint, whatever the arguments.
	if fp, err := Fingerprint("", args); fp != "" || err != nil {
		t.Errorf("absent tool call: %q, %v", fp, err)
	}
	// The number form and the key order of the host's encoding do not matter.
	same := []map[string]any{
		{"n": json.Number("5"), "s": "x"},
		{"s": "x", "n": 5},
		{"n": int64(5), "s": "x"},
		{"n": 5.0, "s": "x"},
		{"n": json.Number("5.0"), "s": "x"},
		{"n": json.Number("0.5e1"), "s": "x"},
	}
	first, _ := Fingerprint("t", same[0])
	for _, m := range same[1:] {
		if fp, err := Fingerprint("t", m); fp != first || err != nil {
			t.Errorf("Fingerprint(%v) = %q, %v; want %q", m, fp, err, first)
		}
	}
	// Values that differ give different fingerprints.
	for _, m := range []map[string]any{{"n": 6, "s": "x"}, {"n": "5", "s": "x"}, {"n": 5, "s": "x", "t": nil}, {"N": 5, "s": "x"}} {
		if fp, _ := Fingerprint("t", m); fp == first {
			t.Errorf("Fingerprint(%v) collides with %v", m, same[0])
		}
	}
	// An integer binary64 cannot hold is a fact-provider failure, not a digest.
	fp, err := Fingerprint("t", map[string]any{"id": json.Number("9007199254740993")})
	if !errors.Is(err, ErrNotCanonical) || fp != "" || !strings.Contains(err.Error(), "tool_args_fingerprint") {
		t.Errorf("inexact integer: %q, %v", fp, err)
	}
}

func TestToolArgs(t *testing.T) {
	args := decode(t, `{"s":"text","empty":"","i":5,"neg":-3,"f":5.0,"e":5e0,"big":9223372036854775808,"big_neg":-9223372036854775809,
		"b":true,"no":false,"null":null,"list":["a"],"obj":{"k":"v"},"num_str":"5"}`).(map[string]any)
	args["go_int"] = 7
	args["go_int64"] = int64(-8)
	args["go_float"] = 9.0

	strs := map[string]string{"s": "text", "empty": "", "i": "", "b": "", "null": "", "list": "", "missing": "", "num_str": "5"}
	for name, want := range strs {
		if got := ArgString(args, name); got != want {
			t.Errorf("tool_arg_string(%q) = %q, want %q", name, got, want)
		}
	}
	ints := map[string]int64{"i": 5, "neg": -3, "go_int": 7, "go_int64": -8, "f": 0, "e": 0, "go_float": 0, "s": 0, "num_str": 0, "b": 0, "null": 0, "missing": 0}
	for name, want := range ints {
		if got, err := ArgInt(args, name); got != want || err != nil {
			t.Errorf("tool_arg_int(%q) = %d, %v; want %d", name, got, err, want)
		}
	}
	// An integer beyond int64 is one the function cannot return: an error, never a
	// zero that would pass a limit ([OAR-FACT-23]).
	for _, name := range []string{"big", "big_neg"} {
		if got, err := ArgInt(args, name); err == nil || !strings.Contains(err.Error(), "outside the 64-bit signed range") {
			t.Errorf("tool_arg_int(%q) = %d, %v; want an error", name, got, err)
		}
	}
	bools := map[string]bool{"b": true, "no": false, "s": false, "i": false, "null": false, "missing": false}
	for name, want := range bools {
		if got := ArgBool(args, name); got != want {
			t.Errorf("tool_arg_bool(%q) = %v, want %v", name, got, want)
		}
	}
	// Without a tool call there are no arguments at all.
	if i, err := ArgInt(nil, "i"); ArgString(nil, "s") != "" || i != 0 || err != nil || ArgBool(nil, "b") {
		t.Error("nil arguments must give zero values")
	}
}

func FuzzCanonicalJSON(f *testing.F) {
	for _, seed := range []string{
		`null`, `true`, `0`, `-0`, `1e-7`, `9007199254740993`, `1e400`, `"\u0000\n\"\\é😀"`,
		`{"b":1,"a":[1,2,{"z":null,"y":"é"}],"😀":{"":false}}`,
		`[0.1, 1.5e300, -2.5E-3, 18446744073709551616]`,
		`{"a":{"a":{"a":[[],{}]}}}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		dec := json.NewDecoder(bytes.NewReader(data))
		dec.UseNumber()
		var v any
		if dec.Decode(&v) != nil {
			return
		}
		out, err := CanonicalJSON(v)
		if err != nil {
			if !errors.Is(err, ErrNotCanonical) {
				t.Fatalf("error %v does not wrap ErrNotCanonical", err)
			}
			return
		}
		if !json.Valid(out) {
			t.Fatalf("CanonicalJSON(%s) = %q is not valid JSON", data, out)
		}
		back := decode(t, string(out))
		if !equalModuloNumbers(v, back) {
			t.Fatalf("CanonicalJSON(%s) = %s decodes to a different value", data, out)
		}
		again, err := CanonicalJSON(back)
		if err != nil || !bytes.Equal(again, out) {
			t.Fatalf("canonical form is not stable: %s then %s (%v)", out, again, err)
		}
		if err := keysInOrder(out); err != nil {
			t.Fatalf("CanonicalJSON(%s) = %s: %v", data, out, err)
		}
	})
}

// keysInOrder checks that every object of the JSON text lists its keys in strictly
// ascending code-point order (byte order of UTF-8), reading its tokens independently
// of the encoder.
func keysInOrder(text []byte) error {
	dec := json.NewDecoder(bytes.NewReader(text))
	// Per open container: whether it is an object, whether its next token is a key,
	// and its last key.
	type frame struct {
		object, atKey, any bool
		last               string
	}
	var stack []frame
	for {
		tok, err := dec.Token()
		if err != nil {
			return nil
		}
		top := len(stack) - 1
		if top >= 0 && stack[top].object && stack[top].atKey {
			if k, ok := tok.(string); ok {
				if stack[top].any && k <= stack[top].last {
					return fmt.Errorf("key %q after %q", k, stack[top].last)
				}
				stack[top].last, stack[top].any, stack[top].atKey = k, true, false
				continue
			}
		}
		if top >= 0 && stack[top].object {
			stack[top].atKey = true
		}
		switch tok {
		case json.Delim('{'):
			stack = append(stack, frame{object: true, atKey: true})
		case json.Delim('['):
			stack = append(stack, frame{})
		case json.Delim('}'), json.Delim(']'):
			stack = stack[:top]
			if top > 0 && stack[top-1].object {
				stack[top-1].atKey = true
			}
		}
	}
}

// TestFACT28_KeysInCodePointOrder: objects of every size, with keys that share
// prefixes, differ only in length or in their first byte, are empty or not ASCII, are
// written with their keys in code-point order ([OAR-FACT-28]).
func TestFACT28_KeysInCodePointOrder(t *testing.T) {
	pool := []string{"", "a", "ab", "abc", "b", "B", "_", "a\u0000", "é", "éa", "e", "😀", "\uffff", "z", "zz", "path", "paths", "pat", "mode", "limit", "0", "9", "~"}
	for n := 0; n <= len(pool); n++ {
		// Take n keys starting at a rotating offset, so each size sees other keys first.
		var members []string
		for i := range n {
			k, _ := json.Marshal(pool[(i*7+n)%len(pool)])
			members = append(members, fmt.Sprintf("%s:%d", k, i))
		}
		src := "{" + strings.Join(members, ",") + "}"
		out, err := CanonicalJSON(decode(t, src))
		if err != nil {
			t.Fatalf("%s: %v", src, err)
		}
		if err := keysInOrder(out); err != nil {
			t.Errorf("%d keys: %s: %v", n, out, err)
		}
	}
	if err := keysInOrder([]byte(`{"b":1,"a":2}`)); err == nil {
		t.Error("keysInOrder accepted keys out of order")
	}
	if err := keysInOrder([]byte(`{"a":{"z":1,"y":2}}`)); err == nil {
		t.Error("keysInOrder accepted a nested object's keys out of order")
	}
}

// equalModuloNumbers compares decoded JSON values, numbers by their binary64 value.
func equalModuloNumbers(a, b any) bool {
	switch x := a.(type) {
	case json.Number:
		y, ok := b.(json.Number)
		if !ok {
			return false
		}
		fx, errX := x.Float64()
		fy, errY := y.Float64()
		return errX == nil && errY == nil && fx == fy
	case []any:
		y, ok := b.([]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for i := range x {
			if !equalModuloNumbers(x[i], y[i]) {
				return false
			}
		}
		return true
	case map[string]any:
		y, ok := b.(map[string]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for k, xv := range x {
			yv, ok := y[k]
			if !ok || !equalModuloNumbers(xv, yv) {
				return false
			}
		}
		return true
	}
	return a == b
}

// TestSmallIntFastPathAgrees: every integer spelling the fast path writes is what the
// general path (numberValue, then AppendDouble) writes for it.
func TestSmallIntFastPathAgrees(t *testing.T) {
	spellings := []string{"0", "-0", "7", "-7", "10", "123456789012345", "-999999999999999", "100000000000000"}
	for i := int64(1); i < 1e15; i *= 7 {
		spellings = append(spellings, strconv.FormatInt(i, 10), strconv.FormatInt(-i, 10), strconv.FormatInt(i-1, 10))
	}
	for _, s := range spellings {
		got, ok := appendSmallInt(nil, s)
		if !ok {
			t.Fatalf("%s: fast path refused it", s)
		}
		d, err := numberValue(json.Number(s))
		if err != nil {
			t.Fatal(err)
		}
		if want := types.AppendDouble(nil, d); string(got) != string(want) {
			t.Errorf("%s: fast path %s, general path %s", s, got, want)
		}
	}
	for _, s := range []string{"", "-", "01", "-01", "1.0", "1e3", "1234567890123456", "0x1", "+1", "1_0"} {
		if _, ok := appendSmallInt(nil, s); ok {
			t.Errorf("%q: the fast path took a spelling that is not a small JSON integer", s)
		}
	}
}

// TestErrorsQuoteLongValuesCut: a value canonical JSON refuses is quoted in the error
// cut to diag.MaxValueLen code points, so an argument as long as a request does not make
// each rule failing on the fingerprint repeat it whole in the answer.
func TestErrorsQuoteLongValuesCut(t *testing.T) {
	for name, v := range map[string]any{
		"a string that is not UTF-8": strings.Repeat("\xed\xa0\x80", 10_000),
		"a malformed number":         json.Number(strings.Repeat("1", 10_000) + "x"),
		"a number past binary64":     json.Number("1" + strings.Repeat("0", 10_000) + ".5"),
		"an integer binary64 rounds": json.Number(strings.Repeat("9", 300)),
	} {
		_, err := CanonicalJSON(map[string]any{"a": v})
		if err == nil || !errors.Is(err, ErrNotCanonical) {
			t.Errorf("%s: %v, want ErrNotCanonical", name, err)
			continue
		}
		if n := len(err.Error()); n > 1000 {
			t.Errorf("%s: an error of %d bytes", name, n)
		}
	}
}
