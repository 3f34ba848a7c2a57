// Package occurrence reads one anchor occurrence from JSON into an engine.Occurrence:
// the single-occurrence spelling of a section 10.2 fixture ([OAR-CONF-18]) without the
// capability and configuration, as oarctl reads it from a file and the engine sidecar
// reads it from a POST /v1/evaluate body:
//
//	{"anchor": "tool.pre_invoke", "session_id": "s1", "facts": {...},
//	 "recent_activity": ["search"], "content": "...",
//	 "tool_call": {"name": "read", "arguments": {"path": "/etc/passwd"}}}
//
// anchor is the host-local anchor identifier ([OAR-CONF-29]) and the only required
// member. The members are closed: a misspelled member would otherwise leave a fact
// silently unset and the decision would answer a different question. Numbers stay exact
// (json.Number) and a member given twice is refused ([OAR-DOC-1]), as for every OAR
// document. Every problem is reported as a diag.Error naming the member (the field) and
// the clause that defines it, as every refusal of the project does.
//
// A value's type is not checked against the capability here: a fact of the wrong type
// is a fact-provider failure the consuming rule's on_error handles at evaluation
// ([OAR-FACT-26]), not a malformed occurrence.
package occurrence

import (
	"errors"
	"fmt"
	"iter"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/oar-operator/oar-operator/internal/engine"
	"github.com/oar-operator/oar-operator/internal/engine/diag"
	"github.com/oar-operator/oar-operator/internal/engine/types"
)

// Members selects which members a reader accepts.
type Members uint8

const (
	// HostMembers are what an agent host sends the sidecar: anchor, session_id, facts,
	// recent_activity, content and tool_call. detector_facts is refused: a host's
	// detector observations come from the detectors it registers ([OAR-OPS-11]), and
	// a caller that could supply them could forge a detector's findings.
	HostMembers Members = iota
	// FixtureMembers add detector_facts, what detector://fixture reports in a
	// conformance fixture ([OAR-CONF-25]); oarctl accepts them.
	FixtureMembers
)

// memberList is the order members are listed in messages.
var memberList = []string{"anchor", "session_id", "facts", "detector_facts", "recent_activity", "content", "tool_call"}

// clauses maps each member to the clause that defines it.
var clauses = map[string]string{
	"anchor":          "OAR-CONF-29",
	"session_id":      "OAR-CONF-18",
	"facts":           "OAR-CONF-18",
	"detector_facts":  "OAR-CONF-25",
	"recent_activity": "OAR-CONF-40",
	"content":         "OAR-CONF-34",
	"tool_call":       "OAR-CONF-40",
}

// accepts reports whether m accepts the member name.
func (m Members) accepts(name string) bool {
	if name == "detector_facts" {
		return m == FixtureMembers
	}
	_, known := clauses[name]
	return known
}

// names lists the members m accepts, for messages.
func (m Members) names() string {
	return strings.Join(slices.Collect(m.all()), ", ")
}

// all yields the members m accepts, in the order messages list them.
func (m Members) all() iter.Seq[string] {
	return func(yield func(string) bool) {
		for _, n := range memberList {
			if m.accepts(n) && !yield(n) {
				return
			}
		}
	}
}

// Decode reads one occurrence from JSON text. A well-formed one is read straight into
// its struct (decodeTyped); anything else goes through engine.DecodeJSON and parse,
// which name every problem.
func Decode(data []byte, m Members) (*engine.Occurrence, diag.List) {
	if occ, ok := decodeTyped(data, m); ok {
		return occ, nil
	}
	v, err := engine.DecodeJSON(data)
	if err != nil {
		return nil, diag.List{malformed(data, err)}
	}
	return parse(v, m)
}

// malformed reports a body that is not one JSON value under the clause it breaks, so a
// caller reads the clause from the same field as every other refusal (diag.Error's
// Clause): a member given twice has no single reading ([OAR-DOC-1]) and names that
// member, bytes that are not UTF-8 are no string ([OAR-FACT-23]), and anything else is
// not the JSON object an occurrence is ([OAR-CONF-18]).
func malformed(data []byte, err error) *diag.Error {
	clause, field := "OAR-CONF-18", ""
	var dup *engine.DuplicateKeyError
	switch {
	case errors.As(err, &dup):
		clause, field = "OAR-DOC-1", dup.Path
	case !utf8.Valid(data):
		clause = "OAR-FACT-23"
	}
	return diag.New(clause, field, "an occurrence is one JSON object: %s", strings.TrimSuffix(err.Error(), " ["+clause+"]"))
}

