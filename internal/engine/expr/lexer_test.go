package expr

import (
	"slices"
	"testing"
)

// scanAll returns the tokens of src up to the end or the first lexical error.
func scanAll(src string) ([]token, []string) {
	s := scanner{src: src}
	var toks []token
	var lits []string
	for {
		tok, _, lit := s.scan()
		if tok == tokEOF || tok == tokIllegal {
			return append(toks, tok), lits
		}
		toks = append(toks, tok)
		lits = append(lits, lit)
	}
}

func TestEXPR24_NamesAreLexedGreedily(t *testing.T) {
	for _, c := range []struct {
		src  string
		toks []token
		lits []string
	}{
		{"international", []token{tokIdent, tokEOF}, []string{"international"}},
		{"insize", []token{tokIdent, tokEOF}, []string{"insize"}},
		{"a in b", []token{tokIdent, tokIn, tokIdent, tokEOF}, []string{"a", "in", "b"}},
		{"a inb", []token{tokIdent, tokIdent, tokEOF}, []string{"a", "inb"}},
		{`"a"in b`, []token{tokString, tokIn, tokIdent, tokEOF}, []string{"a", "in", "b"}},
		{"true false in", []token{tokTrue, tokFalse, tokIn, tokEOF}, []string{"true", "false", "in"}},
		{"truex falsey in_", []token{tokIdent, tokIdent, tokIdent, tokEOF}, []string{"truex", "falsey", "in_"}},
		{"_x1 x_1", []token{tokIdent, tokIdent, tokEOF}, []string{"_x1", "x_1"}},
		{"acme.tenant_tier", []token{tokIdent, tokEOF}, []string{"acme.tenant_tier"}},
		{"acme.in", []token{tokIllegal}, []string{}},
		{"acme.in_x acme.inx a.b.c", []token{tokIdent, tokIdent, tokIdent, tokEOF}, []string{"acme.in_x", "acme.inx", "a.b.c"}},
		{"a.b.c_1", []token{tokIdent, tokEOF}, []string{"a.b.c_1"}},
		{"12 1.5 007 0.0", []token{tokInt, tokDouble, tokInt, tokDouble, tokEOF}, []string{"12", "1.5", "007", "0.0"}},
		{"1in", []token{tokInt, tokIn, tokEOF}, []string{"1", "in"}},
		{"!= ! == <= < >= > && || + - * / % ( ) [ ] , ? :", []token{
			tokNeq, tokNot, tokEql, tokLeq, tokLss, tokGeq, tokGtr, tokLAnd, tokLOr, tokAdd, tokSub, tokMul, tokQuo, tokRem,
			tokLParen, tokRParen, tokLBrack, tokRBrack, tokComma, tokQuestion, tokColon, tokEOF}, nil},
		{" \t\r\nflag\n", []token{tokIdent, tokEOF}, []string{"flag"}},
		{"n--1", []token{tokIdent, tokSub, tokSub, tokInt, tokEOF}, []string{"n", "", "", "1"}},
	} {
		toks, lits := scanAll(c.src)
		if !slices.Equal(toks, c.toks) || c.lits != nil && !slices.Equal(lits, c.lits) {
			t.Errorf("scan(%q) = %v %q; want %v %q", c.src, toks, lits, c.toks, c.lits)
		}
	}
}

func TestEXPR24_ReservedWordsAndWhitespace(t *testing.T) {
	runEvals(t, []evalCase{
		{`"admin" in roles`, true},
		{`"admin"in roles`, true},
		{`tool in["write_file"]`, true},
		{"\ttool\r\n==\n'write_file' ", true},
		{"true", true},
		{"false", false},
	})
	runRejects(t, testOptions, []rejectCase{
		reject("international", "OAR-FACT-3", 0, `unknown identifier "international" at offset 0`),
		reject("insize > 1", "OAR-FACT-3", 0, `unknown identifier "insize"`),
		reject(`"admin" inroles`, "OAR-EXPR-1", 8, `unexpected identifier "inroles" at offset 8`),
		reject("in", "OAR-EXPR-1", 0, `unexpected reserved word "in" at offset 0`),
		reject("in == 1", "OAR-EXPR-1", 0, "in is a reserved word"),
		reject("tool == in", "OAR-EXPR-1", 8, `reserved word "in" at offset 8`),
		reject("true false", "OAR-EXPR-1", 5, `unexpected reserved word "false" at offset 5`),
		reject("true.x", "OAR-EXPR-2", 4, `"." at offset 4`),
		reject("in.x", "OAR-EXPR-1", 0, `unexpected reserved word "in" at offset 0`),
		reject(`"a" in.x`, "OAR-EXPR-2", 6, `"." at offset 6`),
		reject("acme.in", "OAR-EXPR-24", 5, `reserved word "in" at offset 5 after the dotted name acme`),
		reject("a.b.true.c == 1", "OAR-EXPR-24", 4, `reserved word "true" at offset 4 after the dotted name a.b`),
		reject(`"x" in acme.false`, "OAR-EXPR-24", 12, `reserved word "false" at offset 12`),
		reject("acme.inx", "OAR-FACT-3", 0, `unknown identifier "acme.inx"`),
		reject("flag\u00a0&& other", "OAR-EXPR-1", 4, "unexpected character U+00A0 at offset 4"),
		reject("flag\f&& other", "OAR-EXPR-1", 4, "unexpected character U+000C at offset 4"),
		reject("flag\v", "OAR-EXPR-1", 4, "unexpected character U+000B at offset 4"),
	})
}

