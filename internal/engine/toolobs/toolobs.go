// Package toolobs adapts a host's tool call to the observations of the tool profile
// (section 5.4 of the OAR specification, restated in vocabulary.md): the canonical
// JSON and the tool_args_fingerprint of [OAR-FACT-28], and the observation functions
// tool_arg_string, tool_arg_int and tool_arg_bool.
//
// Every value it returns is what [OAR-FACT-25] asks of a fact with nothing to report —
// an empty fingerprint without a tool call, a zero argument when the argument is
// absent or of another type — and every error is a fact-provider failure the engine
// routes to the consuming rule's on_error ([OAR-FACT-26], [OAR-FACT-28]).
package toolobs

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/big"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/oar-operator/oar-operator/internal/engine/diag"
	"github.com/oar-operator/oar-operator/internal/engine/types"
)

// FingerprintDomain is the prefix hashed before U+0000 and the canonical JSON of
// [tool, tool_args] ([OAR-FACT-28]).
const FingerprintDomain = "oar-tool-1.0"

// ErrNotCanonical marks a value canonical JSON cannot represent: a non-finite
// number, an integer binary64 cannot hold exactly, a string that is not UTF-8, or a Go
// type that is not decoded JSON.
var ErrNotCanonical = errors.New("no canonical JSON form")

// Fingerprint is tool_args_fingerprint ([OAR-FACT-28]): the lowercase hexadecimal
// SHA-256 digest of the UTF-8 bytes of "oar-tool-1.0", U+0000 and the canonical JSON
// array [tool, args]. An empty tool name means there is no tool call, whose
// fingerprint is empty. A nil args is the empty object.
func Fingerprint(tool string, args map[string]any) (string, error) {
	fp, _, err := FingerprintWith(nil, tool, args)
	return fp, err
}

// FingerprintWith is Fingerprint writing the hashed bytes into scratch, which it
// returns grown for the caller to reuse, so the digest string is its one allocation.
func FingerprintWith(scratch []byte, tool string, args map[string]any) (string, []byte, error) {
	if tool == "" {
		return "", scratch, nil
	}
	buf := append(scratch[:0], FingerprintDomain...)
	buf = append(buf, 0, '[')
	buf, err := appendString(buf, tool)
	if err == nil {
		buf = append(buf, ',')
		buf, err = appendObject(buf, args)
	}
	if err != nil {
		return "", scratch, fmt.Errorf("tool_args_fingerprint: %w", err)
	}
	buf = append(buf, ']')
	return hexDigest(sha256.Sum256(buf)), buf, nil
}

// hexDigest is sum in lowercase hexadecimal, written four bytes at a time: their
// nibbles are spread one to a byte of a word, most significant first, and each
// becomes '0' + n, plus 'a' - '0' - 10 when n > 9, which is when n + 6 carries into
// bit 4.
func hexDigest(sum [sha256.Size]byte) string {
	const nibbles, ones = 0x0f0f0f0f0f0f0f0f, 0x0101010101010101
	var digest [2 * sha256.Size]byte
	for i := 0; i < len(sum); i += 4 {
		x := uint64(binary.BigEndian.Uint32(sum[i:]))
		x = (x<<16 | x) & 0x0000ffff0000ffff
		x = (x<<8 | x) & 0x00ff00ff00ff00ff
		x = (x<<4 | x) & nibbles
		x += ones*'0' + (x+ones*6)>>4&ones*('a'-'0'-10)
		binary.BigEndian.PutUint64(digest[2*i:], x)
	}
	return string(digest[:])
}

// CanonicalJSON encodes v as [OAR-FACT-28] defines canonical JSON: no insignificant
// whitespace; object keys sorted by Unicode code point; strings written as their code
// points, escaping only quotation mark, reverse solidus and U+0000 to U+001F, the last
// always as lowercase \u00xx; every number in the decimal form of [OAR-COPY-10] (so 5
// is 5.0); arrays in order. v is decoded JSON — map[string]any, []any, string, bool,
// nil, json.Number, float64, int or int64 — or []string, map[string]string or
// []map[string]any. A nil map is {} and a nil slice [].
//
// An integer, whether an int, an int64 or a json.Number spelled as one (an optional
// minus and digits only), must convert to binary64 without losing its value; a number
// must be finite; a string must be valid UTF-8. Otherwise the result is an error
// wrapping ErrNotCanonical. A json.Number with a fraction or an exponent is a double
// and is rounded to the nearest binary64.
func CanonicalJSON(v any) ([]byte, error) {
	return appendCanonical(nil, v)
}

