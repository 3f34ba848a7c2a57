package toolobs

// This file keeps the canonical JSON encoder and fingerprint as they were before the
// work on issue #14, renamed with a ref prefix, so the differential tests in
// fingerprint_test.go catch any byte the optimised encoder writes differently. Numbers
// were not rewritten: the reference writes them with the package's own functions,
// which their tests check. Its errors quote a value as the package's do since, cut to
// diag.MaxValueLen code points.

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/oar-operator/oar-operator/internal/engine/diag"
	"github.com/oar-operator/oar-operator/internal/engine/types"
)

// refFingerprintWith is Fingerprint writing the hashed bytes into scratch, which it
// returns grown for the caller to reuse, so the digest string is its one allocation.
func refFingerprintWith(scratch []byte, tool string, args map[string]any) (string, []byte, error) {
	if tool == "" {
		return "", scratch, nil
	}
	buf := append(scratch[:0], FingerprintDomain...)
	buf = append(buf, 0, '[')
	buf, err := refAppendString(buf, tool)
	if err == nil {
		buf = append(buf, ',')
		buf, err = refAppendObject(buf, args)
	}
	if err != nil {
		return "", scratch, fmt.Errorf("tool_args_fingerprint: %w", err)
	}
	buf = append(buf, ']')
	sum := sha256.Sum256(buf)
	var digest [2 * sha256.Size]byte
	hex.Encode(digest[:], sum[:])
	return string(digest[:]), buf, nil
}

// refCanonicalJSON encodes v as [OAR-FACT-28] defines canonical JSON: no insignificant
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
func refCanonicalJSON(v any) ([]byte, error) {
	return refAppendCanonical(nil, v)
}

func refAppendCanonical(buf []byte, v any) ([]byte, error) {
	switch x := v.(type) {
	case nil:
		return append(buf, "null"...), nil
	case bool:
		return strconv.AppendBool(buf, x), nil
	case string:
		return refAppendString(buf, x)
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
			if buf, err = refAppendCanonical(buf, m); err != nil {
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
			if buf, err = refAppendString(buf, m); err != nil {
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
			if buf, err = refAppendObject(buf, m); err != nil {
				return nil, err
			}
		}
		return append(buf, ']'), nil
	case map[string]any:
		return refAppendObject(buf, x)
	case map[string]string:
		return refAppendObject(buf, x)
	}
	return nil, fmt.Errorf("%w: %T is not a decoded JSON value", ErrNotCanonical, v)
}

// refAppendObject writes m with its keys in code-point order. Byte order of valid UTF-8
// is code-point order, and refAppendString rejects a key that is not valid UTF-8.
func refAppendObject[V any](buf []byte, m map[string]V) ([]byte, error) {
	// An object of a tool call has a few members: sort them in this frame, each with
	// its value, so no key is looked up again.
	var room [16]refMember[V]
	members := room[:0]
	for k, v := range m {
		members = append(members, refMember[V]{k, v})
	}
	refSortMembers(members)
	buf = append(buf, '{')
	for i, mb := range members {
		if i > 0 {
			buf = append(buf, ',')
		}
		var err error
		if buf, err = refAppendString(buf, mb.key); err != nil {
			return nil, err
		}
		buf = append(buf, ':')
		if buf, err = refAppendCanonical(buf, mb.value); err != nil {
			return nil, err
		}
	}
	return append(buf, '}'), nil
}

// refSortMembers sorts members by key. A tool call's objects have a few members, which an
// insertion sort comparing keys in line orders faster than a general sort calling a
// comparison function; a large object goes to slices.SortFunc.
func refSortMembers[V any](members []refMember[V]) {
	if len(members) > 16 {
		slices.SortFunc(members, func(a, b refMember[V]) int { return strings.Compare(a.key, b.key) })
		return
	}
	for i := 1; i < len(members); i++ {
		for j := i; j > 0 && refKeyBefore(members[j].key, members[j-1].key); j-- {
			members[j], members[j-1] = members[j-1], members[j]
		}
	}
}

// refKeyBefore is a < b, deciding in line the usual case of keys that differ in their
// first byte.
func refKeyBefore(a, b string) bool {
	if len(a) > 0 && len(b) > 0 && a[0] != b[0] {
		return a[0] < b[0]
	}
	return a < b
}

// refMember is one member of an object being written.
type refMember[V any] struct {
	key   string
	value V
}

const refHexDigits = "0123456789abcdef"

// refPlain marks the bytes a canonical string holds as they are: printable ASCII but the
// quotation mark and reverse solidus. One table load per byte decides the common case.
var refPlain = func() (t [256]bool) {
	for c := 0x20; c < utf8.RuneSelf; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

// refAppendString writes s as a JSON string, escaping only ", \ and U+0000..U+001F.
func refAppendString(buf []byte, s string) ([]byte, error) {
	buf = append(buf, '"')
	start := 0
	valid := false // the rest of s from the first non-ASCII byte is checked UTF-8
	for i := 0; i < len(s); i++ {
		c := s[i]
		if refPlain[c] {
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
			buf = append(buf, '\\', 'u', '0', '0', refHexDigits[c>>4], refHexDigits[c&0xf])
		}
		start = i + 1
	}
	buf = append(buf, s[start:]...)
	return append(buf, '"'), nil
}
