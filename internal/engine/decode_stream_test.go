package engine

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	yamlv2 "go.yaml.in/yaml/v2"
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
		"{} # c\r0\r":                     7,
		"{} # c\u20280":                   9,
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
		"---\n{a: 1}\n":                   1,
		"# lead\n{\"a\": \"x # y\"}\n":    1,
		"{a}\n":                           1,
		"{\"a\": 1}\n# c":                 1,
		"[1,\n\t2]":                       2,
		"\n{a}":                           1,
	} {
		docs, err := DecodeDocuments([]byte(in))
		if err != nil || len(docs) != n {
			t.Errorf("%q: want %d documents, got %v, %v", in, n, docs, err)
		}
	}
}

// TestDecodeDocumentsRefusesADocumentTheSplitWouldDrop ([OAR-DOC-31]): a stream is split
// at lines holding only "---", and the YAML parser reads one document of each part, so
// a document that follows a "..." line (which splits nothing for kubectl) would be
// silently dropped, as kubectl drops it. So is a document after a "---" that follows a
// carriage return alone, which ends a line for the parser but not for the split, on
// the marker line or after it. It is refused, naming the offset of its marker line; a
// stream that ends with "... # comment", and an empty document after a carriage
// return, still read.
func TestDecodeDocumentsRefusesADocumentTheSplitWouldDrop(t *testing.T) {
	for in, off := range map[string]int{
		"a: 1\r--- {b: 2}\n":          5,
		"a: 1\r--- >\n  text\n":       5,
		"a: 1\n... # end\nb: 2\n":     5,
		"a: 1\n... x\n":               5,
		"a: 1\r---\rb: 2\r":           5,
		"a: 1\r\n...\rb: 2\r\n":       6,
		"a: 1\n...\nb: 2\n":           5,
		"a: 1\n...\n# c\n...\nb: 2\n": 5,
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
		"a: 1\n... # end\n":           1,
		"a: |\n  --- x\n  ... y\n":    1,
		"a: 1\r---\r":                 1,
		"a: 1\r\n---\r\nb: 2\r\n":     2,
		"a: 1\n---\n# c\rb: 2\n":      2,
		"a: 1\n...\n":                 1,
		"a: 1\n...\n---\nb: 2\n...\n": 2,
	} {
		docs, err := DecodeDocuments([]byte(in))
		if err != nil || len(docs) != n {
			t.Errorf("%q: want %d documents, got %v, %v", in, n, docs, err)
		}
	}
}

// TestDecodeDocumentsRefusesALineKubectlRefusesAsASeparator ([OAR-DOC-31]): kubectl's
// reader takes every line beginning with "---" for a document separator, wherever it
// is, and refuses the file when anything but white space or a comment follows the
// "---" there. Such a file is refused, naming the line, rather than read as the YAML
// parser reads it (a first document on its marker line, a key "---foo", text of a
// scalar); a line kubectl reads as a separator still splits the stream. The table is
// held to kubectl's reader too.
func TestDecodeDocumentsRefusesALineKubectlRefusesAsASeparator(t *testing.T) {
	for in, line := range map[string]int{
		"--- {a: 1}\n":                   1,
		"--- |\n  x\n":                   1,
		"--- !!map\na: 1\n":              1,
		"--- >-\n":                       1,
		"# lead\n--- {a: 1}\n---\nb: 2":  2,
		"a: 1\n---foo: 2\n":              2,
		"a: 1\n----\nb: 2\n":             2,
		"a: 1\n--- b: 2\n":               2,
		"a: 1\n---\t!!map {b: 2}\n":      2,
		"a: 1\n---\u00a0b\n":             2,
		"0\n---\r0":                      2,
		"a: \"x\n---y\"\n":               2,
		"a: |\n  x\n--- >\n  text\n":     3,
		"x: 0\n---\na: 1\n--- &y {}\n":   4,
		"a: 1\r\nb: 2\r\n--- x\r\n":      3,
		"a: 1\rb: 2\n---x\n":             3,
		"{\"a\": 1}\n--- {\"b\": 2}\n":   2,
		"a: 1\n--- # c\n---  \t\n---x\n": 4,
	} {
		docs, err := DecodeDocuments([]byte(in))
		want := fmt.Sprintf("line %d of the file, ", line)
		if err == nil || !strings.HasPrefix(err.Error(), want) || !kubectlSeparatorRefusal.MatchString(err.Error()) || !strings.HasSuffix(err.Error(), " [OAR-DOC-31]") {
			t.Errorf("%q: read as %v, %v; want %q… kubectl refuses… [OAR-DOC-31]", in, docs, err, want)
		}
		if kerr := kubectlReads([]byte(in)); kerr == nil || !strings.HasPrefix(kerr.Error(), "invalid Yaml document separator: ") {
			t.Errorf("%q: kubectl's reader: %v; the table wants a separator it refuses", in, kerr)
		}
	}
	for in, n := range map[string]int{
		"--- # first\na: 1\n":           1,
		"---\t\na: 1\n---  # c\nb: 2\n": 2,
		"---\n--- #\na: 1\n":            1,
		"a: |\n  --- x\n":               1,
		"a:\n  ---x: 2\n":               1,
		"\"---x\": 1\n":                 1,
		"a: 1\r\n---\r\nb: 2\r\n":       2,
	} {
		docs, err := DecodeDocuments([]byte(in))
		if err != nil || len(docs) != n {
			t.Errorf("%q: want %d documents, got %v, %v", in, n, docs, err)
		}
		if kn, kerr := kubectlMembers([]byte(in)); kerr != nil || kn != n {
			t.Errorf("%q: kubectl's decoder reads %d members, %v; the table wants %d", in, kn, kerr, n)
		}
	}
}

