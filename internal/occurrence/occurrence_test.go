package occurrence

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/oar-operator/oar-operator/internal/engine"
)

const everyMember = `{
	"anchor": "content.output",
	"session_id": "s7",
	"facts": {"content_length": 12},
	"detector_facts": {"prompt_injection_score": 0.9},
	"recent_activity": ["search", "read"],
	"content": "hello, world",
	"tool_call": {"name": "read", "arguments": {"path": "/tmp/x"}}
}`

func TestFixtureMembersReadEveryMember(t *testing.T) {
	occ, errs := Decode([]byte(everyMember), FixtureMembers)
	if errs != nil {
		t.Fatalf("unexpected errors: %v", errs)
	}
	want := &engine.Occurrence{
		Anchor:            "content.output",
		SessionID:         "s7",
		Facts:             map[string]any{"content_length": json.Number("12")},
		DetectorFacts:     map[string]any{"prompt_injection_score": json.Number("0.9")},
		RecentActivity:    []string{"search", "read"},
		HasRecentActivity: true,
		Content:           "hello, world",
		HasContent:        true,
		ToolCall:          &engine.ToolCall{Name: "read", Arguments: map[string]any{"path": "/tmp/x"}},
	}
	if !reflect.DeepEqual(occ, want) {
		t.Errorf("got %+v\nwant %+v", occ, want)
	}
}

// TestHostMembersRefuseDetectorFacts is [OAR-CONF-25]'s member outside a fixture: a
// host's caller never supplies detector observations.
func TestHostMembersRefuseDetectorFacts(t *testing.T) {
	occ, errs := Decode([]byte(everyMember), HostMembers)
	if occ != nil || len(errs) != 1 {
		t.Fatalf("got %+v and %v, want one error", occ, errs)
	}
	e := errs[0]
	if e.Field != "detector_facts" || e.Clause != "OAR-CONF-25" || !strings.Contains(e.Message, "registers") {
		t.Errorf("got %s", e.Format(""))
	}
	_, errs = Decode([]byte(`{"anchor": "a", "sesion_id": "s"}`), HostMembers)
	want := `sesion_id: [OAR-CONF-18] unknown occurrence member "sesion_id"; the members are anchor, session_id, facts, recent_activity, content, tool_call; did you mean "session_id"?`
	if len(errs) != 1 || errs[0].Format("") != want {
		t.Errorf("got %v\nwant %s", errs, want)
	}
}

func TestDefaults(t *testing.T) {
	occ, errs := Decode([]byte(`{"anchor": "tool.pre_invoke", "recent_activity": [], "content": "", "tool_call": {"name": "ls"}}`), HostMembers)
	if errs != nil {
		t.Fatalf("unexpected errors: %v", errs)
	}
	// An empty window and empty content are stated, not absent; arguments default to {}.
	if !occ.HasRecentActivity || len(occ.RecentActivity) != 0 || !occ.HasContent ||
		occ.ToolCall == nil || occ.ToolCall.Arguments == nil || len(occ.ToolCall.Arguments) != 0 {
		t.Errorf("got %+v, tool call %+v", occ, occ.ToolCall)
	}
	occ, _ = Decode([]byte(`{"anchor": "tool.pre_invoke"}`), HostMembers)
	if occ.HasRecentActivity || occ.HasContent || occ.ToolCall != nil {
		t.Errorf("absent members read as present: %+v", occ)
	}
}