func appendCanonical(buf []byte, v any) ([]byte, error) {
	switch x := v.(type) {
	case nil:
		return append(buf, "null"...), nil
	case bool:
		return strconv.AppendBool(buf, x), nil
	case string:
		return appendString(buf, x)
	case json.Number:
		if out, ok := appendSmallInt(buf, string(x)); ok {
			return out, nil
		}
		d, err := numberValue(x)
		if err != nil {
			return nil, err
		}
		return types.AppendDouble(buf, d), nil
	case float64:
		if math.IsInf(x, 0) || math.IsNaN(x) {
			return nil, fmt.Errorf("%w: non-finite number %v", ErrNotCanonical, x)
		}
		return types.AppendDouble(buf, x), nil
	case int:
		return appendInt(buf, int64(x))
	case int64:
		return appendInt(buf, x)
	case []any:
		buf = append(buf, '[')
		for i, m := range x {
			if i > 0 {
				buf = append(buf, ',')
			}
			var err error
			if buf, err = appendCanonical(buf, m); err != nil {
				return nil, err
			}
		}
		return append(buf, ']'), nil
	case []string:
		buf = append(buf, '[')
		for i, m := range x {
			if i > 0 {
				buf = append(buf, ',')
			}
			var err error
			if buf, err = appendString(buf, m); err != nil {
				return nil, err
			}
		}
		return append(buf, ']'), nil
	case []map[string]any:
		buf = append(buf, '[')
		for i, m := range x {
			if i > 0 {
				buf = append(buf, ',')
			}
			var err error
			if buf, err = appendObject(buf, m); err != nil {
				return nil, err
			}
		}
		return append(buf, ']'), nil
	case map[string]any:
		return appendObject(buf, x)
	case map[string]string:
		return appendObject(buf, x)
	}
	return nil, fmt.Errorf("%w: %T is not a decoded JSON value", ErrNotCanonical, v)
}

// appendObject writes m with its keys in code-point order. Byte order of valid UTF-8
// is code-point order, and appendString rejects a key that is not valid UTF-8.
func appendObject[V any](buf []byte, m map[string]V) ([]byte, error) {
	if len(m) > smallObject {
		return appendLargeObject(buf, m)
	}
	// An object of a tool call has a few members: gather them in arrays of this
	// frame, which the stores reach without a write barrier, and sort their indices,
	// so neither a key nor a value is moved or looked up again.
	var keys [smallObject]string
	var values [smallObject]V
	var order [smallObject]uint8
	n := 0
	for k, v := range m {
		keys[n], values[n] = k, v
		// Insertion sort: shift the indices of greater keys up by one.
		j := n
		for ; j > 0 && keyBefore(k, keys[order[j-1]]); j-- {
			order[j] = order[j-1]
		}
		order[j] = uint8(n)
		n++
	}
	buf = append(buf, '{')
	for i, o := range order[:n] {
		if i > 0 {
			buf = append(buf, ',')
		}
		var err error
		if buf, err = appendString(buf, keys[o]); err != nil {
			return nil, err
		}
		buf = append(buf, ':')
		if buf, err = appendCanonical(buf, values[o]); err != nil {
			return nil, err
		}
	}
	return append(buf, '}'), nil
}

// smallObject is the most members appendObject sorts by insertion in its own frame;
// a tool call's objects have fewer.
const smallObject = 16

// appendLargeObject is appendObject for an object of more than smallObject members.
func appendLargeObject[V any](buf []byte, m map[string]V) ([]byte, error) {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	buf = append(buf, '{')
	for i, k := range keys {
		if i > 0 {
			buf = append(buf, ',')
		}
		var err error
		if buf, err = appendString(buf, k); err != nil {
			return nil, err
		}
		buf = append(buf, ':')
		if buf, err = appendCanonical(buf, m[k]); err != nil {
			return nil, err
		}
	}
	return append(buf, '}'), nil
}

// keyBefore is a < b, deciding in line the usual case of keys that differ in their
// first byte.
func keyBefore(a, b string) bool {
	if len(a) > 0 && len(b) > 0 && a[0] != b[0] {
		return a[0] < b[0]
	}
	return a < b
}

