package expr

import (
	"slices"
	"strings"
	"testing"

	"github.com/oar-operator/oar-operator/internal/engine/types"
)

func TestFACT3_UnknownIdentifiersAreRejected(t *testing.T) {
	runRejects(t, testOptions, []rejectCase{
		reject(`pth == "x"`, "OAR-FACT-3", 0, `unknown identifier "pth" at offset 0`),
		reject(`Tool == "x"`, "OAR-FACT-3", 0, `unknown identifier "Tool"`),
		reject("foo(1)", "OAR-FACT-3", 0, `unknown identifier "foo" at offset 0`),
		reject(`startsWith(tool, "a")`, "OAR-FACT-3", 0, `unknown identifier "startsWith"`),
		reject(`matches(tool, "a.*")`, "OAR-FACT-4", 0, "matches at offset 0 is a fact of type list<map>, not a function"),
		reject(`lower(tool) == "x"`, "OAR-FACT-3", 0, `unknown identifier "lower"`),
		// Independent unknown names are all reported, in source order.
		{src: `pth == "x" && flg || undefined(n)`, want: []want{
			{"OAR-FACT-3", 0, `unknown identifier "pth" at offset 0`},
			{"OAR-FACT-3", 14, `unknown identifier "flg" at offset 14`},
			{"OAR-FACT-3", 21, `unknown identifier "undefined" at offset 21`},
		}},
		// The arguments of an unknown function are still checked.
		{src: "nope(pth)", want: []want{
			{"OAR-FACT-3", 0, `"nope"`},
			{"OAR-FACT-3", 5, `"pth"`},
		}},
	})
	if _, errs := Compile("flag", Options{}); len(errs) != 1 || errs[0].Clause != "OAR-FACT-3" {
		t.Errorf("without a fact environment every name is unknown; got %v", errs)
	}
}

func TestEXPR7_NullIsAnUnknownIdentifier(t *testing.T) {
	runRejects(t, testOptions, []rejectCase{
		reject("tool == null", "OAR-FACT-3", 8, `unknown identifier "null" at offset 8: null has no meaning`),
		reject("null", "OAR-FACT-3", 0, "there is no null value"),
		reject("tool != nil", "OAR-FACT-3", 8, `unknown identifier "nil"`),
	})
}

func TestFACT4_ConditionMustBeBool(t *testing.T) {
	runRejects(t, testOptions, []rejectCase{
		reject("n", "OAR-FACT-4", 0, "condition at offset 0 has type int; a condition must be bool"),
		reject("  score * 2.0", "OAR-FACT-4", 2, "condition at offset 2 has type double; a condition must be bool"),
		reject("tool", "OAR-FACT-4", 0, "has type string; a condition must be bool"),
		reject("roles", "OAR-FACT-4", 0, "has type list<string>; a condition must be bool"),
		reject("labels", "OAR-FACT-4", 0, "has type map<string,string>"),
		reject("matches", "OAR-FACT-4", 0, "has type list<map>"),
		reject("tool_args", "OAR-FACT-4", 0, "has type map;"),
		reject(`["a"]`, "OAR-FACT-4", 0, "has type list<string>"),
		reject("size(roles)", "OAR-FACT-4", 0, "has type int"),
		reject("(flag ? 1 : 2)", "OAR-FACT-4", 0, "condition at offset 0 has type int"),
		reject(`tool_arg_string("path")`, "OAR-FACT-4", 0, "has type string"),
	})
}

func TestFACT4_FunctionsAndFactsAreDistinct(t *testing.T) {
	runRejects(t, testOptions, []rejectCase{
		reject(`tool_arg_string == "x"`, "OAR-FACT-4", 0, "tool_arg_string at offset 0 is an observation function (string) -> string and must be called"),
		reject(`tool("x") == "y"`, "OAR-FACT-4", 0, "tool at offset 0 is a fact of type string, not a function, and cannot be called"),
		reject("size == 1", "OAR-FACT-4", 0, "built-in function size at offset 0 is used without a call"),
		reject(`starts_with`, "OAR-FACT-4", 0, "built-in function starts_with"),
		reject(`tool_arg_string() == ""`, "OAR-FACT-4", 0, "tool_arg_string at offset 0 takes one argument (string), not 0"),
		reject(`tool_arg_string("a", "b") == ""`, "OAR-FACT-4", 0, "takes one argument (string), not 2"),
		reject(`tool_arg_string(1) == ""`, "OAR-FACT-4", 16, "argument 1 (int) of tool_arg_string at offset 16 has type int; tool_arg_string takes string"),
		reject("is_even(2.0)", "OAR-FACT-4", 8, "has type double; is_even takes int"),
		reject("is_even(n + 1.0)", "OAR-EXPR-9", 10, `operator "+" at offset 10`),
		reject(`path_outside_scope(roles)`, "OAR-FACT-4", 19, "roles (list<string>) of path_outside_scope"),
		reject(`moderation_score(tool + 1) > 0.5`, "OAR-EXPR-9", 22, `operator "+"`),
	})
	runEvals(t, []evalCase{
		{"is_even(n + 1)", true},
		{`tool_arg_int("count") == 3`, true},
		{`path_outside_scope(tool_arg_string("path"))`, true},
		{`!path_outside_scope("/work/src")`, true},
		{`moderation_score("hate") < 0.5`, true},
	})
}

