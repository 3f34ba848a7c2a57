package expr

import (
	"errors"
	"fmt"
	"iter"
	"maps"
	"math"
	"strings"
	"testing"

	"github.com/oar-operator/oar-operator/internal/engine/diag"
	"github.com/oar-operator/oar-operator/internal/engine/types"
)

// symbolTable is a fake fact environment with a fact of every type, observation
// functions, a host-tier dotted fact and the two rule-counter functions.
type symbolTable map[string]types.Symbol

func (s symbolTable) Lookup(name string) (types.Symbol, bool) {
	sym, ok := s[name]
	return sym, ok
}

func (s symbolTable) All() iter.Seq[types.Symbol] { return maps.Values(s) }

// The symbol IDs of the fake environment.
const (
	idFlag = iota
	idN
	idBig
	idSmall
	idZero
	idScore
	idHuge
	idTool
	idEmpty
	idRoles
	idLabels
	idMatches
	idToolArgs
	idTier
	idBroken
	idOther
	idPathOutsideScope
	idToolArgString
	idToolArgInt
	idModerationScore
	idIsEven
	idFireCountOf
	idBreakerCountOf
	idSlow
	idCount
)

var testSymbols = symbolTable{}

func init() {
	fact := func(name string, id int, k types.Kind) {
		testSymbols[name] = types.Symbol{Name: name, Type: k, ID: id}
	}
	fn := func(name string, id int, arg, res types.Kind, ruleRef bool) {
		testSymbols[name] = types.Symbol{Name: name, Func: true, Arg: arg, Type: res, RuleRef: ruleRef, ID: id}
	}
	fact("flag", idFlag, types.Bool)
	fact("n", idN, types.Int)
	fact("big", idBig, types.Int)
	fact("small", idSmall, types.Int)
	fact("zero", idZero, types.Int)
	fact("score", idScore, types.Double)
	fact("huge", idHuge, types.Double)
	fact("tool", idTool, types.String)
	fact("empty", idEmpty, types.String)
	fact("roles", idRoles, types.ListString)
	fact("labels", idLabels, types.MapStringString)
	fact("matches", idMatches, types.ListMap)
	fact("tool_args", idToolArgs, types.Map)
	fact("acme.tenant_tier", idTier, types.String)
	fact("broken", idBroken, types.Bool)
	fact("other", idOther, types.Bool)
	fn("path_outside_scope", idPathOutsideScope, types.String, types.Bool, false)
	fn("tool_arg_string", idToolArgString, types.String, types.String, false)
	fn("tool_arg_int", idToolArgInt, types.String, types.Int, false)
	fn("moderation_score", idModerationScore, types.String, types.Double, false)
	fn("is_even", idIsEven, types.Int, types.Bool, false)
	fn("fire_count_of", idFireCountOf, types.String, types.Int, true)
	fn("breaker_count_of", idBreakerCountOf, types.String, types.Int, true)
	fn("slow", idSlow, types.String, types.Bool, false)
	fact("fire_count", idCount, types.Int)
}

// The rules the fake ResolveRule knows.
var testRules = map[string]int{"acme.security/READ": 0, "WRITE": 1}

func resolveRule(ref string) (int, bool) {
	r, ok := testRules[ref]
	return r, ok
}

// suggestRule offers every rule the fake ResolveRule knows as a suggestion.
func suggestRule(e *diag.Error, ref string) { e.Suggest(ref, maps.Keys(testRules)) }

var testOptions = Options{Symbols: testSymbols, MaxNodes: 256, ResolveRule: resolveRule, UnresolvedRule: suggestRule}

// errProvider is what the fake environment returns for a failing provider.
var errProvider = errors.New("provider unavailable")

// fakeEnv supplies fixed values. Looking a value up allocates nothing, so the
// allocation test measures Eval alone.
type fakeEnv struct {
	facts    [idCount + 1]types.Value
	toolArgs map[string]any
	counters [2]int64
	// failFact and failCall make one fact or function fail; -1 for none.
	failFact, failCall int
}

func newEnv() *fakeEnv {
	e := &fakeEnv{failFact: idBroken, failCall: idSlow}
	e.toolArgs = map[string]any{"path": "/etc/passwd", "mode": "r", "count": int64(3)}
	e.facts[idFlag] = types.BoolValue(true)
	e.facts[idN] = types.IntValue(7)
	e.facts[idBig] = types.IntValue(math.MaxInt64)
	e.facts[idSmall] = types.IntValue(math.MinInt64)
	e.facts[idZero] = types.IntValue(0)
	e.facts[idScore] = types.DoubleValue(0.75)
	e.facts[idHuge] = types.DoubleValue(math.MaxFloat64)
	e.facts[idTool] = types.StringValue("write_file")
	e.facts[idEmpty] = types.StringValue("")
	e.facts[idRoles] = types.ListStringValue([]string{"admin", "dev"})
	e.facts[idLabels] = types.MapStringStringValue(map[string]string{"env": "prod", "team": "sec"})
	e.facts[idMatches] = types.ListMapValue([]map[string]any{{"kind": "aws_key"}, {"kind": "token", "score": 0.9}})
	e.facts[idToolArgs] = types.MapValue(e.toolArgs)
	e.facts[idTier] = types.StringValue("gold")
	e.facts[idOther] = types.BoolValue(false)
	e.facts[idCount] = types.IntValue(2)
	e.counters = [2]int64{4, 1}
	return e
}

func (e *fakeEnv) Fact(id int) (types.Value, error) {
	if id == e.failFact {
		return types.Value{}, errProvider
	}
	return e.facts[id], nil
}

