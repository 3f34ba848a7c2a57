package engine

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	yamlv2 "go.yaml.in/yaml/v2"
	"sigs.k8s.io/yaml"

	"github.com/oar-operator/oar-operator/internal/engine/strictjson"
)

// maxDecodeDepth bounds nesting so no document can exhaust the stack.
const maxDecodeDepth = strictjson.MaxDepth

// DecodeJSON decodes one JSON value strictly: numbers stay exact (json.Number), a
// duplicate object key is refused, nesting is bounded, and trailing data is refused.
// Duplicate keys are not a lossless mapping ([OAR-DOC-1]): two parsers would keep
// different members. Well-formed input takes a one-pass decoder (strictjson); anything
// else is judged by encoding/json, whose messages the errors carry.
//
// A document is UTF-8 text: a byte that is not UTF-8 is refused, naming its offset,
// never replaced. A lone surrogate escape is kept as that code point (package
// codepoint), never made U+FFFD ([OAR-FACT-23], [OAR-FACT-26]).
func DecodeJSON(data []byte) (any, error) {
	if !utf8.Valid(data) {
		return nil, NotUTF8(data)
	}
	if v, ok := strictjson.Decode(data); ok {
		return v, nil
	}
	return decodeReference(data)
}

// SharedJSON decodes JSON documents that its caller keeps whole and together, as the
// admission webhook keeps a RulePack's rules, with DecodeJSON's results and errors, in
// fewer allocations: the documents share their strings (strictjson.Shared), so a
// string kept alone keeps its whole document in memory. Its zero value is ready; it is
// not for concurrent use.
type SharedJSON struct {
	s strictjson.Shared
}

// Decode is DecodeJSON for a document kept with the others decoded by s.
func (s *SharedJSON) Decode(data []byte) (any, error) {
	if !utf8.Valid(data) {
		return nil, NotUTF8(data)
	}
	if v, ok := s.s.Decode(data); ok {
		return v, nil
	}
	return decodeReference(data)
}

// decodeReference is DecodeJSON through encoding/json and checkKeys: the definition
// strictjson must agree with.
func decodeReference(data []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, jsonError(err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, fmt.Errorf("unexpected data after the JSON value")
	}
	if err := checkKeys(data); err != nil {
		return nil, err
	}
	return v, nil
}

// NotUTF8 names the first byte of data that is not UTF-8, which must not be silently
// replaced ([OAR-FACT-23], [OAR-FACT-26]).
func NotUTF8(data []byte) error {
	return fmt.Errorf("%s [OAR-FACT-23]", notUTF8(data))
}

// notUTF8 says which byte of data is the first that is not UTF-8, citing no clause.
func notUTF8(data []byte) string {
	off := 0
	for off < len(data) {
		r, n := utf8.DecodeRune(data[off:])
		if r == utf8.RuneError && n == 1 {
			break
		}
		off += n
	}
	return fmt.Sprintf("byte 0x%02x at offset %d is not UTF-8: a document is UTF-8 text, and this engine refuses bytes that are not rather than replace them", data[off], off)
}

// notYAMLText says which byte or character of data is the first the YAML parser
// refuses to read: a byte that is not UTF-8, or a character outside YAML's printable
// set (a control character other than tab and line breaks, U+FFFE, U+FFFF); "" when
// there is none.
func notYAMLText(data []byte) string {
	if !utf8.Valid(data) {
		return notUTF8(data)
	}
	for off, r := range string(data) {
		switch {
		case r == '\t', r == '\n', r == '\r', r == '\u0085':
		case r >= 0x20 && r <= 0x7e, r >= 0xa0 && r <= 0xd7ff, r >= 0xe000 && r <= 0xfffd, r >= 0x10000:
		default:
			return fmt.Sprintf("character %U at offset %d is not allowed in YAML: the YAML parser, and so kubectl, refuses it anywhere in a stream, a comment too", r, off)
		}
	}
	return ""
}

func jsonError(err error) error {
	if err == io.EOF {
		return errors.New("unexpected end of JSON input")
	}
	return err
}

// keyScanner walks JSON text that encoding/json has already accepted, looking only at
// object keys and nesting, so the strict checks cost one pass over the bytes rather
// than a token-by-token decode.
type keyScanner struct {
	data []byte
	pos  int
	// path holds the members and indices from the root to the current value, for a
	// diagnostic; -1 in index marks a member.
	keys    []string
	indices []int
	// offsets, when not nil, is set to where each value begins, by its path's key:
	// valueOffsets asks.
	offsets map[string]int
}

// checkKeys refuses a duplicate key in any object and nesting deeper than
// maxDecodeDepth.
func checkKeys(data []byte) error {
	s := &keyScanner{data: data}
	return s.value(0)
}

func (s *keyScanner) fail() error { return errors.New("malformed JSON") }

func (s *keyScanner) space() {
	for s.pos < len(s.data) {
		switch s.data[s.pos] {
		case ' ', '\t', '\n', '\r':
			s.pos++
		default:
			return
		}
	}
}

func (s *keyScanner) value(depth int) error {
	if depth > maxDecodeDepth {
		return fmt.Errorf("%s: nesting deeper than %d levels", displayPath(s.path()), maxDecodeDepth)
	}
	s.space()
	if s.pos >= len(s.data) {
		return s.fail()
	}
	if s.offsets != nil {
		s.offsets[jsonPath{s.keys, s.indices}.key()] = s.pos
	}
	switch s.data[s.pos] {
	case '{':
		return s.object(depth)
	case '[':
		return s.array(depth)
	case '"':
		_, err := s.str()
		return err
	}
	for s.pos < len(s.data) {
		switch s.data[s.pos] {
		case ',', '}', ']', ' ', '\t', '\n', '\r':
			return nil
		}
		s.pos++
	}
	return nil
}

// str skips a string and returns its raw bytes between the quotes.
func (s *keyScanner) str() ([]byte, error) {
	start := s.pos + 1
	for i := start; i < len(s.data); i++ {
		switch s.data[i] {
		case '\\':
			i++
		case '"':
			s.pos = i + 1
			return s.data[start:i], nil
		}
	}
	return nil, s.fail()
}

