package expr

import (
	"errors"
	"slices"
	"testing"

	"github.com/oar-operator/oar-operator/internal/engine/types"
)

func TestEXPR5_LogicShortCircuits(t *testing.T) {
	// broken and slow fail whenever they are evaluated.
	runEvals(t, []evalCase{
		{"other && broken", false},
		{"flag || broken", true},
		{`other && slow("x")`, false},
		{`flag || slow("x")`, true},
		{"flag ? other : broken", false},
		{"other ? broken : flag", true},
		{`size(roles) > 2 && roles[2] == "x"`, false},
		{`"mode" in labels && labels["mode"] == "r"`, false},
		{"zero == 0 || n / zero > 1", true},
	})
	for _, src := range []string{"flag && broken", "broken || flag", `other || slow("x")`, "(flag ? broken : other) || flag"} {
		if _, err := mustCompile(t, src).Eval(newEnv()); err != errProvider {
			t.Errorf("Eval(%q) error = %v; want the provider's error", src, err)
		}
	}
	env := &recordingEnv{fakeEnv: newEnv()}
	if _, err := mustCompile(t, `other && tool == "x" && is_even(n)`).Eval(env); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(env.touched, []int{idOther}) {
		t.Errorf("touched %v; the right operand of && must not be evaluated", env.touched)
	}
}

func TestEvalOrderIsLeftToRight(t *testing.T) {
	env := &recordingEnv{fakeEnv: newEnv()}
	if _, err := mustCompile(t, `(n + size(tool) > 0) == (score < 1.0) && is_even(n)`).Eval(env); err != nil {
		t.Fatal(err)
	}
	if want := []int{idN, idTool, idScore, idN, idIsEven}; !slices.Equal(env.touched, want) {
		t.Errorf("touched %v; want %v", env.touched, want)
	}
}

// failingCounters fails every rule-counter read.
type failingCounters struct{ *fakeEnv }

func (failingCounters) RuleCounter(int, int) (int64, error) { return 0, errProvider }

func TestOPS3_EnvironmentErrorsPassThrough(t *testing.T) {
	for _, src := range []string{"broken", "!broken", `slow("x")`, `size(tool) > 0 && slow(tool)`, `"a" in [tool, tool_arg_string("x")] || broken`} {
		got, err := mustCompile(t, src).Eval(newEnv())
		if err != errProvider || got {
			t.Errorf("Eval(%q) = %v, %v; want false and the provider's error itself", src, got, err)
		}
	}
	if _, err := mustCompile(t, `fire_count_of("WRITE") > 0`).Eval(failingCounters{newEnv()}); err != errProvider {
		t.Errorf("RuleCounter error = %v; want the provider's error itself", err)
	}
}

func TestFACT26_WrongRuntimeTypeIsAProviderFailure(t *testing.T) {
	env := newEnv()
	env.facts[idN] = types.StringValue("7")
	env.facts[idRoles] = types.Value{}
	for _, src := range []string{"n > 1", `"a" in roles`} {
		_, err := mustCompile(t, src).Eval(env)
		var te *types.TypeError
		var re *RaiseError
		if !errors.As(err, &te) || errors.As(err, &re) {
			t.Errorf("Eval(%q) error = %v; want a *types.TypeError and no raise", src, err)
		}
	}
	// An observation function declared (string) -> int that returns a string.
	syms := symbolTable{"tool_arg_int": {Name: "tool_arg_int", Func: true, Arg: types.String, Type: types.Int, ID: idToolArgString}}
	p, errs := Compile(`tool_arg_int("path") > 0`, Options{Symbols: syms, MaxNodes: 256})
	if p == nil {
		t.Fatal(errs)
	}
	var te *types.TypeError
	if _, err := p.Eval(newEnv()); !errors.As(err, &te) || te.Want != types.Int {
		t.Errorf("error = %v; want a *types.TypeError wanting int", err)
	}
}

