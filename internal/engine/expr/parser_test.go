package expr

import (
	"strings"
	"testing"
)

func TestEXPR1_GrammarRejectsWhatItCannotDerive(t *testing.T) {
	runRejects(t, testOptions, []rejectCase{
		reject("", "OAR-EXPR-1", 0, "empty condition at offset 0"),
		reject(" \n\t", "OAR-EXPR-1", 3, "empty condition at offset 3"),
		reject("flag other", "OAR-EXPR-1", 5, `unexpected identifier "other" at offset 5; expected an operator or the end of the condition`),
		reject("(flag", "OAR-EXPR-1", 5, `expected ")" at offset 5 to close the "(" at offset 0, found end of condition`),
		reject("flag)", "OAR-EXPR-1", 4, `unexpected ")" at offset 4`),
		reject("size(roles == 2", "OAR-EXPR-1", 15, `expected ")" at offset 15 to close the "(" at offset 4`),
		reject(`roles[0 "x"] == ""`, "OAR-EXPR-1", 8, `expected "]" at offset 8 to close the "[" at offset 5, found string literal "x"`),
		reject(`tool in ["a", ]`, "OAR-EXPR-1", 14, `unexpected "]" at offset 14; expected an operand`),
		reject(`tool in ["a" "b"]`, "OAR-EXPR-1", 13, `expected "]" at offset 13 to close the "[" at offset 8, found string literal "b"`),
		reject("size(,) == 0", "OAR-EXPR-1", 5, `unexpected "," at offset 5; expected an operand`),
		reject(`starts_with(tool "a")`, "OAR-EXPR-1", 17, `expected ")" at offset 17 to close the "(" at offset 11`),
		reject("flag ? other", "OAR-EXPR-1", 12, `expected ":" at offset 12 to complete the "?" at offset 5, found end of condition`),
		reject("flag ? other : ", "OAR-EXPR-1", 15, "unexpected end of condition at offset 15; expected an operand"),
		reject("flag ?: other", "OAR-EXPR-1", 6, `unexpected ":" at offset 6`),
		reject("flag : other", "OAR-EXPR-1", 5, `unexpected ":" at offset 5`),
		reject("+n > 0", "OAR-EXPR-1", 0, `unexpected "+" at offset 0; expected an operand`),
		reject("n > 1e5", "OAR-EXPR-1", 5, `unexpected identifier "e5" at offset 5`),
		reject(`roles[] == ""`, "OAR-EXPR-1", 6, `unexpected "]" at offset 6`),
		reject("size(roles)(1)", "OAR-EXPR-1", 11, `unexpected "(" at offset 11`),
		reject("(size)(roles) == 2", "OAR-EXPR-1", 6, `unexpected "(" at offset 6`),
		reject(`tool[0:1] == "w"`, "OAR-EXPR-1", 6, `expected "]" at offset 6 to close the "[" at offset 4, found ":"`),
		reject("flag &&", "OAR-EXPR-1", 7, "unexpected end of condition at offset 7; expected an operand"),
		reject("&& flag", "OAR-EXPR-1", 0, `unexpected "&&" at offset 0`),
		reject("()", "OAR-EXPR-1", 1, `unexpected ")" at offset 1; expected an operand`),
		reject(`"a" "b"`, "OAR-EXPR-1", 4, `unexpected string literal "b" at offset 4`),
		reject("n 7", "OAR-EXPR-1", 2, "unexpected number 7 at offset 2"),
	})
}

func TestEXPR1_UnaryTakesAtMostOnePrefix(t *testing.T) {
	runRejects(t, testOptions, []rejectCase{
		reject("!!flag", "OAR-EXPR-1", 1, `"!" at offset 1 follows the unary "!" at offset 0: a unary operation takes at most one prefix operator`),
		reject("--1 < 0", "OAR-EXPR-1", 1, `"-" at offset 1 follows the unary "-" at offset 0`),
		reject("-!flag", "OAR-EXPR-1", 1, `"!" at offset 1 follows the unary "-"`),
		reject("!-1", "OAR-EXPR-1", 1, `"-" at offset 1 follows the unary "!"`),
		reject("- -1 < 0", "OAR-EXPR-1", 2, `"-" at offset 2 follows the unary "-" at offset 0`),
		reject("flag && !!other", "OAR-EXPR-1", 9, `"!" at offset 9 follows the unary "!" at offset 8`),
	})
	runEvals(t, []evalCase{
		{"!(!flag)", true},
		{"-(-n) == 7", true},
		{"n - -1 == 8", true},
		{"n--1 == 8", true},
		{"n*-1 == -7", true},
		{"!flag == false", true},
	})
}