func (s *keyScanner) object(depth int) error {
	s.pos++
	var seen [][]byte
	var large map[string]struct{}
	for {
		s.space()
		if s.pos >= len(s.data) {
			return s.fail()
		}
		if s.data[s.pos] == '}' {
			s.pos++
			return nil
		}
		raw, err := s.str()
		if err != nil {
			return err
		}
		key := raw
		if bytes.IndexByte(raw, '\\') >= 0 {
			var k string
			if err := json.Unmarshal(s.data[s.pos-len(raw)-2:s.pos], &k); err != nil {
				return err
			}
			key = []byte(k)
		}
		s.keys = append(s.keys, string(key))
		s.indices = append(s.indices, -1)
		if large == nil && len(seen) < 16 {
			for _, k := range seen {
				if bytes.Equal(k, key) {
					return &DuplicateKeyError{Path: s.path()}
				}
			}
			seen = append(seen, key)
		} else {
			if large == nil {
				large = make(map[string]struct{}, 2*len(seen))
				for _, k := range seen {
					large[string(k)] = struct{}{}
				}
			}
			if _, dup := large[string(key)]; dup {
				return &DuplicateKeyError{Path: s.path()}
			}
			large[string(key)] = struct{}{}
		}
		s.space()
		if s.pos >= len(s.data) || s.data[s.pos] != ':' {
			return s.fail()
		}
		s.pos++
		if err := s.value(depth + 1); err != nil {
			return err
		}
		s.keys, s.indices = s.keys[:len(s.keys)-1], s.indices[:len(s.indices)-1]
		s.space()
		if s.pos < len(s.data) && s.data[s.pos] == ',' {
			s.pos++
		}
	}
}

func (s *keyScanner) array(depth int) error {
	s.pos++
	for i := 0; ; i++ {
		s.space()
		if s.pos >= len(s.data) {
			return s.fail()
		}
		if s.data[s.pos] == ']' {
			s.pos++
			return nil
		}
		s.keys = append(s.keys, "")
		s.indices = append(s.indices, i)
		if err := s.value(depth + 1); err != nil {
			return err
		}
		s.keys, s.indices = s.keys[:len(s.keys)-1], s.indices[:len(s.indices)-1]
		s.space()
		if s.pos < len(s.data) && s.data[s.pos] == ',' {
			s.pos++
		}
	}
}

// path renders the current position as a JSON path: member names joined by dots,
// indices in brackets.
func (s *keyScanner) path() string {
	return jsonPath{s.keys, s.indices}.String()
}

// jsonPath is the way from the root of a JSON value to one inside it, as keyScanner
// holds it: a member's name in keys with -1 in indices, or an index.
type jsonPath struct {
	keys    []string
	indices []int
}

// String renders p as member names joined by dots and indices in brackets, joined as
// diag.JoinPath joins them. It writes the path once: joining it level by level copied
// it at each, which for a path of long member names nested deep cost the square of its
// length (a 1 MB request: 160 MB allocated).
func (p jsonPath) String() string {
	var b strings.Builder
	for i, k := range p.keys {
		switch {
		case p.indices[i] >= 0:
			b.WriteByte('[')
			b.WriteString(strconv.Itoa(p.indices[i]))
			b.WriteByte(']')
		case k == "":
		case b.Len() > 0 && !strings.HasPrefix(k, "["):
			b.WriteByte('.')
			b.WriteString(k)
		default:
			b.WriteString(k)
		}
	}
	return b.String()
}

// member is p and then the member named k.
func (p jsonPath) member(k string) jsonPath {
	return jsonPath{append(slices.Clip(p.keys), k), append(slices.Clip(p.indices), -1)}
}

// index is p and then index i.
func (p jsonPath) index(i int) jsonPath {
	return jsonPath{append(slices.Clip(p.keys), ""), append(slices.Clip(p.indices), i)}
}

// key is p as a string that no other path has, to look it up by.
func (p jsonPath) key() string {
	var b []byte
	for i, k := range p.keys {
		if p.indices[i] >= 0 {
			b = strconv.AppendInt(append(b, '['), int64(p.indices[i]), 10)
		} else {
			b = strconv.AppendQuote(b, k)
		}
	}
	return string(b)
}

// valueOffsets returns the offset in data, JSON text its decoder has accepted, where
// each value begins, by its path's key; in one pass, however many values are asked for.
func valueOffsets(data []byte) map[string]int {
	s := &keyScanner{data: data, offsets: map[string]int{}}
	if s.value(0) != nil {
		return nil
	}
	return s.offsets
}

func displayPath(p string) string {
	if p == "" {
		return "document"
	}
	return p
}

// DuplicateKeyError reports a member given twice in one object.
type DuplicateKeyError struct{ Path string }

func (e *DuplicateKeyError) Error() string {
	return fmt.Sprintf("duplicate key %q: a document with a member given twice has no single JSON reading [OAR-DOC-1]", e.Path)
}

