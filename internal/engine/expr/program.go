package expr

import (
	"slices"

	"github.com/oar-operator/oar-operator/internal/engine/diag"
	"github.com/oar-operator/oar-operator/internal/engine/types"
)

// MaxNodesCeiling is the largest node limit Compile applies, whatever
// Options.MaxNodes says: it bounds the depth of the checker's, the compiler's and
// the evaluator's recursion. A capability declaring a larger expression_nodes_max
// ([OAR-EXPR-17]) declares a limit this engine does not honour.
const MaxNodesCeiling = 1 << 16

// Program is a compiled condition. It is immutable, and safe for concurrent use.
type Program struct {
	root  fn[bool]
	refs  []types.Symbol
	nodes int
}

// Compile lexes, parses, type-checks, counts nodes and compiles src once. It
// returns every diagnostic it finds, sorted by offset, and a nil Program when there
// is any. Each diagnostic has Index -1 and an empty Field for the caller to fill,
// the condition as Value and the code-point offset of the offending construct.
//
// Options.MaxNodes is the node limit; a value that is not positive, or exceeds
// MaxNodesCeiling, means MaxNodesCeiling.
func Compile(src string, opts Options) (*Program, diag.List) {
	var p parser
	t, refs, errs := check(&p, src, opts)
	if len(errs) > 0 || t.root == nil {
		return nil, errs
	}
	return &Program{root: compileBool(t.root), refs: refs, nodes: t.nodes}, nil
}

// Eval runs the condition. Errors returned by env are passed through unchanged; an
// operation that raises ([OAR-EXPR-13], [OAR-EXPR-14], [OAR-EXPR-15]) returns a
// *RaiseError; a fact or function value of the wrong run-time type returns an error
// wrapping a *types.TypeError ([OAR-FACT-26]). On the success path Eval allocates
// nothing, except that a string concatenation builds its result.
func (p *Program) Eval(env Env) (bool, error) { return p.root(env) }

// Refs lists, without duplicates and in order of first use, every fact and
// observation function the condition references; built-ins are not symbols and are
// not listed. The engine assembles exactly these facts ([OAR-FACT-11]).
func (p *Program) Refs() []types.Symbol { return slices.Clone(p.refs) }

// Nodes is the condition's node count under [OAR-EXPR-20].
func (p *Program) Nodes() int { return p.nodes }
