// Package types holds the OAR fact types of section 5.2 ([OAR-FACT-22]), the run-time
// value that carries them, and the conversions every provider value passes through
// ([OAR-FACT-26]) before a condition, selector, copy, counter scope or transform reads it.
package types

import (
	"bytes"
	"encoding/json"
	"fmt"
	"iter"
	"math"
	"strconv"
	"strings"

	"github.com/oar-operator/oar-operator/internal/engine/codepoint"
)

// Kind is one of the eight fact types of [OAR-FACT-22].
type Kind uint8

// The fact types. Invalid is the zero Kind and never a declared type.
const (
	Invalid Kind = iota
	Bool
	Int
	Double
	String
	ListString
	MapStringString
	ListMap
	Map
)

var kindNames = [...]string{
	Invalid:         "invalid",
	Bool:            "bool",
	Int:             "int",
	Double:          "double",
	String:          "string",
	ListString:      "list<string>",
	MapStringString: "map<string,string>",
	ListMap:         "list<map>",
	Map:             "map",
}

// String is the spelling the specification uses.
func (k Kind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return "invalid"
}

// Scalar reports whether k is bool, int, double or string — the only types an
// observation function may take or return ([OAR-FACT-27]).
func (k Kind) Scalar() bool { return k >= Bool && k <= String }

// Aggregate reports whether k is a list or map type.
func (k Kind) Aggregate() bool { return k >= ListString && k <= Map }

// ParseKind reads a fact type spelling. Whitespace is not allowed inside it.
func ParseKind(s string) (Kind, bool) {
	for k, name := range kindNames {
		if k != int(Invalid) && name == s {
			return Kind(k), true
		}
	}
	return Invalid, false
}

// Signature is the type of a one-argument observation function, (Arg) -> Result.
type Signature struct {
	Arg, Result Kind
}

// String renders the signature as the specification writes it.
func (s Signature) String() string { return "(" + s.Arg.String() + ") -> " + s.Result.String() }

// ParseSignature reads "(T) -> R" with T and R scalar kinds; spaces around the
// tokens are insignificant.
func ParseSignature(s string) (Signature, bool) {
	t := strings.TrimSpace(s)
	if !strings.HasPrefix(t, "(") {
		return Signature{}, false
	}
	closeAt := strings.Index(t, ")")
	if closeAt < 0 {
		return Signature{}, false
	}
	arg, okArg := ParseKind(strings.TrimSpace(t[1:closeAt]))
	rest := strings.TrimSpace(t[closeAt+1:])
	if !strings.HasPrefix(rest, "->") {
		return Signature{}, false
	}
	res, okRes := ParseKind(strings.TrimSpace(rest[2:]))
	if !okArg || !okRes || !arg.Scalar() || !res.Scalar() {
		return Signature{}, false
	}
	return Signature{Arg: arg, Result: res}, true
}

// Value is a typed run-time value. It is small and passed by value; aggregates
// are held by reference and never copied.
type Value struct {
	Kind Kind
	num  uint64 // bool (0/1), int (two's complement) or double bits
	str  string
	// agg is a []string or *[]string, a map[string]string, a []map[string]any or
	// *[]map[string]any, or a map[string]any.
	agg any
}

// Constructors.
func BoolValue(b bool) Value {
	if b {
		return Value{Kind: Bool, num: 1}
	}
	return Value{Kind: Bool}
}
func IntValue(i int64) Value                         { return Value{Kind: Int, num: uint64(i)} }
func DoubleValue(d float64) Value                    { return Value{Kind: Double, num: math.Float64bits(d)} }
func StringValue(s string) Value                     { return Value{Kind: String, str: s} }
func ListStringValue(l []string) Value               { return Value{Kind: ListString, agg: l} }
func MapStringStringValue(m map[string]string) Value { return Value{Kind: MapStringString, agg: m} }
func ListMapValue(l []map[string]any) Value          { return Value{Kind: ListMap, agg: l} }
func MapValue(m map[string]any) Value                { return Value{Kind: Map, agg: m} }

// ListStringAt and ListMapAt hold a list through a pointer to its slice header, which
// the caller keeps unchanged while the value is in use: unlike a slice, a pointer goes
// into a Value without an allocation, so an evaluation can convert lists into storage
// it reuses.
func ListStringAt(l *[]string) Value      { return Value{Kind: ListString, agg: l} }
func ListMapAt(l *[]map[string]any) Value { return Value{Kind: ListMap, agg: l} }

