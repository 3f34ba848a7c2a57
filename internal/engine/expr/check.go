package expr

import (
	"fmt"
	"iter"
	"strconv"
	"strings"

	"github.com/oar-operator/oar-operator/internal/engine/diag"
	"github.com/oar-operator/oar-operator/internal/engine/types"
)

// Check parses and type-checks a condition as Compile does, with the same diagnostics,
// and returns what Program.Refs would list, without building the evaluator: for a
// caller that only asks whether a condition loads and what it references (the admission
// webhook checking a pack it does not run).
func Check(src string, opts Options) ([]types.Symbol, diag.List) {
	// The tree is dropped once checked: its nodes come from a parser used again.
	p := parsers.Get().(*parser)
	defer parsers.Put(p)
	_, refs, errs := check(p, src, opts)
	return refs, errs
}

// check parses with p and type-checks a condition: the typed tree and its references
// when it loads, else every diagnostic, sorted. Check and Compile share it, so they
// cannot disagree about what loads.
func check(p *parser, src string, opts Options) (tree, []types.Symbol, diag.List) {
	limit := opts.MaxNodes
	if limit <= 0 || limit > MaxNodesCeiling {
		limit = MaxNodesCeiling
	}
	t, errs := p.parse(src, limit)
	if t.root == nil {
		return t, nil, errs
	}
	if t.nodes > limit {
		errs.Add(newError(src, "OAR-EXPR-17", t.start, "condition at offset %d has %d nodes, more than the limit of %d", t.start, t.nodes, limit))
		if t.nodes > MaxNodesCeiling {
			return t, nil, errs
		}
	}
	c := checker{src: src, opts: opts}
	if t.names > 0 {
		c.refs = make([]types.Symbol, 0, t.names)
	}
	c.checkCondition(t)
	errs = append(errs, c.errs...)
	if len(errs) > 0 {
		errs.Sort()
		return t, nil, errs
	}
	if len(c.refs) == 0 {
		return t, nil, nil
	}
	return t, c.refs, nil
}

// checker resolves identifiers against the fact environment and types the tree
// under A.2 and A.3 ([OAR-FACT-3], [OAR-FACT-4]). It records every error it finds
// in independent subtrees; a node whose operand already failed reports nothing
// more, so one mistake yields one diagnostic.
type checker struct {
	src  string
	opts Options
	errs diag.List
	refs []types.Symbol
}

func (c *checker) errorf(clause string, pos int, format string, args ...any) {
	c.errs.Add(newError(c.src, clause, pos, format, args...))
}

// checkCondition types the whole condition, which must be bool ([OAR-FACT-4]).
func (c *checker) checkCondition(t tree) {
	if k := c.check(t.root); k != types.Invalid && k != types.Bool {
		c.errorf("OAR-FACT-4", t.start, "condition at offset %d has type %s; a condition must be bool", t.start, k)
	}
}

// check types n, records the type in it and returns it; types.Invalid means an
// error was already reported for n or below it.
func (c *checker) check(n node) types.Kind {
	switch n := n.(type) {
	case *literal:
		return n.t
	case *listLit:
		n.t = c.checkList(n)
	case *ident:
		n.t = c.checkIdent(n)
	case *call:
		n.t = c.checkCall(n)
	case *index:
		n.t = c.checkIndex(n)
	case *unary:
		n.t = c.checkUnary(n)
	case *binary:
		n.t = c.checkBinary(n)
	case *ternary:
		n.t = c.checkTernary(n)
	}
	return n.kind()
}

// checkList types a list literal ([OAR-EXPR-21]): list<string> when every member is
// a string, list<map> when every member is a map; [] has no inferable type.
func (c *checker) checkList(n *listLit) types.Kind {
	if len(n.elems) == 0 {
		c.errorf("OAR-EXPR-21", n.at, "empty list literal [] at offset %d: its type cannot be inferred", n.at)
		return types.Invalid
	}
	valid := true
	for _, e := range n.elems {
		if c.check(e) == types.Invalid {
			valid = false
		}
	}
	if !valid {
		return types.Invalid
	}
	first := n.elems[0]
	if k := first.kind(); k != types.String && k != types.Map {
		c.errorf("OAR-EXPR-21", n.at, "list literal at offset %d has a member of type %s at offset %d: a list literal is list<string> or list<map>, so its members must all be strings or all be maps", n.at, k, first.pos())
		return types.Invalid
	}
	for _, e := range n.elems[1:] {
		if e.kind() != first.kind() {
			c.errorf("OAR-EXPR-21", n.at, "list literal at offset %d mixes %s (offset %d) and %s (offset %d): its members must all be strings or all be maps", n.at, first.kind(), first.pos(), e.kind(), e.pos())
			return types.Invalid
		}
	}
	if first.kind() == types.String {
		return types.ListString
	}
	return types.ListMap
}

