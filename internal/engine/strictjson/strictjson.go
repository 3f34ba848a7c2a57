// Package strictjson decodes JSON in one pass, producing exactly what engine.DecodeJSON's
// reference path (encoding/json with UseNumber, then its duplicate-key and depth scan)
// produces: map[string]any, []any (non-nil when empty), string, json.Number, bool and
// nil. It reports no errors: it gives up, returning false, on anything that path would
// refuse (a syntax error, a duplicate key, nesting past MaxDepth, trailing data) and on
// invalid UTF-8 in a string, which that path replaces rune by rune. Its callers then take
// the reference path, so every verdict and message stays encoding/json's. It exists
// because the engine sidecar decodes one occurrence per request, and encoding/json's
// reflection plus the separate key scan cost most of a request's allocations. The
// differential tests that hold it to the reference path live beside that path:
// engine's FuzzDecodeJSON and occurrence's FuzzDecode.
package strictjson

import (
	"bytes"
	"encoding/json"
	"slices"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/oar-operator/oar-operator/internal/engine/codepoint"
)

// MaxDepth bounds nesting so no document can exhaust the stack: a value deeper than
// this is refused.
const MaxDepth = 256

// Decoder reads one JSON text. Its methods skip the whitespace before what they read.
type Decoder struct {
	data []byte
	pos  int
	// scratch holds the unescaped bytes of a string with escape sequences.
	scratch []byte
	// text is data as one string when strings without escapes are cut from it rather
	// than copied one by one, and shared what the documents decoded with it share
	// (Shared); "" and nil otherwise.
	text   string
	shared *Shared
}

// NewDecoder returns a decoder at the start of data.
func NewDecoder(data []byte) *Decoder { return &Decoder{data: data} }

// Decode returns the value data holds and true, or false when the reference path must
// decide.
func Decode(data []byte) (any, bool) {
	d := Decoder{data: data}
	v, ok := d.Value(0)
	return v, ok && d.End()
}

// Shared decodes documents that its caller keeps whole and together, and never
// modifies, as the admission webhook keeps a RulePack's rules: every string and key
// without escapes is a substring of one copy of its document rather than a copy of its
// own, a short string value met again in any of the documents is boxed (made an any)
// once, and a small array or object met again, byte for byte, is the one decoded
// first, so decoding a set of similar documents allocates a fraction of what Decode
// does. A string kept alone keeps all of its document in memory, and a shared one the
// document it was first met in. A Shared is not for concurrent use; its zero value is
// ready.
type Shared struct {
	// boxes holds the string values met so far, boxed, and values the small arrays
	// and objects by their JSON text; each holds up to sharedMax.
	boxes, values map[string]any
	// members is how many members the last document's object had: the room the next
	// one's is made with, so that a set of similar documents does not grow each map.
	members int
	// scratch is the decoders' scratch, passed from one to the next.
	scratch []byte
}

const (
	// sharedMax bounds the string values and the small arrays and objects a Shared
	// keeps.
	sharedMax = 4096
	// sharedStringMax is the longest string boxed once: a longer one is seldom met
	// again, and costs more to look up.
	sharedStringMax = 64
	// sharedTextMax is the longest JSON text of an array or object shared, and
	// sharedDepthMax the deepest one: nesting no deeper than half its text, none is
	// refused for depth where it is met again (MaxDepth).
	sharedTextMax  = 128
	sharedDepthMax = 8
)

// Decode is Decode for a document kept with the others decoded by s.
func (s *Shared) Decode(data []byte) (any, bool) {
	if s.boxes == nil {
		s.boxes, s.values = map[string]any{}, map[string]any{}
	}
	d := Decoder{data: data, text: string(data), shared: s, scratch: s.scratch}
	v, ok := d.Value(0)
	s.scratch = d.scratch
	return v, ok && d.End()
}

// box returns the string value str, boxed once per Shared.
func (s *Shared) box(str string) any {
	if v, ok := s.boxes[str]; ok {
		return v
	}
	v := any(str)
	if len(s.boxes) < sharedMax {
		s.boxes[str] = v
	}
	return v
}

