package engine

import (
	"cmp"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/oar-operator/oar-operator/internal/engine/diag"
)

// suggestCapability is testCapability with a registered detector.
var suggestCapability = strings.Replace(testCapability, `"supports_transform":true,`, `"supports_transform":true,"detectors":["detector://presidio"],`, 1)

// rule is a loadable rule of namespace acme.sec with the given members added or
// replacing the default ones.
func rule(t *testing.T, id string, members string) string {
	t.Helper()
	var doc, with map[string]any
	base := `{"oar":"1.0","namespace":"acme.sec","id":"` + id + `","kind":"policy","anchor":"tool.pre_invoke","effect":"block","requires":{"profiles":["tool","session"]}}`
	if err := json.Unmarshal([]byte(base), &doc); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte("{"+members+"}"), &with); err != nil {
		t.Fatal(err)
	}
	maps.Copy(doc, with)
	b, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// findDiag is the diagnostic of clause at field, or nil.
func findDiag(l diag.List, clause, field string) *diag.Error {
	for _, e := range l {
		if e.Clause == clause && e.Field == field {
			return e
		}
	}
	return nil
}

// checkSuggestion asserts that e exists and suggests want, in its field and at the end
// of its message, or suggests nothing when want is "".
func checkSuggestion(t *testing.T, l diag.List, clause, field, want string) {
	t.Helper()
	e := findDiag(l, clause, field)
	if e == nil {
		t.Fatalf("no [%s] diagnostic at %q among:\n%v", clause, field, l)
	}
	if e.Suggestion != want {
		t.Errorf("Suggestion = %q; want %q (message %q)", e.Suggestion, want, e.Message)
	}
	hint := `; did you mean "` + want + `"?`
	if has := strings.Contains(e.Message, "did you mean"); has != (want != "") || want != "" && !strings.HasSuffix(e.Message, hint) {
		t.Errorf("message %q; want it to end in %q only when there is a suggestion", e.Message, hint)
	}
}

// A diagnostic about an unknown name in a rule suggests the one name available at its
// place that is close, and nothing when none is.
func TestRuleUnknownNamesSuggestTheCloseOne(t *testing.T) {
	c := mustCap(t, suggestCapability)
	others := rule(t, "READ_SECRETS", "") + "," + rule(t, "NO_WGET", "")
	for _, tc := range []struct {
		name, rule, clause, field, want string
	}{
		{"DOC-27 a member", `"whne":"tool == \"x\""`, "OAR-DOC-27", "whne", "when"},
		{"DOC-21 a member of requires", `"requires":{"profile":["tool"]},"when":"true"`, "OAR-DOC-21", "requires.profile", "profiles"},
		{"DOC-12 a core anchor", `"anchor":"tool.pre_invok"`, "OAR-DOC-12", "anchor", "tool.pre_invoke"},
		{"DOC-12 a host anchor", `"anchor":"gw.rendr"`, "OAR-DOC-12", "anchor", "gw.render"},
		{"DOC-11 an effect", `"effect":"blok"`, "OAR-DOC-11", "effect", "block"},
		{"FIRE-1 an on_fire action", `"on_fire":["increment_countr"]`, "OAR-FIRE-1", "on_fire[0]", "increment_counter"},
		{"FACT-19 a profile", `"requires":{"profiles":["toool"]}`, "OAR-FACT-19", "requires.profiles[0]", "tool"},
		{"FACT-19 a required fact", `"requires":{"profiles":["tool"],"facts":["oar.test.tierr"]}`, "OAR-FACT-19", "requires.facts[0]", "oar.test.tier"},
		{"FACT-3 a fact in the condition", `"when":"tol == \"x\""`, "OAR-FACT-3", "when", "tool"},
		{"FACT-3 a function in the condition", `"when":"oar.test.alowed(tool)"`, "OAR-FACT-3", "when", "oar.test.allowed"},
		{"FIRE-11 a rule a counter names", `"when":"fire_count_of(\"READ_SECRET\") > 0"`, "OAR-FIRE-11", "when", "READ_SECRETS"},
		{"FIRE-11 a qualified rule a counter names", `"when":"fire_count_of(\"acme.sec/READ_SECRTS\") > 0"`, "OAR-FIRE-11", "when", "acme.sec/READ_SECRETS"},
		{"EVAL-13 a rule overrides names", `"overrides":["READ_SECRET"]`, "OAR-EVAL-13", "overrides[0]", "READ_SECRETS"},
		{"OPS-5 a rule on_error names", `"on_error":"READ_SECERTS"`, "OAR-OPS-5", "on_error", "READ_SECRETS"},
		{"OPS-12 a detector", `"kind":"detector","detector":{"ref":"detector://presido"}`, "OAR-OPS-12", "detector.ref", "detector://presidio"},
		{"SEL-3 a selector fact", `"selector":{"tol":["read"]}`, "OAR-SEL-3", "selector.tol", "tool"},
		{"FIRE-10 a counter scope", `"counter_scope":"tol"`, "OAR-FIRE-10", "counter_scope", "tool"},
		{"OPS-14 a transform target", `"effect":"transform","transform":{"action":"redact","target":"contnt"}`, "OAR-OPS-14", "transform.target", "content"},
		{"COPY-2 a fact in copy", `"copy":{"title":"{{ tol }}"}`, "OAR-COPY-2", "copy.title", "tool"},

		{"DOC-27 no member close", `"severity":"high"`, "OAR-DOC-27", "severity", ""},
		{"DOC-12 no anchor close", `"anchor":"elsewhere"`, "OAR-DOC-12", "anchor", ""},
		{"FACT-19 a standard profile not provided is no typo", `"requires":{"profiles":["tool","filesystem"]}`, "OAR-FACT-19", "requires.profiles[1]", ""},
		{"FACT-3 no fact close", `"when":"undefined == 1"`, "OAR-FACT-3", "when", ""},
		{"EVAL-13 another rule of the namespace is not close", `"overrides":["NO_CURL"]`, "OAR-EVAL-13", "overrides[0]", ""},
		{"EVAL-13 a bare id resolves only in its namespace", `"overrides":["other.ns/READ_SECRETS"]`, "OAR-EVAL-13", "overrides[0]", ""},
		{"OPS-12 no detector close", `"kind":"detector","detector":{"ref":"detector://lakera"}`, "OAR-OPS-12", "detector.ref", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, errs := LoadRules(c, mustDocs(t, "["+rule(t, "TYPO", tc.rule)+","+others+"]"))
			checkSuggestion(t, errs, tc.clause, tc.field, tc.want)
		})
	}
}