// DecodeDocuments reads a file holding JSON or YAML: one document, a JSON array of
// documents, or a multi-document YAML stream ([OAR-DOC-1], [OAR-DOC-31]). It returns
// the members in order. YAML is read the way kubectl reads it (YAML 1.1 through
// sigs.k8s.io/yaml), so a file gets the verdict here that it gets at admission. A file
// it reads is one kubectl's decoder reads into the same members: one kubectl refuses is
// refused (a line beginning with "---" and then more than white space or a comment,
// which kubectl takes for a separator wherever it is; bytes that are not UTF-8, or a
// control character, in a comment; a file beginning with "{" too short for kubectl to
// read it as YAML; a JSON array the YAML parser refuses, since kubectl reads an array
// as YAML), and so is one holding a document kubectl's split would silently drop (one
// after a "..." line, or behind a line break the split does not see), rather than
// dropped here too ([OAR-DOC-31]).
//
// A file it does not read is refused under the clause it breaks, cited at the end of
// the error: a separator kubectl refuses or a dropped member breaks [OAR-DOC-31], and
// anything else, a file that is not UTF-8, not JSON or YAML, holds no document or holds
// more than its JSON reading keeps, breaks [OAR-DOC-1]. An offset or a line it names is
// counted in the file, from its start, never in the document the split made.
func DecodeDocuments(data []byte) ([]any, error) {
	trimmed := bytes.TrimSpace(data)
	if len(trimmed) == 0 {
		return nil, refuseFile("OAR-DOC-1", errors.New("no document found: the file holds only white space; a document is a JSON object, or YAML that maps to one"))
	}
	var notForKubectl error // a refusal to give once the YAML reading finds no other
	if trimmed[0] != '{' {
		// kubectl reads every file not beginning with "{" as YAML, line by line, an
		// array too.
		if err := lastLineDropped(data); err != nil {
			return nil, err
		}
	}
	if trimmed[0] == '{' || trimmed[0] == '[' {
		if !utf8.Valid(trimmed) {
			// A file that is no UTF-8 text has no JSON reading, as a YAML one has none.
			// The white space trimmed is UTF-8, so the offset is counted in the file.
			return nil, refuseFile("OAR-DOC-1", fmt.Errorf("JSON: %s", notUTF8(data)))
		}
		v, err := DecodeJSON(trimmed)
		// Before a "{", such a character sends kubectl's decoder, which takes the file
		// for JSON, to a syntax error it does not read past, JSON or not.
		if off, leading := notJSONSpace(data, trimmed); off >= 0 && (err == nil || trimmed[0] == '{' && leading) {
			r, _ := utf8.DecodeRune(data[off:])
			return nil, refuseFile("OAR-DOC-1", fmt.Errorf("JSON: character %U at offset %d is not white space in JSON (space, tab, line feed and carriage return are), so kubectl's decoder does not read the file as the document it holds", r, off))
		}
		if err == nil && trimmed[0] == '[' {
			// kubectl's decoder reads JSON only from a file beginning with "{": an array
			// it reads as YAML, which refuses some JSON ("\/", a tab before the "[").
			js, yerr := yaml.YAMLToJSON(data)
			if yerr != nil {
				return nil, refuseFile("OAR-DOC-1", fmt.Errorf("%w; kubectl's decoder reads a file beginning with \"[\" as YAML, not JSON, and refuses this one", inFile("YAML", yerr, 0)))
			}
			if err := readAlikeAsYAML(data, trimmed, v, js); err != nil {
				return nil, err
			}
		}
		if err == nil {
			if docs := members(v); len(docs) > 0 {
				return docs, nil
			}
			// As for a YAML stream of no documents: an empty array holds nothing to check.
			return nil, refuseFile("OAR-DOC-1", errors.New("no document found: the JSON array is empty; a document is a JSON object"))
		}
		var dup *DuplicateKeyError
		if errors.As(err, &dup) || !looksLikeYAMLFlow(trimmed) {
			return nil, refuseFile("OAR-DOC-1", fmt.Errorf("JSON: %w", err))
		}
		if trimmed[0] == '{' {
			if kubectlLooksAhead(data) < 4 {
				notForKubectl = refuseFile("OAR-DOC-1", fmt.Errorf("JSON: %w; kubectl's decoder reads a file beginning with \"{\" that is not JSON as YAML only after reading 4 bytes from where the YAML begins (the \"{\", or the end of the first JSON value, past white space on its line), and this one ends sooner, so kubectl refuses it", err))
			}
			// Read as YAML by kubectl too, line by line.
			if err := lastLineDropped(data); err != nil {
				return nil, err
			}
		}
	}
	if msg := notYAMLText(data); msg != "" {
		// The YAML parser refuses these in a document it reads, but the split leaves
		// lines out (a comment on a marker line, a part of comments alone) that
		// kubectl's reader gives its parser: refuse them wherever they are.
		return nil, refuseFile("OAR-DOC-1", fmt.Errorf("YAML: %s", msg))
	}
	if err := checkMarkerLines(data); err != nil {
		return nil, err
	}
	docs, starts, opened := splitYAML(data)
	var out []any
	for i, doc := range docs {
		// The YAML parser stops at the end of a flow node and ignores what follows, so
		// `{...} }{` would pass as one document, losing the rest: refuse it, naming the
		// offset.
		if off := trailingAfterFlow(doc); off >= 0 {
			return nil, refuseFile("OAR-DOC-1", fmt.Errorf("unexpected data at offset %d, after the document that ends before it: a file holds one JSON document or one YAML stream, and this would be lost in its JSON reading", starts[i]+off))
		}
		// The parser reads one document of each part and drops the rest: refuse a
		// second one, which only a marker line carrying more than its marker can begin.
		if off := droppedDocument(doc, opened[i]); off >= 0 {
			if bytes.HasPrefix(doc[off:], []byte("...")) {
				return nil, refuseFile("OAR-DOC-31", fmt.Errorf("unexpected document after the document end marker \"...\" at offset %d, which ends a document for the YAML parser but splits nothing for kubectl: a stream is split at lines holding only \"---\" and one document is read between two of them, so this one would be dropped; put a line holding only \"---\" before it", starts[i]+off))
			}
			return nil, refuseFile("OAR-DOC-31", fmt.Errorf("unexpected document at offset %d, on its marker line: a stream is split at lines holding only \"---\" (as kubectl splits it) and one document is read between two of them, so this one would be dropped; put it on the line after a \"---\" alone", starts[i]+off))
		}
		v, err := decodePart(doc)
		if err != nil {
			what := "YAML"
			if len(docs) > 1 {
				what = fmt.Sprintf("YAML document %d", i+1)
			}
			return nil, refuseFile("OAR-DOC-1", inFile(what, err, lineBreaks(data[:starts[i]])))
		}
		if v == nil {
			continue
		}
		out = append(out, members(v)...)
	}
	// The checks above name the usual ways a split and the parser part; any other (a
	// comment on a marker line hiding a line break the split does not see) is refused
	// here, so the file never loses or gains a member silently either way.
	if n, ok := streamMembers(data); ok && n != len(out) {
		return nil, refuseFile("OAR-DOC-31", fmt.Errorf("the YAML parser reads %s from the stream where its split at lines holding only \"---\" (as kubectl splits it) reads %d, so the file has no single reading%s; end every line with a line feed and put each \"---\" alone on its line", memberCount(n), len(out), firstOtherLineBreak(data)))
	}
	if notForKubectl != nil {
		return nil, notForKubectl
	}
	if len(out) == 0 {
		return nil, refuseFile("OAR-DOC-1", errors.New("no document found: the YAML stream holds only comments, empty documents and empty sequences; a document is a JSON object, or YAML that maps to one"))
	}
	return out, nil
}

// streamMembers counts the members the YAML parser reads from the whole stream data, as
// DecodeDocuments counts them; ok is false when the parser refuses the stream, which
// DecodeDocuments then judges document by document, as kubectl does.
func streamMembers(data []byte) (n int, ok bool) {
	return countMembers(yamlv2.NewDecoder(bytes.NewReader(data)).Decode)
}

// countMembers counts the members of the documents decode reads, one per call until
// io.EOF, as DecodeDocuments counts them: a sequence's items, no empty document; ok is
// false when decode fails.
func countMembers(decode func(v any) error) (n int, ok bool) {
	for {
		var v any
		switch err := decode(&v); {
		case err == io.EOF:
			return n, true
		case err != nil:
			return 0, false
		}
		if items, isList := v.([]any); isList {
			n += len(items)
		} else if v != nil {
			n++
		}
	}
}

// memberCount is n members, in words.
func memberCount(n int) string {
	if n == 1 {
		return "1 member"
	}
	return fmt.Sprintf("%d members", n)
}

