package admission

import (
	"fmt"
	"slices"
	"strings"

	"github.com/oar-operator/oar-operator/internal/engine"
	"github.com/oar-operator/oar-operator/internal/engine/expr"
)

// reference is one reference a rule makes to another rule: the member holding it, the
// clause that refuses it when it resolves to no loaded rule, and the qualified identifier
// it resolves to.
type reference struct {
	field, clause, target string
}

// edges lists the references of a rule document that relate rules in a rule set: the
// rules it overrides ([OAR-EVAL-13]) and the rule its on_error substitutes ([OAR-OPS-5]),
// each resolved as the loader resolves it (engine.ResolveRef).
func edges(doc any) []reference {
	obj, _ := doc.(map[string]any)
	ns, _ := obj["namespace"].(string)
	var out []reference
	if list, ok := obj["overrides"].([]any); ok {
		for k, v := range list {
			if ref, ok := v.(string); ok {
				out = append(out, reference{fmt.Sprintf("overrides[%d]", k), "OAR-EVAL-13", engine.ResolveRef(ref, ns)})
			}
		}
	}
	if ref, ok := substitute(obj); ok {
		out = append(out, reference{"on_error", "OAR-OPS-5", engine.ResolveRef(ref, ns)})
	}
	return out
}

// substitute returns the rule a rule document's on_error names, if it names one rather
// than fail_closed or fail_open ([OAR-DOC-18]).
func substitute(obj map[string]any) (string, bool) {
	ref, ok := obj["on_error"].(string)
	return ref, ok && ref != "fail_closed" && ref != "fail_open"
}

// references lists every rule reference of a rule document under c: its edges, and the
// rules its condition's fire_count_of and breaker_count_of name ([OAR-FIRE-11]). The
// condition is checked, with a resolver that records what it is asked, only when it
// names one of those functions; checking asks the resolver what compiling would.
func references(doc any, c *engine.Capability) []reference {
	out := edges(doc)
	obj, _ := doc.(map[string]any)
	if when, ok := obj["when"].(string); ok && strings.Contains(when, "_count_of") {
		ns, _ := obj["namespace"].(string)
		out = counted(out, when, ns, c)
	}
	return out
}

// counted appends to out the rules the condition when of a rule in namespace ns counts
// the firings of. It is references' own function so that only a rule with such a
// condition pays for the resolver's closure.
func counted(out []reference, when, ns string, c *engine.Capability) []reference {
	expr.Check(when, expr.Options{Symbols: c, MaxNodes: c.ExpressionNodesMax, ResolveRule: func(ref string) (int, bool) {
		out = append(out, reference{"when", "OAR-FIRE-11", engine.ResolveRef(ref, ns)})
		return 0, true
	}})
	return out
}

// relational reports whether a rule document takes part in relations between rules
// beyond being named: it has edges, or it is mandatory ([OAR-EVAL-17]).
func relational(doc any) bool {
	obj, _ := doc.(map[string]any)
	if obj["mandatory"] == true {
		return true
	}
	// Whether edges would list any, without listing them.
	if list, ok := obj["overrides"].([]any); ok && slices.ContainsFunc(list, isString) {
		return true
	}
	_, ok := substitute(obj)
	return ok
}

func isString(v any) bool {
	_, ok := v.(string)
	return ok
}

// named returns every rule identifier configuration documents name, bare or qualified:
// the entries of disable and the keys of enforcement.
func named(configs []any) map[string]bool {
	names := map[string]bool{}
	for _, doc := range configs {
		obj, _ := doc.(map[string]any)
		if list, ok := obj["disable"].([]any); ok {
			for _, v := range list {
				if s, ok := v.(string); ok {
					names[s] = true
				}
			}
		}
		if m, ok := obj["enforcement"].(map[string]any); ok {
			for k := range m {
				names[k] = true
			}
		}
	}
	return names
}

// namedBy reports whether a configuration naming names may mean the rule qid: by its
// qualified identifier, or by its bare id ([OAR-CFG-8]).
func namedBy(qid string, names map[string]bool) bool {
	return names[qid] || names[idOf(qid)]
}

// namespaceOf returns the namespace part of a qualified identifier.
func namespaceOf(qid string) string {
	if i := strings.LastIndex(qid, "/"); i >= 0 {
		return qid[:i]
	}
	return ""
}

// idOf returns the id part of a qualified identifier.
func idOf(qid string) string {
	return qid[strings.LastIndex(qid, "/")+1:]
}
