package expr

import (
	"math"
	"strconv"
	"sync"

	"github.com/oar-operator/oar-operator/internal/engine/diag"
	"github.com/oar-operator/oar-operator/internal/engine/types"
)

// minNesting is the least nesting — parentheses, list literals, calls, subscripts and
// ternary branches — a condition may reach. The parser bounds nesting by the larger of
// it and the node limit, so that no input can exhaust its stack: every level but a pair
// of parentheses adds a node ([OAR-EXPR-20]), so a condition within the node limit
// nests within it too, unless parentheses no tree keeps take it deeper. The tree is at
// most as deep as its node count, which MaxNodesCeiling bounds for the checker, the
// compiler and the evaluator.
const minNesting = 1000

// tree is the result of parsing a condition.
type tree struct {
	root  node
	nodes int // the node count of [OAR-EXPR-20]
	start int // offset of the condition's first token
	names int // the identifiers and calls: at least as many as the symbols referenced
}

// parser is a recursive-descent parser with one method per production of A.1.
// A syntax error stops it; a literal the language rejects although the grammar
// derives it ([OAR-EXPR-21]) is recorded and parsing goes on.
type parser struct {
	sc    scanner
	tok   token  // the current token
	pos   int    // its offset
	lit   string // its text
	depth int
	// maxDepth is the deepest nesting this parse accepts (minNesting).
	maxDepth int
	nodes    int
	errs     diag.List
	// The nodes most conditions are made of come from slabs: a tree of twenty nodes
	// costs a few allocations, not twenty.
	binaries slab[binary]
	literals slab[literal]
	calls    slab[call]
	idents   slab[ident]
	names    int
	// The operands of calls and lists are gathered on stack, then cut from sequences.
	stack, sequences []node
}

// slab hands out values of T from one chunk of room for first values, then one by
// one: first is an estimate that seldom exceeds what a condition needs, so that the
// chunk has little room to spare.
type slab[T any] struct {
	chunk []T
	first int
	// handed counts the values handed out since the slab was made or reset.
	handed int
}

// slabFirstMax bounds a slab's chunk.
const slabFirstMax = 64

// reset makes the slab's chunk hand its values out again, when it has room for first
// values and for as many as were handed out last (up to slabFirstMax): the conditions a
// parser meets are alike. The values handed out before must no longer be used.
func (s *slab[T]) reset(first int) {
	first = max(first, min(s.handed, slabFirstMax))
	clear(s.chunk)
	s.chunk = s.chunk[:0]
	if cap(s.chunk) < first {
		s.chunk = nil
	}
	s.first, s.handed = first, 0
}

// new returns a pointer to a copy of v.
func (s *slab[T]) new(v T) *T {
	s.handed++
	if s.chunk == nil && s.first > 1 {
		s.chunk = make([]T, 0, s.first)
	}
	if len(s.chunk) == cap(s.chunk) {
		one := new(T)
		*one = v
		return one
	}
	s.chunk = append(s.chunk, v)
	return &s.chunk[len(s.chunk)-1]
}

// bailout unwinds the parser after a syntax error.
type bailout struct{}

// parse parses src as condition = ternary. On a syntax error it returns the
// diagnostics collected so far, ending with that error, and no tree.
func parse(src string, limit int) (tree, diag.List) {
	var p parser
	return p.parse(src, limit)
}

// parsers holds the parsers of Check, whose trees are dropped once checked: the next
// condition checked takes its nodes from the same chunks.
var parsers = sync.Pool{New: func() any { return new(parser) }}