// firstOtherLineBreak says where data first breaks a line as the YAML parser does and
// kubectl's split does not: a carriage return alone, NEL, U+2028 or U+2029; "" when it
// never does.
func firstOtherLineBreak(data []byte) string {
	for i := 0; i < len(data); i++ {
		switch {
		case data[i] == '\r' && (i+1 == len(data) || data[i+1] != '\n'):
			return fmt.Sprintf(" (a carriage return not followed by a line feed at offset %d ends a line for the parser only)", i)
		case bytes.HasPrefix(data[i:], []byte("\u0085")), bytes.HasPrefix(data[i:], []byte("\u2028")), bytes.HasPrefix(data[i:], []byte("\u2029")):
			r, _ := utf8.DecodeRune(data[i:])
			return fmt.Sprintf(" (%U at offset %d ends a line for the parser only)", r, i)
		}
	}
	return ""
}

// fileError is a file DecodeDocuments refuses, under the clause the file breaks.
type fileError struct {
	clause string
	err    error
}

// Error ends in the clause, once: a cause that already cites it (a duplicate key,
// bytes that are not UTF-8) is not cited again.
func (e *fileError) Error() string {
	msg := e.err.Error()
	if cite := " [" + e.clause + "]"; !strings.HasSuffix(msg, cite) {
		msg += cite
	}
	return msg
}

func (e *fileError) Unwrap() error { return e.err }

func refuseFile(clause string, err error) error { return &fileError{clause: clause, err: err} }

// parserLine matches a line number in a YAML parser error: at the start of its message
// ("yaml: line 3: ...") or of each entry of a list ("yaml: unmarshal errors:\n  line 3:
// ...").
var parserLine = regexp.MustCompile(`(^yaml: |\n  )line ([0-9]+): `)

// inFile is the error err of a YAML document, which what names, with its lines counted
// in the file: the parser counts them from the start of the document it reads, which
// follows the before lines of the file split from it. Each line err names becomes
// "line N of the file"; when it names none (an error on the document's first line, an
// unknown anchor), what says on which line of the file the document begins. The numbers
// are otherwise the parser's, as kubectl prints them for a file of one document.
func inFile(what string, err error, before int) error {
	named := false
	msg := parserLine.ReplaceAllStringFunc(err.Error(), func(m string) string {
		sub := parserLine.FindStringSubmatch(m)
		n, _ := strconv.Atoi(sub[2]) // digits the parser printed from an int
		named = true
		return fmt.Sprintf("%sline %d of the file: ", sub[1], before+n)
	})
	if !named && before > 0 {
		what += fmt.Sprintf(" (from line %d of the file)", before+1)
	}
	return fmt.Errorf("%s: %s", what, msg)
}

// lineBreaks counts the line breaks in b as the YAML parser counts them: a line feed, a
// carriage return alone or before a line feed, NEL, LS and PS.
func lineBreaks(b []byte) int {
	n := bytes.Count(b, []byte("\n")) + bytes.Count(b, []byte("\r")) - bytes.Count(b, []byte("\r\n"))
	for _, brk := range []string{"\u0085", "\u2028", "\u2029"} {
		n += bytes.Count(b, []byte(brk))
	}
	return n
}

// DecodeYAML converts one YAML document to JSON, refusing duplicate keys and keys the
// conversion makes one member name (keysCollide), and decodes it like DecodeJSON.
func DecodeYAML(doc []byte) (any, error) {
	js, err := yaml.YAMLToJSONStrict(doc)
	if err != nil {
		if strings.Contains(err.Error(), "already set in map") {
			return nil, fmt.Errorf("%v: a document with a member given twice has no single JSON reading [OAR-DOC-1]", err)
		}
		return nil, err
	}
	v, err := DecodeJSON(js)
	if err != nil || !hasKeyFromNonString(v) {
		return v, err
	}
	if err := keysCollide(doc); err != nil {
		return nil, err
	}
	return v, nil
}

// keyFromNonString matches a member name the conversion to JSON can make of a key that
// is not a string: an integer, a floating-point number, .inf, -.inf, .nan, a boolean.
var keyFromNonString = regexp.MustCompile(`^(-?[0-9][0-9.e+-]*|-?\.inf|\.nan|true|false)$`)

// hasKeyFromNonString reports whether v, a document's JSON, holds a member name
// keyFromNonString matches: only then can two keys have become one (keysCollide), and
// parsing the document again to know is worth it.
func hasKeyFromNonString(v any) bool {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			if k != "" && strings.IndexByte("0123456789-.tf", k[0]) >= 0 && keyFromNonString.MatchString(k) || hasKeyFromNonString(e) {
				return true
			}
		}
	case []any:
		for _, e := range x {
			if hasKeyFromNonString(e) {
				return true
			}
		}
	}
	return false
}

// keysCollide refuses a YAML document holding a mapping with two keys the YAML parser
// reads as different that its conversion to JSON (sigs.k8s.io/yaml's, which kubectl's
// decoder uses) turns into one member name: an integer and a string (1 and "1"), a
// boolean and a string (true and "true"), a floating-point number and an integer (1.0
// and 1). The conversion keeps one of the two values, whichever it meets last in the
// parser's map, at random, so kubectl reads either document ([OAR-DOC-1]). The error
// names the line of the later key.
func keysCollide(doc []byte) error {
	var v any
	if yamlv2.Unmarshal(doc, &v) != nil {
		return nil // YAMLToJSONStrict has read it; nothing here is refused twice
	}
	c, ok := firstCollision(jsonPath{}, v)
	if !ok {
		return nil
	}
	where := c.path.String()
	if where == "" {
		where = "the document"
	}
	at := ""
	if line := collidingKeyLine(doc, c.name); line > 0 {
		at = fmt.Sprintf("line %d: ", line)
	}
	return fmt.Errorf("yaml: %skeys %s and %s of %s are one member name, %q, in JSON (kubectl's decoder converts a key that is not a string into one), and kubectl keeps either member at random, so the document has no single JSON reading; quote the key or write it once [OAR-DOC-1]", at, describeKey(c.keys[0]), describeKey(c.keys[1]), where, c.name)
}

// keyCollision is two keys of the mapping at path that convert to the member name.
type keyCollision struct {
	path jsonPath
	name string
	keys [2]any
}

// firstCollision returns the first collision in v, a value the YAML parser decoded,
// visiting members in the order of their names so the same document always gets the
// same error.
func firstCollision(p jsonPath, v any) (keyCollision, bool) {
	switch x := v.(type) {
	case map[any]any:
		byName := make(map[string]any, len(x))
		names := make([]string, 0, len(x))
		values := make(map[string]any, len(x))
		for k, e := range x {
			name, ok := jsonKey(k)
			if !ok {
				return keyCollision{}, false // the conversion refuses such a key
			}
			if other, seen := byName[name]; seen {
				keys := [2]any{other, k}
				// The same two keys are named in the same order whatever the map's.
				if describeKey(keys[0]) > describeKey(keys[1]) {
					keys[0], keys[1] = keys[1], keys[0]
				}
				return keyCollision{p, name, keys}, true
			}
			byName[name] = k
			names = append(names, name)
			values[name] = e
		}
		sort.Strings(names)
		for _, n := range names {
			if c, ok := firstCollision(p.member(n), values[n]); ok {
				return c, true
			}
		}
	case []any:
		for i, e := range x {
			if c, ok := firstCollision(p.index(i), e); ok {
				return c, true
			}
		}
	}
	return keyCollision{}, false
}