// composite reads the array or object at depth (at least 1), the one decoded before
// when its text was.
func (d *Decoder) composite(depth int) (any, bool) {
	start, end := d.pos, d.smallEnd()
	if end > 0 {
		if v, ok := d.shared.values[d.text[start:end]]; ok {
			d.pos = end
			return v, true
		}
	}
	var v any
	var ok bool
	if d.data[start] == '{' {
		v, ok = d.object(depth)
	} else {
		v, ok = d.array(depth)
	}
	if ok && end > 0 && d.pos == end && len(d.shared.values) < sharedMax {
		d.shared.values[d.text[start:end]] = v
	}
	return v, ok
}

// smallEnd returns where the array or object at pos ends, when it ends within
// sharedTextMax bytes, or -1. It only counts brackets outside strings: the decoder
// judges the text, and a text it decoded ends where smallEnd says.
func (d *Decoder) smallEnd() int {
	t := d.data[d.pos:min(len(d.data), d.pos+sharedTextMax)]
	open, inString := 0, false
	for i := 0; i < len(t); i++ {
		switch c := t[i]; {
		case inString && c == '\\':
			i++
		case c == '"':
			inString = !inString
		case inString:
		case c == '[' || c == '{':
			open++
		case c == ']' || c == '}':
			if open--; open == 0 {
				return d.pos + i + 1
			}
		}
	}
	return -1
}

// End reports whether only whitespace is left.
func (d *Decoder) End() bool {
	d.space()
	return d.pos == len(d.data)
}

// Value reads the value at depth (0 for the document itself).
func (d *Decoder) Value(depth int) (any, bool) { return d.value(depth) }

// String reads a string value.
func (d *Decoder) String() (string, bool) {
	d.space()
	if d.pos >= len(d.data) || d.data[d.pos] != '"' {
		return "", false
	}
	return d.str()
}

// Object reads an object at depth, calling member with each key when the decoder is
// at its value: member must read the value (at depth+1) and return true, or return
// false to give up. The key's bytes are valid until member reads a string, so it
// looks at the key first (a switch on string(key) copies nothing). member sees
// duplicate keys, which it must refuse.
func (d *Decoder) Object(depth int, member func(key []byte) bool) bool {
	if depth > MaxDepth || !d.open('{') {
		return false
	}
	if d.closes('}') {
		return true
	}
	for {
		d.space()
		if d.pos >= len(d.data) || d.data[d.pos] != '"' {
			return false
		}
		k, ok := d.strBytes()
		if !ok || !d.open(':') || !member(k) {
			return false
		}
		if more, ok := d.separator('}'); !more {
			return ok
		}
	}
}

func (d *Decoder) open(c byte) bool {
	d.space()
	if d.pos >= len(d.data) || d.data[d.pos] != c {
		return false
	}
	d.pos++
	return true
}

// key reads a member's key and the colon after it.
func (d *Decoder) key() (string, bool) {
	k, ok := d.String()
	if !ok || !d.open(':') {
		return "", false
	}
	return k, true
}

func (d *Decoder) space() {
	for d.pos < len(d.data) {
		switch d.data[d.pos] {
		case ' ', '\t', '\n', '\r':
			d.pos++
		default:
			return
		}
	}
}

func (d *Decoder) value(depth int) (any, bool) {
	if depth > MaxDepth {
		return nil, false
	}
	d.space()
	if d.pos >= len(d.data) {
		return nil, false
	}
	switch c := d.data[d.pos]; {
	case (c == '{' || c == '[') && d.shared != nil && depth > 0 && depth <= sharedDepthMax:
		return d.composite(depth)
	case c == '{':
		return d.object(depth)
	case c == '[':
		return d.array(depth)
	case c == '"':
		s, ok := d.str()
		if ok && d.shared != nil && len(s) <= sharedStringMax {
			return d.shared.box(s), true
		}
		return s, ok
	case c == '-' || c >= '0' && c <= '9':
		return d.number()
	case c == 't':
		return true, d.literal("true")
	case c == 'f':
		return false, d.literal("false")
	case c == 'n':
		return nil, d.literal("null")
	}
	return nil, false
}