// A diagnostic about an unknown name in a capability suggests the close standard name.
func TestCapabilityUnknownNamesSuggestTheCloseOne(t *testing.T) {
	for _, tc := range []struct {
		name, from, to, clause, field, want string
	}{
		{"FACT-21 a member", `"profiles":`, `"profile":`, "OAR-FACT-21", "profile", "profiles"},
		{"FACT-24 a standard profile", `"profiles":["tool","session"]`, `"profiles":["tool","sesion"]`, "OAR-FACT-24", "profiles[1]", "session"},
		{"PROF-2 a core anchor", `"model.output":"model.output"`, `"model.outptu":"model.output"`, "OAR-PROF-2", "anchors.core.model.outptu", "model.output"},
		{"PROF-2 an unsupported core anchor", `"agent.finalize",`, `"agent.finalise",`, "OAR-PROF-2", "anchors.unsupported[3]", "agent.finalize"},

		{"FACT-24 no profile close", `"profiles":["tool","session"]`, `"profiles":["tool","billing"]`, "OAR-FACT-24", "profiles[1]", ""},
		{"PROF-2 no core anchor close", `"model.output":"model.output"`, `"output":"model.output"`, "OAR-PROF-2", "anchors.core.output", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := strings.Replace(testCapability, tc.from, tc.to, 1)
			if src == testCapability {
				t.Fatalf("%q is not in the capability", tc.from)
			}
			_, errs := LoadCapability(mustDocs(t, src)[0])
			checkSuggestion(t, errs, tc.clause, tc.field, tc.want)
		})
	}
}

// A configuration naming a rule that is not loaded suggests the close loaded one.
func TestCFG4_UnknownRulesSuggestTheCloseOne(t *testing.T) {
	rs, errs := LoadRules(mustCap(t, testCapability), mustDocs(t, "["+rule(t, "READ_SECRETS", "")+","+rule(t, "NO_WGET", "")+"]"))
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	for _, tc := range []struct {
		name, config, clause, field, want string
	}{
		{"CFG-1 a member", `"disabled":["NO_WGET"]`, "OAR-CFG-1", "disabled", "disable"},
		{"CFG-4 a bare id", `"disable":["READ_SECRET"]`, "OAR-CFG-4", "disable[0]", "READ_SECRETS"},
		{"CFG-4 a qualified id", `"enforcement":{"acme.sec/NO_WGTE":"monitor"}`, "OAR-CFG-4", "enforcement.acme.sec/NO_WGTE", "acme.sec/NO_WGET"},

		{"CFG-4 no rule close", `"disable":["acme.sec/NO_CURL"]`, "OAR-CFG-4", "disable[0]", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, errs := Configure(rs, mustDocs(t, `{"oar_config":"1.0",`+tc.config+`}`))
			checkSuggestion(t, errs, tc.clause, tc.field, tc.want)
		})
	}
}