func TestEXPR4_RelationAdmitsOneOperator(t *testing.T) {
	runRejects(t, testOptions, []rejectCase{
		reject("n < 8 < 9", "OAR-EXPR-4", 6, `relational operator "<" at offset 6 follows the "<" at offset 2: a relation admits at most one relational operator`),
		reject("n == 7 == true", "OAR-EXPR-4", 7, `relational operator "==" at offset 7 follows the "==" at offset 2`),
		reject("n < 8 == true", "OAR-EXPR-4", 6, `"==" at offset 6 follows the "<" at offset 2`),
		reject("n != 1 >= 2", "OAR-EXPR-4", 7, `">=" at offset 7`),
		reject(`"a" in roles in roles`, "OAR-EXPR-4", 13, `relational operator "in" at offset 13 follows the "in" at offset 4`),
		reject("n < 8 == (true)", "OAR-EXPR-4", 6, "at most one relational operator"),
		reject("flag && n < 8 < 9", "OAR-EXPR-4", 14, "at offset 14"),
	})
	runEvals(t, []evalCase{
		{"(n < 8) == true", true},
		{"n < 8 && 8 < 9", true},
		{"true == (n < 8)", true},
	})
}

func TestEXPR4_PrecedenceAndAssociativity(t *testing.T) {
	runEvals(t, []evalCase{
		{"n + 1 * 2 == 9", true},
		{"(n + 1) * 2 == 16", true},
		{"n - 3 - 2 == 2", true},
		{"n / 2 * 2 == 6", true},
		{"n % 4 * 2 == 6", true},
		{"100 / 10 / 5 == 2", true},
		{"flag || other && false", true},
		{"other && flag || true", true},
		{"(flag ? other ? 1 : 2 : 3) == 2", true},
		{"(other ? 1 : flag ? 2 : 3) == 2", true},
		{`("admin" in roles) == true`, true},
		{`"a" + "dmin" in roles`, true},
		{"-n + 10 == 3", true},
		{`roles[0] + roles[1] == "admindev"`, true},
		{"1 + 2 < 4 && 5 > 4", true},
	})
	runRejects(t, testOptions, []rejectCase{
		// The ternary binds loosest: this is flag ? n : (0 == 7).
		reject("flag ? n : 0 == 7", "OAR-EXPR-8", 5, "the branches of the ternary at offset 5 have different types, int and bool"),
		// The ternary is right-associative: flag ? other : (flag ? 1 : 2), whose
		// outer branches differ; grouped to the left it would be an int condition.
		reject("flag ? other : flag ? 1 : 2", "OAR-EXPR-8", 5, "the branches of the ternary at offset 5 have different types, bool and int"),
		// Index binds tighter than unary minus.
		reject("-roles[0] == 1", "OAR-EXPR-9", 0, `unary "-" at offset 0 takes an int or a double`),
		reject(`!labels["env"]`, "OAR-EXPR-8", 0, `operator "!" at offset 0 takes a bool`),
	})
}

func TestEXPR20_NodeCount(t *testing.T) {
	for _, c := range []struct {
		src   string
		nodes int
	}{
		{"flag", 1},
		{"(flag)", 1},
		{"((((flag))))", 1},
		{"!flag", 2},
		{"-9223372036854775808 < n", 4},
		{"-(n) == -7", 5},
		{"size(roles) > 0", 4},
		{`tool in ["a", "b"]`, 5},
		{`labels["env"] == "prod"`, 5},
		{"flag ? other : true", 4},
		{`starts_with(tool, "w")`, 3},
		{`fire_count_of("WRITE") > 1`, 4},
		{"size(matches[0]) == 2", 6},
		{"flag && other || flag", 5},
		{`(flag ? roles : ["x"])[0] == "admin"`, 9},
	} {
		if got := mustCompile(t, c.src).Nodes(); got != c.nodes {
			t.Errorf("Nodes(%q) = %d; want %d", c.src, got, c.nodes)
		}
	}
}

// conjunction256 is a condition of exactly 256 nodes: 127 facts and 126 && make
// 253, and "&& !flag" adds 3.
func conjunction256() string {
	return strings.Repeat("flag && ", 126) + "flag && !flag"
}