func TestFACT27_FunctionSignaturesAreScalar(t *testing.T) {
	syms := symbolTable{
		"listy":   {Name: "listy", Func: true, Arg: types.ListString, Type: types.Bool, ID: 1},
		"bad_ref": {Name: "bad_ref", Func: true, Arg: types.String, Type: types.Bool, RuleRef: true, ID: 2},
		"untyped": {Name: "untyped", ID: 3},
	}
	runRejects(t, Options{Symbols: syms, MaxNodes: 256, ResolveRule: resolveRule}, []rejectCase{
		reject(`listy(["a"])`, "OAR-FACT-27", 0, "observation function listy at offset 0 is declared (list<string>) -> bool"),
		reject(`bad_ref("WRITE")`, "OAR-FACT-27", 0, "bad_ref at offset 0 is declared (string) -> bool"),
		reject("untyped", "OAR-FACT-22", 0, "fact untyped at offset 0 is declared without a valid type"),
	})
}

func TestEXPR8_LogicTakesBool(t *testing.T) {
	runEvals(t, []evalCase{
		{"flag && !other", true},
		{"flag ? other : true", false},
		{"other ? false : flag", true},
		{`(flag ? "a" : "b") == "a"`, true},
	})
	runRejects(t, testOptions, []rejectCase{
		reject("flag && n", "OAR-EXPR-8", 5, `operator "&&" at offset 5 takes two bool operands, not n (int)`),
		reject("tool || flag", "OAR-EXPR-8", 5, `operator "||" at offset 5 takes two bool operands, not tool (string)`),
		reject("!n", "OAR-EXPR-8", 0, `operator "!" at offset 0 takes a bool, not n (int)`),
		reject("!roles", "OAR-EXPR-8", 0, "not roles (list<string>)"),
		reject("(n ? flag : other)", "OAR-EXPR-8", 3, "the condition of the ternary at offset 3 must be bool, not n (int)"),
		reject("flag ? 1 : 2.0", "OAR-EXPR-8", 5, "the branches of the ternary at offset 5 have different types, int and double"),
		reject(`flag ? tool : roles`, "OAR-EXPR-8", 5, "string and list<string>"),
		reject(`size(flag ? labels : tool_args) > 0`, "OAR-EXPR-8", 10, "map<string,string> and map"),
		// Both sides of an operator are reported, and independent subtrees too.
		{src: "n && tool", want: []want{
			{"OAR-EXPR-8", 2, "not n (int)"},
			{"OAR-EXPR-8", 2, "not tool (string)"},
		}},
		{src: "(flag && n) || (other && tool)", want: []want{
			{"OAR-EXPR-8", 6, "not n (int)"},
			{"OAR-EXPR-8", 22, "not tool (string)"},
		}},
		// A bad operand is reported once; the operators above it stay quiet.
		reject("flag && !(pth > 1)", "OAR-FACT-3", 10, `"pth"`),
		reject("(flag ? pth : 1) == 1", "OAR-FACT-3", 8, `"pth"`),
	})
}