// Accessors. Each returns the zero value when v holds another kind.
func (v Value) Bool() bool      { return v.Kind == Bool && v.num != 0 }
func (v Value) Int() int64      { return int64(v.num) }
func (v Value) Double() float64 { return math.Float64frombits(v.num) }
func (v Value) Str() string     { return v.str }
func (v Value) List() []string {
	switch l := v.agg.(type) {
	case []string:
		return l
	case *[]string:
		return *l
	}
	return nil
}
func (v Value) StrMap() map[string]string {
	m, _ := v.agg.(map[string]string)
	return m
}
func (v Value) Maps() []map[string]any {
	switch l := v.agg.(type) {
	case []map[string]any:
		return l
	case *[]map[string]any:
		return *l
	}
	return nil
}
func (v Value) Map() map[string]any { m, _ := v.agg.(map[string]any); return m }

// Zero is the zero value of k ([OAR-FACT-25]): false, 0, 0.0, "", or an empty aggregate.
func Zero(k Kind) Value { return Value{Kind: k} }

// IsZero reports whether v is its type's zero value, which is how copy conditionals
// decide ([OAR-COPY-3]).
func (v Value) IsZero() bool {
	switch v.Kind {
	case Bool, Int:
		return v.num == 0
	case Double:
		return v.Double() == 0
	case String:
		return v.str == ""
	case ListString:
		return len(v.List()) == 0
	case MapStringString:
		return len(v.StrMap()) == 0
	case ListMap:
		return len(v.Maps()) == 0
	case Map:
		return len(v.Map()) == 0
	}
	return true
}

// Size is the member count of an aggregate or the code-point length of a string.
func (v Value) Size() int64 {
	switch v.Kind {
	case String:
		return int64(codepoint.Count(v.str))
	case ListString:
		return int64(len(v.List()))
	case MapStringString:
		return int64(len(v.StrMap()))
	case ListMap:
		return int64(len(v.Maps()))
	case Map:
		return int64(len(v.Map()))
	}
	return 0
}

// Interface returns v as a plain Go value suitable for encoding/json.
func (v Value) Interface() any {
	switch v.Kind {
	case Bool:
		return v.Bool()
	case Int:
		return v.Int()
	case Double:
		return v.Double()
	case String:
		return v.str
	case ListString:
		if l := v.List(); l != nil {
			return l
		}
		return []string{}
	case MapStringString:
		if m := v.StrMap(); m != nil {
			return m
		}
		return map[string]string{}
	case ListMap:
		if l := v.Maps(); l != nil {
			return l
		}
		return []map[string]any{}
	case Map:
		if m := v.Map(); m != nil {
			return m
		}
		return map[string]any{}
	}
	return nil
}

// FormatDouble renders d as [OAR-COPY-10] requires: the shortest decimal that
// round-trips, never in exponent notation, with a leading zero, ".0" when there is
// no fractional part, and 0.0 for both zeroes.
func FormatDouble(d float64) string {
	var buf [32]byte
	return string(AppendDouble(buf[:0], d))
}

// AppendDouble appends FormatDouble(d) to b.
func AppendDouble(b []byte, d float64) []byte {
	if d == 0 {
		return append(b, "0.0"...)
	}
	start := len(b)
	b = strconv.AppendFloat(b, d, 'f', -1, 64)
	if bytes.IndexByte(b[start:], '.') < 0 {
		b = append(b, ".0"...)
	}
	return b
}

// TypeError describes a provider value of the wrong run-time type ([OAR-FACT-26]).
type TypeError struct {
	Want Kind
	Got  string
}

func (e *TypeError) Error() string {
	return fmt.Sprintf("expected %s, got %s", e.Want, e.Got)
}

// DescribeJSON names the JSON type of a decoded value for a message.
func DescribeJSON(v any) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean " + strconv.FormatBool(x)
	case json.Number:
		return "number " + x.String()
	case float64:
		return "number " + strconv.FormatFloat(x, 'g', -1, 64)
	case int, int64, int32:
		return fmt.Sprintf("number %d", x)
	case string:
		return "string " + strconv.Quote(x)
	case []any, []string:
		return "array"
	case map[string]any, map[string]string:
		return "object"
	}
	return fmt.Sprintf("%T", v)
}