func (d *Decoder) literal(word string) bool {
	if len(d.data)-d.pos < len(word) || string(d.data[d.pos:d.pos+len(word)]) != word {
		return false
	}
	d.pos += len(word)
	return true
}

func (d *Decoder) object(depth int) (any, bool) {
	d.pos++
	var m map[string]any
	if depth == 0 && d.shared != nil {
		m = make(map[string]any, d.shared.members)
		defer func() { d.shared.members = len(m) }()
	} else {
		m = make(map[string]any)
	}
	if d.closes('}') {
		return m, true
	}
	for {
		k, ok := d.key()
		if !ok {
			return nil, false
		}
		v, ok := d.value(depth + 1)
		if !ok {
			return nil, false
		}
		// A duplicate key replaces a member rather than adding one.
		n := len(m)
		if m[k] = v; len(m) == n {
			return nil, false
		}
		if more, ok := d.separator('}'); !more {
			return m, ok
		}
	}
}

func (d *Decoder) array(depth int) (any, bool) {
	d.pos++
	a := make([]any, 0, 4)
	if d.closes(']') {
		return a, true
	}
	for {
		v, ok := d.value(depth + 1)
		if !ok {
			return nil, false
		}
		a = append(a, v)
		if more, ok := d.separator(']'); !more {
			return a, ok
		}
	}
}

// closes consumes the closing byte of an empty object or array.
func (d *Decoder) closes(closing byte) bool {
	d.space()
	if d.pos < len(d.data) && d.data[d.pos] == closing {
		d.pos++
		return true
	}
	return false
}

// separator consumes what follows a member or element: a comma (more is true) or the
// closing byte (ok is true); anything else is neither.
func (d *Decoder) separator(closing byte) (more, ok bool) {
	d.space()
	if d.pos >= len(d.data) {
		return false, false
	}
	c := d.data[d.pos]
	d.pos++
	return c == ',', c == closing
}

// number validates the RFC 8259 number grammar encoding/json's scanner enforces and
// keeps the literal, as UseNumber does.
func (d *Decoder) number() (any, bool) {
	t, i := d.data, d.pos
	if t[i] == '-' {
		i++
	}
	switch {
	case i < len(t) && t[i] == '0':
		i++
	case i < len(t) && t[i] >= '1' && t[i] <= '9':
		i = digits(t, i)
	default:
		return nil, false
	}
	if i < len(t) && t[i] == '.' {
		if j := digits(t, i+1); j > i+1 {
			i = j
		} else {
			return nil, false
		}
	}
	if i < len(t) && (t[i] == 'e' || t[i] == 'E') {
		i++
		if i < len(t) && (t[i] == '+' || t[i] == '-') {
			i++
		}
		j := digits(t, i)
		if j == i {
			return nil, false
		}
		i = j
	}
	var n json.Number
	if d.shared != nil {
		n = json.Number(d.text[d.pos:i])
	} else {
		n = json.Number(t[d.pos:i])
	}
	d.pos = i
	return n, true
}

func digits(t []byte, i int) int {
	for i < len(t) && t[i] >= '0' && t[i] <= '9' {
		i++
	}
	return i
}

// str reads a string at the opening quote, resolving escapes as encoding/json does.
func (d *Decoder) str() (string, bool) {
	start := d.pos + 1
	b, ok := d.strBytes()
	// An escape is longer than what it stands for, so b is as long as the raw text
	// exactly when it has none: then b is data[start:d.pos-1], which text holds too.
	if ok && d.shared != nil && len(b) == d.pos-1-start {
		return d.text[start : d.pos-1], true
	}
	return string(b), ok
}

