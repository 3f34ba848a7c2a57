package expr

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/oar-operator/oar-operator/internal/engine/codepoint"
	"github.com/oar-operator/oar-operator/internal/engine/diag"
)

// scanner splits a condition into the tokens of A.1 under the lexical rules of
// [OAR-EXPR-24]. It owns positions: every token it returns carries the code-point
// offset at which it starts, which is the offset every diagnostic reports.
type scanner struct {
	src string
	off int         // byte offset of the next unread character
	cp  int         // code-point offset of the next unread character
	err *diag.Error // the lexical error behind the last tokIllegal
}

// scan returns the next token, its code-point offset and its text: the name of an
// identifier, the digits of a number, or the decoded value of a string. On a lexical
// error it returns tokIllegal and leaves the diagnostic in s.err.
func (s *scanner) scan() (tok token, pos int, lit string) {
	s.skipSpace()
	pos = s.cp
	if s.off >= len(s.src) {
		return tokEOF, pos, ""
	}
	c := s.src[s.off]
	switch {
	case isNameStart(c):
		return s.scanIdentifier(pos)
	case isDigit(c):
		return s.scanNumber(pos)
	case c == '"' || c == '\'':
		return s.scanString(pos, c)
	}
	if tok, ok := s.scanOperator(pos, c); ok {
		return tok, pos, ""
	}
	r, size := codepoint.Decode(s.src[s.off:])
	if r == utf8.RuneError && size == 1 {
		return s.invalidUTF8()
	}
	return s.fail("OAR-EXPR-1", pos, "unexpected character %s at offset %d", quoteRune(r), pos)
}

// skipSpace consumes the whitespace between tokens: space, tab, CR and LF.
func (s *scanner) skipSpace() {
	for s.off < len(s.src) {
		switch s.src[s.off] {
		case ' ', '\t', '\r', '\n':
			s.advance(1)
		default:
			return
		}
	}
}

// advance consumes one character of size bytes.
func (s *scanner) advance(size int) {
	s.off += size
	s.cp++
}

// next returns the byte after the current one, or 0 at the end of the source.
func (s *scanner) next() byte {
	if s.off+1 < len(s.src) {
		return s.src[s.off+1]
	}
	return 0
}

// fail records a lexical error and returns tokIllegal.
func (s *scanner) fail(clause string, pos int, format string, args ...any) (token, int, string) {
	s.err = newError(s.src, clause, pos, format, args...)
	return tokIllegal, pos, ""
}

// invalidUTF8 rejects the byte at the current offset, which does not begin a valid
// UTF-8 sequence: a condition is a sequence of Unicode code points.
func (s *scanner) invalidUTF8() (token, int, string) {
	return s.fail("OAR-EXPR-1", s.cp, "invalid UTF-8 byte 0x%02x at offset %d: a condition is Unicode text", s.src[s.off], s.cp)
}

// scanIdentifier reads identifier = name { "." name } greedily, or a reserved word.
// A reserved first name is the reserved word itself; a dot that does not join two
// names is not part of the language, which has no field selection ([OAR-EXPR-2]). A
// reserved word after a dot is lexed as itself too, never as a name, so it ends the
// identifier's grammar there: acme.in is no identifier ([OAR-EXPR-24]).
func (s *scanner) scanIdentifier(pos int) (token, int, string) {
	start := s.off
	s.scanName()
	if kw, ok := keywords[s.src[start:s.off]]; ok {
		return kw, pos, s.src[start:s.off]
	}
	for s.off < len(s.src) && s.src[s.off] == '.' {
		if !isNameStart(s.next()) {
			return s.strayDot()
		}
		s.advance(1)
		segment, at := s.off, s.cp
		s.scanName()
		if _, reserved := keywords[s.src[segment:s.off]]; reserved {
			return s.fail("OAR-EXPR-24", at, "reserved word %q at offset %d after the dotted name %s: a reserved word is lexed as itself, never as a name, so no identifier has it as a segment", s.src[segment:s.off], at, s.src[start:segment-1])
		}
	}
	return tokIdent, pos, s.src[start:s.off]
}

// scanName reads name = ( letter | "_" ) { letter | digit | "_" }; the caller has
// seen the first character.
func (s *scanner) scanName() {
	s.advance(1)
	for s.off < len(s.src) && (isNameStart(s.src[s.off]) || isDigit(s.src[s.off])) {
		s.advance(1)
	}
}

