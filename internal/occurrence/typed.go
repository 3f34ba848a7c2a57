package occurrence

import (
	"github.com/oar-operator/oar-operator/internal/engine"
	"github.com/oar-operator/oar-operator/internal/engine/strictjson"
)

// member bits, to refuse a member given twice.
const (
	hasAnchor = 1 << iota
	hasSession
	hasFacts
	hasDetectorFacts
	hasActivity
	hasContent
	hasToolCall
)

// decodeTyped reads a well-formed occurrence straight into its struct, without the
// maps of the whole object and of tool_call that parse works from. It gives up,
// returning false, on anything parse would report or on which strictjson gives up;
// Decode then takes the general path, so what it accepts and every diagnostic stay
// parse's (FuzzDecode holds the two to the same results).
func decodeTyped(data []byte, m Members) (*engine.Occurrence, bool) {
	d := strictjson.NewDecoder(data)
	both := &withCall{}
	occ := &both.occ
	seen := 0
	once := func(bit int) bool {
		if seen&bit != 0 {
			return false
		}
		seen |= bit
		return true
	}
	ok := d.Object(0, func(key []byte) bool {
		switch string(key) {
		case "anchor":
			s, ok := d.String()
			occ.Anchor = s
			return ok && s != "" && once(hasAnchor)
		case "session_id":
			s, ok := d.String()
			occ.SessionID = s
			return ok && once(hasSession)
		case "facts":
			f, ok := object(d, 1)
			occ.Facts = f
			return ok && once(hasFacts)
		case "detector_facts":
			f, ok := object(d, 1)
			occ.DetectorFacts = f
			return ok && m == FixtureMembers && once(hasDetectorFacts)
		case "recent_activity":
			steps, ok := activity(d)
			occ.RecentActivity, occ.HasRecentActivity = steps, true
			return ok && once(hasActivity)
		case "content":
			s, ok := d.String()
			occ.Content, occ.HasContent = s, true
			return ok && once(hasContent)
		case "tool_call":
			occ.ToolCall = &both.call
			return toolCall(d, &both.call) && once(hasToolCall)
		}
		return false
	})
	if !ok || !d.End() || seen&hasAnchor == 0 {
		return nil, false
	}
	return occ, true
}

// withCall is an occurrence and its tool call, allocated together: most occurrences a
// host sends are tool calls, and the one allocation is one fewer per request. An
// occurrence without a tool call leaves call unused, a few words.
type withCall struct {
	occ  engine.Occurrence
	call engine.ToolCall
}

func object(d *strictjson.Decoder, depth int) (map[string]any, bool) {
	v, ok := d.Value(depth)
	obj, isObj := v.(map[string]any)
	return obj, ok && isObj
}

// activity reads recent_activity, a list of tool names.
func activity(d *strictjson.Decoder) ([]string, bool) {
	v, ok := d.Value(1)
	list, isList := v.([]any)
	if !ok || !isList {
		return nil, false
	}
	steps := make([]string, 0, len(list))
	for _, step := range list {
		s, isStr := step.(string)
		if !isStr {
			return nil, false
		}
		steps = append(steps, s)
	}
	return steps, true
}

// toolCall reads tool_call into tc: a non-empty name and, optionally, an object of
// arguments.
func toolCall(d *strictjson.Decoder, tc *engine.ToolCall) bool {
	var name, args bool
	ok := d.Object(1, func(key []byte) bool {
		switch string(key) {
		case "name":
			s, ok := d.String()
			tc.Name = s
			ok = ok && s != "" && !name
			name = true
			return ok
		case "arguments":
			a, ok := object(d, 2)
			tc.Arguments = a
			ok = ok && !args
			args = true
			return ok
		}
		return false
	})
	if !ok || !name {
		return false
	}
	if !args {
		tc.Arguments = map[string]any{}
	}
	return true
}