func TestEXPR15_IntegerOverflowRaises(t *testing.T) {
	runRaises(t, []raiseCase{
		{"big + 1 > 0", "OAR-EXPR-15", 4, "integer overflow in 9223372036854775807 + 1 at offset 4"},
		{"small - 1 < 0", "OAR-EXPR-15", 6, "integer overflow in -9223372036854775808 - 1"},
		{"big - small > 0", "OAR-EXPR-15", 4, "integer overflow"},
		{"big * 2 > 0", "OAR-EXPR-15", 4, "integer overflow in 9223372036854775807 * 2"},
		{"small * -1 > 0", "OAR-EXPR-15", 6, "integer overflow"},
		{"-1 * small > 0", "OAR-EXPR-15", 3, "integer overflow"},
		{"3037000500 * 3037000500 > 0", "OAR-EXPR-15", 11, "integer overflow"},
		{"-small > 0", "OAR-EXPR-15", 0, "integer overflow in -(-9223372036854775808)"},
		{"small / -1 > 0", "OAR-EXPR-15", 6, "integer overflow in -9223372036854775808 / -1"},
		{"-9223372036854775808 - 1 < 0", "OAR-EXPR-15", 21, "integer overflow"},
	})
	runEvals(t, []evalCase{
		{"small % -1 == 0", true},
		{"big + 0 == big", true},
		{"small + big == -1", true},
		{"3037000499 * 3037000499 == 9223372030926249001", true},
		{"-big - 1 == small", true},
		{"small / 1 == small", true},
		{"small * 1 == small", true},
		{"-4611686018427387904 * 2 == small", true},
	})
}

func TestEXPR14_DivisionByZeroAndNonFiniteRaise(t *testing.T) {
	runRaises(t, []raiseCase{
		{"n / zero > 0", "OAR-EXPR-14", 2, "division by zero in 7 / 0 at offset 2"},
		{"n % zero == 0", "OAR-EXPR-14", 2, "modulo by zero in 7 % 0"},
		{"1 / 0 > 0", "OAR-EXPR-14", 2, "division by zero"},
		{"score / 0.0 > 0.0", "OAR-EXPR-14", 6, "division by zero in 0.75 / 0.0"},
		{"score / -0.0 > 0.0", "OAR-EXPR-14", 6, "division by zero"},
		{"0.0 / 0.0 > 0.0", "OAR-EXPR-14", 4, "division by zero"},
		{"huge * 2.0 > 0.0", "OAR-EXPR-14", 5, "is not a finite double"},
		{"huge + huge > 0.0", "OAR-EXPR-14", 5, "is not a finite double"},
		{"-huge - huge < 0.0", "OAR-EXPR-14", 6, "is not a finite double"},
		{"huge / 0.5 > 0.0", "OAR-EXPR-14", 5, "is not a finite double"},
	})
	runEvals(t, []evalCase{
		{"huge * 1.0 == huge", true},
		{"huge / 2.0 * 2.0 == huge", true},
		{"0.0 / 1.0 == 0.0", true},
	})
}

func TestEXPR21_IntegerDivisionTruncatesTowardZero(t *testing.T) {
	runEvals(t, []evalCase{
		{"-7 / 2 == -3", true},
		{"-7 % 2 == -1", true},
		{"7 / -2 == -3", true},
		{"7 % -2 == 1", true},
		{"-7 / -2 == 3", true},
		{"-7 % -2 == -1", true},
		{"7 / 2 == 3", true},
		{"0 / -5 == 0", true},
	})
}