// strayDot rejects a "." that does not join the names of a dotted identifier.
func (s *scanner) strayDot() (token, int, string) {
	return s.fail("OAR-EXPR-2", s.cp, "\".\" at offset %d does not join two names: there is no field selection, and a dotted identifier is one fact name written without spaces", s.cp)
}

// scanNumber reads int = digit { digit } or double = digit { digit } "." digit { digit }.
// The value is converted by the parser, which knows whether a unary minus precedes it.
func (s *scanner) scanNumber(pos int) (token, int, string) {
	start := s.off
	s.scanDigits()
	if s.off >= len(s.src) || s.src[s.off] != '.' {
		return tokInt, pos, s.src[start:s.off]
	}
	if !isDigit(s.next()) {
		return s.fail("OAR-EXPR-1", pos, "number %s. at offset %d has no digit after its \".\": a double literal is written digits \".\" digits", s.src[start:s.off], pos)
	}
	s.advance(1)
	s.scanDigits()
	return tokDouble, pos, s.src[start:s.off]
}

func (s *scanner) scanDigits() {
	for s.off < len(s.src) && isDigit(s.src[s.off]) {
		s.advance(1)
	}
}

// scanString reads a string literal delimited by quote and returns its decoded
// value. Escapes are exactly those of [OAR-EXPR-3]; a line break may not appear raw.
func (s *scanner) scanString(pos int, quote byte) (token, int, string) {
	s.advance(1)
	// Until the first escape the value is the source itself, which is returned without a
	// copy; from there on it is built in b.
	start, escaped := s.off, false
	var b strings.Builder
	for {
		if s.off >= len(s.src) {
			return s.fail("OAR-EXPR-1", pos, "string literal at offset %d is not terminated: no closing %c", pos, quote)
		}
		c := s.src[s.off]
		switch {
		case c == quote:
			value := s.src[start:s.off]
			if escaped {
				value = b.String()
			}
			s.advance(1)
			return tokString, pos, value
		case c == '\n' || c == '\r':
			return s.fail("OAR-EXPR-1", s.cp, "line break at offset %d inside the string literal at offset %d: write it as \\n or \\r", s.cp, pos)
		case c == '\\':
			if !escaped {
				b.WriteString(s.src[start:s.off])
				escaped = true
			}
			if !s.scanEscape(&b, pos) {
				return tokIllegal, pos, ""
			}
		case c < utf8.RuneSelf:
			if escaped {
				b.WriteByte(c)
			}
			s.advance(1)
		default:
			// A surrogate the document carried as a JSON escape is one code point.
			r, size := codepoint.Decode(s.src[s.off:])
			if r == utf8.RuneError && size == 1 {
				return s.invalidUTF8()
			}
			if escaped {
				b.WriteString(s.src[s.off : s.off+size])
			}
			s.advance(size)
		}
	}
}

// scanEscape reads one escape of [OAR-EXPR-3] inside the string literal at offset
// lit and appends its value to b. It reports false after recording an error.
func (s *scanner) scanEscape(b *strings.Builder, lit int) bool {
	at := s.cp
	s.advance(1)
	if s.off >= len(s.src) {
		s.fail("OAR-EXPR-1", lit, "string literal at offset %d is not terminated: the source ends after a backslash", lit)
		return false
	}
	switch c := s.src[s.off]; c {
	case '\\', '"', '\'':
		b.WriteByte(c)
	case 'n':
		b.WriteByte('\n')
	case 'r':
		b.WriteByte('\r')
	case 't':
		b.WriteByte('\t')
	case 'u':
		return s.scanUnicodeEscape(b, at)
	default:
		r, size := utf8.DecodeRuneInString(s.src[s.off:])
		if r == utf8.RuneError && size == 1 {
			s.invalidUTF8()
			return false
		}
		s.fail("OAR-EXPR-3", at, "escape \\%s at offset %d is not allowed: a string literal accepts only \\\\, \\\", \\', \\n, \\r, \\t and \\u with four hexadecimal digits", printable(r), at)
		return false
	}
	s.advance(1)
	return true
}

