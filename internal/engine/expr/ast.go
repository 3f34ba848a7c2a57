package expr

import "github.com/oar-operator/oar-operator/internal/engine/types"

// node is one node of the parse tree, as [OAR-EXPR-20] counts them: a literal, a
// list literal, an identifier, a call, an index operation, a unary, binary or ternary
// operation. Parentheses leave no node. The checker records each node's type in it.
type node interface {
	// pos is the code-point offset diagnostics report for the node: its first
	// character, or its operator for an operation.
	pos() int
	// kind is the type the checker gave the node; types.Invalid before checking or
	// after a type error.
	kind() types.Kind
}

// literal is true, false, an int, a double or a string.
type literal struct {
	at   int
	text string // the source spelling, for messages
	t    types.Kind
	b    bool
	i    int64
	d    float64
	s    string
	// minInt marks the magnitude 9223372036854775808, admitted only as the
	// immediate operand of unary minus ([OAR-EXPR-21]); i then holds math.MinInt64.
	minInt bool
}

// listLit is a list literal [a, b, ...].
type listLit struct {
	at    int // the "["
	elems []node
	t     types.Kind
}

// ident is a reference to a fact.
type ident struct {
	at   int
	name string
	sym  types.Symbol
	t    types.Kind
}

// call is a call of a built-in or of an observation function.
type call struct {
	at   int // the callee's name
	name string
	args []node
	fn   builtin      // the built-in called, or notBuiltin
	sym  types.Symbol // the observation function called, when fn is notBuiltin
	rule int          // the rule a RuleRef function's literal argument resolved to
	// slot is what Options.CallSlot gave an observation function's call whose argument
	// is a literal, and -1 for any other call.
	slot int
	t    types.Kind
}

// index is x[sub].
type index struct {
	at     int // the "["
	x, sub node
	t      types.Kind
}

// unary is !x or -x.
type unary struct {
	at int
	op token
	x  node
	t  types.Kind
}

// binary is x op y.
type binary struct {
	at   int // the operator
	op   token
	x, y node
	t    types.Kind
}

// ternary is cond ? then : els.
type ternary struct {
	at              int // the "?"
	cond, then, els node
	t               types.Kind
}

// value is the literal as a types.Value, what compileValue evaluates it to.
func (n *literal) value() types.Value {
	switch n.t {
	case types.Bool:
		return types.BoolValue(n.b)
	case types.Int:
		return types.IntValue(n.i)
	case types.Double:
		return types.DoubleValue(n.d)
	}
	return types.StringValue(n.s)
}

func (n *literal) pos() int { return n.at }
func (n *listLit) pos() int { return n.at }
func (n *ident) pos() int   { return n.at }
func (n *call) pos() int    { return n.at }
func (n *index) pos() int   { return n.at }
func (n *unary) pos() int   { return n.at }
func (n *binary) pos() int  { return n.at }
func (n *ternary) pos() int { return n.at }

func (n *literal) kind() types.Kind { return n.t }
func (n *listLit) kind() types.Kind { return n.t }
func (n *ident) kind() types.Kind   { return n.t }
func (n *call) kind() types.Kind    { return n.t }
func (n *index) kind() types.Kind   { return n.t }
func (n *unary) kind() types.Kind   { return n.t }
func (n *binary) kind() types.Kind  { return n.t }
func (n *ternary) kind() types.Kind { return n.t }

// builtin is one of the four built-in functions of [OAR-EXPR-16].
type builtin uint8

const (
	notBuiltin builtin = iota
	builtinSize
	builtinStartsWith
	builtinEndsWith
	builtinContains
)

// builtins are resolved before the fact environment, which never declares these
// names.
var builtins = map[string]builtin{
	"size":        builtinSize,
	"starts_with": builtinStartsWith,
	"ends_with":   builtinEndsWith,
	"contains":    builtinContains,
}
