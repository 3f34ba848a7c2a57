package toolobs

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"os"
	"strings"
	"testing"
)

// toolCall is one line of testdata/tool_calls.jsonl: twenty tool.pre_invoke calls of
// the realistic workload (go run ./hack/benchgen -seed 1 -rules 100), every 246th of
// its occurrences.jsonl.
type toolCall struct {
	Name      string         `json:"name"`
	Arguments map[string]any `json:"arguments"`
}

// loadToolCalls decodes testdata/tool_calls.jsonl as the engine's decoder does,
// numbers as json.Number.
func loadToolCalls(tb testing.TB) []toolCall {
	tb.Helper()
	f, err := os.Open("testdata/tool_calls.jsonl")
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	var calls []toolCall
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		dec := json.NewDecoder(bytes.NewReader(sc.Bytes()))
		dec.UseNumber()
		var c toolCall
		if err := dec.Decode(&c); err != nil {
			tb.Fatalf("%s: %v", sc.Bytes(), err)
		}
		calls = append(calls, c)
	}
	if err := sc.Err(); err != nil {
		tb.Fatal(err)
	}
	return calls
}

func BenchmarkFingerprint(b *testing.B) {
	calls := loadToolCalls(b)
	var scratch []byte
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		c := calls[i%len(calls)]
		var err error
		if _, scratch, err = FingerprintWith(scratch, c.Name, c.Arguments); err != nil {
			b.Fatal(err)
		}
	}
}

// sameAsReference fails unless FingerprintWith and CanonicalJSON give for tool and
// args exactly what the encoder of reference_test.go gives, error or not.
func sameAsReference(t *testing.T, tool string, args map[string]any) {
	t.Helper()
	got, _, err := FingerprintWith(nil, tool, args)
	want, _, wantErr := refFingerprintWith(nil, tool, args)
	if got != want || (err == nil) != (wantErr == nil) || (err != nil && err.Error() != wantErr.Error()) {
		t.Fatalf("FingerprintWith(%q, %v) = %q, %v; reference %q, %v", tool, args, got, err, want, wantErr)
	}
	gotJSON, err := CanonicalJSON(args)
	wantJSON, wantErr := refCanonicalJSON(args)
	if !bytes.Equal(gotJSON, wantJSON) || (err == nil) != (wantErr == nil) || (err != nil && err.Error() != wantErr.Error()) {
		t.Fatalf("CanonicalJSON(%v) = %s, %v; reference %s, %v", args, gotJSON, err, wantJSON, wantErr)
	}
}

// TestFACT28_FingerprintMatchesReference: the benchmark's tool calls, and a scratch
// buffer reused across them, fingerprint as the reference encoder does.
func TestFACT28_FingerprintMatchesReference(t *testing.T) {
	var scratch []byte
	for _, c := range loadToolCalls(t) {
		sameAsReference(t, c.Name, c.Arguments)
		var got string
		var err error
		got, scratch, err = FingerprintWith(scratch, c.Name, c.Arguments)
		if want, _, _ := refFingerprintWith(nil, c.Name, c.Arguments); err != nil || got != want {
			t.Fatalf("%s with a reused scratch: %q, %v; want %q", c.Name, got, err, want)
		}
	}
}

func FuzzFingerprintMatchesReference(f *testing.F) {
	for _, seed := range []struct{ tool, args string }{
		{"read", `{"command":"ls -la","limit":3962,"mode":"overwrite","options":{"depth":1,"encoding":"utf-8","filters":{"exclude":["vendor/"],"include":["*.go","*.md"]},"follow_symlinks":false},"path":"/home/dev/.ssh/README.md","recursive":true,"timeout_ms":0}`},
		{"to\"ol\t", `{"b":1,"a":[1,2,{"z":null,"y":"é"}],"😀":{"":false},"｡":-0,"e":1e-7}`},
		{"fs.write", `{"q":"a\nb\u0000\"\\","n":9007199254740993,"big":18446744073709551616,"x":1.5e300}`},
		{"t", `{"a":0,"b":-12,"c":123456789012345,"d":1234567890123456,"e":0.1,"f":5.0,"g":1E2}`},
		{"keys", `{"pat":1,"path":2,"paths":3,"a\u0000":4,"a":5,"":6,"é":7,"éa":8,"\uffff":9,"z":10,"Z":11,"_":12,"0":13,"9":14,"~":15,"mode":16,"limit":17}`},
		{"ping", `{}`},
		{"", `{"a":1}`},
		{"bad", `{"n":1e400}`},
	} {
		f.Add(seed.tool, []byte(seed.args))
	}
	f.Fuzz(func(t *testing.T, tool string, data []byte) {
		dec := json.NewDecoder(bytes.NewReader(data))
		dec.UseNumber()
		var args map[string]any
		if dec.Decode(&args) != nil {
			return
		}
		sameAsReference(t, tool, args)
		// Strings that are not UTF-8 do not come out of a decoder; put the fuzzed
		// tool name, which may be anything, in a key and a value as well.
		if args == nil {
			args = map[string]any{}
		}
		args[tool] = []any{tool, json.Number("1")}
		sameAsReference(t, "t", args)
	})
}

// TestFACT28_FingerprintErrorsMatchReference: every refusal fails in the same way.
func TestFACT28_FingerprintErrorsMatchReference(t *testing.T) {
	for _, args := range []map[string]any{
		{"k\xc3": 1},
		{"a": "bad\xff"},
		{"a": []any{"é\"\xff"}},
		{"n": json.Number("9007199254740993")},
		{"n": json.Number("0x10")},
		{"f": float32(1)},
		{"s": struct{}{}},
		{"m": map[string]string{"k": "\xff"}},
	} {
		sameAsReference(t, "t", args)
		if _, err := Fingerprint("t", args); !errors.Is(err, ErrNotCanonical) {
			t.Errorf("%v: %v does not wrap ErrNotCanonical", args, err)
		}
	}
}

// TestFACT28_StringsMatchReference: strings of every length up to three words, with a
// byte that is not plain at each position — the ones escaped, a multi-byte code point,
// a byte that is not UTF-8 — are written as the reference encoder writes them, so
// every word boundary and the short-string cases of allPlain are exercised.
func TestFACT28_StringsMatchReference(t *testing.T) {
	for n := 0; n <= 24; n++ {
		for p := -1; p < n; p++ {
			for _, c := range []string{"\"", "\\", "\x00", "\x1f", " ", "\x7f", "é", "\u2028", "\xff", "\xc3"} {
				s := strings.Repeat("a", n)
				if p >= 0 {
					s = s[:p] + c + s[p+1:]
				}
				got, err := appendString(nil, s)
				want, wantErr := refAppendString(nil, s)
				if !bytes.Equal(got, want) || (err == nil) != (wantErr == nil) {
					t.Fatalf("appendString(%q) = %q, %v; reference %q, %v", s, got, err, want, wantErr)
				}
			}
		}
	}
}

// TestFACT28_HexDigest: every byte value, in every position of a word, is written as
// encoding/hex writes it.
func TestFACT28_HexDigest(t *testing.T) {
	for start := range 256 {
		var sum [sha256.Size]byte
		for i := range sum {
			sum[i] = byte(start + i)
		}
		if got, want := hexDigest(sum), hex.EncodeToString(sum[:]); got != want {
			t.Errorf("hexDigest(%x) = %s", sum, got)
		}
	}
}