// parse converts a decoded occurrence object to the engine's Occurrence, reporting
// every malformed or unknown member by name. The occurrence shares the decoded facts
// and arguments with v.
func parse(v any, m Members) (*engine.Occurrence, diag.List) {
	var l diag.List
	obj, ok := v.(map[string]any)
	if !ok {
		l.Add(diag.New("OAR-CONF-18", "", "an occurrence must be a JSON object; got %s", types.DescribeJSON(v)))
		return nil, l
	}
	for _, k := range unknownMembers(obj, m.accepts) {
		if k == "detector_facts" {
			l.Add(diag.New("OAR-CONF-25", k, "detector_facts is what detector://fixture reports in a conformance fixture; here detector observations come only from the detectors the host registers, never from the caller"))
		} else {
			l.Add(diag.New("OAR-CONF-18", k, "unknown occurrence member %q; the members are %s", k, m.names())).Suggest(k, m.all())
		}
	}
	occ := &engine.Occurrence{}
	bad := func(field, format string, args ...any) *diag.Error {
		return l.Add(diag.New(clauses[memberOf(field)], field, format, args...))
	}

	switch a, present := obj["anchor"]; {
	case !present:
		bad("anchor", "missing required member \"anchor\", the host-local anchor the occurrence is at")
	case !isNonEmptyString(a):
		bad("anchor", "anchor must be a non-empty string naming the host-local anchor; got %s", types.DescribeJSON(a))
	default:
		occ.Anchor = a.(string)
	}
	if raw, present := obj["session_id"]; present {
		if s, isStr := raw.(string); isStr {
			occ.SessionID = s
		} else {
			bad("session_id", "session_id must be a string; got %s", types.DescribeJSON(raw))
		}
	}
	if raw, present := obj["facts"]; present {
		if f, isObj := raw.(map[string]any); isObj {
			occ.Facts = f
		} else {
			bad("facts", "facts must be an object mapping fact names to values; got %s", types.DescribeJSON(raw))
		}
	}
	if raw, present := obj["detector_facts"]; present && m.accepts("detector_facts") {
		if f, isObj := raw.(map[string]any); isObj {
			occ.DetectorFacts = f
		} else {
			bad("detector_facts", "detector_facts must be an object mapping fact names to what detector://fixture reports; got %s", types.DescribeJSON(raw))
		}
	}
	if raw, present := obj["recent_activity"]; present {
		parseActivity(occ, raw, bad)
	}
	if raw, present := obj["content"]; present {
		if s, isStr := raw.(string); isStr {
			occ.Content, occ.HasContent = s, true
		} else {
			bad("content", "content must be a string; got %s", types.DescribeJSON(raw))
		}
	}
	if raw, present := obj["tool_call"]; present {
		occ.ToolCall = parseToolCall(raw, bad)
	}
	if len(l) > 0 {
		return nil, l
	}
	return occ, nil
}

// parseActivity reads recent_activity, an explicit window of tool names, oldest first,
// that replaces the session's window for this occurrence only ([OAR-CONF-40]).
func parseActivity(occ *engine.Occurrence, raw any, bad func(field, format string, args ...any) *diag.Error) {
	steps, isList := raw.([]any)
	if !isList {
		bad("recent_activity", "recent_activity must be a list of tool names, oldest first; got %s", types.DescribeJSON(raw))
		return
	}
	occ.RecentActivity, occ.HasRecentActivity = make([]string, 0, len(steps)), true
	for i, step := range steps {
		if s, isStr := step.(string); isStr {
			occ.RecentActivity = append(occ.RecentActivity, s)
		} else {
			bad(fmt.Sprintf("recent_activity[%d]", i), "a recent_activity step must be a tool name; got %s", types.DescribeJSON(step))
		}
	}
}

// parseToolCall reads tool_call: name, a non-empty string, and arguments, an object
// (empty when absent) ([OAR-CONF-40]).
func parseToolCall(raw any, bad func(field, format string, args ...any) *diag.Error) *engine.ToolCall {
	tc, isObj := raw.(map[string]any)
	if !isObj {
		bad("tool_call", "tool_call must be an object with name and arguments; got %s", types.DescribeJSON(raw))
		return nil
	}
	for _, k := range unknownMembers(tc, func(k string) bool { return k == "name" || k == "arguments" }) {
		bad("tool_call."+k, "unknown tool_call member %q; the members are name and arguments", k).Suggest(k, slices.Values([]string{"name", "arguments"}))
	}
	call := &engine.ToolCall{}
	switch name, present := tc["name"]; {
	case !present:
		bad("tool_call.name", "missing required member \"name\", the tool called")
	case !isNonEmptyString(name):
		bad("tool_call.name", "tool_call.name must be a non-empty string; got %s", types.DescribeJSON(name))
	default:
		call.Name = name.(string)
	}
	if args, present := tc["arguments"]; present {
		if a, isObj := args.(map[string]any); isObj {
			call.Arguments = a
		} else {
			bad("tool_call.arguments", "tool_call.arguments must be an object; got %s", types.DescribeJSON(args))
		}
	} else {
		call.Arguments = map[string]any{}
	}
	return call
}

// unknownMembers returns the members of obj that known refuses, sorted; it allocates
// nothing when there are none, the case of every well-formed request.
func unknownMembers(obj map[string]any, known func(string) bool) []string {
	var out []string
	for k := range obj {
		if !known(k) {
			out = append(out, k)
		}
	}
	slices.Sort(out)
	return out
}

func isNonEmptyString(v any) bool {
	s, ok := v.(string)
	return ok && s != ""
}

// memberOf returns the occurrence member a field path starts with: "tool_call" for
// "tool_call.name".
func memberOf(field string) string {
	if i := strings.IndexAny(field, ".["); i >= 0 {
		return field[:i]
	}
	return field
}