// jsonKey is the member name sigs.k8s.io/yaml converts a key the YAML parser decoded
// into (a float as a 32-bit one, in its shortest form, or .inf, -.inf, .nan); false for
// a key it refuses.
func jsonKey(k any) (string, bool) {
	switch x := k.(type) {
	case string:
		return x, true
	case int:
		return strconv.Itoa(x), true
	case int64:
		return strconv.FormatInt(x, 10), true
	case float64:
		switch s := strconv.FormatFloat(x, 'g', -1, 32); s {
		case "+Inf":
			return ".inf", true
		case "-Inf":
			return "-.inf", true
		case "NaN":
			return ".nan", true
		default:
			return s, true
		}
	case bool:
		return strconv.FormatBool(x), true
	}
	return "", false
}

// describeKey names a key the YAML parser decoded with its type, which is how two keys
// of one member name differ.
func describeKey(k any) string {
	switch x := k.(type) {
	case string:
		return "the string " + strconv.Quote(x)
	case int, int64:
		return fmt.Sprintf("the integer %d", x)
	case float64:
		return "the floating-point number " + strconv.FormatFloat(x, 'g', -1, 64)
	case bool:
		return "the boolean " + strconv.FormatBool(x)
	}
	return fmt.Sprintf("%v", k)
}

// keyTree is a YAML value decoded for its keys only: the mappings' keys, as the parser
// reports them, and the values below them.
type keyTree struct {
	members map[yamlKey]keyTree
	items   []keyTree
}

// UnmarshalYAML decodes a mapping by its keys and a sequence item by item.
func (t *keyTree) UnmarshalYAML(unmarshal func(any) error) error {
	var kind any
	if err := unmarshal(&kind); err != nil {
		return err
	}
	switch kind.(type) {
	case map[any]any:
		return unmarshal(&t.members)
	case []any:
		return unmarshal(&t.items)
	}
	return nil
}

// yamlKey is a mapping key, as the parser reports it when it cannot decode it ("line
// 3: cannot unmarshal !!int `1` into ..."): its line, tag and text. The parser says
// where a key is only then, so a key is decoded into a struct, which no scalar decodes
// into.
type yamlKey struct{ report string }

// UnmarshalYAML keeps the parser's report of the key.
func (k *yamlKey) UnmarshalYAML(unmarshal func(any) error) error {
	var nothing struct{}
	err := unmarshal(&nothing)
	var terr *yamlv2.TypeError
	if errors.As(err, &terr) && len(terr.Errors) > 0 {
		k.report = terr.Errors[0]
		return nil
	}
	return err
}

// reports appends what the parser reports of every key in t.
func (t keyTree) reports(out []string) []string {
	for k, v := range t.members {
		out = append(out, k.report)
		out = v.reports(out)
	}
	for _, v := range t.items {
		out = v.reports(out)
	}
	return out
}

// parserKeyError matches the parser's report of a key: its line, tag and text (cut
// with "..." when long).
var parserKeyError = regexp.MustCompile("^line ([0-9]+): cannot unmarshal (!![a-z]+) `(.*)` into ")

// collidingKeyLine returns the line in doc, as the parser counts lines, of the last key
// that converts to the member name; 0 when the parser names none (a key whose text it
// cuts).
func collidingKeyLine(doc []byte, name string) int {
	var t keyTree
	if yamlv2.Unmarshal(doc, &t) != nil {
		return 0
	}
	line := 0
	for _, r := range t.reports(nil) {
		m := parserKeyError.FindStringSubmatch(r)
		if m == nil {
			continue
		}
		var k any = m[3]
		if m[2] != "!!str" && yamlv2.Unmarshal([]byte(m[2]+" "+strconv.Quote(m[3])), &k) != nil {
			continue
		}
		if got, ok := jsonKey(k); ok && got == name {
			n, _ := strconv.Atoi(m[1]) // digits the parser printed from an int
			line = max(line, n)
		}
	}
	return line
}

// readAlikeAsYAML refuses a JSON array, the JSON value v of trimmed (data without the
// white space around it), that kubectl's decoder, which reads a file beginning with "["
// as YAML, reads into other values: js is the JSON the YAML reading converts to. The
// two differ where YAML reads JSON text otherwise: a number it respells or rounds (1.0
// is 1, 1e3 is 1000, 12345678901234567890123 loses digits, 1E3 is a string), a line
// break in a string it folds with the spaces around it (NEL, U+2028, U+2029 are line
// breaks to it) ([OAR-DOC-1]). Naming the first difference in the file, with its offset
// and line, tells the author what to write so both read one document.
func readAlikeAsYAML(data, trimmed []byte, v any, js []byte) error {
	kv, err := DecodeJSON(js)
	if err != nil {
		return refuseFile("OAR-DOC-1", fmt.Errorf("YAML: %w; kubectl's decoder reads a file beginning with \"[\" as YAML, not JSON, and reads this one into JSON this engine refuses", err))
	}
	var diffs []readingDifference
	differences(jsonPath{}, v, kv, &diffs)
	if len(diffs) == 0 {
		return nil
	}
	lead := len(data) - len(bytes.TrimLeftFunc(data, unicode.IsSpace))
	first, at := diffs[0], len(trimmed)
	offsets := valueOffsets(trimmed)
	for _, d := range diffs {
		if off, ok := offsets[d.path.key()]; ok && off < at {
			first, at = d, off
		}
	}
	off := lead + min(at, len(trimmed)-1)
	where := first.path.String()
	if where == "" {
		where = "the array"
	}
	return refuseFile("OAR-DOC-1", fmt.Errorf("JSON: the value at offset %d (line %d), %s, is %s, but kubectl's decoder, which reads a file beginning with \"[\" as YAML, not JSON, reads %s, so the file has no single reading%s", off, lineBreaks(data[:off])+1, where, describeReading(first.json), describeReading(first.yaml), first.hint()))
}

// readingDifference is a value a JSON array's JSON reading and its YAML reading differ
// in: at path, json and yaml; for an object whose members differ, the names only in
// one reading, each object itself otherwise.
type readingDifference struct {
	path       jsonPath
	json, yaml any
}

