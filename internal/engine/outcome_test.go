package engine

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"
	"testing"
)

// withoutOutcomes is p with every rule evaluating its condition itself, as if no two
// rules shared one.
func withoutOutcomes(p *Program) *Program {
	q := *p
	q.outcomeSlot = make([]int32, len(p.outcomeSlot))
	for i := range q.outcomeSlot {
		q.outcomeSlot[i] = -1
	}
	q.outcomes = 0
	return &q
}

// TestSharedConditionsHaveOneOutcome: rules sharing a condition share its outcome at
// an occurrence, except rules whose condition reads their own counter, and rules of
// another namespace, where a bare rule reference means another rule; a condition no
// other rule has needs no slot.
func TestSharedConditionsHaveOneOutcome(t *testing.T) {
	rule := func(id, ns, when string) string {
		return `{"oar":"1.0","id":"` + id + `","namespace":"` + ns + `","kind":"policy","anchor":"tool.pre_invoke","effect":"warn","when":` + when + `,"requires":{"profiles":["tool","session"]}}`
	}
	p := mustProgram(t, "["+strings.Join([]string{
		rule("A", "acme", `"size(tool_args) > 1"`),
		rule("B", "acme", `"size(tool_args) > 1"`),
		rule("C", "acme", `"fire_count_of(\"A\") > 1"`),
		rule("C2", "acme", `"fire_count_of(\"A\") > 1"`),
		rule("D", "other", `"fire_count_of(\"A\") > 1"`),
		rule("D2", "other", `"fire_count_of(\"A\") > 1"`),
		rule("H", "acme", `"size(tool_args) > 2"`),
		rule("E", "acme", `"fire_count < 2"`),
		rule("F", "acme", `"fire_count < 2"`),
		rule("A", "other", `"size(tool_args) > 1"`),
		rule("G", "other", `"size(tool_args) > 1"`),
	}, ",")+"]")
	slot := map[string]int32{}
	for _, r := range p.rs.Rules {
		slot[r.QID] = p.outcomeSlot[r.Index]
	}
	if a, b := slot["acme/A"], slot["acme/B"]; a < 0 || a != b {
		t.Errorf("acme/A and acme/B share a condition: slots %d and %d", a, b)
	}
	if a, g := slot["other/A"], slot["other/G"]; a < 0 || a != g || a == slot["acme/A"] {
		t.Errorf("other/A and other/G share a condition acme/A has in another namespace: slots %d, %d and %d", a, g, slot["acme/A"])
	}
	if c, d := slot["acme/C"], slot["other/D"]; c < 0 || c != slot["acme/C2"] || d < 0 || d != slot["other/D2"] || c == d {
		t.Errorf("acme/C and other/D name different rules A: slots %d and %d (C2 %d, D2 %d)", c, d, slot["acme/C2"], slot["other/D2"])
	}
	if h := slot["acme/H"]; h != -1 {
		t.Errorf("acme/H shares its condition with no rule: slot %d, want -1", h)
	}
	if e, f := slot["acme/E"], slot["acme/F"]; e != -1 || f != -1 {
		t.Errorf("acme/E and acme/F read their own counters: slots %d and %d, want -1", e, f)
	}
	if p.outcomes != 4 {
		t.Errorf("%d outcome slots, want 4", p.outcomes)
	}
}

// TestOPS4_ASharedConditionThatRaisesFailsEachRuleByItsOnError: the shared outcome
// carries the error, and each rule handles it by its own on_error ([OAR-OPS-4]);
// beside them, a rule counting its fires under the same occurrence decides as it
// would alone.
func TestOPS4_ASharedConditionThatRaisesFailsEachRuleByItsOnError(t *testing.T) {
	const when = `"10 / size(tool_args) > 1"`
	p := mustProgram(t, `[
	 {"oar":"1.0","id":"A","kind":"policy","anchor":"tool.pre_invoke","effect":"block","when":`+when+`,"on_error":"fail_open","requires":{"profiles":["tool"]}},
	 {"oar":"1.0","id":"B","kind":"policy","anchor":"tool.pre_invoke","effect":"warn","when":`+when+`,"requires":{"profiles":["tool"]}},
	 {"oar":"1.0","id":"C","kind":"schema","anchor":"tool.pre_invoke","effect":"nudge","when":"fire_count < 1","on_fire":["increment_counter"],"requires":{"profiles":["tool","session"]}}]`)
	for _, q := range []*Program{p, withoutOutcomes(p)} {
		rt := NewMemoryRuntime()
		for i, want := range []string{"C:fired A:errored B:errored", "C:passed A:errored B:errored"} {
			d := q.Evaluate(rt, &Occurrence{Anchor: "gw.pre_call", SessionID: "s", ToolCall: &ToolCall{Name: "read"}})
			if got := strings.Join(d.Applied, " "); got != want || d.Decision != "block" || d.Rule != "B" {
				t.Errorf("occurrence %d, %d outcome slots: %s by %s, applied %s; want block by B, applied %s", i, q.outcomes, d.Decision, d.Rule, got, want)
			}
		}
	}
}