func TestEXPR9_ArithmeticOperandPairs(t *testing.T) {
	runEvals(t, []evalCase{
		{"n * 2 - 4 == 10", true},
		{"score * 2.0 == 1.5", true},
		{"score - 0.25 == 0.5", true},
		{"score / 3.0 == 0.25", true},
		{"-score < 0.0", true},
		{"-n == -7", true},
		{"n % 4 == 3", true},
		{`tool + "s" == "write_files"`, true},
		{`"" + "" == ""`, true},
		{`acme.tenant_tier + "-" + tool == "gold-write_file"`, true},
	})
	runRejects(t, testOptions, []rejectCase{
		reject("n + 1.5 > 0.0", "OAR-EXPR-9", 2, `operator "+" at offset 2 cannot take n (int) and 1.5 (double): it takes two ints, two doubles or two strings`),
		reject("score * 2 > 1.0", "OAR-EXPR-9", 6, "cannot take score (double) and 2 (int): it takes two ints or two doubles"),
		reject("score % 2.0 > 0.0", "OAR-EXPR-9", 6, `operator "%" at offset 6 cannot take score (double) and 2.0 (double): it takes two ints`),
		reject(`tool - "a" == ""`, "OAR-EXPR-9", 5, `operator "-" at offset 5 cannot take tool (string) and "a" (string)`),
		reject(`tool * 2 == ""`, "OAR-EXPR-9", 5, `operator "*"`),
		reject(`tool + 1 == ""`, "OAR-EXPR-9", 5, `operator "+"`),
		reject("flag + flag", "OAR-EXPR-9", 5, `operator "+"`),
		reject(`roles + roles == roles`, "OAR-EXPR-9", 6, `operator "+"`),
		reject(`-tool == ""`, "OAR-EXPR-9", 0, `unary "-" at offset 0 takes an int or a double, not tool (string)`),
		reject("-flag", "OAR-EXPR-9", 0, `unary "-" at offset 0`),
		reject(`n / "2" == 1`, "OAR-EXPR-9", 2, `operator "/"`),
	})
}

func TestEXPR10_OrderingOperandPairs(t *testing.T) {
	runEvals(t, []evalCase{
		{"n < 7.5", true},
		{"score > 0", true},
		{"7.0 <= n", true},
		{"n >= 8.0", false},
		{`"abc" < "abd"`, true},
		{`"B" < "a"`, true},
		{`"é" > "z"`, true},
		// Code-point order, not UTF-16 order: U+FFFF precedes U+1F600.
		{`"\uFFFF" < "😀"`, true},
		{`"" < "a"`, true},
		{`"ab" > "a"`, true},
		{`tool >= "write_file"`, true},
	})
	runRejects(t, testOptions, []rejectCase{
		reject("flag < other", "OAR-EXPR-10", 5, `operator "<" at offset 5 cannot compare flag (bool) with other (bool): it takes two numbers or two strings`),
		reject("tool < 1", "OAR-EXPR-10", 5, "cannot compare tool (string) with 1 (int)"),
		reject("roles <= roles", "OAR-EXPR-10", 6, `operator "<="`),
		reject(`labels > "a"`, "OAR-EXPR-10", 7, `operator ">"`),
	})
}

func TestEXPR11_EqualityOperandPairs(t *testing.T) {
	runEvals(t, []evalCase{
		{"n == 7.0", true},
		{"7.0 == n", true},
		{"n != 7.5", true},
		{"flag == true", true},
		{"flag != other", true},
		{`tool != "x"`, true},
		{"score == 0.75", true},
		// The int is promoted to double, so these compare as binary64 values.
		{"9007199254740993 == 9007199254740992.0", true},
	})
	runRejects(t, testOptions, []rejectCase{
		reject("tool == 1", "OAR-EXPR-11", 5, `operator "==" at offset 5 cannot compare tool (string) with 1 (int): it takes two operands of the same type, or an int and a double`),
		reject("flag == 1", "OAR-EXPR-11", 5, "cannot compare flag (bool) with 1 (int)"),
		reject(`flag != "true"`, "OAR-EXPR-11", 5, `operator "!="`),
		reject(`roles == "admin"`, "OAR-EXPR-11", 6, "cannot compare roles (list<string>) with \"admin\" (string)"),
		reject(`"path" == tool_args`, "OAR-EXPR-11", 7, "tool_args (map)"),
	})
}

func TestEXPR21_AggregatesAreNotCompared(t *testing.T) {
	runRejects(t, testOptions, []rejectCase{
		reject("roles == roles", "OAR-EXPR-21", 6, `operator "==" at offset 6 cannot compare roles (list<string>) with roles (list<string>): lists and maps cannot be compared`),
		reject("labels != labels", "OAR-EXPR-21", 7, `operator "!="`),
		reject("tool_args == tool_args", "OAR-EXPR-21", 10, "lists and maps cannot be compared"),
		reject("matches[0] == matches[1]", "OAR-EXPR-21", 11, "cannot compare an operand of type map with an operand of type map"),
		reject(`roles == ["admin", "dev"]`, "OAR-EXPR-21", 6, "a list literal (list<string>)"),
		reject("tool_args == labels", "OAR-EXPR-21", 10, "lists and maps cannot be compared"),
		reject("matches == roles", "OAR-EXPR-21", 8, "lists and maps"),
	})
}