// hint says how to write the value so that both readings agree.
func (d readingDifference) hint() string {
	_, jn := d.json.(json.Number)
	if jn {
		return "; YAML reads a number as a 64-bit integer or floating-point number and writes it back in its shortest spelling: write it as kubectl reads it, or as a string"
	}
	if _, js := d.json.(string); js {
		return "; YAML folds a line break in a quoted string (NEL, U+2028 and U+2029 are line breaks to it) and drops the spaces around it: write such a character as an escape (\\u2028)"
	}
	if _, jm := d.json.(memberNames); jm {
		return "; YAML folds a line break in a quoted name (NEL, U+2028 and U+2029 are line breaks to it) and drops the spaces around it: write such a character as an escape (\\u2028)"
	}
	return ""
}

// memberNames are the names of an object's members that only one reading has.
type memberNames []string

// differences appends to diffs each place below p where a and b, two decoded JSON
// values, differ: numbers by their spelling, strings by their bytes, objects by the
// names of their members.
func differences(p jsonPath, a, b any, diffs *[]readingDifference) {
	switch x := a.(type) {
	case map[string]any:
		y, ok := b.(map[string]any)
		if !ok {
			break
		}
		var onlyA, onlyB memberNames
		for k := range x {
			if _, in := y[k]; !in {
				onlyA = append(onlyA, k)
			}
		}
		for k := range y {
			if _, in := x[k]; !in {
				onlyB = append(onlyB, k)
			}
		}
		if len(onlyA)+len(onlyB) > 0 {
			sort.Strings(onlyA)
			sort.Strings(onlyB)
			*diffs = append(*diffs, readingDifference{p, onlyA, onlyB})
			return
		}
		for k, e := range x {
			differences(p.member(k), e, y[k], diffs)
		}
		return
	case []any:
		y, ok := b.([]any)
		if !ok || len(x) != len(y) {
			break
		}
		for i := range x {
			differences(p.index(i), x[i], y[i], diffs)
		}
		return
	default:
		if a == b {
			return
		}
	}
	*diffs = append(*diffs, readingDifference{p, a, b})
}

// describeReading names a value a reading gives, for an error: a scalar with its JSON
// spelling, a string quoted so that every character that is not graphic shows.
func describeReading(v any) string {
	switch x := v.(type) {
	case string:
		return "the string " + strconv.Quote(x)
	case json.Number:
		return "the number " + string(x)
	case bool:
		return strconv.FormatBool(x)
	case nil:
		return "null"
	case map[string]any:
		return "an object"
	case []any:
		return fmt.Sprintf("an array of %d", len(x))
	case memberNames:
		if len(x) == 0 {
			return "no member that the other reading lacks"
		}
		names := make([]string, len(x))
		for i, n := range x {
			names[i] = strconv.Quote(n)
		}
		return "an object with members named " + strings.Join(names, ", ")
	}
	return fmt.Sprintf("%T", v)
}

// notJSONSpace returns the offset in data of the first character around trimmed, the
// part of data that bytes.TrimSpace leaves, that is not white space in JSON (a form
// feed, NEL, a no-break space), and whether it comes before trimmed; -1 when there is
// none.
func notJSONSpace(data, trimmed []byte) (off int, leading bool) {
	other := func(r rune) bool { return r != ' ' && r != '\t' && r != '\n' && r != '\r' }
	lead := len(data) - len(bytes.TrimLeftFunc(data, unicode.IsSpace))
	if i := bytes.IndexFunc(data[:lead], other); i >= 0 {
		return i, true
	}
	tail := lead + len(trimmed)
	if i := bytes.IndexFunc(data[tail:], other); i >= 0 {
		return tail + i, false
	}
	return -1, false
}

// kubectlLooksAhead returns how many bytes of data kubectl's decoder (apimachinery's
// YAMLOrJSONDecoder) can read at the point where, finding that a file beginning with
// "{" is not JSON, it skips the white space before the YAML. It reads the rest as YAML
// from the start, or, when it has read one JSON value, from the end of that value, and
// skips white space there up to the first line feed, reading 4 bytes at each step: it
// refuses the file when fewer are left.
func kubectlLooksAhead(data []byte) int {
	dec := json.NewDecoder(bytes.NewReader(data))
	var first json.RawMessage
	if dec.Decode(&first) == nil {
		data = data[dec.InputOffset():]
	}
	from := len(data) - len(bytes.TrimLeftFunc(data, unicode.IsSpace))
	if lf := bytes.IndexByte(data[:from], '\n'); lf >= 0 {
		from = lf
	}
	return len(data) - from
}

// looksLikeYAMLFlow reports whether a brace-or-bracket document that is not valid JSON
// may still be YAML flow style (unquoted keys or values).
func looksLikeYAMLFlow(b []byte) bool {
	return !json.Valid(b)
}

func members(v any) []any {
	if arr, ok := v.([]any); ok {
		return arr
	}
	return []any{v}
}

// splitYAML splits a stream on "---" separator lines, the way kubectl does, skipping
// documents that hold only whitespace and comments, unless the YAML parser refuses
// them (a tab alone on a line), as kubectl's parser, given every part, does. It returns
// each document's bytes, unchanged, the offset in data where each starts, and whether
// kubectl's part holds a separator line before them (opened). A "..." line ends a
// document for the YAML parser but splits nothing for kubectl, so it does not split
// here either: a document after one is in the same part, where droppedDocument finds
// it.
//
// kubectl's reader ends a part at a separator line only when it has read a line since
// the last part ended; otherwise (the file's first line, or a separator right after
// the one ending a part) it keeps the separator as the part's first line, so its
// parser reads the part's document as one a "---" began.
func splitYAML(data []byte) (docs [][]byte, starts []int, opened []bool) {
	start, pos := 0, 0
	// empty reports that kubectl's reader has nothing in the part it is reading; kept,
	// that the part begins with a separator line it kept.
	empty, kept := true, false
	flush := func(end int) {
		if part := data[start:end]; hasYAMLContent(part) || yamlv2.Unmarshal(part, new(any)) != nil {
			docs = append(docs, part)
			starts = append(starts, start)
			opened = append(opened, kept)
		}
	}
	for _, raw := range bytes.SplitAfter(data, []byte("\n")) {
		line := strings.TrimRight(string(raw), "\r\n")
		next := pos + len(raw)
		separator := false
		if strings.HasPrefix(line, "---") {
			rest := strings.TrimSpace(line[3:])
			separator = rest == "" || strings.HasPrefix(rest, "#")
		}
		switch {
		case separator && empty:
			empty, kept = false, true
			start = next
		case separator:
			flush(pos)
			empty, kept = true, false
			start = next
		case len(raw) > 0:
			empty = false
		}
		pos = next
	}
	flush(len(data))
	return docs, starts, opened
}