func TestEXPR13_IndexRaises(t *testing.T) {
	runRaises(t, []raiseCase{
		{`roles[2] == ""`, "OAR-EXPR-13", 5, "list index 2 is out of range for a list of 2 members at offset 5"},
		{`roles[-1] == ""`, "OAR-EXPR-13", 5, "negative list index -1"},
		{`roles[small] == ""`, "OAR-EXPR-13", 5, "negative list index"},
		{`labels["nope"] == ""`, "OAR-EXPR-13", 6, `key "nope" is absent from the map<string,string> at offset 6`},
		{`"k" in matches[5]`, "OAR-EXPR-13", 14, "list index 5 is out of range"},
		{`["a", "b"][2] == "a"`, "OAR-EXPR-13", 10, "list index 2 is out of range for a list of 2 members"},
		{`[tool, tool][-1] == "a"`, "OAR-EXPR-13", 12, "negative list index -1"},
		// Every member of a list literal is evaluated, so a raising member raises.
		{`[tool, roles[9]][0] == tool`, "OAR-EXPR-13", 12, "list index 9"},
		{`size([roles[9]]) == 1`, "OAR-EXPR-13", 11, "list index 9"},
		{`tool in [tool, roles[9]]`, "OAR-EXPR-13", 20, "list index 9"},
		{`size([matches[0], matches[7]]) == 2`, "OAR-EXPR-13", 25, "list index 7"},
	})
	runEvals(t, []evalCase{
		{`["a", tool][1] == "write_file"`, true},
		{`[tool_arg_string("mode"), tool][0] == "r"`, true},
		{`"score" in [matches[0], matches[1]][1]`, true},
	})
}

func TestEXPR22_StringBuiltinsCompareCodePoints(t *testing.T) {
	runEvals(t, []evalCase{
		{`starts_with(tool, "")`, true},
		{`ends_with("", "")`, true},
		{`contains("", "")`, true},
		{`contains(empty, "")`, true},
		{`starts_with("", "a")`, false},
		{`starts_with(tool, "Write")`, false},
		{`contains("straße", "SS")`, false},
		{`contains("STRASSE", "ß")`, false},
		{`starts_with("\u00e9", "e")`, false},
		{`starts_with("e\u0301", "e")`, true},
		{`contains("a😀b", "😀")`, true},
		{`ends_with("a😀", "😀")`, true},
		{`ends_with(tool, "file")`, true},
		{`contains(tool, tool)`, true},
	})
}

func TestAggregateValuesFlowThroughTernaries(t *testing.T) {
	runEvals(t, []evalCase{
		{`(flag ? roles : ["x"])[0] == "admin"`, true},
		{`(other ? roles : ["x"])[0] == "x"`, true},
		{`"env" in (other ? labels : labels)`, true},
		{`(flag ? labels : labels)["team"] == "sec"`, true},
		{`size(flag ? tool_args : matches[0]) == 3`, true},
		{`"score" in (flag ? matches : [matches[0]])[1]`, true},
		{`(flag ? 1.5 : score) > 1.0`, true},
		{`(other ? "a" : tool) == "write_file"`, true},
		{`(flag ? n : 0) + 1 == 8`, true},
		{`(flag ? other : flag) == false`, true},
	})
}

func TestObservationFunctionsAndFacts(t *testing.T) {
	runEvals(t, []evalCase{
		{`path_outside_scope("/etc/x")`, true},
		{`tool_arg_string("path") == "/etc/passwd"`, true},
		{`tool_arg_string("nope") == ""`, true},
		{`tool_arg_int("count") == 3`, true},
		{`is_even(tool_arg_int("count") + 1)`, true},
		{"fire_count > 1", true},
		{`acme.tenant_tier == "gold"`, true},
		{`empty == ""`, true},
	})
}

// typical is a realistic condition of exactly 20 nodes.
const typical = `tool == "shell" && "cmd" in tool_args && starts_with(tool_arg_string("cmd"), "rm ") && n * 2 > 10 || flag`

func TestEvalAllocatesNothing(t *testing.T) {
	env := Env(newEnv())
	for _, src := range []string{
		typical,
		`tool in ["read_file", "write_file"] && size(roles) >= 1`,
		`tool in [tool_arg_string("mode"), acme.tenant_tier] || "dev" in roles`,
		`labels["env"] == "prod" && roles[1] != "x" && "kind" in matches[0]`,
		`(flag ? roles : [tool])[0] < "b" && size("héllo") == 5`,
		`n < 7.5 && score * 2.0 > 1.0 && -n % 4 == -3`,
		`fire_count_of("WRITE") + breaker_count_of("acme.security/READ") > 0`,
		`moderation_score("x") < 0.5 && is_even(n + 1) && !path_outside_scope("/work/a")`,
		`ends_with(tool, "file") && contains(tool, "te") && size(tool_args) == 3`,
	} {
		p := mustCompile(t, src)
		if ok, err := p.Eval(env); err != nil {
			t.Fatalf("Eval(%q): %v, %v", src, ok, err)
		}
		if allocs := testing.AllocsPerRun(200, func() { _, _ = p.Eval(env) }); allocs != 0 {
			t.Errorf("Eval(%q) allocates %v times per run; want 0", src, allocs)
		}
	}
}