// lookup resolves a name in the fact environment.
func (c *checker) lookup(name string) (types.Symbol, bool) {
	if c.opts.Symbols == nil {
		return types.Symbol{}, false
	}
	return c.opts.Symbols.Lookup(name)
}

// reference records sym for Program.Refs, once, in order of first use.
func (c *checker) reference(sym types.Symbol) {
	// A condition references few symbols: a scan is cheaper than a set.
	for _, r := range c.refs {
		if r.Name == sym.Name {
			return
		}
	}
	c.refs = append(c.refs, sym)
}

// unknown rejects a name the environment does not declare ([OAR-FACT-3]), suggesting
// the declared name it most likely misspells: a function or built-in for a call, a
// fact otherwise.
func (c *checker) unknown(name string, at int, call bool) {
	if name == "null" {
		c.errorf("OAR-FACT-3", at, "unknown identifier \"null\" at offset %d: null has no meaning here, because there is no null value and every fact always has a value", at)
		return
	}
	e := newError(c.src, "OAR-FACT-3", at, "unknown identifier %q at offset %d", clip(name), at).Suggest(name, c.names(call))
	if e.Suggestion == "" && strings.Contains(name, ".") {
		e.Message += ": a dotted name is the single name of a host-tier fact, and there is no field selection"
	}
	c.errs.Add(e)
}

// names yields the names available where an unknown one stands: the built-ins and the
// declared observation functions for a call, the declared facts otherwise.
func (c *checker) names(call bool) iter.Seq[string] {
	return func(yield func(string) bool) {
		if call {
			for name := range builtins {
				if !yield(name) {
					return
				}
			}
		}
		env, ok := c.opts.Symbols.(types.Listing)
		if !ok {
			return
		}
		for sym := range env.All() {
			if sym.Func == call && !yield(sym.Name) {
				return
			}
		}
	}
}

// checkIdent resolves a fact reference.
func (c *checker) checkIdent(n *ident) types.Kind {
	if _, ok := builtins[n.name]; ok {
		c.errorf("OAR-FACT-4", n.at, "built-in function %s at offset %d is used without a call; write %s(...)", n.name, n.at, n.name)
		return types.Invalid
	}
	sym, ok := c.lookup(n.name)
	switch {
	case !ok:
		c.unknown(n.name, n.at, false)
		return types.Invalid
	case sym.Func:
		c.errorf("OAR-FACT-4", n.at, "%s at offset %d is an observation function %s and must be called, as in %s(...)", n.name, n.at, signature(sym), n.name)
		return types.Invalid
	case !sym.Type.Scalar() && !sym.Type.Aggregate():
		c.errorf("OAR-FACT-22", n.at, "fact %s at offset %d is declared without a valid type", n.name, n.at)
		return types.Invalid
	}
	c.reference(sym)
	n.sym = sym
	return sym.Type
}

// checkCall types a call of a built-in ([OAR-EXPR-16]) or an observation function.
func (c *checker) checkCall(n *call) types.Kind {
	if fn, ok := builtins[n.name]; ok {
		n.fn = fn
		return c.checkBuiltin(n)
	}
	sym, ok := c.lookup(n.name)
	switch {
	case !ok:
		c.unknown(n.name, n.at, true)
	case !sym.Func:
		c.errorf("OAR-FACT-4", n.at, "%s at offset %d is a fact of type %s, not a function, and cannot be called", n.name, n.at, sym.Type)
	case !sym.Arg.Scalar() || !sym.Type.Scalar() || sym.RuleRef && (sym.Arg != types.String || sym.Type != types.Int):
		c.errorf("OAR-FACT-27", n.at, "observation function %s at offset %d is declared %s, which is not a valid signature", n.name, n.at, signature(sym))
	default:
		c.reference(sym)
		n.sym = sym
		return c.checkObservation(n)
	}
	for _, a := range n.args {
		c.check(a)
	}
	return types.Invalid
}

// signature renders a function symbol's declared type.
func signature(sym types.Symbol) string {
	return types.Signature{Arg: sym.Arg, Result: sym.Type}.String()
}