// suggestedPrefix checks that the diagnostics of clause in l are n, that in the order
// of what they are about (at) a first part of them has a "did you mean" and the rest
// none, and returns how many have.
func suggestedPrefix(t *testing.T, l diag.List, clause string, n int, at func(*diag.Error) int) int {
	t.Helper()
	var of []*diag.Error
	for _, e := range l {
		if e.Clause == clause {
			of = append(of, e)
		}
	}
	slices.SortFunc(of, func(a, b *diag.Error) int { return cmp.Compare(at(a), at(b)) })
	if len(of) != n {
		t.Fatalf("%d %s diagnostics, want %d", len(of), clause, n)
	}
	suggested := 0
	for suggested < len(of) && of[suggested].Suggestion != "" {
		suggested++
	}
	for _, e := range of[suggested:] {
		if e.Suggestion != "" {
			t.Fatalf("a suggestion after the first %d stopped: %v", suggested, e)
		}
	}
	return suggested
}

// TestUnknownRuleReferencesAreSuggestedForWithinABound: each reference to a rule that
// resolves to none is compared with every rule of the set for its "did you mean", so a
// set whose every rule names one it lacks cost the square of its size (8,000 rules: 12
// s at the webhook). The references are all refused ([OAR-EVAL-13], [OAR-FIRE-11],
// [OAR-CFG-4]); the first ones in member order are suggested for, as far as
// suggestionWork goes, the same ones at every load however the rules were spread over
// the processors.
func TestUnknownRuleReferencesAreSuggestedForWithinABound(t *testing.T) {
	const n = 3000
	id := func(i int) string { return fmt.Sprintf("R%04d", i) }
	cp := mustCap(t, testCapability)
	overriding := make([]any, n)
	for i := range n {
		overriding[i] = map[string]any{"oar": "1.0", "id": id(i), "kind": "policy", "anchor": "tool.pre_invoke", "effect": "warn", "overrides": []any{id(i) + "X"}}
	}
	_, first := LoadRules(cp, overriding)
	suggested := suggestedPrefix(t, first, "OAR-EVAL-13", n, func(e *diag.Error) int { return e.Index })
	if suggested == 0 || suggested == n {
		t.Fatalf("%d of %d unknown overrides suggested for; want the first ones, not all", suggested, n)
	}
	if got := first[0].Suggestion; got != id(0) {
		t.Errorf("first suggestion %q, want %q", got, id(0))
	}
	for range 3 {
		_, again := LoadRules(cp, overriding)
		if fmt.Sprint(again) != fmt.Sprint(first) {
			t.Fatal("loading the set again gave other diagnostics")
		}
	}

	// One condition naming n rules the set lacks.
	refs := make([]string, n)
	for i := range refs {
		refs[i] = fmt.Sprintf(`fire_count_of(%q)`, id(i)+"X")
	}
	counting := []any{map[string]any{"oar": "1.0", "id": "COUNTING", "kind": "policy", "anchor": "tool.pre_invoke", "effect": "warn",
		"when": strings.Join(refs, " + ") + " > 0"}}
	for i := range n {
		counting = append(counting, map[string]any{"oar": "1.0", "id": id(i), "kind": "policy", "anchor": "tool.pre_invoke", "effect": "warn"})
	}
	capBig := mustCap(t, strings.Replace(testCapability, `"supports_transform":true,`, `"supports_transform":true,"expression_nodes_max":65536,`, 1))
	_, errs := LoadRules(capBig, counting)
	if suggested := suggestedPrefix(t, errs, "OAR-FIRE-11", n, func(e *diag.Error) int { return e.Offset }); suggested == 0 || suggested == n {
		t.Fatalf("%d of %d unknown fire_count_of names suggested for", suggested, n)
	}

	// A configuration disabling n rules the set lacks.
	rs, errs := LoadRules(cp, counting[1:])
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	disable := make([]any, n)
	for i := range disable {
		disable[i] = id(i) + "X"
	}
	_, errs = Configure(rs, []any{map[string]any{"oar_config": "1.0", "disable": disable}})
	member := func(e *diag.Error) int {
		var i int
		if _, err := fmt.Sscanf(e.Field, "disable[%d]", &i); err != nil {
			t.Fatalf("%v: %v", e, err)
		}
		return i
	}
	if suggested := suggestedPrefix(t, errs, "OAR-CFG-4", n, member); suggested == 0 || suggested == n {
		t.Fatalf("%d of %d unknown configured rules suggested for", suggested, n)
	}
}