// scanUnicodeEscape reads the four hexadecimal digits of a \u escape that starts at
// offset at; the scanner is on the "u".
func (s *scanner) scanUnicodeEscape(b *strings.Builder, at int) bool {
	s.advance(1)
	var r rune
	for i := 0; i < 4; i++ {
		if s.off >= len(s.src) || hexValue(s.src[s.off]) < 0 {
			s.fail("OAR-EXPR-3", at, "escape \\u%s at offset %d needs exactly four hexadecimal digits", s.src[s.off-i:s.off], at)
			return false
		}
		r = r<<4 | rune(hexValue(s.src[s.off]))
		s.advance(1)
	}
	// Any four hex digits name a code point, a surrogate included ([OAR-FACT-23]);
	// adjacent escapes are never combined into one.
	var buf [4]byte
	b.Write(codepoint.Append(buf[:0], r))
	return true
}

// punctuation maps the one-character tokens to themselves, and any other byte to
// tokEOF (the zero token): an array, since the scanner looks up every operator.
var punctuation = [256]token{
	'(': tokLParen, ')': tokRParen, '[': tokLBrack, ']': tokRBrack, ',': tokComma,
	'?': tokQuestion, ':': tokColon, '+': tokAdd, '-': tokSub, '*': tokMul, '%': tokRem,
}

// doubledOperator is "==", "&&" or "||": its token and the operator's name, for the
// message that rejects the character alone.
type doubledOperator struct {
	tok  token
	name string
}

// doubled maps the first character of "==", "&&" and "||" to its operator; the zero
// value, whose name is "", for any other byte.
var doubled = [256]doubledOperator{
	'=': {tokEql, "equality"},
	'&': {tokLAnd, "logical and"},
	'|': {tokLOr, "logical or"},
}

// scanOperator reads an operator or punctuation token starting with the ASCII
// character c, and rejects by name the characters that begin a construct the
// language does not have: a comment, a single "=", "&" or "|", and a stray ".".
// It reports ok=false for any other character.
func (s *scanner) scanOperator(pos int, c byte) (tok token, ok bool) {
	if tok := punctuation[c]; tok != tokEOF {
		s.advance(1)
		return tok, true
	}
	if d := doubled[c]; d.name != "" {
		if s.next() != c {
			s.fail("OAR-EXPR-1", pos, "\"%c\" at offset %d is not an operator: %s is written %c%c", c, pos, d.name, c, c)
			return tokIllegal, true
		}
		s.advance(1)
		s.advance(1)
		return d.tok, true
	}
	switch c {
	case '!':
		return s.orEqual(tokNot, tokNeq), true
	case '<':
		return s.orEqual(tokLss, tokLeq), true
	case '>':
		return s.orEqual(tokGtr, tokGeq), true
	case '/':
		if n := s.next(); n == '/' || n == '*' {
			s.fail("OAR-EXPR-6", pos, "comment \"/%c\" at offset %d: a condition cannot contain a comment", n, pos)
			return tokIllegal, true
		}
		s.advance(1)
		return tokQuo, true
	case '#':
		s.fail("OAR-EXPR-6", pos, "comment \"#\" at offset %d: a condition cannot contain a comment", pos)
		return tokIllegal, true
	case '.':
		s.strayDot()
		return tokIllegal, true
	}
	return tokIllegal, false
}

// orEqual reads a one-character operator, or its two-character form with "=".
func (s *scanner) orEqual(alone, withEqual token) token {
	if s.next() == '=' {
		s.advance(1)
		s.advance(1)
		return withEqual
	}
	s.advance(1)
	return alone
}

func isNameStart(c byte) bool { return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || c == '_' }
func isDigit(c byte) bool     { return '0' <= c && c <= '9' }

// hexValue is the value of a hexadecimal digit, or -1.
func hexValue(c byte) int {
	switch {
	case '0' <= c && c <= '9':
		return int(c - '0')
	case 'a' <= c && c <= 'f':
		return int(c-'a') + 10
	case 'A' <= c && c <= 'F':
		return int(c-'A') + 10
	}
	return -1
}

// printable renders r for a message about an escape.
func printable(r rune) string {
	if q := quoteRune(r); q[0] == '\'' {
		return q[1 : len(q)-1]
	}
	return fmt.Sprintf("(%s)", quoteRune(r))
}