const hexDigits = "0123456789abcdef"

// plain marks the bytes a canonical string holds as they are: printable ASCII but the
// quotation mark and reverse solidus. appendEscaped reads it byte by byte; plainWord
// tests the same bytes eight at a time.
var plain = func() (t [256]bool) {
	for c := 0x20; c < utf8.RuneSelf; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

// appendString writes s as a JSON string, escaping only ", \ and U+0000..U+001F.
func appendString(buf []byte, s string) ([]byte, error) {
	if !allPlain(s) {
		return appendEscaped(buf, s)
	}
	buf = append(buf, '"')
	buf = append(buf, s...)
	return append(buf, '"'), nil
}

// appendEscaped is appendString for a string with a byte that is not plain.
func appendEscaped(buf []byte, s string) ([]byte, error) {
	buf = append(buf, '"')
	start := 0
	valid := false // the rest of s from the first non-ASCII byte is checked UTF-8
	for i := 0; i < len(s); i++ {
		c := s[i]
		if plain[c] {
			continue
		}
		if c >= utf8.RuneSelf {
			if !valid && !utf8.ValidString(s[i:]) {
				return nil, fmt.Errorf("%w: string %q is not valid UTF-8", ErrNotCanonical, diag.Truncate(s))
			}
			valid = true
			continue
		}
		buf = append(buf, s[start:i]...)
		switch c {
		case '"', '\\':
			buf = append(buf, '\\', c)
		default:
			buf = append(buf, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
		}
		start = i + 1
	}
	buf = append(buf, s[start:]...)
	return append(buf, '"'), nil
}

// allPlain reports whether every byte of s is plain, testing eight bytes at a time:
// a string of 8 bytes or more in words, the last overlapping the one before it; a
// shorter one as one word that repeats some of its bytes and pads with 'a'.
func allPlain(s string) bool {
	n := len(s)
	switch {
	case n >= 8:
		for i := 0; i < n-8; i += 8 {
			if !plainWord(word64(s[i : i+8])) {
				return false
			}
		}
		return plainWord(word64(s[n-8:]))
	case n >= 4:
		return plainWord(word32(s[:4]) | word32(s[n-4:])<<32)
	case n > 0:
		// s[0], s[n/2] and s[n-1] are every byte of a string of 1 to 3 bytes.
		return plainWord(uint64(s[0]) | uint64(s[n/2])<<8 | uint64(s[n-1])<<16 | 0x6161616161<<24)
	}
	return true
}

// plainWord reports whether the eight bytes of w are plain: none has its high bit
// set, is below 0x20 or is a quotation mark or a reverse solidus, which XOR to zero.
// When every byte is plain, no subtraction borrows and no high bit is set; a byte
// that is not sets one.
func plainWord(w uint64) bool {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	return (w|(w-ones*0x20)|(w^ones*'"'-ones)|(w^ones*'\\'-ones))&highs == 0
}

// word64 is the first eight bytes of s, little-endian.
func word64(s string) uint64 {
	s = s[:8]
	return uint64(s[0]) | uint64(s[1])<<8 | uint64(s[2])<<16 | uint64(s[3])<<24 |
		uint64(s[4])<<32 | uint64(s[5])<<40 | uint64(s[6])<<48 | uint64(s[7])<<56
}

// word32 is the first four bytes of s, little-endian.
func word32(s string) uint64 {
	s = s[:4]
	return uint64(s[0]) | uint64(s[1])<<8 | uint64(s[2])<<16 | uint64(s[3])<<24
}

// appendSmallInt writes a JSON integer of at most 15 digits, which binary64 holds
// exactly, in the form AppendDouble gives its value: its digits and ".0", and 0.0 for
// -0. It reports false for any other spelling, which numberValue then reads.
func appendSmallInt(buf []byte, s string) ([]byte, bool) {
	digits := strings.TrimPrefix(s, "-")
	if len(digits) == 0 || len(digits) > 15 || (len(digits) > 1 && digits[0] == '0') {
		return buf, false
	}
	for i := 0; i < len(digits); i++ {
		if digits[i] < '0' || digits[i] > '9' {
			return buf, false
		}
	}
	if digits == "0" {
		return append(buf, "0.0"...), true
	}
	return append(append(buf, s...), ".0"...), true
}

// appendInt writes an integer as the double it converts to exactly.
func appendInt(buf []byte, i int64) ([]byte, error) {
	if !exactInt(i) {
		return nil, fmt.Errorf("%w: integer %d has no exact binary64 value", ErrNotCanonical, i)
	}
	return types.AppendDouble(buf, float64(i)), nil
}

// exactInt reports whether float64(i) is i. The conversion rounds; it is exact when
// converting back gives i. 2^63 has no int64, so a value that rounds up to it is
// never exact, and converting it back is not defined.
func exactInt(i int64) bool {
	d := float64(i)
	return d != 1<<63 && int64(d) == i
}

// numberValue reads a json.Number as the binary64 its canonical form writes.
func numberValue(n json.Number) (float64, error) {
	s := string(n)
	if !isJSONNumber(s) {
		return 0, fmt.Errorf("%w: malformed number %q", ErrNotCanonical, diag.Truncate(s))
	}
	if strings.ContainsAny(s, ".eE") {
		// A double: the nearest binary64, which is 0 for an underflow and
		// infinite, and refused, for an overflow.
		d, err := strconv.ParseFloat(s, 64)
		if err != nil || math.IsInf(d, 0) {
			return 0, fmt.Errorf("%w: number %s is not a finite binary64", ErrNotCanonical, diag.Truncate(s))
		}
		return d, nil
	}
	if i, err := strconv.ParseInt(s, 10, 64); err == nil {
		if !exactInt(i) {
			return 0, fmt.Errorf("%w: integer %d has no exact binary64 value", ErrNotCanonical, i)
		}
		return float64(i), nil
	}
	// Beyond int64: exact only when the integer is itself a binary64 value, which
	// needs at most 309 digits.
	if len(strings.TrimPrefix(s, "-")) > 309 {
		return 0, fmt.Errorf("%w: integer of %d digits is not a finite binary64", ErrNotCanonical, len(s))
	}
	b, _ := new(big.Int).SetString(s, 10)
	d, acc := new(big.Float).SetInt(b).Float64()
	if acc != big.Exact || math.IsInf(d, 0) {
		return 0, fmt.Errorf("%w: integer %s has no exact binary64 value", ErrNotCanonical, diag.Truncate(s))
	}
	return d, nil
}

// isJSONNumber reports whether s is a number by the JSON grammar, so spellings such
// as "Inf", "0x10" or "1_000" that strconv accepts are refused.
func isJSONNumber(s string) bool {
	i := 0
	digits := func() int {
		n := 0
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
			n++
		}
		return n
	}
	if i < len(s) && s[i] == '-' {
		i++
	}
	if n := digits(); n == 0 || n > 1 && s[i-n] == '0' {
		return false
	}
	if i < len(s) && s[i] == '.' {
		i++
		if digits() == 0 {
			return false
		}
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			i++
		}
		if digits() == 0 {
			return false
		}
	}
	return i == len(s)
}

