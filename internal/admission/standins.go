package admission

import (
	"sort"
	"strings"

	"github.com/oar-operator/oar-operator/internal/engine"
)

// A RulePack is loaded next to stand-ins for the rules of other packs, so that what the
// loader says is about the pack itself, and a pack's relations to other packs are checked
// without compiling their conditions again.

// stubAnchor returns an anchor every rule may use under c, or "" when c supports none
// (then no rule loads at all, stubs included).
func stubAnchor(c *engine.Capability) string {
	for _, a := range engine.CoreAnchors {
		if _, ok := c.LocalAnchor(a); ok {
			return a
		}
	}
	if len(c.HostAnchors) > 0 {
		return c.HostAnchors[0]
	}
	return ""
}

// stub is a minimal rule with the qualified identifier qid: it makes a reference to qid
// resolve and takes part in nothing else.
func stub(qid, anchor string) map[string]any {
	d := minimalRule(anchor)
	if i := strings.LastIndex(qid, "/"); i >= 0 {
		d["namespace"], d["id"] = qid[:i], qid[i+1:]
	} else {
		d["id"] = qid
	}
	return d
}

// stubs returns a stub for every identifier of want that have does not hold, sorted.
func stubs(want, have map[string]bool, anchor string) []any {
	if anchor == "" {
		return nil
	}
	names := stubNames(want, have)
	out := make([]any, len(names))
	for i, q := range names {
		out[i] = stub(q, anchor)
	}
	return out
}

// stubNames returns the identifiers of want that have does not hold, sorted.
func stubNames(want, have map[string]bool) []string {
	var names []string
	for q := range want {
		if !have[q] && q != "" {
			names = append(names, q)
		}
	}
	sort.Strings(names)
	return names
}

// identityMembers say what a configuration may do to a rule: its identity
// ([OAR-DOC-8]), whether it is mandatory and its default enforcement ([OAR-CFG-5]).
var identityMembers = []string{"namespace", "id", "mandatory", "enforcement"}

// identity is doc reduced to identityMembers on a minimal rule. A configuration applies
// to a set of identities exactly as to the rules themselves ([OAR-CFG-4], [OAR-CFG-5],
// [OAR-CFG-8]).
func identity(doc any, anchor string) map[string]any {
	d := minimalRule(anchor)
	obj, _ := doc.(map[string]any)
	for _, m := range identityMembers {
		if v, ok := obj[m]; ok {
			d[m] = v
		}
	}
	return d
}

// skeleton is the identity of doc with the rules it suppresses ([OAR-EVAL-13]) and the
// rule its on_error substitutes ([OAR-OPS-5]). A set of skeletons loads exactly when the
// rules' identities ([OAR-DOC-9]), suppressions ([OAR-EVAL-16], [OAR-EVAL-17]) and
// substitutions fit together, without compiling a condition again.
func skeleton(doc any, anchor string) map[string]any {
	d := identity(doc, anchor)
	obj, _ := doc.(map[string]any)
	if v, ok := obj["overrides"]; ok {
		d["overrides"] = v
	}
	if ref, ok := substitute(obj); ok {
		d["on_error"] = ref
	}
	return d
}

// minimalRule is a rule that loads under any capability supporting anchor and does
// nothing.
func minimalRule(anchor string) map[string]any {
	return map[string]any{"oar": "1.0", "kind": "policy", "anchor": anchor, "effect": "allow"}
}