func TestEXPR2_DottedIdentifierIsOneName(t *testing.T) {
	runEvals(t, []evalCase{
		{`acme.tenant_tier == "gold"`, true},
		{`size(acme.tenant_tier) == 4`, true},
	})
	runRejects(t, testOptions, []rejectCase{
		reject(`acme. tenant_tier == "gold"`, "OAR-EXPR-2", 4, `"." at offset 4 does not join two names`),
		reject(`acme .tenant_tier == "gold"`, "OAR-EXPR-2", 5, "there is no field selection"),
		reject(`tool_args.path == "/etc"`, "OAR-FACT-3", 0, `unknown identifier "tool_args.path" at offset 0: a dotted name is the single name`),
		reject(`acme.tenant_tier.x == ""`, "OAR-FACT-3", 0, `unknown identifier "acme.tenant_tier.x"`),
		reject(`tool.startsWith("w")`, "OAR-FACT-3", 0, "there is no field selection"),
		reject("a..b", "OAR-EXPR-2", 1, `"." at offset 1`),
		reject("acme.1x", "OAR-EXPR-2", 4, `"." at offset 4`),
		reject("acme.", "OAR-EXPR-2", 4, `"." at offset 4`),
		reject(`(tool).x == ""`, "OAR-EXPR-2", 6, `"." at offset 6`),
		reject(`labels["env"].x == ""`, "OAR-EXPR-2", 13, `"." at offset 13`),
		reject(".5 > 0.0", "OAR-EXPR-2", 0, `"." at offset 0`),
	})
}

func TestEXPR3_StringEscapes(t *testing.T) {
	runEvals(t, []evalCase{
		{`"a\\b" == 'a\\b'`, true},
		{`size("a\\b") == 3`, true},
		{`"\"" == '"'`, true},
		{`'\'' == "'"`, true},
		{`"\n\r\t" == "\u000a\u000D\u0009"`, true},
		{`"\u00e9" == "é"`, true},
		{`"\u00E9" == "\u00e9"`, true},
		{`"\u12345" == "\u1234" + "5"`, true},
		{`size("\u0000") == 1`, true},
		{`'say "hi"' == "say \"hi\""`, true},
		{`"//" + "/*" + "#" == "///*#"`, true},
	})
	runRejects(t, testOptions, []rejectCase{
		reject(`"\q" == ""`, "OAR-EXPR-3", 1, `escape \q at offset 1 is not allowed`),
		reject(`"\x41" == "A"`, "OAR-EXPR-3", 1, `escape \x at offset 1`),
		reject(`"\U00000041" == "A"`, "OAR-EXPR-3", 1, `escape \U at offset 1`),
		reject(`"\0" == ""`, "OAR-EXPR-3", 1, `escape \0`),
		reject(`"\/" == "/"`, "OAR-EXPR-3", 1, `escape \/`),
		reject(`"\a" == ""`, "OAR-EXPR-3", 1, `escape \a`),
		reject(`"é\q" == ""`, "OAR-EXPR-3", 2, `escape \q at offset 2`),
		reject(`"\é" == ""`, "OAR-EXPR-3", 1, `escape \é at offset 1`),
		reject(`"\u12" == ""`, "OAR-EXPR-3", 1, `escape \u12 at offset 1 needs exactly four hexadecimal digits`),
		reject(`"\u12g4" == ""`, "OAR-EXPR-3", 1, "needs exactly four hexadecimal digits"),
		reject(`"\u"`, "OAR-EXPR-3", 1, "needs exactly four hexadecimal digits"),
		reject(`"\u{41}" == "A"`, "OAR-EXPR-3", 1, "needs exactly four hexadecimal digits"),
	})
}

