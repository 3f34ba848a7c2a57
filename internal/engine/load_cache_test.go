package engine

import (
	"slices"
	"testing"
)

// A condition repeated across namespaces compiles once per namespace: its bare
// fire_count_of argument resolves in the rule's own namespace ([OAR-FIRE-11]), so
// tenant b's R reads b/X, not the a/X that tenant a's identical source names.
func TestRepeatedConditionResolvesPerNamespace(t *testing.T) {
	rule := func(ns, id, effect, when, tool string) map[string]any {
		r := map[string]any{"oar": "1.0", "namespace": ns, "id": id, "kind": "policy", "anchor": "tool.pre_invoke",
			"effect": effect, "requires": map[string]any{"profiles": []any{"tool"}},
			"copy": map[string]any{"what": "{{ tool }} seen"}}
		if when != "" {
			r["when"] = when
		}
		if tool != "" {
			r["selector"] = map[string]any{"tool": []any{tool}}
			r["on_fire"] = []any{"increment_counter"}
		}
		return r
	}
	docs := []any{
		rule("a", "X", "allow", "", "ax"),
		rule("b", "X", "allow", "", "bx"),
		rule("a", "R", "warn", `fire_count_of("X") >= 1`, ""),
		rule("b", "R", "warn", `fire_count_of("X") >= 1`, ""),
	}
	p := programOf(t, benchCap(t), docs)
	rt := NewMemoryRuntime()
	call := func(tool string) *Decision {
		d := p.Evaluate(rt, &Occurrence{Anchor: "tool.pre_invoke", SessionID: "s", ToolCall: &ToolCall{Name: tool}})
		return d
	}
	call("ax")
	d := call("other")
	want := []string{"a/R:fired", "b/R:passed"}
	if !slices.Equal(d.Applied, want) {
		t.Errorf("applied %v, want %v", d.Applied, want)
	}
	if d.Copy.Get("what") != "other seen" {
		t.Errorf("copy %v", d.Copy)
	}
}
