package sidecar

import (
	"slices"
	"strconv"
	"unicode/utf8"

	"github.com/oar-operator/oar-operator/internal/engine"
	"github.com/oar-operator/oar-operator/internal/engine/codepoint"
)

// appendAnswer appends the JSON of a and a newline: byte for byte what
// encoding/json's Encoder with HTML escaping off writes (answer_test.go holds it to
// that over the conformance corpus), without its reflection, which cost a quarter of a
// request. The shape is the fixed one of section 10.2; a field added to
// engine.Decision must be added here, and the test fails until it is.
func appendAnswer(b []byte, a Answer) []byte {
	b = appendDecision(b, a.Decision)
	if len(a.Warnings) > 0 {
		b = append(b, `,"warnings":`...)
		b = appendList(b, a.Warnings, appendWarning)
	}
	b = append(b, `,"bundle":`...)
	b = appendString(b, a.Bundle)
	return append(b, "}\n"...)
}

// AppendDecision appends the JSON of d, byte for byte what encoding/json writes for it
// with HTML escaping off, except that a lone surrogate code point is written as its
// escape (appendString); oarctl eval prints a decision with it.
func AppendDecision(b []byte, d *engine.Decision) []byte {
	return append(appendDecision(b, d), '}')
}

// appendDecision appends the members of d, leaving the object open.
func appendDecision(b []byte, d *engine.Decision) []byte {
	b = append(b, `{"decision":`...)
	b = appendString(b, d.Decision)
	if d.Code != "" {
		b = append(b, `,"code":`...)
		b = appendString(b, d.Code)
	}
	if d.Rule != "" {
		b = append(b, `,"rule":`...)
		b = appendString(b, d.Rule)
	}
	if len(d.Copy) > 0 {
		b = append(b, `,"copy":`...)
		b = appendStringMap(b, d.Copy)
	}
	b = append(b, `,"advisories":`...)
	b = appendList(b, d.Advisories, appendAdvisory)
	b = append(b, `,"transforms":`...)
	b = appendList(b, d.Transforms, appendTransform)
	if d.Content != nil {
		b = append(b, `,"content":`...)
		b = appendString(b, *d.Content)
	}
	b = append(b, `,"applied":`...)
	b = appendList(b, d.Applied, appendString)
	b = append(b, `,"on_fire":`...)
	b = appendList(b, d.OnFire, appendString)
	b = append(b, `,"events":`...)
	b = appendList(b, d.Events, appendEvent)
	b = append(b, `,"skipped_transforms":`...)
	b = appendList(b, d.SkippedTransforms, appendSkipped)
	if len(d.Counters) > 0 {
		b = append(b, `,"counters":`...)
		b = appendCounters(b, d.Counters)
	}
	if len(d.Failures) > 0 {
		b = append(b, `,"failures":`...)
		b = appendList(b, d.Failures, appendFailure)
	}
	return b
}

func appendWarning(b []byte, w Warning) []byte {
	b = append(b, `{"clause":`...)
	b = appendString(b, w.Clause)
	b = append(b, `,"field":`...)
	b = appendString(b, w.Field)
	b = append(b, `,"value":`...)
	b = appendString(b, w.Value)
	b = append(b, `,"message":`...)
	b = appendString(b, w.Message)
	return append(b, '}')
}

// appendList writes a slice as encoding/json does: null when nil.
func appendList[T any](b []byte, list []T, item func([]byte, T) []byte) []byte {
	if list == nil {
		return append(b, "null"...)
	}
	b = append(b, '[')
	for i, v := range list {
		if i > 0 {
			b = append(b, ',')
		}
		b = item(b, v)
	}
	return append(b, ']')
}

func appendAdvisory(b []byte, a engine.Advisory) []byte {
	b = append(b, `{"code":`...)
	b = appendString(b, a.Code)
	b = append(b, `,"rule":`...)
	b = appendString(b, a.Rule)
	if len(a.Copy) > 0 {
		b = append(b, `,"copy":`...)
		b = appendStringMap(b, a.Copy)
	}
	return append(b, '}')
}

