package expr

import (
	"cmp"
	"fmt"
	"math"
	"strings"

	"github.com/oar-operator/oar-operator/internal/engine/codepoint"
	"github.com/oar-operator/oar-operator/internal/engine/types"
)

// The compiler turns a checked tree into typed closures, one compile function per
// result type. Each handles the node kinds that can have its type; the checker
// guarantees no other reaches it.

type (
	strList = seq[string]
	mapList = seq[map[string]any]
)

// compileShared compiles the nodes every type shares — a fact, an observation
// function call, a ternary — and hands any other node to own.
func compileShared[T any](n node, get func(types.Value) T, own func(node) fn[T]) fn[T] {
	switch n := n.(type) {
	case *ident:
		return fact(n.sym, get)
	case *call:
		if n.fn == notBuiltin {
			return observe(n, get)
		}
	case *ternary:
		cond, then, els := compileBool(n.cond), compileShared(n.then, get, own), compileShared(n.els, get, own)
		return func(env Env) (T, error) {
			c, err := cond(env)
			if err != nil {
				var zero T
				return zero, err
			}
			if c {
				return then(env)
			}
			return els(env)
		}
	}
	return own(n)
}

// fact reads a fact and checks its run-time type.
func fact[T any](sym types.Symbol, get func(types.Value) T) fn[T] {
	id, want, name := sym.ID, sym.Type, sym.Name
	return func(env Env) (T, error) {
		v, err := env.Fact(id)
		if err != nil {
			var zero T
			return zero, err
		}
		if v.Kind != want {
			var zero T
			return zero, wrongKind(name, want, v.Kind)
		}
		return get(v), nil
	}
}

// observe calls an observation function, or reads a rule counter for
// fire_count_of and breaker_count_of ([OAR-FIRE-11]).
func observe[T any](n *call, get func(types.Value) T) fn[T] {
	id, want, name := n.sym.ID, n.sym.Type, n.name
	if n.sym.RuleRef {
		rule := n.rule
		return func(env Env) (T, error) {
			count, err := env.RuleCounter(id, rule)
			if err != nil {
				var zero T
				return zero, err
			}
			return get(types.IntValue(count)), nil
		}
	}
	if slot := n.slot; slot >= 0 {
		// The literal argument is passed as it is, with its slot.
		arg := n.args[0].(*literal).value()
		return func(env Env) (T, error) {
			var zero T
			v, err := env.Call(id, arg, slot)
			if err != nil {
				return zero, err
			}
			if v.Kind != want {
				return zero, wrongKind(name, want, v.Kind)
			}
			return get(v), nil
		}
	}
	arg := compileValue(n.args[0])
	return func(env Env) (T, error) {
		var zero T
		a, err := arg(env)
		if err != nil {
			return zero, err
		}
		v, err := env.Call(id, a, -1)
		if err != nil {
			return zero, err
		}
		if v.Kind != want {
			return zero, wrongKind(name, want, v.Kind)
		}
		return get(v), nil
	}
}

// compileValue compiles a scalar operand into a types.Value, the argument of an
// observation function.
func compileValue(n node) fn[types.Value] {
	switch n.kind() {
	case types.Bool:
		return convert(compileBool(n), types.BoolValue)
	case types.Int:
		return convert(compileInt(n), types.IntValue)
	case types.Double:
		return convert(compileDouble(n), types.DoubleValue)
	}
	return convert(compileString(n), types.StringValue)
}

// unreachable reports a tree the checker should have rejected.
func unreachable(n node, as string) {
	panic(fmt.Sprintf("expr: checked %T at offset %d cannot be compiled as %s", n, n.pos(), as))
}

func compileBool(n node) fn[bool] {
	return compileShared(n, types.Value.Bool, func(n node) fn[bool] {
		switch n := n.(type) {
		case *literal:
			return constant(n.b)
		case *unary:
			x := compileBool(n.x)
			return func(env Env) (bool, error) {
				v, err := x(env)
				return err == nil && !v, err
			}
		case *call:
			return compileStringTest(n)
		case *binary:
			return compileBinaryBool(n)
		}
		unreachable(n, "bool")
		return nil
	})
}

// compileStringTest compiles starts_with, ends_with and contains, which compare
// UTF-8 bytes and so code points, with no folding of any kind ([OAR-EXPR-22]).
func compileStringTest(n *call) fn[bool] {
	var test func(s, t string) bool
	switch n.fn {
	case builtinStartsWith:
		test = strings.HasPrefix
	case builtinEndsWith:
		test = strings.HasSuffix
	default:
		test = strings.Contains
	}
	return both(compileString(n.args[0]), compileString(n.args[1]), n.at, func(s, t string, _ int) (bool, error) {
		return test(s, t), nil
	})
}