func TestEXPR12_InOperandPairs(t *testing.T) {
	runEvals(t, []evalCase{
		{`"admin" in roles`, true},
		{`"root" in roles`, false},
		{`"path" in tool_args`, true},
		{`"nope" in tool_args`, false},
		{`"env" in labels`, true},
		{`"prod" in labels`, false},
		{`tool in ["read_file", "write_file"]`, true},
		{`tool in [tool_arg_string("mode"), "x"]`, false},
		{`"r" in [tool_arg_string("mode"), "x"]`, true},
		{`"kind" in matches[0]`, true},
		{`"" in [""]`, true},
	})
	runRejects(t, testOptions, []rejectCase{
		reject("1 in roles", "OAR-EXPR-12", 2, `operator "in" at offset 2 cannot test 1 (int) against roles (list<string>): it tests a string against a list<string> or a map`),
		reject(`"a" in tool`, "OAR-EXPR-12", 4, "against tool (string)"),
		reject(`"a" in matches`, "OAR-EXPR-12", 4, "against matches (list<map>)"),
		reject("roles in roles", "OAR-EXPR-12", 6, `operator "in"`),
		reject(`flag in labels`, "OAR-EXPR-12", 5, "cannot test flag (bool)"),
	})
}

func TestEXPR13_IndexOperandPairs(t *testing.T) {
	runEvals(t, []evalCase{
		{`labels["env"] == "prod"`, true},
		{`roles[1] == "dev"`, true},
		{`roles[n - 7] == "admin"`, true},
		{`"kind" in matches[1]`, true},
		{`["a", "b"][1] == "b"`, true},
		{`size([matches[1]][0]) == 2`, true},
	})
	runRejects(t, testOptions, []rejectCase{
		reject(`roles["a"] == ""`, "OAR-EXPR-13", 5, `index at offset 5: a list<string> is indexed by an int, not by "a" (string)`),
		reject(`roles[1.0] == ""`, "OAR-EXPR-13", 5, "not by 1.0 (double)"),
		reject(`labels[0] == ""`, "OAR-EXPR-13", 6, "index at offset 6: a map<string,string> is indexed by a string, not by 0 (int)"),
		reject(`"k" in matches["a"]`, "OAR-EXPR-13", 14, "a list<map> is indexed by an int"),
		reject(`tool[0] == "w"`, "OAR-EXPR-13", 4, "tool (string) cannot be indexed at offset 4: only a map<string,string>, a list<string> or a list<map> can"),
		reject("n[0] == 1", "OAR-EXPR-13", 1, "n (int) cannot be indexed"),
		reject(`roles[0][0] == "a"`, "OAR-EXPR-13", 8, "an operand of type string cannot be indexed at offset 8"),
	})
}

func TestEXPR19_MapIsNotIndexable(t *testing.T) {
	runEvals(t, []evalCase{
		{`"path" in tool_args && tool_arg_string("path") == "/etc/passwd"`, true},
		{"size(tool_args) == 3", true},
	})
	runRejects(t, testOptions, []rejectCase{
		reject(`tool_args["path"] == "/etc"`, "OAR-EXPR-19", 9, "tool_args (map) cannot be indexed at offset 9: a map is not indexable; test a key with in, count with size(), or read a member through a typed observation function"),
		reject(`matches[0]["kind"] == "x"`, "OAR-EXPR-19", 10, "an operand of type map cannot be indexed at offset 10"),
		reject(`tool_args[0] == "x"`, "OAR-EXPR-19", 9, "a map is not indexable"),
	})
}