func TestEXPR17_NodeLimit(t *testing.T) {
	src := conjunction256()
	p, errs := Compile(src, Options{Symbols: testSymbols, MaxNodes: 256})
	if p == nil || p.Nodes() != 256 {
		t.Fatalf("a 256-node condition must load at the floor of [OAR-EXPR-17]: %v", errs)
	}
	runRejects(t, Options{Symbols: testSymbols, MaxNodes: 255}, []rejectCase{
		reject(src, "OAR-EXPR-17", 0, "condition at offset 0 has 256 nodes, more than the limit of 255"),
	})
	runRejects(t, Options{Symbols: testSymbols, MaxNodes: 4}, []rejectCase{
		reject("  n + 1 > 2", "OAR-EXPR-17", 2, "condition at offset 2 has 5 nodes, more than the limit of 4"),
		// The limit and an independent type error are both reported.
		{src: "pth + 1 > 2", want: []want{
			{"OAR-EXPR-17", 0, "has 5 nodes"},
			{"OAR-FACT-3", 0, `unknown identifier "pth"`},
		}},
	})
	if _, errs := Compile("n + 1 > 2", Options{Symbols: testSymbols, MaxNodes: 5}); len(errs) != 0 {
		t.Errorf("a condition at the limit must load: %v", errs)
	}
}

func TestEXPR17_CeilingBoundsEveryCondition(t *testing.T) {
	// Without a declared limit the ceiling applies, and a condition over it is not
	// even type-checked.
	long := strings.Repeat("pth + ", MaxNodesCeiling/2) + "1 > 0"
	runRejects(t, Options{Symbols: testSymbols}, []rejectCase{
		reject(long, "OAR-EXPR-17", 0, "more than the limit of 65536"),
	})
	runRejects(t, Options{Symbols: testSymbols, MaxNodes: 1 << 30}, []rejectCase{
		reject(long, "OAR-EXPR-17", 0, "more than the limit of 65536"),
	})
	// A condition just under the ceiling compiles and evaluates; its tree is as
	// deep as it is long.
	deep := strings.Repeat("other || ", MaxNodesCeiling/2-1) + "flag"
	p, errs := Compile(deep, Options{Symbols: testSymbols})
	if p == nil {
		t.Fatalf("Compile: %v", errs)
	}
	if got, err := p.Eval(newEnv()); !got || err != nil {
		t.Errorf("Eval = %v, %v; want true", got, err)
	}
}

// TestEXPR17_NestingIsBoundedByTheNodeLimit: every level of nesting but a pair of
// parentheses is a node ([OAR-EXPR-20]), so a condition within the node limit loads
// however deeply its nodes nest ([OAR-EXPR-17]); the parser refuses nesting deeper than
// the larger of 1000 levels and the limit, which within the limit only parentheses
// reach, so that no input can exhaust its stack.
func TestEXPR17_NestingIsBoundedByTheNodeLimit(t *testing.T) {
	nest := func(open, close string, n int) string {
		return strings.Repeat(open, n) + "flag" + strings.Repeat(close, n)
	}
	wide := testOptions
	wide.MaxNodes = 4096
	for _, c := range []struct {
		src  string
		opts Options
	}{
		{nest("(", ")", minNesting-1), testOptions},
		{nest("!(", ")", minNesting+1), wide},
		{strings.Repeat("other ? other : ", minNesting+1) + "flag", wide},
		{nest("(", ")", 4095), wide},
	} {
		if _, errs := Compile(c.src, c.opts); len(errs) != 0 {
			t.Errorf("%s under a limit of %d nodes must load: %v", clip(c.src), c.opts.MaxNodes, errs)
		}
	}
	runRejects(t, testOptions, []rejectCase{
		reject(nest("(", ")", minNesting), "OAR-EXPR-17", minNesting, "condition nests more than 1000 levels deep at offset 1000"),
		reject(nest("(", ")", 200000), "OAR-EXPR-17", minNesting, "nests more than 1000 levels"),
		reject(nest("[", "]", 5000), "OAR-EXPR-17", minNesting, "nests more than 1000 levels"),
		reject(nest("size(", ")", 5000), "OAR-EXPR-17", 5*minNesting, "nests more than 1000 levels"),
		reject(nest("flag ? other : ", "", 5000), "OAR-EXPR-17", 15*(minNesting-1)+len("flag ? "), "nests more than 1000 levels"),
		reject(nest("roles[", "]", 5000), "OAR-EXPR-17", 6*minNesting, "nests more than 1000 levels"),
	})
	runRejects(t, wide, []rejectCase{
		reject(nest("(", ")", 4096), "OAR-EXPR-17", 4096, "condition nests more than 4096 levels deep at offset 4096"),
	})
}