// TestDecodeDocumentsCitesTheClauseAFileBreaks: every file DecodeDocuments refuses is
// refused under the clause it breaks, cited once at the end: a file that is not JSON or
// YAML, holds no document, or holds more than its JSON reading keeps breaks
// [OAR-DOC-1], bytes that are not UTF-8 in JSON or YAML, or characters YAML does not
// allow, included, wherever they are (an offset counts the white space before a JSON
// document), and so does a file beginning with "{" too short for kubectl to read it as
// YAML; a member the split would drop, or a line kubectl refuses as a separator,
// [OAR-DOC-31].
func TestDecodeDocumentsCitesTheClauseAFileBreaks(t *testing.T) {
	for in, want := range map[string]struct{ clause, text string }{
		"":                              {"OAR-DOC-1", "no document found: the file holds only white space"},
		" \n\t\n":                       {"OAR-DOC-1", "no document found: the file holds only white space"},
		"[]":                            {"OAR-DOC-1", "no document found: the JSON array is empty"},
		"# a comment\n---\n# another\n": {"OAR-DOC-1", "no document found: the YAML stream holds only"},
		"---\n[]\n---\n~\n":             {"OAR-DOC-1", "no document found: the YAML stream holds only"},
		`{"a":`:                         {"OAR-DOC-1", "YAML: yaml: line 1 of the file: did not find expected node content"},
		`{"a":1,"a":2}`:                 {"OAR-DOC-1", `JSON: duplicate key "a"`},
		"a: [1\n":                       {"OAR-DOC-1", "YAML: "},
		"a: 1\n---\nb: [\n":             {"OAR-DOC-1", "YAML document 2: "},
		"a: 1\na: 2\n":                  {"OAR-DOC-1", "YAML: "},
		`{"a":1} }{`:                    {"OAR-DOC-1", "unexpected data at offset 8"},
		"a: 1\r--- {b: 2}\n":            {"OAR-DOC-31", "unexpected document at offset 5"},
		// kubectl keeps a separator it reads with nothing before it as its part's first
		// line, so its parser reads the document after a carriage return as a second one.
		"--- \n\r--- 0":                  {"OAR-DOC-31", "unexpected document at offset 6"},
		"a: 1\n---\n---\n\r--- {b: 2}\n": {"OAR-DOC-31", "unexpected document at offset 14"},
		"a: 1\n--- {b: 2}\n":             {"OAR-DOC-31", `line 2 of the file, "--- {b: 2}", begins with "---" and then more than white space or a comment, which kubectl refuses`},
		"{\"a\":\"\xff\"}":               {"OAR-DOC-1", "JSON: byte 0xff at offset 6 is not UTF-8"},
		"\n  {\"a\":\"\xff\"}":           {"OAR-DOC-1", "JSON: byte 0xff at offset 9 is not UTF-8"},
		"a: \"\xff\"\n":                  {"OAR-DOC-1", "YAML: byte 0xff at offset 4 is not UTF-8"},
		"a: 1\n---\n# \xff\n":            {"OAR-DOC-1", "YAML: byte 0xff at offset 11 is not UTF-8"},
		"--- #\xff\n0":                   {"OAR-DOC-1", "YAML: byte 0xff at offset 5 is not UTF-8"},
		"0\n---\n#\x00":                  {"OAR-DOC-1", "YAML: character U+0000 at offset 7 is not allowed in YAML"},
		"a: 1 # \x1b[1m\n":               {"OAR-DOC-1", "YAML: character U+001B at offset 7 is not allowed in YAML"},
		"[\"\\/\"]":                      {"OAR-DOC-1", `YAML: yaml: found unknown escape character; kubectl's decoder reads a file beginning with "[" as YAML, not JSON, and refuses this one`},
		"[1,\n\"\x7f\"]":                 {"OAR-DOC-1", `YAML: yaml: control characters are not allowed; kubectl's decoder reads a file beginning with "[" as YAML`},
		"\t[1]":                          {"OAR-DOC-1", `YAML: yaml: found character that cannot start any token; kubectl's decoder reads a file beginning with "[" as YAML`},
		"a: \"\ufffe\"\n":                {"OAR-DOC-1", "YAML: character U+FFFE at offset 4 is not allowed in YAML"},
		"{a}":                            {"OAR-DOC-1", "JSON: invalid character 'a' looking for beginning of object key string; kubectl's decoder reads a file beginning with \"{\" that is not JSON as YAML only after reading 4 bytes"},
		"  {0}":                          {"OAR-DOC-1", "JSON: invalid character '0' looking for beginning of object key string; kubectl's decoder reads"},
		"{}\f":                           {"OAR-DOC-1", "JSON: character U+000C at offset 2 is not white space in JSON"},
		"\u00a0[{\"a\": 1}]\n":           {"OAR-DOC-1", "JSON: character U+00A0 at offset 0 is not white space in JSON"},
		"\u00a0{a: 1}\n":                 {"OAR-DOC-1", "JSON: character U+00A0 at offset 0 is not white space in JSON"},
		" \t{\"a\": 1}\r\n\u2028":        {"OAR-DOC-1", "JSON: character U+2028 at offset 12 is not white space in JSON"},
		"{}\r#":                          {"OAR-DOC-1", "JSON: unexpected data after the JSON value; kubectl's decoder reads a file beginning with \"{\" that is not JSON as YAML only after reading 4 bytes"},
		"{\"a\": 1}\n#c":                 {"OAR-DOC-1", "JSON: unexpected data after the JSON value; kubectl's decoder reads"},
		// A comment ends at a carriage return alone: what follows is read, as kubectl reads it.
		"00000\n---\n#00\r\"0": {"OAR-DOC-1", "YAML document 2: yaml: line 4 of the file: found unexpected end of stream"},
		"0\n---\n\t":           {"OAR-DOC-1", "YAML document 2 (from line 3 of the file): yaml: found character that cannot start any token"},
		"0\n---\n# c\n\t# d\n": {"OAR-DOC-1", "YAML document 2"},
		"0: 0\n---#0: 0\n0: 0": {"OAR-DOC-1", `unexpected "---#" at offset 5`},
		"---# lead\na: 1\n":    {"OAR-DOC-1", `unexpected "---#" at offset 0`},
		// A line break the split does not see, behind a comment on a marker line or
		// around a marker, would drop a document or find none.
		"0\n---\r#\r0":                  {"OAR-DOC-31", "line 2 of the file, \"---\\r#\\r0\", is a document separator for kubectl, which hands the YAML parser the line whole or drops it, but U+000D at offset 5 ends its comment"},
		"--- # c\rb: 2\n":               {"OAR-DOC-31", "line 1 of the file, \"--- # c\\rb: 2\", is a document separator for kubectl, which hands the YAML parser the line whole or drops it, but U+000D at offset 7 ends its comment"},
		"a: 1\u2028---\u2028b: 2\n":     {"OAR-DOC-31", "the YAML parser reads 2 members from the stream where its split at lines holding only \"---\" (as kubectl splits it) reads 1, so the file has no single reading (U+2028 at offset 4"},
		"a: 1\n--- #c\u0085b: 2\n":      {"OAR-DOC-31", "line 2 of the file, \"--- #c\\u0085b: 2\", is a document separator for kubectl, which hands the YAML parser the line whole or drops it, but U+0085 at offset 11 ends its comment"},
		"a: 1\n--- #c\u2029- b\n- c\n":  {"OAR-DOC-31", "line 2 of the file, \"--- #c\\u2029- b\", is a document separator for kubectl, which hands the YAML parser the line whole or drops it, but U+2029 at offset 11 ends its comment"},
		"0\u00a0\n---\u00a0\n---\u00a0": {"OAR-DOC-31", "line 2 of the file, \"---\\u00a0\", is a document separator for kubectl, which trims U+00A0 at offset 7 as white space, but not for the YAML parser"},
		"a: 1\n---\u3000# c\nb: 2\n":    {"OAR-DOC-31", "line 2 of the file, \"---\\u3000# c\", is a document separator for kubectl, which trims U+3000 at offset 8 as white space"},
		"0\n---\n--- #\r0 #\r0":         {"OAR-DOC-31", "line 3 of the file, \"--- #\\r0 #\\r0\", is a document separator for kubectl, which hands the YAML parser the line whole or drops it, but U+000D at offset 11 ends its comment"},
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

// TestDecodeDocumentsNamesLinesOfTheFile ([OAR-DOC-1]): the YAML parser counts lines
// from the start of the document it reads, but a stream is split at its "---" lines
// first, so a refusal names each line the parser names as a line of the file, counted
// as the parser counts lines (a carriage return alone, NEL, LS and PS end a line too):
// the line the parser names reading the whole stream. A document whose error names no
// line is named by the line it begins on. JSON read as YAML is one document from the
// start of the file.
func TestDecodeDocumentsNamesLinesOfTheFile(t *testing.T) {
	for _, c := range []struct{ name, in, want string }{
		{"the third document", "a: 1\n---\nb: 2\n---\nc: 3\n  d: 4\n",
			"YAML document 3: yaml: line 6 of the file: mapping values are not allowed in this context"},
		{"comments and blank lines before documents", "# header\n\n---\n# one\na: 1\n---\n\n# two\nb: [1,\n",
			"YAML document 2: yaml: line 9 of the file: did not find expected node content"},
		{"CRLF line endings", "a: 1\r\n---\r\nb: 2\r\n---\r\nc: 3\r\n  d: 4\r\n",
			"YAML document 3: yaml: line 6 of the file: mapping values are not allowed in this context"},
		{"a carriage return alone ends a line", "a: 1\rb: 2\n---\nc: 3\n  d: 4\n",
			"YAML document 2: yaml: line 5 of the file: mapping values are not allowed in this context"},
		{"LS and NEL end a line", "a: \"x\u2028y\u0085z\"\n---\nc: 3\n  d: 4\n",
			"YAML document 2: yaml: line 6 of the file: mapping values are not allowed in this context"},
		{"a leading ---", "---\na: 1\n  b: 2\n",
			"YAML: yaml: line 3 of the file: mapping values are not allowed in this context"},
		{"a leading --- with a comment", "# lead\n--- # first\na: {b\n",
			"YAML: yaml: line 3 of the file: did not find expected ',' or '}'"},
		{"members given twice", "a: 1\n---\nb: 1\nb: 2\nc: 1\nc: 2\n",
			"YAML document 2: yaml: unmarshal errors:\n  line 4 of the file: key \"b\" already set in map\n  line 6 of the file: key \"c\" already set in map: a document with a member given twice"},
		{"an error on the document's first line", "a: 1\n---\n# c\n---\nb: c: d\n",
			"YAML document 2 (from line 5 of the file): yaml: mapping values are not allowed in this context"},
		{"an error naming no line", "a: 1\n---\n\nb: *x\n",
			"YAML document 2 (from line 3 of the file): yaml: unknown anchor 'x' referenced"},
		{"one document, after a ---", "---\nb: *x\n",
			"YAML (from line 2 of the file): yaml: unknown anchor 'x' referenced"},
		{"the first document, on the first line", "b: c: d\n---\na: 1\n",
			"YAML document 1: yaml: mapping values are not allowed in this context"},
		{"a List", "a: 1\n---\nb: 2\n---\napiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  kind: ConfigMap\n   data: {}\n",
			"YAML document 3: yaml: line 10 of the file: mapping values are not allowed in this context"},
		{"JSON read as YAML", "\n\n{\"a\": [1,\n  \"b\": 2}\n",
			"YAML: yaml: line 3 of the file: did not find expected ',' or ']'"},
	} {
		_, err := DecodeDocuments([]byte(c.in))
		if err == nil || !strings.HasPrefix(err.Error(), c.want) || !strings.HasSuffix(err.Error(), " [OAR-DOC-1]") {
			t.Errorf("%s: %q: %v; want %q… [OAR-DOC-1]", c.name, c.in, err, c.want)
			continue
		}
		if got, whole := fileLines(err.Error()), streamLines(c.in); whole != nil && !slices.Equal(got, whole) {
			t.Errorf("%s: %q names lines %v; the parser reading the whole stream names %v", c.name, c.in, got, whole)
		}
	}
}

// lineOfTheFile matches a line a refusal names.
var lineOfTheFile = regexp.MustCompile(`line ([0-9]+) of the file`)

func fileLines(msg string) []int {
	var lines []int
	for _, m := range lineOfTheFile.FindAllStringSubmatch(msg, -1) {
		n, _ := strconv.Atoi(m[1])
		lines = append(lines, n)
	}
	return lines
}

// parserLineOf matches a line a YAML parser error names.
var parserLineOf = regexp.MustCompile(`line ([0-9]+): `)

// streamLines returns the lines the YAML parser names in its error reading in as one
// stream, strictly (a member given twice is an error), or nil when it names none.
func streamLines(in string) []int {
	dec := yamlv2.NewDecoder(strings.NewReader(in))
	dec.SetStrict(true)
	for {
		var v any
		if err := dec.Decode(&v); err != nil {
			var lines []int
			for _, m := range parserLineOf.FindAllStringSubmatch(err.Error(), -1) {
				n, _ := strconv.Atoi(m[1])
				lines = append(lines, n)
			}
			return lines
		}
	}
}

// TestDecodeDocumentsRefusesALastLineKubectlDrops ([OAR-DOC-31]): kubectl's YAML reader
// reads lines through a 4,096-byte buffer and drops a last line with no line feed after
// it whose length is a multiple of that, losing a member or a document's last key. Such
// a file is refused, naming the line; with a line feed, or one byte shorter, it reads as
// kubectl reads it.
func TestDecodeDocumentsRefusesALastLineKubectlDrops(t *testing.T) {
	lastLine := func(n int) string { return "b: " + strings.Repeat("x", n-3) }
	for _, tc := range []struct {
		in      string
		refused bool
	}{
		{"a: 1\n" + lastLine(4096), true},
		{lastLine(4096), true},
		{"a: 1\n---\n" + lastLine(8192), true},
		{"[" + strings.Repeat("1,", 2046) + "11]", true},
		{"a: 1\n" + lastLine(4096) + "\n", false},
		{"a: 1\n" + lastLine(4095), false},
		{"a: 1\n#" + strings.Repeat("x", 4095), false},
	} {
		docs, err := DecodeDocuments([]byte(tc.in))
		kubectl, kerr := kubectlMembers([]byte(tc.in))
		switch {
		case tc.refused && err == nil:
			t.Errorf("%d bytes: read %d members; want a refusal (kubectl's decoder reads %d, %v)", len(tc.in), len(docs), kubectl, kerr)
		case tc.refused && (!strings.Contains(err.Error(), "the last, is ") || !strings.HasSuffix(err.Error(), "[OAR-DOC-31]")):
			t.Errorf("%d bytes: %v; want the last line named, citing [OAR-DOC-31]", len(tc.in), err)
		case !tc.refused && err != nil:
			t.Errorf("%d bytes: %v; want it read", len(tc.in), err)
		case !tc.refused && (kerr != nil || kubectl != len(docs)):
			t.Errorf("%d bytes: %d members; kubectl's decoder reads %d (%v)", len(tc.in), len(docs), kubectl, kerr)
		}
	}
}