// parse parses src with p, whose nodes from an earlier parse must no longer be used;
// limit is the node limit in force.
func (p *parser) parse(src string, limit int) (t tree, errs diag.List) {
	p.maxDepth = max(minNesting, limit)
	// A condition has about one operator and one literal for every twenty bytes, one
	// call and one identifier for every fifty: the chunks seldom have room to spare.
	p.sc, p.tok, p.pos, p.lit, p.depth, p.nodes, p.errs, p.names = scanner{src: src}, tokEOF, 0, "", 0, 0, nil, 0
	p.binaries.reset(min(len(src)/20, slabFirstMax))
	p.literals.reset(min(len(src)/20, slabFirstMax))
	p.calls.reset(min(len(src)/50, slabFirstMax))
	p.idents.reset(min(len(src)/50, slabFirstMax))
	clear(p.stack)
	clear(p.sequences)
	p.stack, p.sequences = p.stack[:0], p.sequences[:0]
	defer func() {
		if r := recover(); r != nil {
			if _, ok := r.(bailout); !ok {
				panic(r)
			}
			t, errs = tree{}, p.errs
		}
	}()
	p.next()
	t.start = p.pos
	if p.tok == tokEOF {
		p.fail("OAR-EXPR-1", p.pos, "empty condition at offset %d: expected an expression", p.pos)
	}
	t.root = p.parseCondition()
	if p.tok != tokEOF {
		p.unexpected("an operator or the end of the condition")
	}
	t.nodes, t.names = p.nodes, p.names
	return t, p.errs
}

// next advances to the next token; a lexical error stops the parse.
func (p *parser) next() {
	p.tok, p.pos, p.lit = p.sc.scan()
	if p.tok == tokIllegal {
		p.errs.Add(p.sc.err)
		panic(bailout{})
	}
}

// fail records a syntax error and stops the parse.
func (p *parser) fail(clause string, pos int, format string, args ...any) {
	p.errs.Add(newError(p.sc.src, clause, pos, format, args...))
	panic(bailout{})
}

// reject records an error in a construct the grammar derives and goes on parsing.
func (p *parser) reject(clause string, pos int, format string, args ...any) {
	p.errs.Add(newError(p.sc.src, clause, pos, format, args...))
}

// unexpected rejects the current token where the grammar wants something else.
func (p *parser) unexpected(want string) {
	p.fail("OAR-EXPR-1", p.pos, "unexpected %s at offset %d; expected %s", p.describe(), p.pos, want)
}

// describe names the current token for a message.
func (p *parser) describe() string {
	switch p.tok {
	case tokIdent:
		return "identifier " + strconv.Quote(clip(p.lit))
	case tokInt, tokDouble:
		return "number " + clip(p.lit)
	case tokString:
		return "string literal " + strconv.Quote(clip(p.lit))
	case tokTrue, tokFalse, tokIn:
		return "reserved word " + strconv.Quote(p.lit)
	case tokEOF:
		return p.tok.String()
	}
	return strconv.Quote(p.tok.String())
}

// expect consumes the token tok that closes (or, for ":", completes) the construct
// opened by the token open at offset openAt.
func (p *parser) expect(tok, open token, openAt int) {
	if p.tok == tok {
		p.next()
		return
	}
	verb := "close"
	if open == tokQuestion {
		verb = "complete"
	}
	p.fail("OAR-EXPR-1", p.pos, "expected %q at offset %d to %s the %q at offset %d, found %s", tok, p.pos, verb, open, openAt, p.describe())
}

// count counts n as one node of [OAR-EXPR-20].
func (p *parser) count(n node) node {
	p.nodes++
	return n
}

// condition = ternary ;
func (p *parser) parseCondition() node { return p.parseTernary() }

// ternary = disjunction [ "?" ternary ":" ternary ] ;
func (p *parser) parseTernary() node {
	p.depth++
	if p.depth > p.maxDepth {
		p.fail("OAR-EXPR-17", p.pos, "condition nests more than %d levels deep at offset %d", p.maxDepth, p.pos)
	}
	x := p.parseDisjunction()
	if p.tok == tokQuestion {
		at := p.pos
		p.next()
		then := p.parseTernary()
		p.expect(tokColon, tokQuestion, at)
		els := p.parseTernary()
		x = p.count(&ternary{at: at, cond: x, then: then, els: els})
	}
	p.depth--
	return x
}