// decodePart is DecodeYAML of one part of a split stream as kubectl's reader hands it
// to the YAML parser (asKubectlReads). An error is the one for the part as the file
// holds it, so that a line it names is one of the file: kubectl's lines are not all
// the file's.
func decodePart(doc []byte) (any, error) {
	v, err := DecodeYAML(doc)
	if err != nil {
		return v, err
	}
	if read := asKubectlReads(doc); !bytes.Equal(read, doc) {
		return DecodeYAML(read)
	}
	return v, nil
}

// asKubectlReads returns doc as kubectl's reader hands it to the YAML parser, in a copy
// when that is not doc: every line ending in a line feed alone. The reader reads a line
// up to a line feed, drops the line feed and a carriage return before it, and adds a
// line feed: "\r\r\n" is one line break and a carriage return where the file has two
// breaks (so "0\r\r\n0" is "0 0", not "0\n0"), and the last line of a file gets a line
// feed it does not have, which a block scalar on it keeps ("|" then " x" is "x\n").
func asKubectlReads(doc []byte) []byte {
	read := doc
	if bytes.Contains(doc, []byte("\r\n")) {
		read = bytes.ReplaceAll(doc, []byte("\r\n"), []byte("\n"))
	}
	if len(read) > 0 && read[len(read)-1] != '\n' {
		read = append(read[:len(read):len(read)], '\n')
	}
	return read
}

// kubectlReadBuffer is the size of the buffered reader kubectl's YAML reader reads
// lines through (bufio's default).
const kubectlReadBuffer = 4096

// lastLineDropped refuses data whose last line, with no line feed after it, is a
// positive multiple of kubectlReadBuffer bytes long and holds more than white space and
// comments. kubectl's YAML reader gets such a line together with the end of the file
// and drops it: the document it ends loses that line, or, when it is the document's
// only line, the document is lost ([OAR-DOC-31]).
func lastLineDropped(data []byte) error {
	start := bytes.LastIndexByte(data, '\n') + 1
	last := data[start:]
	if len(last) == 0 || len(last)%kubectlReadBuffer != 0 || !hasYAMLContent(last) {
		return nil
	}
	return refuseFile("OAR-DOC-31", fmt.Errorf("line %d of the file, the last, is %d bytes with no line feed after it, a multiple of %d: kubectl's reader, reading lines through a buffer of %d bytes, drops such a line at the end of a file, so kubectl would read the file without it; end the file with a line feed", lineBreaks(data[:start])+1, len(last), kubectlReadBuffer, kubectlReadBuffer))
}

// checkMarkerLines refuses the first line of data beginning with "---" that kubectl
// does not read as a separator line, or reads as one where the YAML parser does not.
// Lines end at a line feed, as kubectl's reader (apimachinery's YAMLReader) ends them:
// it takes every such line for a document separator, and refuses the whole file when
// anything but white space (as strings.TrimSpace trims it) or a comment follows the
// "---", wherever the line is, even inside a scalar ([OAR-DOC-31]). A line beginning
// "---#" it reads as a separator and a comment, the YAML parser as text of the document,
// since a comment needs a space before its # ([OAR-DOC-1]). A separator line whose
// comment holds a line break the YAML parser sees and kubectl's reader does not (a
// carriage return alone, NEL, LS, PS) hides text from one of them: kubectl drops the
// line after a document and hands it whole to the parser before one ([OAR-DOC-31]); so
// does one whose "---" is followed by white space the parser reads as text (a no-break
// space, a form feed).
func checkMarkerLines(data []byte) error {
	pos := 0
	for line := range bytes.Lines(data) {
		if rest, ok := bytes.CutPrefix(line, []byte("---")); ok {
			if err := checkMarkerLine(data, pos, line, rest); err != nil {
				return err
			}
		}
		pos += len(line)
	}
	return nil
}

// checkMarkerLine is checkMarkerLines for one line beginning "---", at offset pos of
// data, whose rest follows the "---".
func checkMarkerLine(data []byte, pos int, line, rest []byte) error {
	body := bytes.TrimSuffix(bytes.TrimSuffix(rest, []byte("\n")), []byte("\r"))
	at := func(i int) (rune, int) { // the character at offset i of body, and its offset in data
		r, _ := utf8.DecodeRune(body[i:])
		return r, pos + len("---") + i
	}
	lineNo, shown := lineBreaks(data[:pos])+1, quoteStart(bytes.TrimRight(line, "\r\n"))
	if after := bytes.TrimSpace(body); len(after) > 0 && after[0] != '#' {
		return refuseFile("OAR-DOC-31", fmt.Errorf("line %d of the file, %s, begins with \"---\" and then more than white space or a comment, which kubectl refuses (\"invalid Yaml document separator\"): it takes every line beginning with \"---\" for a document separator, wherever the line is; put a document on the line after a \"---\" alone, and quote text that would begin a line with \"---\"", lineNo, shown))
	}
	if i := hiddenLineBreak(body); i >= 0 {
		r, off := at(i)
		return refuseFile("OAR-DOC-31", fmt.Errorf("line %d of the file, %s, is a document separator for kubectl, which hands the YAML parser the line whole or drops it, but %U at offset %d ends its comment for the parser, which reads what follows as text, so the file has no single reading; end every line with a line feed", lineNo, shown, r, off))
	}
	if i := otherBlank(body); i >= 0 {
		r, off := at(i)
		return refuseFile("OAR-DOC-31", fmt.Errorf("line %d of the file, %s, is a document separator for kubectl, which trims %U at offset %d as white space, but not for the YAML parser, for which it is text, so the file has no single reading; follow \"---\" with spaces or tabs only", lineNo, shown, r, off))
	}
	if len(body) > 0 && body[0] == '#' {
		return refuseFile("OAR-DOC-1", fmt.Errorf("unexpected \"---#\" at offset %d: kubectl's split takes the line for a separator and a comment, the YAML parser for text of the document (a comment needs a space before its #), so the file has no single reading; write \"--- #\"", pos))
	}
	return nil
}

// hiddenLineBreak returns the offset in body, the part of a separator line between its
// "---" and its line end, of the first line break the YAML parser sees and kubectl's
// reader does not (a carriage return, NEL, LS, PS), or -1.
func hiddenLineBreak(body []byte) int {
	for i := range body {
		if lineBreakLen(body[i:]) > 0 {
			return i
		}
	}
	return -1
}

// otherBlank returns the offset in body, the part of a separator line between its
// "---" and its line end, of the first character before any comment that is neither a
// space nor a tab (white space to strings.TrimSpace, as the only kind checkMarkerLine
// lets through there, but text to the YAML parser: a no-break space, a form feed), or -1.
func otherBlank(body []byte) int {
	for i, c := range body {
		switch c {
		case ' ', '\t':
		case '#':
			return -1
		default:
			return i
		}
	}
	return -1
}

