// Package expr is the OAR condition language of Appendix A, written by hand: a scanner
// that owns positions (A.1, [OAR-EXPR-24]), a recursive-descent parser with one function
// per production of the A.1 grammar, the type checker of A.2 against the closed fact
// environment ([OAR-FACT-3], [OAR-FACT-4]), the built-ins of A.3, the node count and
// limits of A.4, and an evaluator compiled once per condition into typed closures that
// allocate nothing on the success path. Run-time raises ([OAR-EXPR-13],
// [OAR-EXPR-14], [OAR-EXPR-15]) are *RaiseError values the engine routes to on_error.
package expr

import (
	"github.com/oar-operator/oar-operator/internal/engine/diag"
	"github.com/oar-operator/oar-operator/internal/engine/types"
)

// Env supplies values while a compiled condition runs. The engine implements it once
// per rule evaluation; every method may fail, and a failure is a fact-provider failure
// the engine routes to the rule's on_error ([OAR-OPS-3]).
type Env interface {
	// Fact returns the value of the fact with the given symbol ID. The engine has
	// already checked the value against the declared type ([OAR-FACT-26]).
	Fact(id int) (types.Value, error)
	// Call returns the result of the observation function id applied to arg. slot is
	// the slot Options.CallSlot gave the function and arg when arg is a literal of the
	// condition, and -1 otherwise: an Env may keep a result by slot, for every call of
	// the same function with the same literal.
	Call(id int, arg types.Value, slot int) (types.Value, error)
	// RuleCounter returns fire_count_of or breaker_count_of (symbol id) for the rule
	// the literal argument resolved to at compile time.
	RuleCounter(id int, rule int) (int64, error)
}

// Options configure Compile.
type Options struct {
	// Symbols is the closed fact environment of the capability. When it is also a
	// types.Listing, a diagnostic about an unknown name suggests a declared one.
	Symbols types.Symbols
	// MaxNodes is the capability's expression_nodes_max ([OAR-EXPR-17], [OAR-EXPR-20]).
	MaxNodes int
	// ResolveRule resolves the string-literal argument of a RuleRef function
	// ([OAR-FIRE-11]) to a rule index, or returns ok=false when no loaded rule matches.
	ResolveRule func(ref string) (rule int, ok bool)
	// UnresolvedRule is given the diagnostic of each RuleRef argument ResolveRule finds
	// no rule for, and the argument, for the caller to add the diagnostic's "did you
	// mean" (diag.Error.Suggest) or not: the candidates are the rules of a whole set,
	// and comparing every unknown reference of the set with all of them is work the
	// caller bounds across the set. nil adds none.
	UnresolvedRule func(e *diag.Error, ref string)
	// CallSlot, when not nil, numbers the calls of observation functions whose argument
	// is a literal: it returns a slot (not negative) for the function fn applied to arg,
	// the same one for every call of that function with that argument, which the
	// compiled call passes to Env.Call. It is called as Compile is: concurrently when
	// Compile is.
	CallSlot func(fn types.Symbol, arg types.Value) int
}
