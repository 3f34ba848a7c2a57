package engine

import (
	"reflect"
	"strings"
	"testing"
)

// TestDecodeDocumentsReadsTheValuesKubectlReads: a file read is read into the values
// kubectl's decoder reads from it, compared exactly (kubectlDocuments): a block scalar
// on a last line with no line feed after it keeps the line feed kubectl's reader adds,
// a carriage return before a line's "\r\n" is one line break with it, as the reader
// hands the line to the parser,
// and YAML's tags, anchors, merge keys, YAML 1.1 booleans, octal and binary numbers,
// timestamps and keys that are not strings read as kubectl's conversion reads them.
func TestDecodeDocumentsReadsTheValuesKubectlReads(t *testing.T) {
	for _, in := range []string{
		">\n 0",
		"a: |\n  x",
		"a: 1\n---\nb: >-\n  x\n  y\nc: |+\n  z",
		"0\r\r\n0",
		"a: |\r\n  x\r\r\n  y\r\n",
		"[1, 0.5, -1.25, \"a\\u2028b\", \"\u00e9\", \"\u2028\", \"a \\n b\", true, null, {}]",
		"[{\"<<\": {\"a\": 1}, \"b\": 9007199254740993}]\n",
		"a: &x {b: 1}\nc: *x\nd:\n  <<: *x\n  e: 2\n",
		"a: !!str 1\nb: !!int \"2\"\nc: !!float 3\nd: !!binary aGVsbG8=\ne: !foo x\n",
		"a: [yes, no, on, off, y, n, 0o17, 017, 0x1F, 0b101, 1_000, +1, 1e3, 1., .5]\n",
		"a: [2001-12-14t21:59:43.10-05:00, 2002-12-14, 12345678901234567890123, 18446744073709551616]\n",
		"1: a\n2: b\ntrue: c\n1.5: d\n0x10: e\n",
		"\"\u00a0{\": 1\n",
	} {
		docs, err := DecodeDocuments([]byte(in))
		if err != nil {
			t.Errorf("%q: %v; want it read", in, err)
			continue
		}
		kubectl, kerr := kubectlDocuments([]byte(in))
		if kerr != nil || !reflect.DeepEqual(asReplacement(docs), kubectl) {
			t.Errorf("%q: read %#v; kubectl's decoder reads %#v (%v)", in, docs, kubectl, kerr)
		}
	}
}

// TestDecodeDocumentsRefusesValuesKubectlReadsOtherwise ([OAR-DOC-1]): a JSON array,
// which kubectl's decoder reads as YAML, holding a value YAML reads otherwise (a number
// it respells or rounds, a string whose line break, as YAML knows one, it folds), and a
// YAML mapping with two keys that are one member name in JSON, of which kubectl keeps
// either at random, are refused, naming the line and the value or the keys.
func TestDecodeDocumentsRefusesValuesKubectlReadsOtherwise(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"[0.0]", "JSON: the value at offset 1 (line 1), [0], is the number 0.0, but kubectl's decoder, which reads a file beginning with \"[\" as YAML, not JSON, reads the number 0,"},
		{"[\n {\"a\": 1,\n  \"b\": [1, 1e3]}]", "JSON: the value at offset 23 (line 3), [0].b[1], is the number 1e3, but kubectl's decoder, which reads a file beginning with \"[\" as YAML, not JSON, reads the number 1000,"},
		{"[{\"n\": 12345678901234567890123}]", "[0].n, is the number 12345678901234567890123, but kubectl's decoder, which reads a file beginning with \"[\" as YAML, not JSON, reads the number 1.2345678901234568e+22,"},
		{"[-0, 1]", "[0], is the number -0, "},
		{"[1E400]", "[0], is the number 1E400, but kubectl's decoder, which reads a file beginning with \"[\" as YAML, not JSON, reads the string \"1E400\","},
		{"[\"a  \u2028  b\"]", "[0], is the string \"a  \\u2028  b\", but kubectl's decoder, which reads a file beginning with \"[\" as YAML, not JSON, reads the string \"a\\u2028b\","},
		{"[\"x\",\n \"a\u0085b\"]", "offset 7 (line 2), [1], is the string \"a\\u0085b\", but kubectl's decoder, which reads a file beginning with \"[\" as YAML, not JSON, reads the string \"a b\","},
		{"[{\"a\": {\"b\": 1.50}}]", "offset 13 (line 1), [0].a.b, is the number 1.50, but kubectl's decoder, which reads a file beginning with \"[\" as YAML, not JSON, reads the number 1.5,"},
		{"1: a\n\"1\": b\n", "YAML: yaml: line 2 of the file: keys the integer 1 and the string \"1\" of the document are one member name, \"1\", in JSON"},
		{"true: x\n'true': y\n", "line 2 of the file: keys the boolean true and the string \"true\" of the document are one member name, \"true\","},
		{"a: 1\n---\nb:\n  - 1.0: a\n    0x1: b\n", "YAML document 2: yaml: line 5 of the file: keys the floating-point number 1 and the integer 1 of b[0] are one member name, \"1\","},
		{"k: {1.00000001: a, 1: b}\n", "line 1 of the file: keys the floating-point number 1.00000001 and the integer 1 of k are one member name, \"1\","},
		{"a: &x {1: a}\nb:\n  <<: *x\n  \"1\": c\n", "line 4 of the file: keys the integer 1 and the string \"1\" of b are one member name,"},
	} {
		docs, err := DecodeDocuments([]byte(tc.in))
		if err == nil {
			t.Errorf("%q: read %#v; want a refusal", tc.in, docs)
			continue
		}
		if msg := err.Error(); !strings.Contains(msg, tc.want) || !strings.HasSuffix(msg, " [OAR-DOC-1]") {
			t.Errorf("%q: %v; want %q, citing [OAR-DOC-1]", tc.in, err, tc.want)
		}
	}
}
