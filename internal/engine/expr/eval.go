package expr

import (
	"fmt"
	"math"
	"strconv"

	"github.com/oar-operator/oar-operator/internal/engine/types"
)

// RaiseError is a run-time raise: an index out of range or an absent key
// ([OAR-EXPR-13]), a division by zero or a non-finite double result
// ([OAR-EXPR-14]), or an integer overflow ([OAR-EXPR-15]). The engine handles the
// rule per its on_error ([OAR-OPS-3]). Clause and Offset (in code points into the
// condition) say which operation raised.
type RaiseError struct {
	Clause  string
	Offset  int
	Message string
}

// Error renders "[clause] message".
func (e *RaiseError) Error() string { return "[" + e.Clause + "] " + e.Message }

// raise builds a RaiseError for the operation at offset at.
func raise(clause string, at int, format string, args ...any) *RaiseError {
	return &RaiseError{Clause: clause, Offset: at, Message: fmt.Sprintf(format, args...) + " at offset " + strconv.Itoa(at)}
}

// wrongKind reports a provider value whose run-time type is not the declared one,
// a fact-provider failure ([OAR-FACT-26]).
func wrongKind(name string, want, got types.Kind) error {
	return fmt.Errorf("%s: %w", name, &types.TypeError{Want: want, Got: "a value of type " + got.String()})
}

// fn is a compiled sub-expression yielding a T. The compiler builds one per node
// of the checked tree, so evaluation is a walk of typed closures: no reflection,
// no boxing, no allocation unless an operation must build a new value.
type fn[T any] func(Env) (T, error)

func constant[T any](v T) fn[T] {
	return func(Env) (T, error) { return v, nil }
}

// convert applies a total conversion to the result of f.
func convert[T, U any](f fn[T], to func(T) U) fn[U] {
	return func(env Env) (U, error) {
		v, err := f(env)
		if err != nil {
			var zero U
			return zero, err
		}
		return to(v), nil
	}
}

// both evaluates x then y and combines them with op, which may raise at offset at.
func both[A, B, R any](x fn[A], y fn[B], at int, op func(a A, b B, at int) (R, error)) fn[R] {
	return bothEnv(x, y, at, func(_ Env, a A, b B, at int) (R, error) { return op(a, b, at) })
}

// bothEnv is both for an op that evaluates further, such as the members of a list
// literal.
func bothEnv[A, B, R any](x fn[A], y fn[B], at int, op func(env Env, a A, b B, at int) (R, error)) fn[R] {
	return func(env Env) (R, error) {
		a, err := x(env)
		if err != nil {
			var zero R
			return zero, err
		}
		b, err := y(env)
		if err != nil {
			var zero R
			return zero, err
		}
		return op(env, a, b, at)
	}
}

// seq is a list value: a materialised list (a fact, or a literal of constant
// strings), or the members of a list literal, evaluated in order wherever the list
// is used so that building the list never allocates.
type seq[T any] struct {
	vals  []T
	elems []fn[T]
}

// size is the member count; a literal's members are all evaluated, since any of
// them may raise.
func (s seq[T]) size(env Env) (int64, error) {
	if s.elems == nil {
		return int64(len(s.vals)), nil
	}
	for _, e := range s.elems {
		if _, err := e(env); err != nil {
			return 0, err
		}
	}
	return int64(len(s.elems)), nil
}

// member is the member at index i, raising at offset pos when there is none
// ([OAR-EXPR-13], [OAR-EXPR-21]).
func member[T any](env Env, s seq[T], i int64, pos int) (T, error) {
	var m T
	n := len(s.vals)
	if s.elems == nil {
		if i >= 0 && i < int64(n) {
			m = s.vals[i]
		}
	} else {
		n = len(s.elems)
		for j, e := range s.elems {
			v, err := e(env)
			if err != nil {
				return m, err
			}
			if int64(j) == i {
				m = v
			}
		}
	}
	switch {
	case i < 0:
		return m, raise("OAR-EXPR-13", pos, "negative list index %d", i)
	case i >= int64(n):
		return m, raise("OAR-EXPR-13", pos, "list index %d is out of range for a list of %d members", i, n)
	}
	return m, nil
}

// has reports whether x is a member of s ([OAR-EXPR-12]).
func has(env Env, x string, s seq[string], _ int) (bool, error) {
	if s.elems == nil {
		for _, v := range s.vals {
			if v == x {
				return true, nil
			}
		}
		return false, nil
	}
	found := false
	for _, e := range s.elems {
		v, err := e(env)
		if err != nil {
			return false, err
		}
		found = found || v == x
	}
	return found, nil
}

// Integer arithmetic raises on overflow ([OAR-EXPR-15]) and on a zero divisor
// ([OAR-EXPR-14]); division truncates toward zero ([OAR-EXPR-21]).

func addInt(a, b int64, at int) (int64, error) {
	s := a + b
	if (a^s)&(b^s) < 0 {
		return 0, raise("OAR-EXPR-15", at, "integer overflow in %d + %d", a, b)
	}
	return s, nil
}

func subInt(a, b int64, at int) (int64, error) {
	d := a - b
	if (a^b)&(a^d) < 0 {
		return 0, raise("OAR-EXPR-15", at, "integer overflow in %d - %d", a, b)
	}
	return d, nil
}

func mulInt(a, b int64, at int) (int64, error) {
	if a == 0 || b == 0 {
		return 0, nil
	}
	p := a * b
	if p/b != a || a == -1 && b == math.MinInt64 || b == -1 && a == math.MinInt64 {
		return 0, raise("OAR-EXPR-15", at, "integer overflow in %d * %d", a, b)
	}
	return p, nil
}

func quoInt(a, b int64, at int) (int64, error) {
	switch {
	case b == 0:
		return 0, raise("OAR-EXPR-14", at, "division by zero in %d / 0", a)
	case a == math.MinInt64 && b == -1:
		return 0, raise("OAR-EXPR-15", at, "integer overflow in %d / -1", a)
	}
	return a / b, nil
}

func remInt(a, b int64, at int) (int64, error) {
	switch {
	case b == 0:
		return 0, raise("OAR-EXPR-14", at, "modulo by zero in %d %% 0", a)
	case b == -1:
		return 0, nil
	}
	return a % b, nil
}

func negInt(a int64, at int) (int64, error) {
	if a == math.MinInt64 {
		return 0, raise("OAR-EXPR-15", at, "integer overflow in -(%d)", a)
	}
	return -a, nil
}

// Double arithmetic never yields an infinity or a NaN ([OAR-EXPR-14]).

func finite(r, a, b float64, op string, at int) (float64, error) {
	if math.IsInf(r, 0) || math.IsNaN(r) {
		return 0, raise("OAR-EXPR-14", at, "%s %s %s is not a finite double", types.FormatDouble(a), op, types.FormatDouble(b))
	}
	return r, nil
}

func addDouble(a, b float64, at int) (float64, error) { return finite(a+b, a, b, "+", at) }
func subDouble(a, b float64, at int) (float64, error) { return finite(a-b, a, b, "-", at) }
func mulDouble(a, b float64, at int) (float64, error) { return finite(a*b, a, b, "*", at) }

func quoDouble(a, b float64, at int) (float64, error) {
	if b == 0 {
		return 0, raise("OAR-EXPR-14", at, "division by zero in %s / %s", types.FormatDouble(a), types.FormatDouble(b))
	}
	return finite(a/b, a, b, "/", at)
}

func concat(a, b string, _ int) (string, error) { return a + b, nil }