func TestEXPR16_FourBuiltins(t *testing.T) {
	runEvals(t, []evalCase{
		{"size(tool) == 10", true},
		{`size("héllo") == 5`, true},
		{`size("😀") == 1`, true},
		{`size("") == 0`, true},
		{"size(roles) == 2", true},
		{"size(labels) == 2", true},
		{"size(matches) == 2", true},
		{"size(tool_args) == 3", true},
		{`size(["a", "b", "c"]) == 3`, true},
		{`starts_with(tool, "write")`, true},
		{`ends_with(tool, "_file")`, true},
		{`contains(tool, "te_f")`, true},
	})
	runRejects(t, testOptions, []rejectCase{
		reject("size(n) == 1", "OAR-EXPR-16", 0, "size at offset 0 cannot take n (int): it takes a string, a list or a map"),
		reject("size(flag) == 1", "OAR-EXPR-16", 0, "cannot take flag (bool)"),
		reject("size(score) == 1", "OAR-EXPR-16", 0, "cannot take score (double)"),
		reject("size(tool, tool) == 1", "OAR-EXPR-16", 0, "size at offset 0 takes one argument, not 2"),
		reject("size() == 0", "OAR-EXPR-16", 0, "takes one argument, not 0"),
		reject("starts_with(tool)", "OAR-EXPR-16", 0, "starts_with at offset 0 takes two string arguments, not 1"),
		reject(`ends_with(tool, "a", "b")`, "OAR-EXPR-16", 0, "ends_with at offset 0 takes two string arguments, not 3"),
		reject("starts_with(tool, 1)", "OAR-EXPR-16", 0, "starts_with at offset 0 takes two strings, and its argument 1 (int) is not one"),
		reject(`contains(roles, "admin")`, "OAR-EXPR-16", 0, "its argument roles (list<string>) is not one"),
		reject(`size(tool) == "10"`, "OAR-EXPR-11", 11, "size(…) (int)"),
		reject(`starts_with(tool, "w") + 1 == 2`, "OAR-EXPR-9", 23, "starts_with(…) (bool)"),
		reject(`size(pth) > 0`, "OAR-FACT-3", 5, `"pth"`),
	})
}

// shadowing declares the built-in names as facts, which an engine never does;
// the built-ins still win.
type shadowing struct{ symbolTable }

func (s shadowing) Lookup(name string) (types.Symbol, bool) {
	if _, ok := builtins[name]; ok {
		return types.Symbol{Name: name, Type: types.Bool, ID: idFlag}, true
	}
	return s.symbolTable.Lookup(name)
}

func TestEXPR16_BuiltinsResolveBeforeFacts(t *testing.T) {
	p, errs := Compile(`size(roles) == 2 && contains(tool, "write")`, Options{Symbols: shadowing{testSymbols}, MaxNodes: 256})
	if p == nil {
		t.Fatalf("Compile: %v", errs)
	}
	if got, err := p.Eval(newEnv()); !got || err != nil {
		t.Errorf("Eval = %v, %v; want true", got, err)
	}
	runRejects(t, Options{Symbols: shadowing{testSymbols}, MaxNodes: 256}, []rejectCase{
		reject("size", "OAR-FACT-4", 0, "built-in function size at offset 0 is used without a call"),
	})
}

func TestFIRE11_RuleCounterArguments(t *testing.T) {
	runEvals(t, []evalCase{
		{`fire_count_of("WRITE") == 1`, true},
		{`fire_count_of("acme.security/READ") == 4`, true},
		{`breaker_count_of("WRITE") == 10`, true},
		{`fire_count_of(("WRITE")) == 1`, true},
		{`fire_count_of('WRITE') + fire_count > 2`, true},
	})
	runRejects(t, testOptions, []rejectCase{
		reject("fire_count_of(tool) > 0", "OAR-FIRE-11", 14, "the argument of fire_count_of at offset 14 must be a string literal naming a rule"),
		reject(`fire_count_of("WRI" + "TE") > 0`, "OAR-FIRE-11", 14, "must be a string literal"),
		reject(`fire_count_of(flag ? "WRITE" : "READ") > 0`, "OAR-FIRE-11", 14, "must be a string literal"),
		reject("breaker_count_of(1) > 0", "OAR-FIRE-11", 17, "the argument of breaker_count_of at offset 17"),
		reject(`fire_count_of("NOPE") > 0`, "OAR-FIRE-11", 14, `fire_count_of("NOPE") at offset 14 names no loaded rule`),
		reject(`fire_count_of("") > 0`, "OAR-FIRE-11", 14, `fire_count_of("") at offset 14 names no loaded rule`),
		reject(`fire_count_of() > 0`, "OAR-FACT-4", 0, "fire_count_of at offset 0 takes one argument (string), not 0"),
		reject(`fire_count_of("WRITE", "READ") > 0`, "OAR-FACT-4", 0, "not 2"),
		reject(`fire_count_of(pth) > 0`, "OAR-FACT-3", 14, `"pth"`),
		reject(`fire_count_of("WRITE")`, "OAR-FACT-4", 0, "has type int"),
	})
	runRejects(t, Options{Symbols: testSymbols, MaxNodes: 256}, []rejectCase{
		reject(`fire_count_of("WRITE") > 0`, "OAR-FIRE-11", 14, "names no loaded rule"),
	})
}