func appendTransform(b []byte, t engine.TransformRecord) []byte {
	b = append(b, `{"rule":`...)
	b = appendString(b, t.Rule)
	b = append(b, `,"action":`...)
	b = appendString(b, t.Action)
	b = append(b, `,"target":`...)
	b = appendString(b, t.Target)
	b = append(b, `,"replacement":`...)
	b = appendString(b, t.Replacement)
	return append(b, '}')
}

func appendEvent(b []byte, e engine.Event) []byte {
	b = append(b, `{"rule":`...)
	b = appendString(b, e.Rule)
	b = append(b, `,"anchor":`...)
	b = appendString(b, e.Anchor)
	b = append(b, `,"effect":`...)
	b = appendString(b, e.Effect)
	if e.Session != "" {
		b = append(b, `,"session_id":`...)
		b = appendString(b, e.Session)
	}
	return append(b, '}')
}

func appendSkipped(b []byte, s engine.SkippedSpan) []byte {
	b = append(b, `{"rule":`...)
	b = appendString(b, s.Rule)
	b = append(b, `,"start":`...)
	b = strconv.AppendInt(b, int64(s.Start), 10)
	b = append(b, `,"end":`...)
	b = strconv.AppendInt(b, int64(s.End), 10)
	b = append(b, `,"reason":`...)
	b = appendString(b, s.Reason)
	return append(b, '}')
}

func appendFailure(b []byte, f engine.Failure) []byte {
	b = append(b, `{"rule":`...)
	b = appendString(b, f.Rule)
	if f.Clause != "" {
		b = append(b, `,"clause":`...)
		b = appendString(b, f.Clause)
	}
	b = append(b, `,"error":`...)
	b = appendString(b, f.Error)
	return append(b, '}')
}

func appendCounts(b []byte, c engine.Counts) []byte {
	b = append(b, `{"fire_count":`...)
	b = strconv.AppendInt(b, c.Fire, 10)
	b = append(b, `,"breaker_count":`...)
	b = strconv.AppendInt(b, c.Breaker, 10)
	return append(b, '}')
}

func appendStringMap(b []byte, m map[string]string) []byte {
	return appendMap(b, m, appendString)
}

func appendCounters(b []byte, m map[string]engine.Counts) []byte {
	return appendMap(b, m, appendCounts)
}

// appendMap writes an object with its keys sorted, as encoding/json does.
func appendMap[V any](b []byte, m map[string]V, value func([]byte, V) []byte) []byte {
	var buf [16]string
	keys := buf[:0]
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	b = append(b, '{')
	for i, k := range keys {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendString(b, k)
		b = append(b, ':')
		b = value(b, m[k])
	}
	return append(b, '}')
}

const hexDigits = "0123456789abcdef"

// appendString quotes s as encoding/json does with HTML escaping off: \b \f \n \r \t
// and \" \\ by name, other control bytes as \u00XX, invalid UTF-8 as \ufffd, and
// U+2028 and U+2029 escaped; it departs from it for a lone surrogate code point
// (package codepoint), which it writes as its \udXXX escape where encoding/json would
// write U+FFFD ([OAR-FACT-26]).
func appendString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		if i+8 <= len(s) && plain8(s[i:i+8]) {
			i += 8
			continue
		}
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
			}
			i++
			start = i
			continue
		}
		if r, ok := codepoint.Surrogate(s[i:]); ok {
			// A lone surrogate code point: JSON can name it only by escape.
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', 'd', hexDigits[r>>8&0xF], hexDigits[r>>4&0xF], hexDigits[r&0xF])
			i += 3
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hexDigits[r&0xF])
		default:
			i += size
			continue
		}
		i += size
		start = i
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

// plain8 reports whether none of the 8 bytes of s needs escaping (a control byte, a
// quote, a backslash or a non-ASCII byte), testing them as one word: most of an
// answer is rule identifiers that need none.
func plain8(s string) bool {
	_ = s[7]
	x := uint64(s[0]) | uint64(s[1])<<8 | uint64(s[2])<<16 | uint64(s[3])<<24 |
		uint64(s[4])<<32 | uint64(s[5])<<40 | uint64(s[6])<<48 | uint64(s[7])<<56
	const ones, high = 0x0101010101010101, 0x8080808080808080
	quote, backslash := x^('"'*ones), x^('\\'*ones)
	control := (x - 0x20*ones) &^ x
	return (x|control|(quote-ones)&^quote|(backslash-ones)&^backslash)&high == 0
}
