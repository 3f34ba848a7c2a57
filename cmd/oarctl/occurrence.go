package main

import (
	"fmt"
	"sort"
	"strings"

	"github.com/oar-operator/oar-operator/internal/engine"
	"github.com/oar-operator/oar-operator/internal/engine/diag"
	"github.com/oar-operator/oar-operator/internal/engine/types"
)

// An occurrence is written the way a fixture writes its single occurrence (section 10.2),
// without the capability and configuration that oarctl takes from files:
//
//	{"anchor": "tool.pre_invoke", "session_id": "s1", "facts": {...},
//	 "detector_facts": {...}, "recent_activity": ["search"], "content": "...",
//	 "tool_call": {"name": "read", "arguments": {"path": "/etc/passwd"}}}
//
// Only anchor is required. The members are closed: a misspelled member would otherwise
// leave a fact silently unset and the decision would answer a different question.

// occurrenceClauses maps each member to the clause that defines it.
var occurrenceClauses = map[string]string{
	"anchor":          "OAR-CONF-29",
	"session_id":      "OAR-CONF-18",
	"facts":           "OAR-CONF-18",
	"detector_facts":  "OAR-CONF-25",
	"recent_activity": "OAR-CONF-40",
	"content":         "OAR-CONF-34",
	"tool_call":       "OAR-CONF-40",
}

// decodeOccurrence reads one occurrence from JSON text: numbers stay exact and a member
// given twice is refused, as for every OAR document.
func decodeOccurrence(data []byte) (*engine.Occurrence, diag.List) {
	v, err := engine.DecodeJSON(data)
	if err != nil {
		return nil, diag.List{diag.New("", "", "an occurrence is one JSON object: %v", err)}
	}
	return parseOccurrence(v)
}

// parseOccurrence converts a decoded occurrence object to the engine's Occurrence,
// reporting every malformed or unknown member by name.
func parseOccurrence(v any) (*engine.Occurrence, diag.List) {
	var l diag.List
	obj, ok := v.(map[string]any)
	if !ok {
		l.Add(diag.New("OAR-CONF-18", "", "an occurrence must be a JSON object; got %s", types.DescribeJSON(v)))
		return nil, l
	}
	for _, k := range sortedMembers(obj) {
		if _, known := occurrenceClauses[k]; !known {
			l.Add(diag.New("OAR-CONF-18", k, "unknown occurrence member %q; the members are anchor, session_id, facts, detector_facts, recent_activity, content, tool_call", k))
		}
	}
	occ := &engine.Occurrence{}
	bad := func(field, format string, args ...any) {
		l.Add(diag.New(occurrenceClauses[memberOf(field)], field, format, args...))
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
		if m, isObj := raw.(map[string]any); isObj {
			occ.Facts = m
		} else {
			bad("facts", "facts must be an object mapping fact names to values; got %s", types.DescribeJSON(raw))
		}
	}
	if raw, present := obj["detector_facts"]; present {
		if m, isObj := raw.(map[string]any); isObj {
			occ.DetectorFacts = m
		} else {
			bad("detector_facts", "detector_facts must be an object mapping fact names to what detector://fixture reports; got %s", types.DescribeJSON(raw))
		}
	}
	if raw, present := obj["recent_activity"]; present {
		if steps, isList := raw.([]any); isList {
			occ.RecentActivity, occ.HasRecentActivity = make([]string, 0, len(steps)), true
			for i, step := range steps {
				if s, isStr := step.(string); isStr {
					occ.RecentActivity = append(occ.RecentActivity, s)
				} else {
					bad(fmt.Sprintf("recent_activity[%d]", i), "a recent_activity step must be a tool name; got %s", types.DescribeJSON(step))
				}
			}
		} else {
			bad("recent_activity", "recent_activity must be a list of tool names, oldest first; got %s", types.DescribeJSON(raw))
		}
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

// parseToolCall reads tool_call: name, a non-empty string, and arguments, an object
// (empty when absent) ([OAR-CONF-40]).
func parseToolCall(raw any, bad func(field, format string, args ...any)) *engine.ToolCall {
	tc, isObj := raw.(map[string]any)
	if !isObj {
		bad("tool_call", "tool_call must be an object with name and arguments; got %s", types.DescribeJSON(raw))
		return nil
	}
	for _, k := range sortedMembers(tc) {
		if k != "name" && k != "arguments" {
			bad("tool_call."+k, "unknown tool_call member %q; the members are name and arguments", k)
		}
	}
	call := &engine.ToolCall{Arguments: map[string]any{}}
	switch name, present := tc["name"]; {
	case !present:
		bad("tool_call.name", "missing required member \"name\", the tool called")
	case !isNonEmptyString(name):
		bad("tool_call.name", "tool_call.name must be a non-empty string; got %s", types.DescribeJSON(name))
	default:
		call.Name = name.(string)
	}
	if args, present := tc["arguments"]; present {
		if m, isObj := args.(map[string]any); isObj {
			call.Arguments = m
		} else {
			bad("tool_call.arguments", "tool_call.arguments must be an object; got %s", types.DescribeJSON(args))
		}
	}
	return call
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

func sortedMembers(obj map[string]any) []string {
	keys := make([]string, 0, len(obj))
	for k := range obj {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