func TestFACT11_RefsListsReferencedSymbolsOnce(t *testing.T) {
	p := mustCompile(t, `tool == "x" && starts_with(tool_arg_string("path"), "/") && "path" in tool_args && tool != "y" || fire_count_of("WRITE") > 1 || acme.tenant_tier == "gold" && size(roles) > fire_count_of("WRITE") && tool_arg_string("mode") == "r"`)
	var names []string
	for _, s := range p.Refs() {
		names = append(names, s.Name)
	}
	want := []string{"tool", "tool_arg_string", "tool_args", "fire_count_of", "acme.tenant_tier", "roles"}
	if !slices.Equal(names, want) {
		t.Errorf("Refs = %v; want %v", names, want)
	}
	if r := p.Refs(); r[0] != testSymbols["tool"] || r[1] != testSymbols["tool_arg_string"] {
		t.Errorf("Refs carries the symbols themselves; got %+v", r[:2])
	}
	p.Refs()[0].Name = "changed"
	if p.Refs()[0].Name != "tool" {
		t.Error("Refs must return a copy")
	}
	if refs := mustCompile(t, `size("abc") == 3 && true`).Refs(); len(refs) != 0 {
		t.Errorf("built-ins and literals reference no symbol; got %v", refs)
	}
}

// An unknown name suggests the one declared name available at its place that is close
// ([OAR-FACT-3], [OAR-FIRE-11]): a fact for a name, a function or built-in for a call, a
// loaded rule for a rule-counter argument; and nothing when none is close.
func TestFACT3_UnknownNamesSuggestTheCloseDeclaredOne(t *testing.T) {
	for _, c := range []struct {
		name, src, clause, suggestion string
	}{
		{"FACT-3 fact misspelt", `tol == "x"`, "OAR-FACT-3", "tool"},
		{"FACT-3 fact in the wrong case", `Tool == "x"`, "OAR-FACT-3", "tool"},
		{"FACT-3 function misspelt", `pth_outside_scope("read")`, "OAR-FACT-3", "path_outside_scope"},
		{"FACT-3 built-in misspelt", `startsWith(tool, "a")`, "OAR-FACT-3", "starts_with"},
		{"FACT-3 host fact misspelt", `acme.tenant_tir == "gold"`, "OAR-FACT-3", "acme.tenant_tier"},
		{"FIRE-11 rule misspelt", `fire_count_of("WRTIE") > 0`, "OAR-FIRE-11", "WRITE"},
		{"FIRE-11 qualified rule misspelt", `fire_count_of("acme.security/REDA") > 0`, "OAR-FIRE-11", "acme.security/READ"},

		{"FACT-3 nothing close", `undefined == "x"`, "OAR-FACT-3", ""},
		{"FACT-3 a call suggests no fact", `tol("x")`, "OAR-FACT-3", ""},
		{"FACT-3 a name suggests no function", `pth_outside_scope == true`, "OAR-FACT-3", ""},
		{"FACT-3 null is explained, not corrected", `tool == null`, "OAR-FACT-3", ""},
		{"FACT-3 dotted name with nothing close", `tool_args.path == "/etc"`, "OAR-FACT-3", ""},
		{"FIRE-11 no rule close", `fire_count_of("NOPE") > 0`, "OAR-FIRE-11", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, errs := Compile(c.src, testOptions)
			if len(errs) != 1 || errs[0].Clause != c.clause {
				t.Fatalf("Compile(%q) = %v; want one %s error", c.src, errs, c.clause)
			}
			e := errs[0]
			if e.Suggestion != c.suggestion {
				t.Errorf("Suggestion = %q; want %q (message %q)", e.Suggestion, c.suggestion, e.Message)
			}
			hint := `did you mean "` + c.suggestion + `"?`
			if has := strings.Contains(e.Message, "did you mean"); has != (c.suggestion != "") || c.suggestion != "" && !strings.HasSuffix(e.Message, hint) {
				t.Errorf("message %q; want it to end in %q only when there is a suggestion", e.Message, hint)
			}
		})
	}
	if _, errs := Compile("tol", Options{Symbols: struct{ types.Symbols }{testSymbols}, MaxNodes: 256}); len(errs) != 1 || errs[0].Suggestion != "" {
		t.Errorf("an environment that cannot list its names suggests nothing; got %v", errs)
	}
}
