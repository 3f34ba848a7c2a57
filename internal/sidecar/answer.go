package sidecar

import (
	"strconv"

	"github.com/oar-operator/oar-operator/internal/engine"
	"github.com/oar-operator/oar-operator/internal/engine/codepoint"
)

// appendAnswer appends the JSON of a and a newline: byte for byte what
// encoding/json's Encoder with HTML escaping off writes (answer_test.go holds it to
// that over the conformance corpus), without its reflection, which cost a quarter of a
// request. The shape is the fixed one of section 10.2; a field added to
// engine.Decision must be added here, and the test fails until it is.
func appendAnswer(b []byte, a Answer) []byte {
	return appendAnswerEnd(appendAnswerStart(b, a), a.Bundle)
}

// appendAnswerStart appends the members of a before its bundle, leaving the object
// open.
func appendAnswerStart(b []byte, a Answer) []byte {
	b = appendDecision(b, a.Decision)
	if len(a.Warnings) > 0 {
		b = append(b, `,"warnings":`...)
		b = appendList(b, a.Warnings, appendWarning)
	}
	return b
}

// appendAnswerEnd appends the bundle member and closes the answer: the same bytes for
// every answer of one bundle, which the handler makes once (servedDigest.end).
func appendAnswerEnd(b []byte, bundle string) []byte {
	b = append(b, `,"bundle":`...)
	b = codepoint.AppendJSON(b, bundle)
	return append(b, "}\n"...)
}

// AppendDecision appends the JSON of d, byte for byte what encoding/json writes for it
// with HTML escaping off, except that a lone surrogate code point is written as its
// escape (codepoint.AppendJSON); oarctl eval prints a decision with it.
func AppendDecision(b []byte, d *engine.Decision) []byte {
	return append(appendDecision(b, d), '}')
}

// appendDecision appends the members of d, leaving the object open.
func appendDecision(b []byte, d *engine.Decision) []byte {
	b = append(b, `{"decision":`...)
	b = codepoint.AppendJSON(b, d.Decision)
	if d.Code != "" {
		b = append(b, `,"code":`...)
		b = codepoint.AppendJSON(b, d.Code)
	}
	if d.Rule != "" {
		b = append(b, `,"rule":`...)
		b = codepoint.AppendJSON(b, d.Rule)
	}
	if len(d.Copy) > 0 {
		b = append(b, `,"copy":`...)
		b = d.Copy.AppendObject(b, codepoint.AppendJSON)
	}
	b = append(b, `,"advisories":`...)
	b = appendList(b, d.Advisories, appendAdvisory)
	b = append(b, `,"transforms":`...)
	b = appendList(b, d.Transforms, appendTransform)
	if d.Content != nil {
		b = append(b, `,"content":`...)
		b = codepoint.AppendJSON(b, *d.Content)
	}
	b = append(b, `,"applied":`...)
	b = appendList(b, d.Applied, codepoint.AppendJSON)
	b = append(b, `,"on_fire":`...)
	b = appendList(b, d.OnFire, codepoint.AppendJSON)
	b = append(b, `,"events":`...)
	b = appendList(b, d.Events, appendEvent)
	b = append(b, `,"skipped_transforms":`...)
	b = appendList(b, d.SkippedTransforms, appendSkipped)
	if len(d.Counters) > 0 {
		b = append(b, `,"counters":`...)
		b = d.Counters.AppendObject(b, codepoint.AppendJSON)
	}
	if len(d.Failures) > 0 {
		b = append(b, `,"failures":`...)
		b = appendList(b, d.Failures, appendFailure)
	}
	return b
}

func appendWarning(b []byte, w Warning) []byte {
	b = append(b, `{"clause":`...)
	b = codepoint.AppendJSON(b, w.Clause)
	b = append(b, `,"field":`...)
	b = codepoint.AppendJSON(b, w.Field)
	b = append(b, `,"value":`...)
	b = codepoint.AppendJSON(b, w.Value)
	b = append(b, `,"message":`...)
	b = codepoint.AppendJSON(b, w.Message)
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
	b = codepoint.AppendJSON(b, a.Code)
	b = append(b, `,"rule":`...)
	b = codepoint.AppendJSON(b, a.Rule)
	if len(a.Copy) > 0 {
		b = append(b, `,"copy":`...)
		b = a.Copy.AppendObject(b, codepoint.AppendJSON)
	}
	return append(b, '}')
}

func appendTransform(b []byte, t engine.TransformRecord) []byte {
	b = append(b, `{"rule":`...)
	b = codepoint.AppendJSON(b, t.Rule)
	b = append(b, `,"action":`...)
	b = codepoint.AppendJSON(b, t.Action)
	b = append(b, `,"target":`...)
	b = codepoint.AppendJSON(b, t.Target)
	b = append(b, `,"replacement":`...)
	b = codepoint.AppendJSON(b, t.Replacement)
	return append(b, '}')
}

func appendEvent(b []byte, e engine.Event) []byte {
	b = append(b, `{"rule":`...)
	b = codepoint.AppendJSON(b, e.Rule)
	b = append(b, `,"anchor":`...)
	b = codepoint.AppendJSON(b, e.Anchor)
	b = append(b, `,"effect":`...)
	b = codepoint.AppendJSON(b, e.Effect)
	if e.Session != "" {
		b = append(b, `,"session_id":`...)
		b = codepoint.AppendJSON(b, e.Session)
	}
	return append(b, '}')
}

func appendSkipped(b []byte, s engine.SkippedSpan) []byte {
	b = append(b, `{"rule":`...)
	b = codepoint.AppendJSON(b, s.Rule)
	b = append(b, `,"start":`...)
	b = strconv.AppendInt(b, int64(s.Start), 10)
	b = append(b, `,"end":`...)
	b = strconv.AppendInt(b, int64(s.End), 10)
	b = append(b, `,"reason":`...)
	b = codepoint.AppendJSON(b, s.Reason)
	return append(b, '}')
}

func appendFailure(b []byte, f engine.Failure) []byte {
	b = append(b, `{"rule":`...)
	b = codepoint.AppendJSON(b, f.Rule)
	if f.Clause != "" {
		b = append(b, `,"clause":`...)
		b = codepoint.AppendJSON(b, f.Clause)
	}
	b = append(b, `,"error":`...)
	b = codepoint.AppendJSON(b, f.Error)
	return append(b, '}')
}