// TestFACT23_StringIsCodePoints: a \u escape names any code point, a surrogate
// included, and two escapes are never combined ([OAR-EXPR-3], [OAR-FACT-23]). A
// surrogate reaches a condition's source only from a document's JSON escape, in the
// generalized form of package codepoint, and is then the same code point.
func TestFACT23_StringIsCodePoints(t *testing.T) {
	runRejects(t, testOptions, []rejectCase{
		reject("tool == \"\xff\"", "OAR-EXPR-1", 9, "invalid UTF-8 byte 0xff at offset 9"),
		reject("\xc3 == 1", "OAR-EXPR-1", 0, "invalid UTF-8 byte 0xc3 at offset 0"),
		reject("\"\xed\xa0\" == \"\"", "OAR-EXPR-1", 1, "invalid UTF-8 byte 0xed at offset 1"),
		reject("\"\xed\xa0\x80\" == 1 + \"", "OAR-EXPR-1", 11, "offset 11"),
		reject("tool == \xed\xa0\x80", "OAR-EXPR-1", 8, "unexpected character U+D800 at offset 8"),
	})
	runEvals(t, []evalCase{
		{`"\uD7FF" < "\uE000"`, true},
		{`"\uFFFF" == "￿"`, true},
		{`"\uD800" == "\ud800"`, true},
		{`"\uD800" != "\uFFFD" && "\uD800" != "\uDC00" && "\uD800" != ""`, true},
		{`size("\uD83D\uDE00") == 2 && "\uD83D\uDE00" != "😀" && size("😀") == 1`, true},
		{`!contains("😀", "\uD83D") && contains("\uD83D\uDE00", "\uDE00")`, true},
		{"\"\xed\xa0\x80\" == \"\\ud800\" && size(\"a\xed\xa0\x80b\") == 3", true},
	})
}

func TestEXPR1_StringLiteralsAreOneLine(t *testing.T) {
	runRejects(t, testOptions, []rejectCase{
		reject(`"abc`, "OAR-EXPR-1", 0, `string literal at offset 0 is not terminated: no closing "`),
		reject(`tool == 'abc"`, "OAR-EXPR-1", 8, `string literal at offset 8 is not terminated: no closing '`),
		reject(`"ab\`, "OAR-EXPR-1", 0, "the source ends after a backslash"),
		reject("\"a\nb\" == tool", "OAR-EXPR-1", 2, "line break at offset 2 inside the string literal at offset 0"),
		reject("'a\rb' == tool", "OAR-EXPR-1", 2, "line break at offset 2"),
	})
}

func TestEXPR6_CommentsAreRejected(t *testing.T) {
	runRejects(t, testOptions, []rejectCase{
		reject("flag // always", "OAR-EXPR-6", 5, `comment "//" at offset 5`),
		reject("flag /* always */", "OAR-EXPR-6", 5, `comment "/*" at offset 5`),
		reject("flag # always", "OAR-EXPR-6", 5, `comment "#" at offset 5`),
		reject("#flag", "OAR-EXPR-6", 0, `comment "#" at offset 0`),
		reject("n//2 > 1", "OAR-EXPR-6", 1, `comment "//" at offset 1`),
		reject("flag\n// trailing", "OAR-EXPR-6", 5, "a condition cannot contain a comment"),
	})
	runEvals(t, []evalCase{
		{`tool != "// not a comment # either"`, true},
		{"n / 7 == 1", true},
	})
}

func TestEXPR1_StrayCharactersAreNamed(t *testing.T) {
	runRejects(t, testOptions, []rejectCase{
		reject("n = 7", "OAR-EXPR-1", 2, `"=" at offset 2 is not an operator: equality is written ==`),
		reject("flag & other", "OAR-EXPR-1", 5, `"&" at offset 5 is not an operator: logical and is written &&`),
		reject("flag | other", "OAR-EXPR-1", 5, `"|" at offset 5 is not an operator: logical or is written ||`),
		reject("n @ 1", "OAR-EXPR-1", 2, `unexpected character '@' at offset 2`),
		reject("flag;", "OAR-EXPR-1", 4, `unexpected character ';' at offset 4`),
		reject("$flag", "OAR-EXPR-1", 0, `unexpected character '$'`),
		reject("`flag`", "OAR-EXPR-1", 0, "unexpected character '`'"),
		reject("{}", "OAR-EXPR-1", 0, `unexpected character '{'`),
		reject("n ≥ 1", "OAR-EXPR-1", 2, `unexpected character '≥' at offset 2`),
		reject(`"héllo" == tool @`, "OAR-EXPR-1", 16, "at offset 16"),
		reject("é == 1", "OAR-EXPR-1", 0, `unexpected character 'é' at offset 0`),
		reject("flag\x00", "OAR-EXPR-1", 4, "unexpected character U+0000 at offset 4"),
		reject("1. > 0", "OAR-EXPR-1", 0, "number 1. at offset 0 has no digit after its"),
		reject("n > 12.e5", "OAR-EXPR-1", 4, "number 12. at offset 4 has no digit after its"),
	})
}