// disjunction = conjunction { "||" conjunction } ;
func (p *parser) parseDisjunction() node {
	x := p.parseConjunction()
	for p.tok == tokLOr {
		at := p.pos
		p.next()
		x = p.count(p.binaries.new(binary{at: at, op: tokLOr, x: x, y: p.parseConjunction()}))
	}
	return x
}

// conjunction = relation { "&&" relation } ;
func (p *parser) parseConjunction() node {
	x := p.parseRelation()
	for p.tok == tokLAnd {
		at := p.pos
		p.next()
		x = p.count(p.binaries.new(binary{at: at, op: tokLAnd, x: x, y: p.parseRelation()}))
	}
	return x
}

// relation = addition [ relop addition ] ; — at most one relop ([OAR-EXPR-4]).
func (p *parser) parseRelation() node {
	x := p.parseAddition()
	if !p.tok.isRelop() {
		return x
	}
	op, at := p.tok, p.pos
	p.next()
	x = p.count(p.binaries.new(binary{at: at, op: op, x: x, y: p.parseAddition()}))
	if p.tok.isRelop() {
		p.fail("OAR-EXPR-4", p.pos, "relational operator %q at offset %d follows the %q at offset %d: a relation admits at most one relational operator; join comparisons with && or group them with parentheses", p.tok, p.pos, op, at)
	}
	return x
}

// addition = multiplication { ( "+" | "-" ) multiplication } ;
func (p *parser) parseAddition() node {
	x := p.parseMultiplication()
	for p.tok == tokAdd || p.tok == tokSub {
		op, at := p.tok, p.pos
		p.next()
		x = p.count(p.binaries.new(binary{at: at, op: op, x: x, y: p.parseMultiplication()}))
	}
	return x
}

// multiplication = unary { ( "*" | "/" | "%" ) unary } ;
func (p *parser) parseMultiplication() node {
	x := p.parseUnary()
	for p.tok == tokMul || p.tok == tokQuo || p.tok == tokRem {
		op, at := p.tok, p.pos
		p.next()
		x = p.count(p.binaries.new(binary{at: at, op: op, x: x, y: p.parseUnary()}))
	}
	return x
}

// unary = [ "!" | "-" ] postfix ; — at most one prefix operator.
func (p *parser) parseUnary() node {
	if p.tok != tokNot && p.tok != tokSub {
		return p.parsePostfix(false)
	}
	op, at := p.tok, p.pos
	p.next()
	if p.tok == tokNot || p.tok == tokSub {
		p.fail("OAR-EXPR-1", p.pos, "%q at offset %d follows the unary %q at offset %d: a unary operation takes at most one prefix operator; put the inner operation in parentheses", p.tok, p.pos, op, at)
	}
	x := p.parsePostfix(op == tokSub)
	return p.count(&unary{at: at, op: op, x: x})
}

// postfix = primary { "[" condition "]" } ;
//
// negated says a unary minus immediately precedes the primary.
func (p *parser) parsePostfix(negated bool) node {
	x := p.parsePrimary(negated)
	for p.tok == tokLBrack {
		if lit, ok := x.(*literal); ok && lit.minInt {
			lit.minInt = false
			p.reject("OAR-EXPR-21", lit.at, "integer literal %s at offset %d does not fit in 64 bits: its magnitude is admitted only as the immediate operand of unary minus, and here it is indexed", clip(lit.text), lit.at)
		}
		at := p.pos
		p.next()
		sub := p.parseCondition()
		p.expect(tokRBrack, tokLBrack, at)
		x = p.count(&index{at: at, x: x, sub: sub})
	}
	return x
}