// strBytes is str without the copy: the bytes are the input's own, or the scratch
// buffer's when the string has escapes, valid until the next string is read.
func (d *Decoder) strBytes() ([]byte, bool) {
	start := d.pos + 1
	ascii := true
	for i := start; i < len(d.data); i++ {
		if plain[d.data[i]] {
			continue
		}
		switch c := d.data[i]; {
		case c == '"':
			raw := d.data[start:i]
			if !ascii && !utf8.Valid(raw) {
				return nil, false
			}
			d.pos = i + 1
			return raw, true
		case c == '\\':
			return d.escaped(start, i)
		case c < 0x20:
			return nil, false
		case c >= utf8.RuneSelf:
			ascii = false
		}
	}
	return nil, false
}

// plain marks the bytes a string holds as they are, which strBytes passes over: any
// but a quote, a backslash, a control character or a byte of a multi-byte sequence.
var plain = func() (plain [256]bool) {
	for c := 0x20; c < utf8.RuneSelf; c++ {
		plain[c] = c != '"' && c != '\\'
	}
	return plain
}()

// escaped finishes a string whose first escape is at i.
func (d *Decoder) escaped(start, i int) ([]byte, bool) {
	t := d.data
	// What the escapes stand for is shorter than they are, so the raw text up to the
	// closing quote bounds the unescaped string: scratch grows once.
	end := len(t)
	for at := i; at < len(t); at++ {
		q := bytes.IndexByte(t[at:], '"')
		if q < 0 {
			break
		}
		at += q
		// The quote closes the string unless an odd run of backslashes escapes it;
		// there is none before i.
		run := 0
		for k := at - 1; k >= i && t[k] == '\\'; k-- {
			run++
		}
		if run%2 == 0 {
			end = at
			break
		}
	}
	b := append(slices.Grow(d.scratch[:0], min(end, len(t))-start), t[start:i]...)
	for i < len(t) {
		c := t[i]
		switch {
		case c == '"':
			// Escapes are ASCII, so the raw text is UTF-8 exactly when every byte
			// copied as it is was; what escapes wrote is UTF-8 or a surrogate.
			if !utf8.Valid(t[start:i]) {
				return nil, false
			}
			d.pos, d.scratch = i+1, b
			return b, true
		case c < 0x20:
			return nil, false
		case c != '\\':
			// The bytes up to the next quote, backslash or control character are
			// copied as they are, at once.
			j := i + 1
			for j < len(t) && t[j] != '"' && t[j] != '\\' && t[j] >= 0x20 {
				j++
			}
			b = append(b, t[i:j]...)
			i = j
			continue
		}
		if i+1 >= len(t) {
			return nil, false
		}
		switch t[i+1] {
		case '"', '\\', '/':
			b = append(b, t[i+1])
		case 'b':
			b = append(b, '\b')
		case 'f':
			b = append(b, '\f')
		case 'n':
			b = append(b, '\n')
		case 'r':
			b = append(b, '\r')
		case 't':
			b = append(b, '\t')
		case 'u':
			r, ok := hex4(t, i+2)
			if !ok {
				return nil, false
			}
			i += 6
			if utf16.IsSurrogate(r) {
				// A valid pair is one code point (RFC 8259 section 7); any other
				// surrogate is a lone one, kept as that code point ([OAR-FACT-23])
				// where encoding/json makes it U+FFFD, and the next escape is read on
				// its own.
				if i+1 < len(t) && t[i] == '\\' && t[i+1] == 'u' {
					if r2, ok := hex4(t, i+2); ok {
						if dec := utf16.DecodeRune(r, r2); dec != utf8.RuneError {
							b = utf8.AppendRune(b, dec)
							i += 6
							continue
						}
					}
				}
			}
			b = codepoint.Append(b, r)
			continue
		default:
			return nil, false
		}
		i += 2
	}
	return nil, false
}

func hex4(t []byte, i int) (rune, bool) {
	if i+4 > len(t) {
		return 0, false
	}
	var r rune
	for _, c := range t[i : i+4] {
		switch {
		case c >= '0' && c <= '9':
			c -= '0'
		case c >= 'a' && c <= 'f':
			c -= 'a' - 10
		case c >= 'A' && c <= 'F':
			c -= 'A' - 10
		default:
			return 0, false
		}
		r = r<<4 | rune(c)
	}
	return r, true
}