// checkObservation types a call of a declared observation function: one argument
// of its declared type, or for a rule-counter function one string literal naming a
// loaded rule ([OAR-FIRE-11]).
func (c *checker) checkObservation(n *call) types.Kind {
	n.slot = -1
	for _, a := range n.args {
		c.check(a)
	}
	if len(n.args) != 1 {
		c.errorf("OAR-FACT-4", n.at, "%s at offset %d takes one argument (%s), not %d", n.name, n.at, n.sym.Arg, len(n.args))
		return n.sym.Type
	}
	arg := n.args[0]
	if arg.kind() == types.Invalid {
		return n.sym.Type
	}
	if n.sym.RuleRef {
		lit, ok := arg.(*literal)
		if !ok || lit.t != types.String {
			c.errorf("OAR-FIRE-11", start(arg), "the argument of %s at offset %d must be a string literal naming a rule", n.name, start(arg))
			return n.sym.Type
		}
		rule, ok := -1, false
		if c.opts.ResolveRule != nil {
			rule, ok = c.opts.ResolveRule(lit.s)
		}
		if !ok {
			e := newError(c.src, "OAR-FIRE-11", arg.pos(), "%s(%s) at offset %d names no loaded rule", n.name, strconv.Quote(clip(lit.s)), arg.pos())
			if c.opts.UnresolvedRule != nil {
				c.opts.UnresolvedRule(e, lit.s)
			}
			c.errs.Add(e)
			return n.sym.Type
		}
		n.rule = rule
		return n.sym.Type
	}
	if k := arg.kind(); k != n.sym.Arg {
		c.errorf("OAR-FACT-4", start(arg), "argument %s of %s at offset %d has type %s; %s takes %s", describe(arg), n.name, start(arg), k, n.name, n.sym.Arg)
	} else if lit, ok := arg.(*literal); ok && c.opts.CallSlot != nil {
		n.slot = c.opts.CallSlot(n.sym, lit.value())
	}
	return n.sym.Type
}

// checkBuiltin types a call of one of the four built-ins ([OAR-EXPR-16]).
func (c *checker) checkBuiltin(n *call) types.Kind {
	valid := true
	for _, a := range n.args {
		if c.check(a) == types.Invalid {
			valid = false
		}
	}
	if n.fn == builtinSize {
		if len(n.args) != 1 {
			c.errorf("OAR-EXPR-16", n.at, "size at offset %d takes one argument, not %d", n.at, len(n.args))
		} else if k := n.args[0].kind(); valid && k != types.String && !k.Aggregate() {
			c.errorf("OAR-EXPR-16", n.at, "size at offset %d cannot take %s: it takes a string, a list or a map", n.at, describe(n.args[0]))
		}
		return types.Int
	}
	if len(n.args) != 2 {
		c.errorf("OAR-EXPR-16", n.at, "%s at offset %d takes two string arguments, not %d", n.name, n.at, len(n.args))
		return types.Bool
	}
	for _, a := range n.args {
		if k := a.kind(); k != types.Invalid && k != types.String {
			c.errorf("OAR-EXPR-16", n.at, "%s at offset %d takes two strings, and its argument %s is not one", n.name, n.at, describe(a))
			break
		}
	}
	return types.Bool
}

// checkIndex types x[sub] ([OAR-EXPR-13], [OAR-EXPR-19]).
func (c *checker) checkIndex(n *index) types.Kind {
	x, sub := c.check(n.x), c.check(n.sub)
	if x == types.Invalid || sub == types.Invalid {
		return types.Invalid
	}
	switch {
	case x == types.MapStringString && sub == types.String:
		return types.String
	case x == types.ListString && sub == types.Int:
		return types.String
	case x == types.ListMap && sub == types.Int:
		return types.Map
	case x == types.Map:
		c.errorf("OAR-EXPR-19", n.at, "%s cannot be indexed at offset %d: a map is not indexable; test a key with in, count with size(), or read a member through a typed observation function", describe(n.x), n.at)
	case x == types.MapStringString:
		c.errorf("OAR-EXPR-13", n.at, "index at offset %d: a map<string,string> is indexed by a string, not by %s", n.at, describe(n.sub))
	case x == types.ListString || x == types.ListMap:
		c.errorf("OAR-EXPR-13", n.at, "index at offset %d: a %s is indexed by an int, not by %s", n.at, x, describe(n.sub))
	default:
		c.errorf("OAR-EXPR-13", n.at, "%s cannot be indexed at offset %d: only a map<string,string>, a list<string> or a list<map> can", describe(n.x), n.at)
	}
	return types.Invalid
}

// checkUnary types !x ([OAR-EXPR-8]) and -x ([OAR-EXPR-9]).
func (c *checker) checkUnary(n *unary) types.Kind {
	x := c.check(n.x)
	if n.op == tokNot {
		if x != types.Invalid && x != types.Bool {
			c.errorf("OAR-EXPR-8", n.at, "operator \"!\" at offset %d takes a bool, not %s", n.at, describe(n.x))
		}
		return types.Bool
	}
	switch x {
	case types.Int, types.Double, types.Invalid:
		return x
	}
	c.errorf("OAR-EXPR-9", n.at, "unary \"-\" at offset %d takes an int or a double, not %s", n.at, describe(n.x))
	return types.Invalid
}