// primary = literal | call | identifier | "(" condition ")" ;
// literal = "true" | "false" | int | double | string | list ;
func (p *parser) parsePrimary(negated bool) node {
	switch p.tok {
	case tokTrue, tokFalse:
		lit := p.literals.new(literal{at: p.pos, text: p.lit, t: types.Bool, b: p.tok == tokTrue})
		p.next()
		return p.count(lit)
	case tokInt:
		return p.parseInt(negated)
	case tokDouble:
		return p.parseDouble()
	case tokString:
		lit := p.literals.new(literal{at: p.pos, text: p.lit, t: types.String, s: p.lit})
		p.next()
		return p.count(lit)
	case tokLBrack:
		return p.parseList()
	case tokIdent:
		return p.parseIdentifier()
	case tokLParen:
		at := p.pos
		p.next()
		x := p.parseCondition()
		p.expect(tokRParen, tokLParen, at)
		return x
	case tokIn:
		p.unexpected("an operand: in is a reserved word and names no fact")
	}
	p.unexpected("an operand")
	return nil
}

// parseInt converts int = digit { digit }. A literal must fit int64 except the
// magnitude 9223372036854775808 as the immediate operand of unary minus
// ([OAR-EXPR-21]); leading zeros are derivable and accepted.
func (p *parser) parseInt(negated bool) node {
	lit := p.literals.new(literal{at: p.pos, text: p.lit, t: types.Int})
	u, err := strconv.ParseUint(p.lit, 10, 64)
	switch {
	case err == nil && u <= math.MaxInt64:
		lit.i = int64(u)
	case err == nil && u == 1<<63 && negated:
		lit.i, lit.minInt = math.MinInt64, true
	default:
		p.reject("OAR-EXPR-21", lit.at, "integer literal %s at offset %d does not fit in 64 bits", clip(p.lit), lit.at)
	}
	p.next()
	return p.count(lit)
}

// parseDouble converts double = digit { digit } "." digit { digit }; a literal
// whose nearest binary64 value is not finite is rejected ([OAR-EXPR-21]).
func (p *parser) parseDouble() node {
	lit := p.literals.new(literal{at: p.pos, text: p.lit, t: types.Double})
	d, err := strconv.ParseFloat(p.lit, 64)
	if err != nil || math.IsInf(d, 0) {
		p.reject("OAR-EXPR-21", lit.at, "double literal %s at offset %d is too large: its nearest binary64 value is not finite", clip(p.lit), lit.at)
	}
	lit.d = d
	p.next()
	return p.count(lit)
}

// list = "[" [ condition { "," condition } ] "]" ;
func (p *parser) parseList() node {
	at := p.pos
	p.next()
	elems := p.parseSequence(tokRBrack)
	p.expect(tokRBrack, tokLBrack, at)
	return p.count(&listLit{at: at, elems: elems})
}

// identifier and call = identifier "(" [ condition { "," condition } ] ")" ;
func (p *parser) parseIdentifier() node {
	at, name := p.pos, p.lit
	p.next()
	p.names++
	if p.tok != tokLParen {
		return p.count(p.idents.new(ident{at: at, name: name}))
	}
	open := p.pos
	p.next()
	args := p.parseSequence(tokRParen)
	p.expect(tokRParen, tokLParen, open)
	return p.count(p.calls.new(call{at: at, name: name, args: args}))
}

// parseSequence reads [ condition { "," condition } ] up to the closing token.
func (p *parser) parseSequence(closing token) []node {
	if p.tok == closing {
		return nil
	}
	if p.stack == nil {
		p.stack = make([]node, 0, 8)
	}
	base := len(p.stack)
	for {
		x := p.parseCondition()
		p.stack = append(p.stack, x)
		if p.tok != tokComma {
			break
		}
		p.next()
	}
	n := len(p.stack) - base
	if cap(p.sequences)-len(p.sequences) < n {
		p.sequences = make([]node, 0, max(n, len(p.sc.src)/20))
	}
	at := len(p.sequences)
	p.sequences = append(p.sequences, p.stack[base:]...)
	clear(p.stack[base:])
	p.stack = p.stack[:base]
	return p.sequences[at : at+n : at+n]
}

// clip shortens a spelling quoted in a message.
func clip(s string) string {
	const maxRunes = 40
	n := 0
	for i := range s {
		if n == maxRunes {
			return s[:i] + "…"
		}
		n++
	}
	return s
}
