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