// checkBinary types the binary operators of A.2.
func (c *checker) checkBinary(n *binary) types.Kind {
	x, y := c.check(n.x), c.check(n.y)
	switch n.op {
	case tokLAnd, tokLOr:
		for _, o := range [...]node{n.x, n.y} {
			if k := o.kind(); k != types.Invalid && k != types.Bool {
				c.errorf("OAR-EXPR-8", n.at, "operator %q at offset %d takes two bool operands, not %s", n.op, n.at, describe(o))
			}
		}
		return types.Bool
	}
	if x == types.Invalid || y == types.Invalid {
		if n.op.isRelop() {
			return types.Bool
		}
		return types.Invalid
	}
	switch n.op {
	case tokEql, tokNeq:
		c.checkEquality(n, x, y)
		return types.Bool
	case tokLss, tokLeq, tokGtr, tokGeq:
		if !(numeric(x) && numeric(y) || x == types.String && y == types.String) {
			c.errorf("OAR-EXPR-10", n.at, "operator %q at offset %d cannot compare %s with %s: it takes two numbers or two strings", n.op, n.at, describe(n.x), describe(n.y))
		}
		return types.Bool
	case tokIn:
		if x != types.String || y != types.ListString && y != types.Map && y != types.MapStringString {
			c.errorf("OAR-EXPR-12", n.at, "operator \"in\" at offset %d cannot test %s against %s: it tests a string against a list<string> or a map", n.at, describe(n.x), describe(n.y))
		}
		return types.Bool
	}
	return c.checkArithmetic(n, x, y)
}

func numeric(k types.Kind) bool { return k == types.Int || k == types.Double }

// checkEquality: == and != take two operands of one scalar type, or an int and a
// double ([OAR-EXPR-11]); never two aggregates ([OAR-EXPR-21]).
func (c *checker) checkEquality(n *binary, x, y types.Kind) {
	switch {
	case x.Aggregate() && y.Aggregate():
		c.errorf("OAR-EXPR-21", n.at, "operator %q at offset %d cannot compare %s with %s: lists and maps cannot be compared", n.op, n.at, describe(n.x), describe(n.y))
	case x.Aggregate() || y.Aggregate() || x != y && !(numeric(x) && numeric(y)):
		c.errorf("OAR-EXPR-11", n.at, "operator %q at offset %d cannot compare %s with %s: it takes two operands of the same type, or an int and a double", n.op, n.at, describe(n.x), describe(n.y))
	}
}

// checkArithmetic: + - * / take two int or two double, % two int, and + also two
// strings ([OAR-EXPR-9]). There is no implicit conversion.
func (c *checker) checkArithmetic(n *binary, x, y types.Kind) types.Kind {
	if x == y && (x == types.Int || x == types.Double && n.op != tokRem || x == types.String && n.op == tokAdd) {
		return x
	}
	var takes string
	switch n.op {
	case tokAdd:
		takes = "two ints, two doubles or two strings"
	case tokRem:
		takes = "two ints"
	default:
		takes = "two ints or two doubles"
	}
	c.errorf("OAR-EXPR-9", n.at, "operator %q at offset %d cannot take %s and %s: it takes %s", n.op, n.at, describe(n.x), describe(n.y), takes)
	return types.Invalid
}

// checkTernary: the condition is bool and both branches have one type ([OAR-EXPR-8]).
func (c *checker) checkTernary(n *ternary) types.Kind {
	cond, then, els := c.check(n.cond), c.check(n.then), c.check(n.els)
	if cond != types.Invalid && cond != types.Bool {
		c.errorf("OAR-EXPR-8", n.at, "the condition of the ternary at offset %d must be bool, not %s", n.at, describe(n.cond))
	}
	if then == types.Invalid || els == types.Invalid {
		return types.Invalid
	}
	if then != els {
		c.errorf("OAR-EXPR-8", n.at, "the branches of the ternary at offset %d have different types, %s and %s: both must have the same type", n.at, then, els)
		return types.Invalid
	}
	return then
}

// describe names an operand for a type error.
func describe(n node) string {
	switch n := n.(type) {
	case *ident:
		return fmt.Sprintf("%s (%s)", clip(n.name), n.t)
	case *literal:
		if n.t == types.String {
			return strconv.Quote(clip(n.s)) + " (string)"
		}
		return fmt.Sprintf("%s (%s)", clip(n.text), n.t)
	case *call:
		return fmt.Sprintf("%s(…) (%s)", n.name, n.t)
	case *listLit:
		return fmt.Sprintf("a list literal (%s)", n.t)
	}
	return "an operand of type " + n.kind().String()
}

// start is the offset of the first token of n, parentheses aside.
func start(n node) int {
	switch n := n.(type) {
	case *binary:
		return start(n.x)
	case *index:
		return start(n.x)
	case *ternary:
		return start(n.cond)
	}
	return n.pos()
}
