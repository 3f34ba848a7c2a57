package engine

import (
	"strconv"
	"strings"
	"testing"
)

// TestDecodeDocumentsReadsExactlyOneStream: a file is one JSON document or one YAML
// stream; bytes after a complete document are refused, naming their offset, whatever
// the YAML parser would make of them.
func TestDecodeDocumentsReadsExactlyOneStream(t *testing.T) {
	refused := map[string]int{
		`[{"a":1}] }{`:                    10,
		`{"a":1} }{`:                      8,
		`{"a":1}{"b":2}`:                  7,
		"  {\"a\":1}\n x":                 11,
		`[1] [2]`:                         4,
		`{a: 1, b: [x, "y]"]} z`:          21,
		`{a: it's, b: 'q''}'} }`:          21,
		"a: 1\n---\n{b: 2} # c\n{c: 3}\n": 20,
		"{\"a\":1}\r\n---\r\n[1]]\r\n":    17,
		`{"a":1}#c`:                       7,
	}
	for in, off := range refused {
		_, err := DecodeDocuments([]byte(in))
		if err == nil || !strings.Contains(err.Error(), "unexpected data at offset ") {
			t.Errorf("%q: want refusal naming an offset, got %v", in, err)
			continue
		}
		if want := "offset " + strconv.Itoa(off) + ","; !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v; want %q", in, err, want)
		}
	}
	for in, n := range map[string]int{
		`{"a":1} # a comment`:             1,
		"{\"a\":1}\n---\n{\"b\":2}\n":     2,
		"[{\"a\":1}, {\"b\":\"}{\"}]\n\n": 2,
		"a: 1\nb: '}{'\n":                 1,
		"{a: it's}":                       1,
		"--- {a: 1}\n":                    1,
		"# lead\n{\"a\": \"x # y\"}\n":    1,
	} {
		docs, err := DecodeDocuments([]byte(in))
		if err != nil || len(docs) != n {
			t.Errorf("%q: want %d documents, got %v, %v", in, n, docs, err)
		}
	}
}

// TestDecodeDocumentsRefusesADocumentTheSplitWouldDrop ([OAR-DOC-31]): a stream is split
// at lines holding only a document marker, and the YAML parser reads one document of
// each part, so a document that begins on its "---" line after another document, or
// follows a "..." line carrying a comment, would be silently dropped, as kubectl drops
// it. So is a document after a "---" that follows a carriage return alone, which ends a
// line for the parser but not for the split. It is refused, naming the offset of its
// marker line; a first document that begins on its "---" line, a stream that ends with
// "... # comment", and an empty document after a carriage return still read.
func TestDecodeDocumentsRefusesADocumentTheSplitWouldDrop(t *testing.T) {
	for in, off := range map[string]int{
		"a: 1\n--- {b: 2}\n":           5,
		"--- {a: 1}\n--- {b: 2}\n":     11,
		"a: 1\n--- b: 2\n":             5,
		"a: 1\n---\t!!map {b: 2}\n":    5,
		"a: |\n  x\n--- >\n  text\n":   9,
		"a: 1\n... # end\nb: 2\n":      5,
		"a: 1\n... x\n":                5,
		"x: 0\n---\na: 1\n--- &y {}\n": 14,
		"0\n---\r0":                    2,
		"a: 1\r---\rb: 2\r":            5,
		"a: 1\r\n...\rb: 2\r\n":        6,
	} {
		docs, err := DecodeDocuments([]byte(in))
		if err == nil || !strings.Contains(err.Error(), "[OAR-DOC-31]") {
			t.Errorf("%q: read as %v, %v; want a refusal citing OAR-DOC-31", in, docs, err)
			continue
		}
		if want := "offset " + strconv.Itoa(off) + ","; !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v; want %q", in, err, want)
		}
	}
	for in, n := range map[string]int{
		"--- {a: 1}\n":                  1,
		"# lead\n--- {a: 1}\n---\nb: 2": 2,
		"a: 1\n... # end\n":             1,
		"a: |\n  --- x\n  ... y\n":      1,
		"a: 1\n---foo: 2\n":             1,
		"a: 1\r---\r":                   1,
		"a: 1\r\n---\r\nb: 2\r\n":       2,
	} {
		docs, err := DecodeDocuments([]byte(in))
		if err != nil || len(docs) != n {
			t.Errorf("%q: want %d documents, got %v, %v", in, n, docs, err)
		}
	}
}

// TestDecodeDocumentsCitesTheClauseAFileBreaks: every file DecodeDocuments refuses is
// refused under the clause it breaks, cited once at the end: a file that is not JSON or
// YAML, holds no document, or holds more than its JSON reading keeps breaks
// [OAR-DOC-1], bytes that are not UTF-8 in JSON or YAML included; a member the split
// would drop, [OAR-DOC-31].
func TestDecodeDocumentsCitesTheClauseAFileBreaks(t *testing.T) {
	for in, want := range map[string]struct{ clause, text string }{
		"":                              {"OAR-DOC-1", "no document found: the file holds only white space"},
		" \n\t\n":                       {"OAR-DOC-1", "no document found: the file holds only white space"},
		"[]":                            {"OAR-DOC-1", "no document found: the JSON array is empty"},
		"# a comment\n---\n# another\n": {"OAR-DOC-1", "no document found: the YAML stream holds only"},
		"--- []\n---\n~\n":              {"OAR-DOC-1", "no document found: the YAML stream holds only"},
		`{"a":`:                         {"OAR-DOC-1", "YAML: yaml: line 1: did not find expected node content"},
		`{"a":1,"a":2}`:                 {"OAR-DOC-1", `JSON: duplicate key "a"`},
		"a: [1\n":                       {"OAR-DOC-1", "YAML: "},
		"a: 1\n---\nb: [\n":             {"OAR-DOC-1", "YAML document 2: "},
		"a: 1\na: 2\n":                  {"OAR-DOC-1", "YAML: "},
		`{"a":1} }{`:                    {"OAR-DOC-1", "unexpected data at offset 8"},
		"a: 1\n--- {b: 2}\n":            {"OAR-DOC-31", "unexpected document at offset 5"},
		"{\"a\":\"\xff\"}":              {"OAR-DOC-1", "JSON: byte 0xff at offset 6 is not UTF-8"},
		"a: \"\xff\"\n":                 {"OAR-DOC-1", "YAML: yaml: invalid leading UTF-8 octet"},
		"0: 0\n---#0: 0\n0: 0":          {"OAR-DOC-1", `unexpected "---#" at offset 5`},
		"---# lead\na: 1\n":             {"OAR-DOC-1", `unexpected "---#" at offset 0`},
	} {
		_, err := DecodeDocuments([]byte(in))
		if err == nil {
			t.Errorf("%q: decoded; want a refusal citing %s", in, want.clause)
			continue
		}
		msg := err.Error()
		if !strings.HasPrefix(msg, want.text) || !strings.HasSuffix(msg, " ["+want.clause+"]") || strings.Count(msg, "[OAR-") != 1 {
			t.Errorf("%q: %q; want %q… citing [%s] once, at the end", in, msg, want.text, want.clause)
		}
	}
}