func compileBinaryBool(n *binary) fn[bool] {
	switch n.op {
	case tokLAnd:
		x, y := compileBool(n.x), compileBool(n.y)
		return func(env Env) (bool, error) {
			if v, err := x(env); err != nil || !v {
				return false, err
			}
			return y(env)
		}
	case tokLOr:
		x, y := compileBool(n.x), compileBool(n.y)
		return func(env Env) (bool, error) {
			if v, err := x(env); err != nil || v {
				return v, err
			}
			return y(env)
		}
	case tokIn:
		return compileIn(n)
	}
	x, y := n.x.kind(), n.y.kind()
	switch {
	case x == types.Int && y == types.Int:
		return compare(n.op, compileInt(n.x), compileInt(n.y))
	case x == types.String:
		return compare(n.op, compileString(n.x), compileString(n.y))
	case x == types.Bool:
		return compareBools(n.op, compileBool(n.x), compileBool(n.y))
	}
	return compare(n.op, compileNumber(n.x), compileNumber(n.y))
}

// compileNumber compiles an int or double operand as a double: the promotion of a
// mixed comparison ([OAR-EXPR-10], [OAR-EXPR-11]).
func compileNumber(n node) fn[float64] {
	if n.kind() == types.Int {
		return convert(compileInt(n), func(i int64) float64 { return float64(i) })
	}
	return compileDouble(n)
}

// compare compiles ==, !=, <, <=, > and >= over one ordered type; strings compare
// by byte, which on UTF-8 is by code point. Each operator is a closure of its own, the
// commonest node of a condition evaluated without a further call.
func compare[T cmp.Ordered](op token, x, y fn[T]) fn[bool] {
	switch op {
	case tokEql:
		return func(env Env) (bool, error) { a, b, err := operands(env, x, y); return err == nil && a == b, err }
	case tokNeq:
		return func(env Env) (bool, error) { a, b, err := operands(env, x, y); return err == nil && a != b, err }
	case tokLss:
		return func(env Env) (bool, error) { a, b, err := operands(env, x, y); return err == nil && a < b, err }
	case tokLeq:
		return func(env Env) (bool, error) { a, b, err := operands(env, x, y); return err == nil && a <= b, err }
	case tokGtr:
		return func(env Env) (bool, error) { a, b, err := operands(env, x, y); return err == nil && a > b, err }
	}
	return func(env Env) (bool, error) { a, b, err := operands(env, x, y); return err == nil && a >= b, err }
}

// operands evaluates x, then y unless x raised.
func operands[T any](env Env, x, y fn[T]) (a, b T, err error) {
	if a, err = x(env); err != nil {
		return a, b, err
	}
	b, err = y(env)
	return a, b, err
}

func compareBools(op token, x, y fn[bool]) fn[bool] {
	equal := op == tokEql
	return both(x, y, 0, func(a, b bool, _ int) (bool, error) { return (a == b) == equal, nil })
}

// compileIn compiles membership in a list<string> and key presence in a map
// ([OAR-EXPR-12]).
func compileIn(n *binary) fn[bool] {
	x := compileString(n.x)
	switch n.y.kind() {
	case types.ListString:
		return bothEnv(x, compileStrList(n.y), n.at, has)
	case types.MapStringString:
		return both(x, compileStrMap(n.y), n.at, hasKey[string])
	}
	return both(x, compileMap(n.y), n.at, hasKey[any])
}

// hasKey tests key presence in a map.
func hasKey[V any](key string, m map[string]V, _ int) (bool, error) {
	_, ok := m[key]
	return ok, nil
}

func compileInt(n node) fn[int64] {
	return compileShared(n, types.Value.Int, func(n node) fn[int64] {
		switch n := n.(type) {
		case *literal:
			return constant(n.i)
		case *unary:
			if lit, ok := n.x.(*literal); ok && lit.minInt {
				return constant[int64](math.MinInt64)
			}
			return convertRaising(compileInt(n.x), n.at, negInt)
		case *binary:
			return both(compileInt(n.x), compileInt(n.y), n.at, intOps[n.op])
		case *call:
			return compileSize(n.args[0])
		}
		unreachable(n, "int")
		return nil
	})
}

var intOps = map[token]func(a, b int64, at int) (int64, error){
	tokAdd: addInt, tokSub: subInt, tokMul: mulInt, tokQuo: quoInt, tokRem: remInt,
}