func (e *fakeEnv) Call(id int, arg types.Value, _ int) (types.Value, error) {
	if id == e.failCall {
		return types.Value{}, errProvider
	}
	switch id {
	case idPathOutsideScope:
		return types.BoolValue(!strings.HasPrefix(arg.Str(), "/work/")), nil
	case idToolArgString:
		s, _ := e.toolArgs[arg.Str()].(string)
		return types.StringValue(s), nil
	case idToolArgInt:
		i, _ := e.toolArgs[arg.Str()].(int64)
		return types.IntValue(i), nil
	case idModerationScore:
		return types.DoubleValue(0.25), nil
	case idIsEven:
		return types.BoolValue(arg.Int()%2 == 0), nil
	}
	return types.Value{}, fmt.Errorf("no function %d", id)
}

func (e *fakeEnv) RuleCounter(id, rule int) (int64, error) {
	if id == idBreakerCountOf {
		return e.counters[rule] * 10, nil
	}
	return e.counters[rule], nil
}

// recordingEnv records which facts and functions an evaluation touched.
type recordingEnv struct {
	*fakeEnv
	touched []int
}

func (e *recordingEnv) Fact(id int) (types.Value, error) {
	e.touched = append(e.touched, id)
	return e.fakeEnv.Fact(id)
}

func (e *recordingEnv) Call(id int, arg types.Value, slot int) (types.Value, error) {
	e.touched = append(e.touched, id)
	return e.fakeEnv.Call(id, arg, slot)
}

// mustCompile compiles src against the fake environment or fails the test.
func mustCompile(t *testing.T, src string) *Program {
	t.Helper()
	p, errs := Compile(src, testOptions)
	if len(errs) > 0 || p == nil {
		t.Fatalf("Compile(%q): unexpected errors:\n%v", src, errs)
	}
	return p
}

// want is one expected diagnostic: its clause, its offset, and a fragment of its
// message.
type want struct {
	clause string
	offset int
	text   string
}

// rejectCase is a condition that must not load.
type rejectCase struct {
	src  string
	want []want
}

// reject is a rejectCase with a single expected diagnostic.
func reject(src, clause string, offset int, text string) rejectCase {
	return rejectCase{src: src, want: []want{{clause, offset, text}}}
}

// runRejects compiles each case with opts and compares the whole diagnostic list.
func runRejects(t *testing.T, opts Options, cases []rejectCase) {
	t.Helper()
	for _, c := range cases {
		t.Run(clip(c.src), func(t *testing.T) {
			t.Helper()
			src := clip(c.src)
			p, errs := Compile(c.src, opts)
			if p != nil {
				t.Fatalf("Compile(%q) succeeded; want %d error(s)", src, len(c.want))
			}
			checkDiagnostics(t, c.src, errs)
			if len(errs) != len(c.want) {
				t.Fatalf("Compile(%q): got %d errors, want %d:\n%v", src, len(errs), len(c.want), errs)
			}
			for i, w := range c.want {
				e := errs[i]
				if e.Clause != w.clause || e.Offset != w.offset || !strings.Contains(e.Message, w.text) {
					t.Errorf("Compile(%q) error %d = [%s] offset %d %q; want [%s] offset %d containing %q",
						src, i, e.Clause, e.Offset, e.Message, w.clause, w.offset, w.text)
				}
			}
		})
	}
}

// checkDiagnostics asserts the shape every compile diagnostic has.
func checkDiagnostics(t *testing.T, src string, errs diag.List) {
	t.Helper()
	if len(errs) == 0 {
		t.Fatalf("Compile(%q): no diagnostics", clip(src))
	}
	for _, e := range errs {
		if e.Index != -1 || e.Field != "" || e.Rule != "" || e.Value != diag.Truncate(src) || e.Clause == "" {
			t.Errorf("diagnostic %+v: want Index -1, no Field or Rule, the source as Value, a clause", e)
		}
		if !strings.Contains(e.Message, fmt.Sprintf("at offset %d", e.Offset)) {
			t.Errorf("diagnostic message %q does not say \"at offset %d\"", e.Message, e.Offset)
		}
	}
}

// evalCase is a condition and the result it must produce in newEnv.
type evalCase struct {
	src  string
	want bool
}

func runEvals(t *testing.T, cases []evalCase) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.src, func(t *testing.T) {
			t.Helper()
			got, err := mustCompile(t, c.src).Eval(newEnv())
			if err != nil || got != c.want {
				t.Errorf("Eval(%q) = %v, %v; want %v", c.src, got, err, c.want)
			}
		})
	}
}

// raiseCase is a condition that loads and raises at run time.
type raiseCase struct {
	src    string
	clause string
	offset int
	text   string
}

func runRaises(t *testing.T, cases []raiseCase) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.src, func(t *testing.T) {
			t.Helper()
			_, err := mustCompile(t, c.src).Eval(newEnv())
			var r *RaiseError
			if !errors.As(err, &r) {
				t.Fatalf("Eval(%q) error = %v; want a *RaiseError", c.src, err)
			}
			if r.Clause != c.clause || r.Offset != c.offset || !strings.Contains(r.Message, c.text) {
				t.Errorf("Eval(%q) raised [%s] offset %d %q; want [%s] offset %d containing %q", c.src, r.Clause, r.Offset, r.Message, c.clause, c.offset, c.text)
			}
			if !strings.Contains(r.Error(), "["+c.clause+"]") || !strings.Contains(r.Message, fmt.Sprintf("at offset %d", r.Offset)) {
				t.Errorf("RaiseError %q does not carry its clause and offset", r.Error())
			}
		})
	}
}