// TestNamesTheMemberAndClause checks that each malformed member is reported under its
// own name and the clause that defines it, whichever member set reads it, and a body
// that is no JSON value under the clause it breaks: [OAR-CONF-18], [OAR-FACT-23], or
// [OAR-DOC-1] naming the member given twice.
func TestNamesTheMemberAndClause(t *testing.T) {
	tests := []struct {
		json string
		want string // the formatted diagnostic
	}{
		{`[]`, `[OAR-CONF-18] an occurrence must be a JSON object; got array`},
		{`{"anchor": "a"} x`, `[OAR-CONF-18] an occurrence is one JSON object: unexpected data after the JSON value`},
		{"{\"anchor\": \"\xff\"}", `[OAR-FACT-23] an occurrence is one JSON object: byte 0xff at offset 12 is not UTF-8: a document is UTF-8 text, and this engine refuses bytes that are not rather than replace them`},
		{`{}`, `anchor: [OAR-CONF-29] missing required member "anchor", the host-local anchor the occurrence is at`},
		{`{"anchor": 3}`, `anchor: [OAR-CONF-29] anchor must be a non-empty string naming the host-local anchor; got number 3`},
		{`{"anchor": "a", "session_id": 1}`, `session_id: [OAR-CONF-18] session_id must be a string; got number 1`},
		{`{"anchor": "a", "facts": "x"}`, `facts: [OAR-CONF-18] facts must be an object mapping fact names to values; got string "x"`},
		{`{"anchor": "a", "recent_activity": "read"}`, `recent_activity: [OAR-CONF-40] recent_activity must be a list of tool names, oldest first; got string "read"`},
		{`{"anchor": "a", "recent_activity": ["read", null]}`, `recent_activity[1]: [OAR-CONF-40] a recent_activity step must be a tool name; got null`},
		{`{"anchor": "a", "content": 5}`, `content: [OAR-CONF-34] content must be a string; got number 5`},
		{`{"anchor": "a", "tool_call": "read"}`, `tool_call: [OAR-CONF-40] tool_call must be an object with name and arguments; got string "read"`},
		{`{"anchor": "a", "tool_call": {}}`, `tool_call.name: [OAR-CONF-40] missing required member "name", the tool called`},
		{`{"anchor": "a", "tool_call": {"name": "r", "arguments": [1]}}`, `tool_call.arguments: [OAR-CONF-40] tool_call.arguments must be an object; got array`},
		{`{"anchor": "a", "tool_call": {"name": "r", "argument": {}}}`, `tool_call.argument: [OAR-CONF-40] unknown tool_call member "argument"; the members are name and arguments; did you mean "arguments"?`},
		{`{"anchor": "a", "anchor": "b"}`, `anchor: [OAR-DOC-1] an occurrence is one JSON object: duplicate key "anchor": a document with a member given twice has no single JSON reading`},
		{`{"anchor": "a", "tool_call": {"name": "r", "name": "w"}}`, `tool_call.name: [OAR-DOC-1] an occurrence is one JSON object: duplicate key "tool_call.name": a document with a member given twice has no single JSON reading`},
	}
	for _, members := range []Members{HostMembers, FixtureMembers} {
		for _, tt := range tests {
			occ, errs := Decode([]byte(tt.json), members)
			if occ != nil || len(errs) != 1 {
				t.Errorf("%s: got %+v and %d errors, want one error", tt.json, occ, len(errs))
				continue
			}
			if got := errs[0].Format(""); got != tt.want {
				t.Errorf("%s:\n got  %s\n want %s", tt.json, got, tt.want)
			}
		}
	}
	_, errs := Decode([]byte(`{"anchor": "a", "detector_facts": []}`), FixtureMembers)
	if len(errs) != 1 || errs[0].Field != "detector_facts" || errs[0].Clause != "OAR-CONF-25" {
		t.Errorf("detector_facts of the wrong shape: got %v", errs)
	}
}

func TestReportsEveryProblem(t *testing.T) {
	_, errs := Decode([]byte(`{"facts": 1, "content": 2, "extra": 3, "detector_facts": {}}`), HostMembers)
	var fields []string
	for _, e := range errs {
		fields = append(fields, e.Field)
	}
	if got := strings.Join(fields, " "); got != "detector_facts extra anchor facts content" {
		t.Errorf("fields %q, want every malformed member", got)
	}
}