var doubleOps = map[token]func(a, b float64, at int) (float64, error){
	tokAdd: addDouble, tokSub: subDouble, tokMul: mulDouble, tokQuo: quoDouble,
}

// convertRaising applies a unary operation that may raise at offset at.
func convertRaising[T any](f fn[T], at int, op func(v T, at int) (T, error)) fn[T] {
	return func(env Env) (T, error) {
		v, err := f(env)
		if err != nil {
			return v, err
		}
		return op(v, at)
	}
}

// compileSize compiles size(): code points of a string, members of a list or map.
func compileSize(n node) fn[int64] {
	switch n.kind() {
	case types.String:
		return convert(compileString(n), func(s string) int64 { return int64(codepoint.Count(s)) })
	case types.ListString:
		return sizeOfList(compileStrList(n))
	case types.ListMap:
		return sizeOfList(compileMapList(n))
	case types.MapStringString:
		return convert(compileStrMap(n), sizeOfMap[string])
	}
	return convert(compileMap(n), sizeOfMap[any])
}

func sizeOfList[T any](l fn[seq[T]]) fn[int64] {
	return func(env Env) (int64, error) {
		v, err := l(env)
		if err != nil {
			return 0, err
		}
		return v.size(env)
	}
}

func sizeOfMap[V any](m map[string]V) int64 { return int64(len(m)) }

func compileDouble(n node) fn[float64] {
	return compileShared(n, types.Value.Double, func(n node) fn[float64] {
		switch n := n.(type) {
		case *literal:
			return constant(n.d)
		case *unary:
			return convert(compileDouble(n.x), func(d float64) float64 { return -d })
		case *binary:
			return both(compileDouble(n.x), compileDouble(n.y), n.at, doubleOps[n.op])
		}
		unreachable(n, "double")
		return nil
	})
}

func compileString(n node) fn[string] {
	return compileShared(n, types.Value.Str, func(n node) fn[string] {
		switch n := n.(type) {
		case *literal:
			return constant(n.s)
		case *binary:
			return both(compileString(n.x), compileString(n.y), n.at, concat)
		case *index:
			if n.x.kind() == types.MapStringString {
				return both(compileStrMap(n.x), compileString(n.sub), n.at, lookupKey)
			}
			return bothEnv(compileStrList(n.x), compileInt(n.sub), n.at, member[string])
		}
		unreachable(n, "string")
		return nil
	})
}

// lookupKey reads a member of a map<string,string>, raising when it is absent
// ([OAR-EXPR-13]).
func lookupKey(m map[string]string, key string, at int) (string, error) {
	v, ok := m[key]
	if !ok {
		return "", raise("OAR-EXPR-13", at, "key %q is absent from the map<string,string>", clip(key))
	}
	return v, nil
}

func compileStrList(n node) fn[strList] {
	return compileShared(n, func(v types.Value) strList { return strList{vals: v.List()} }, func(n node) fn[strList] {
		lit, ok := n.(*listLit)
		if !ok {
			unreachable(n, "list<string>")
		}
		if vals, ok := constantStrings(lit); ok {
			return constant(strList{vals: vals})
		}
		elems := make([]fn[string], len(lit.elems))
		for i, e := range lit.elems {
			elems[i] = compileString(e)
		}
		return constant(strList{elems: elems})
	})
}

// constantStrings returns the members of a list literal of string literals.
func constantStrings(lit *listLit) ([]string, bool) {
	vals := make([]string, len(lit.elems))
	for i, e := range lit.elems {
		s, ok := e.(*literal)
		if !ok {
			return nil, false
		}
		vals[i] = s.s
	}
	return vals, true
}

func compileMapList(n node) fn[mapList] {
	return compileShared(n, func(v types.Value) mapList { return mapList{vals: v.Maps()} }, func(n node) fn[mapList] {
		lit, ok := n.(*listLit)
		if !ok {
			unreachable(n, "list<map>")
		}
		elems := make([]fn[map[string]any], len(lit.elems))
		for i, e := range lit.elems {
			elems[i] = compileMap(e)
		}
		return constant(mapList{elems: elems})
	})
}

func compileStrMap(n node) fn[map[string]string] {
	return compileShared(n, types.Value.StrMap, func(n node) fn[map[string]string] {
		unreachable(n, "map<string,string>")
		return nil
	})
}

func compileMap(n node) fn[map[string]any] {
	return compileShared(n, types.Value.Map, func(n node) fn[map[string]any] {
		ix, ok := n.(*index)
		if !ok {
			unreachable(n, "map")
		}
		return bothEnv(compileMapList(ix.x), compileInt(ix.sub), ix.at, member[map[string]any])
	})
}