// TestSharedOutcomesDecideAsEachRuleAlone: over generated rule sets, some of whose
// rules share conditions reading counters, tool arguments and list facts, keeping a
// shared condition's outcome decides what evaluating it for each rule decides.
func TestSharedOutcomesDecideAsEachRuleAlone(t *testing.T) {
	conds := []string{
		`"size(tool_args) > 1"`,
		`"\"admin\" in principal_roles"`,
		`"fire_count_of(\"R0\") > 0"`,
		`"fire_count < 2"`,
		`"10 / size(tool_args) > 4"`,
		`"tool_arg_string(\"path\") == \"/x\""`,
	}
	var docs []string
	for i := range 24 {
		onErr := []string{"fail_open", "fail_closed"}[i%2]
		effect := []string{"block", "warn", "nudge", "allow"}[i%4]
		// Every other rule of each condition counts its fires, so counters of rules
		// sharing one drift apart.
		onFire := []string{`[]`, `["increment_counter"]`}[(i/len(conds))%2]
		docs = append(docs, `{"oar":"1.0","id":"R`+strconv.Itoa(i)+`","kind":"policy","anchor":"tool.pre_invoke","effect":"`+effect+`","when":`+conds[i%len(conds)]+`,"on_error":"`+onErr+`","on_fire":`+onFire+`,"requires":{"profiles":["tool","session"]}}`)
	}
	p := mustProgram(t, "["+strings.Join(docs, ",")+"]")
	if p.outcomes < 4 {
		t.Fatalf("%d outcome slots: too few shared conditions for the test to mean anything", p.outcomes)
	}
	alone := withoutOutcomes(p)
	shared, each := NewMemoryRuntime(), NewMemoryRuntime()
	args := []map[string]any{nil, {"path": "/x"}, {"path": "/y", "n": 1}, {"a": 1, "b": 2, "c": 3}}
	roles := []any{nil, []any{"admin"}, []any{"dev"}}
	for i := range 60 {
		occ := &Occurrence{Anchor: "gw.pre_call", SessionID: "s" + strconv.Itoa(i%3), ToolCall: &ToolCall{Name: "read", Arguments: args[i%len(args)]}}
		if r := roles[i%len(roles)]; r != nil {
			occ.Facts = map[string]any{"principal_roles": r}
		}
		got, _ := json.Marshal(p.Evaluate(shared, occ))
		want, _ := json.Marshal(alone.Evaluate(each, occ))
		if !bytes.Equal(got, want) {
			t.Fatalf("occurrence %d: with shared outcomes %s\neach rule alone %s", i, got, want)
		}
	}
}

// TestFACT11_ADetectorRuleEvaluatesASharedConditionOverItsOwnFindings: P and D share a
// condition on the tool name; D's detector reports another tool, which only D sees
// ([OAR-FACT-11]), so P's outcome is not D's.
func TestFACT11_ADetectorRuleEvaluatesASharedConditionOverItsOwnFindings(t *testing.T) {
	capSrc := strings.Replace(testCapability, `"supports_transform":true,`, `"supports_transform":true,"detectors":["detector://fixture"],`, 1)
	rs, errs := LoadRules(mustCap(t, capSrc), mustDocs(t, `[
	 {"oar":"1.0","id":"P","kind":"policy","anchor":"tool.pre_invoke","effect":"warn","when":"tool == \"read\"","requires":{"profiles":["tool"]}},
	 {"oar":"1.0","id":"D","kind":"detector","detector":{"ref":"detector://fixture"},"anchor":"tool.pre_invoke","effect":"warn","when":"tool == \"read\"","requires":{"profiles":["tool"]}}]`))
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	p, errs := Configure(rs, nil)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	occ := &Occurrence{Anchor: "gw.pre_call", ToolCall: &ToolCall{Name: "read"}}
	for detected, want := range map[string]string{"read": "P:fired D:fired", "evil": "P:fired D:passed"} {
		occ.DetectorFacts = map[string]any{"tool": detected}
		if got := strings.Join(p.Evaluate(NewMemoryRuntime(), occ).Applied, " "); got != want {
			t.Errorf("D's detector reports tool %s: applied %s, want %s", detected, got, want)
		}
	}
}