func TestProgramIsSafeForConcurrentUse(t *testing.T) {
	p := mustCompile(t, typical)
	done := make(chan bool)
	for range 8 {
		go func() {
			ok := true
			for range 1000 {
				got, err := p.Eval(newEnv())
				ok = ok && err == nil && got
			}
			done <- ok
		}()
	}
	for range 8 {
		if !<-done {
			t.Error("concurrent Eval disagreed")
		}
	}
}

// slotEnv records the argument and slot of every function call.
type slotEnv struct {
	*fakeEnv
	calls []slotCall
}

type slotCall struct {
	id   int
	arg  types.Value
	slot int
}

func (e *slotEnv) Call(id int, arg types.Value, slot int) (types.Value, error) {
	e.calls = append(e.calls, slotCall{id, arg, slot})
	return e.fakeEnv.Call(id, arg, slot)
}

// TestCallSlotsNumberLiteralArguments: a call whose argument is a literal passes the slot
// Options.CallSlot gave its function and argument, the same in every condition compiled
// with it; a call with any other argument passes -1, as every call does without
// CallSlot. The argument passed is the one evaluated either way.
func TestCallSlotsNumberLiteralArguments(t *testing.T) {
	type key struct {
		fn  int
		arg types.Value
	}
	slots := map[key]int{}
	opts := testOptions
	opts.CallSlot = func(fn types.Symbol, arg types.Value) int {
		k := key{fn.ID, arg}
		if _, ok := slots[k]; !ok {
			slots[k] = len(slots)
		}
		return slots[k]
	}
	compile := func(src string, opts Options) *Program {
		t.Helper()
		p, errs := Compile(src, opts)
		if len(errs) > 0 {
			t.Fatalf("Compile(%q): %v", src, errs)
		}
		return p
	}
	path, two := types.StringValue("path"), types.IntValue(2)
	for _, tc := range []struct {
		src  string
		want []slotCall
	}{{
		src: `tool_arg_string("path") == "/w" && tool_arg_int("path") == 0 && is_even(2) && tool_arg_string("path") != tool_arg_string(tool) && is_even(1 + 1)`,
		want: []slotCall{{idToolArgString, path, 0}, {idToolArgInt, path, 1}, {idIsEven, two, 2},
			{idToolArgString, path, 0}, {idToolArgString, types.StringValue("x"), -1}, {idIsEven, two, -1}},
	}, {
		src:  `is_even(2) && tool_arg_string("path") == "/w" && !path_outside_scope("/work/a")`,
		want: []slotCall{{idIsEven, two, 2}, {idToolArgString, path, 0}, {idPathOutsideScope, types.StringValue("/work/a"), 3}},
	}} {
		for _, withSlots := range []bool{true, false} {
			o := testOptions
			if withSlots {
				o = opts
			}
			env := &slotEnv{fakeEnv: newEnv()}
			env.toolArgs["path"] = "/w"
			env.facts[idTool] = types.StringValue("x")
			got, err := compile(tc.src, o).Eval(env)
			if err != nil || !got {
				t.Errorf("Eval(%q) = %v, %v; want true", tc.src, got, err)
			}
			want := slices.Clone(tc.want)
			if !withSlots {
				for i := range want {
					want[i].slot = -1
				}
			}
			if !slices.Equal(env.calls, want) {
				t.Errorf("%q with CallSlot %v: calls %v; want %v", tc.src, withSlots, env.calls, want)
			}
		}
	}
}