func TestEXPR21_IntegerLiterals(t *testing.T) {
	runEvals(t, []evalCase{
		{"9223372036854775807 == big", true},
		{"-9223372036854775808 == small", true},
		{"- 9223372036854775808 == small", true},
		{"-9223372036854775808 < 0", true},
		{"n > -9223372036854775808", true},
		{"0009 == 9", true},
		{"00 == 0", true},
	})
	runRejects(t, testOptions, []rejectCase{
		reject("9223372036854775808 > 0", "OAR-EXPR-21", 0, "integer literal 9223372036854775808 at offset 0 does not fit in 64 bits"),
		reject("-(9223372036854775808) < 0", "OAR-EXPR-21", 2, "integer literal 9223372036854775808 at offset 2 does not fit"),
		reject("1 - 9223372036854775808 < 0", "OAR-EXPR-21", 4, "at offset 4 does not fit"),
		reject("99999999999999999999 > 0", "OAR-EXPR-21", 0, "integer literal 99999999999999999999 at offset 0"),
		reject("n > -99999999999999999999", "OAR-EXPR-21", 5, "at offset 5 does not fit"),
		reject("-9223372036854775809 < 0", "OAR-EXPR-21", 1, "at offset 1 does not fit"),
		{src: "-9223372036854775808[0] == 1", want: []want{
			{"OAR-EXPR-21", 1, "here it is indexed"},
			{"OAR-EXPR-13", 20, "9223372036854775808 (int) cannot be indexed at offset 20"},
		}},
		// Independent literal errors are all reported.
		{src: "99999999999999999999 > 99999999999999999998", want: []want{
			{"OAR-EXPR-21", 0, "at offset 0"},
			{"OAR-EXPR-21", 23, "at offset 23"},
		}},
	})
}

func TestEXPR21_DoubleLiterals(t *testing.T) {
	maxDouble := "179769313486231570814527423731704356798070567525844996598917476803157260780028538760589558632766878171540458953514382464234321326889464182768467546703537516986049910576551282076245490090389328944075868508455133942304583236903222948165808559332123348274797826204144723168738177180919299881250404026184124858368.0"
	runEvals(t, []evalCase{
		{"1.5 > 1.0", true},
		{"00.50 == 0.5", true},
		{"0.1 + 0.2 != 0.3", true},
		{maxDouble + " == huge", true},
		{"0." + strings.Repeat("0", 400) + "1 == 0.0", true},
	})
	runRejects(t, testOptions, []rejectCase{
		reject("1"+strings.Repeat("0", 400)+".0 > 0.0", "OAR-EXPR-21", 0, "at offset 0 is too large: its nearest binary64 value is not finite"),
		reject("score < 179769313486231580793728971405303415079934132710037826936173778980444968292764750946649017977587207096330286416692887910946555547851940402630657488671505820681908902000708383676273854845817711531764475730270069855571366959622842914819860834936475292719074168444365510704342711559699508093042880177904174497792.0", "OAR-EXPR-21", 8, "is not finite"),
	})
}

func TestEXPR21_ListLiterals(t *testing.T) {
	runEvals(t, []evalCase{
		{`tool in ["read_file", "write_file"]`, true},
		{`size(["a", "b", "c"]) == 3`, true},
		{`size([matches[0], matches[1]]) == 2`, true},
		{`"kind" in [matches[1]][0]`, true},
	})
	runRejects(t, testOptions, []rejectCase{
		reject("[]", "OAR-EXPR-21", 0, "empty list literal [] at offset 0: its type cannot be inferred"),
		reject("size([]) == 0", "OAR-EXPR-21", 5, "empty list literal [] at offset 5"),
		reject(`tool in []`, "OAR-EXPR-21", 8, "empty list literal"),
		reject("tool in [1, 2]", "OAR-EXPR-21", 8, "list literal at offset 8 has a member of type int at offset 9"),
		reject(`tool in ["a", 1]`, "OAR-EXPR-21", 8, "list literal at offset 8 mixes string (offset 9) and int (offset 14)"),
		reject(`size(["a", matches[0]]) == 2`, "OAR-EXPR-21", 5, "mixes string (offset 6) and map (offset 18)"),
		reject("size([flag, other]) == 2", "OAR-EXPR-21", 5, "has a member of type bool"),
		reject("size([labels]) == 1", "OAR-EXPR-21", 5, "has a member of type map<string,string>"),
		reject("size([roles]) == 1", "OAR-EXPR-21", 5, "has a member of type list<string>"),
		reject("size([[\"a\"]]) == 1", "OAR-EXPR-21", 5, "has a member of type list<string>"),
		// A member's own error is reported once, not again for the list.
		reject(`tool in ["a", pth]`, "OAR-FACT-3", 14, `unknown identifier "pth"`),
	})
}