// quoteStart quotes b, or its first 40 bytes and an ellipsis when it is longer, for an
// error that shows where a line goes wrong without repeating all of it.
func quoteStart(b []byte) string {
	const most = 40
	if len(b) <= most {
		return strconv.Quote(string(b))
	}
	cut := most
	for cut > 0 && !utf8.RuneStart(b[cut]) {
		cut--
	}
	return strconv.Quote(string(b[:cut])) + "…"
}

// droppedDocument returns, for one part of a split stream, the offset of the first
// marker line after content that carries more than its marker ("... # end", or "---"
// after a carriage return, which ends a line for the parser but not for kubectl's
// split; a line feed before "--- {a: 1}" makes a line checkMarkerLines has refused)
// when the YAML parser finds a second document in the part, which it would drop; -1
// otherwise. In a part kubectl reads after a separator it kept (opened), that
// separator began the first document, so the first marker line of doc begins a
// second one. The parser is asked only when there is such a line, which a stream
// whose markers stand alone on their lines never has.
func droppedDocument(doc []byte, opened bool) int {
	off := markerLineAfterContent(doc, opened)
	if off < 0 {
		return -1
	}
	read := doc
	if opened {
		read = append([]byte("---\n"), doc...)
	}
	if !holdsMoreThanOneDocument(read) {
		return -1
	}
	return off
}

// markerLineAfterContent returns the offset of the first line of doc that begins with
// "---" or "..." followed by white space or a line break and comes after a line with
// content, or after the start of doc when a separator line precedes it (opened); -1
// when there is none. Lines end as the YAML parser ends them: at a line feed, a
// carriage return and line feed, or a carriage return alone.
func markerLineAfterContent(doc []byte, opened bool) int {
	content := opened
	for pos := 0; pos < len(doc); {
		end := pos
		for end < len(doc) && doc[end] != '\n' && doc[end] != '\r' {
			end++
		}
		line := doc[pos:end]
		if end < len(doc) && doc[end] == '\r' && end+1 < len(doc) && doc[end+1] == '\n' {
			end++
		}
		if content && isDocumentMarker(doc[pos:min(end+1, len(doc))]) {
			return pos
		}
		content = content || hasYAMLContent(line)
		pos = end + 1
	}
	return -1
}

// isDocumentMarker reports whether line (with its line break, if any) begins with a
// marker the parser reads as one: "---" or "..." followed by white space or a line
// break.
func isDocumentMarker(line []byte) bool {
	return len(line) > 3 && (bytes.HasPrefix(line, []byte("---")) || bytes.HasPrefix(line, []byte("..."))) &&
		bytes.IndexByte([]byte(" \t\r\n"), line[3]) >= 0
}

// holdsMoreThanOneDocument reports whether the YAML parser reads a first document of
// doc and then a document that is not empty, or something it refuses.
func holdsMoreThanOneDocument(doc []byte) bool {
	dec := yamlv2.NewDecoder(bytes.NewReader(doc))
	var v any
	if dec.Decode(&v) != nil {
		// DecodeYAML reports what is wrong with the first document.
		return false
	}
	for {
		var next any
		switch err := dec.Decode(&next); {
		case err == io.EOF:
			return false
		case err != nil || next != nil:
			return true
		}
	}
}

// trailingAfterFlow returns, for a document whose content is a flow node (a JSON
// document, or YAML in flow style), the offset of the first byte after that node that
// is neither white space nor a comment; -1 when there is none, or when the document
// is not a flow node (the parser then judges it).
func trailingAfterFlow(doc []byte) int {
	i := skipSpaceAndComments(doc, 0)
	if i >= len(doc) || doc[i] != '{' && doc[i] != '[' {
		return -1
	}
	depth := 0
	var prev byte // the last byte outside quotes that is not white space
	for ; i < len(doc); i++ {
		c := doc[i]
		switch {
		case c == '#' && isYAMLSpace(doc[i-1]):
			for i < len(doc) && lineBreakLen(doc[i:]) == 0 {
				i++
			}
			continue
		case (c == '"' || c == '\'') && strings.IndexByte("{[,:", prev) >= 0:
			// A quote opens a quoted scalar only where a scalar starts; inside a plain
			// scalar (it's) it is text.
			if i = skipQuoted(doc, i); i < 0 {
				return -1
			}
		case c == '{' || c == '[':
			depth++
		case c == '}' || c == ']':
			depth--
			if depth == 0 {
				if j := skipSpaceAndComments(doc, i+1); j < len(doc) {
					return j
				}
				return -1
			}
		}
		if !isYAMLSpace(c) {
			prev = c
		}
	}
	return -1
}

// skipQuoted returns the offset of the quote closing the scalar opened at i, or -1.
func skipQuoted(doc []byte, i int) int {
	q := doc[i]
	for i++; i < len(doc); i++ {
		switch {
		case q == '"' && doc[i] == '\\':
			i++
		case doc[i] == q && q == '\'' && i+1 < len(doc) && doc[i+1] == '\'':
			i++
		case doc[i] == q:
			return i
		}
	}
	return -1
}

// skipSpaceAndComments returns the offset of the first byte from i on that is neither
// white space nor inside a comment (a # at the start or after white space).
func skipSpaceAndComments(doc []byte, i int) int {
	for i < len(doc) {
		switch {
		case isYAMLSpace(doc[i]):
			i++
		case lineBreakLen(doc[i:]) > 0:
			i += lineBreakLen(doc[i:])
		case doc[i] == '#' && (i == 0 || isYAMLSpace(doc[i-1])):
			for i < len(doc) && lineBreakLen(doc[i:]) == 0 {
				i++
			}
		default:
			return i
		}
	}
	return i
}

// lineBreakLen returns the length of the line break b begins with as the YAML parser
// reads one, which ends a comment (a line feed, a carriage return, NEL, LS or PS), or 0.
func lineBreakLen(b []byte) int {
	switch {
	case b[0] == '\n' || b[0] == '\r':
		return 1
	case bytes.HasPrefix(b, []byte("\u0085")):
		return 2
	case bytes.HasPrefix(b, []byte("\u2028")), bytes.HasPrefix(b, []byte("\u2029")):
		return 3
	}
	return 0
}

func isYAMLSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

// hasYAMLContent reports whether b holds more than white space and comments, as the
// YAML parser reads it: a comment ends at any line break it knows (a carriage return
// alone, NEL, LS and PS too), so text after one is content, which the parser reads and
// may refuse, as kubectl's does.
func hasYAMLContent(b []byte) bool {
	lines := strings.FieldsFunc(string(b), func(r rune) bool {
		return r == '\n' || r == '\r' || r == '\u0085' || r == '\u2028' || r == '\u2029'
	})
	for _, line := range lines {
		t := strings.Trim(line, " \t")
		if t != "" && !strings.HasPrefix(t, "#") {
			return true
		}
	}
	return false
}
