package engine

import (
	"iter"
	"maps"
	"slices"
	"strings"

	"github.com/oar-operator/oar-operator/internal/engine/diag"
	"github.com/oar-operator/oar-operator/internal/engine/types"
)

// The names available at each place a document names something, for the "did you
// mean" of a diagnostic about an unknown one (diag.Error.Suggest).

// names yields the capability's declared facts and functions for which keep holds.
func (c *Capability) names(keep func(types.Symbol) bool) iter.Seq[string] {
	return func(yield func(string) bool) {
		for sym := range c.All() {
			if keep(sym) && !yield(sym.Name) {
				return
			}
		}
	}
}

// anyName keeps every declared fact and function.
func anyName(types.Symbol) bool { return true }

// factOf keeps the facts (not functions) of the given types.
func factOf(kinds ...types.Kind) func(types.Symbol) bool {
	return func(s types.Symbol) bool { return !s.Func && slices.Contains(kinds, s.Type) }
}

// ruleAnchors yields the anchors a rule can name: the supported core anchors and the
// host-native ones.
func (c *Capability) ruleAnchors() iter.Seq[string] {
	return func(yield func(string) bool) {
		for _, a := range CoreAnchors {
			if _, ok := c.coreToLocal[a]; ok && !yield(a) {
				return
			}
		}
		for _, a := range c.HostAnchors {
			if !yield(a) {
				return
			}
		}
	}
}

// DeclaredAnchors yields the anchors an occurrence can arrive at: the local anchor of
// each supported core anchor, then the host-native anchors.
func (c *Capability) DeclaredAnchors() iter.Seq[string] {
	return func(yield func(string) bool) {
		for _, a := range CoreAnchors {
			if local, ok := c.coreToLocal[a]; ok && !yield(local) {
				return
			}
		}
		for _, a := range c.HostAnchors {
			if !yield(a) {
				return
			}
		}
	}
}

// ruleRefs yields what a rule of namespace ns could have meant by the reference ref
// ([OAR-EVAL-13], [OAR-OPS-5], [OAR-FIRE-11]): for a bare id, the ids of the loaded
// rules of ns, the only ones a bare id resolves to; for a qualified identifier, every
// loaded rule's.
func (rs *RuleSet) ruleRefs(ref, ns string) iter.Seq[string] {
	qualified := strings.Contains(ref, "/")
	return func(yield func(string) bool) {
		for _, r := range rs.Rules {
			switch {
			case r.QID == "":
			case qualified:
				if !yield(r.QID) {
					return
				}
			case r.Namespace == ns:
				if !yield(r.ID) {
					return
				}
			}
		}
	}
}

// suggestionWork bounds the "did you mean" of the references to rules that one load
// of a set, or one configuration of it, resolves to none, in diag.ClosestWithin's
// units (about a nanosecond each). Such a reference is compared with every rule of the
// set, and the suggestions are made in member order while work is left, so which
// diagnostics have one does not depend on how the rules were spread over the
// processors. An ordinary set has its every reference suggested for; one of 8,000 rules
// each naming a rule it lacks, where comparing every reference with every rule took
// 12 s (the webhook's whole budget), has the first few hundred.
const suggestionWork = 1 << 24

// owedSuggestion is a diagnostic about a reference to a rule that resolved to none,
// whose "did you mean" is added once every rule of the set is resolved: what a rule of
// namespace namespace could have meant by ref.
type owedSuggestion struct {
	e         *diag.Error
	ref       string
	namespace string
}

// suggestRefs adds the "did you mean" owed while work is left.
func (rs *RuleSet) suggestRefs(work *int, owed []owedSuggestion) {
	for _, o := range owed {
		o.e.SuggestWithin(o.ref, rs.ruleRefs(o.ref, o.namespace), work)
	}
}

// configRefs yields what a configuration document could have meant by ref
// ([OAR-CFG-4]): every loaded rule's qualified identifier for a qualified one, and
// every loaded id for a bare one, which resolves in any namespace.
func (rs *RuleSet) configRefs(ref string) iter.Seq[string] {
	qualified := strings.Contains(ref, "/")
	return func(yield func(string) bool) {
		for _, r := range rs.Rules {
			name := r.ID
			if qualified {
				name = r.QID
			}
			if name != "" && !yield(name) {
				return
			}
		}
	}
}

// keys yields the members of a closed member set.
func keys(set map[string]bool) iter.Seq[string] { return maps.Keys(set) }