// ArgString is tool_arg_string: the named argument when it is a string, and the empty
// string when it is absent or of another type.
func ArgString(args map[string]any, name string) string {
	s, _ := args[name].(string)
	return s
}

// ArgInt is tool_arg_int: the named argument when it is an integer — a JSON number
// with an integral spelling (json.Number "5", not "5.0" or "5e0"), or an int or
// int64 — and zero otherwise. An integer outside int64 is an error, not a zero: the
// argument is an integer the function cannot return without truncating it
// ([OAR-FACT-23]), so a limit such as tool_arg_int("amount") > 1000 is never passed
// by a larger amount.
func ArgInt(args map[string]any, name string) (int64, error) {
	v := args[name]
	if i, ok := types.AsInt(v); ok {
		return i, nil
	}
	if n, ok := v.(json.Number); ok {
		if _, err := strconv.ParseInt(string(n), 10, 64); errors.Is(err, strconv.ErrRange) {
			return 0, fmt.Errorf("tool argument %q is the integer %s, outside the 64-bit signed range", diag.Truncate(name), diag.Truncate(string(n)))
		}
	}
	return 0, nil
}

// ArgBool is tool_arg_bool: the named argument when it is a boolean, and false
// otherwise.
func ArgBool(args map[string]any, name string) bool {
	b, _ := args[name].(bool)
	return b
}