// FromJSON converts a decoded JSON value (numbers as json.Number) to a Value of kind
// k, or reports a TypeError. It never coerces: a string is not an int, a fractional
// number is not an int, and a non-finite double is refused ([OAR-FACT-23]).
func FromJSON(k Kind, v any) (Value, error) {
	bad := func() (Value, error) { return Value{}, &TypeError{Want: k, Got: DescribeJSON(v)} }
	switch k {
	case Bool:
		if b, ok := v.(bool); ok {
			return BoolValue(b), nil
		}
	case Int:
		if i, ok := AsInt(v); ok {
			return IntValue(i), nil
		}
	case Double:
		if d, ok := AsDouble(v); ok {
			if math.IsInf(d, 0) || math.IsNaN(d) {
				return Value{}, &TypeError{Want: k, Got: "a non-finite number"}
			}
			return DoubleValue(d), nil
		}
	case String:
		if s, ok := v.(string); ok {
			return StringValue(s), nil
		}
	case ListString:
		switch l := v.(type) {
		case []string:
			return ListStringValue(l), nil
		case []any:
			out := make([]string, len(l))
			for i, m := range l {
				s, ok := m.(string)
				if !ok {
					return Value{}, &TypeError{Want: k, Got: fmt.Sprintf("an array whose member %d is %s", i, DescribeJSON(m))}
				}
				out[i] = s
			}
			return ListStringValue(out), nil
		}
	case MapStringString:
		switch m := v.(type) {
		case map[string]string:
			return MapStringStringValue(m), nil
		case map[string]any:
			out := make(map[string]string, len(m))
			for key, mv := range m {
				s, ok := mv.(string)
				if !ok {
					return Value{}, &TypeError{Want: k, Got: fmt.Sprintf("an object whose member %q is %s", key, DescribeJSON(mv))}
				}
				out[key] = s
			}
			return MapStringStringValue(out), nil
		}
	case ListMap:
		switch l := v.(type) {
		case []map[string]any:
			return ListMapValue(l), nil
		case []any:
			out := make([]map[string]any, len(l))
			for i, m := range l {
				o, ok := m.(map[string]any)
				if !ok {
					return Value{}, &TypeError{Want: k, Got: fmt.Sprintf("an array whose member %d is %s", i, DescribeJSON(m))}
				}
				out[i] = o
			}
			return ListMapValue(out), nil
		}
	case Map:
		if m, ok := v.(map[string]any); ok {
			return MapValue(m), nil
		}
	}
	return bad()
}

// AsInt reads an integral JSON number that fits 64 bits. Fractional or exponent
// spellings are not integers.
func AsInt(v any) (int64, bool) {
	switch x := v.(type) {
	case json.Number:
		i, err := strconv.ParseInt(string(x), 10, 64)
		return i, err == nil
	case int:
		return int64(x), true
	case int64:
		return x, true
	case int32:
		return int64(x), true
	}
	return 0, false
}

// AsDouble reads any JSON number as binary64.
func AsDouble(v any) (float64, bool) {
	switch x := v.(type) {
	case json.Number:
		d, err := strconv.ParseFloat(string(x), 64)
		if err != nil {
			if ne, ok := err.(*strconv.NumError); ok && ne.Err == strconv.ErrRange {
				return d, true
			}
			return 0, false
		}
		return d, true
	case float64:
		return x, true
	case float32:
		return float64(x), true
	case int:
		return float64(x), true
	case int64:
		return float64(x), true
	}
	return 0, false
}

// Symbol is one entry of the closed, typed fact environment ([OAR-FACT-1]): a fact,
// or an observation function ([OAR-FACT-9]) when Func is set.
type Symbol struct {
	Name string
	// Func marks an observation function (Arg) -> Type.
	Func bool
	// Type is the fact type, or the function's result type.
	Type Kind
	// Arg is the function's argument type.
	Arg Kind
	// RuleRef marks fire_count_of and breaker_count_of, whose argument must be a
	// string literal naming a loaded rule ([OAR-FIRE-11]).
	RuleRef bool
	// ID is the slot the engine assigned; evaluation addresses facts by it.
	ID int
}

// Symbols looks names up in a fact environment.
type Symbols interface {
	Lookup(name string) (Symbol, bool)
}

// Listing is a fact environment that can also list its entries, so a diagnostic
// about an unknown name can suggest a declared one.
type Listing interface {
	Symbols
	// All yields every entry, facts and observation functions.
	All() iter.Seq[Symbol]
}
