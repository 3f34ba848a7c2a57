package admission

import (
	"fmt"

	"github.com/oar-operator/oar-operator/internal/engine"
	"github.com/oar-operator/oar-operator/internal/engine/diag"
)

// shapeChecks names what shapeErrors checks, for the warning that says so.
const shapeChecks = "the version gate, the member set, each member's type and grammar, and duplicate identifiers within the pack"

// standIn is a capability that supports no anchor: every core anchor unsupported, no
// host anchor.
var standIn = func() *engine.Capability {
	unsupported := make([]any, len(engine.CoreAnchors))
	for i, a := range engine.CoreAnchors {
		unsupported[i] = a
	}
	c, errs := engine.LoadCapability(map[string]any{
		"oar_capability_version": "1.0",
		"host":                   "admission.stand-in",
		"anchors":                map[string]any{"core": map[string]any{}, "unsupported": unsupported},
	})
	if len(errs) > 0 {
		panic(fmt.Sprintf("admission: the stand-in capability does not load: %v", errs))
	}
	return c
}()

// shapeErrors returns what the loader says about rules before it consults a capability:
// the version gate ([OAR-DOC-3], [OAR-DOC-4], [OAR-DOC-5]), the member set
// ([OAR-DOC-27]), required members ([OAR-DOC-2]), each member's type and grammar, and
// duplicate identifiers within the pack ([OAR-DOC-9]).
//
// It loads the rules against standIn. The loader checks a rule against the capability
// only once the rule passed its own checks, and begins with its anchor, which no rule
// passes here ([OAR-PROF-4] for a core anchor, [OAR-DOC-12] for another one). A rule
// refused at its anchor therefore had nothing to say on its own but a duplicate
// identifier, which is kept; everything else the loader said about it is dropped.
func shapeErrors(rules []any) diag.List {
	_, errs := engine.LoadRules(standIn, rules)
	reached := map[int]bool{}
	for _, e := range errs {
		if e.Field == "anchor" && (e.Clause == "OAR-PROF-4" || e.Clause == "OAR-DOC-12" && namesAnchor(rules, e.Index)) {
			reached[e.Index] = true
		}
	}
	var out diag.List
	for _, e := range errs {
		if !reached[e.Index] || e.Clause == "OAR-DOC-9" {
			out = append(out, e)
		}
	}
	return out
}

// namesAnchor reports whether rule i carries a non-empty string anchor, the only kind the
// loader's own checks let through (they refuse another type or an empty string under
// [OAR-DOC-12]).
func namesAnchor(rules []any, i int) bool {
	if i < 0 || i >= len(rules) {
		return false
	}
	obj, _ := rules[i].(map[string]any)
	a, _ := obj["anchor"].(string)
	return a != ""
}
