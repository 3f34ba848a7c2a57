package bundle

import (
	"fmt"
	"slices"
	"unicode/utf8"

	"github.com/oar-operator/oar-operator/internal/engine"
	"github.com/oar-operator/oar-operator/internal/engine/diag"
	"github.com/oar-operator/oar-operator/internal/engine/types"
)

// narrowed is what a capability document provided that a later one no longer provides
// as it did, each thing by the path, into the later Capability resource, of the member
// that no longer provides it: a profile, and every fact and function of it, at
// spec.profiles; a host fact gone from spec.host_facts, or declared there with another
// type (spec.host_facts[i].type); a core anchor the later document declares
// unsupported (spec.anchors.unsupported[i]); a host-native anchor gone from
// spec.anchors.host; a detector gone from spec.detectors. A rule that loaded under the
// first document and does not under the later one needs one of these, or one of the
// scalar members (activity_window, supports_transform, expression_nodes_max).
type narrowed struct {
	// paths maps each name (a profile, fact, function, anchor or detector reference)
	// to its member's path.
	paths map[string]string
	// members are the distinct paths, scalar members included, in the order found.
	members []string
}

// narrowedBetween compares two capability documents; before nil compares nothing.
func narrowedBetween(before, after *engine.Capability) narrowed {
	n := narrowed{paths: map[string]string{}}
	if before == nil || after == nil {
		return n
	}
	for _, p := range before.Profiles {
		if !after.Provides(p) {
			n.add(p, "spec.profiles")
		}
	}
	for s := range before.All() {
		if now, ok := after.Lookup(s.Name); !ok || !sameDeclaration(s, now) {
			n.add(s.Name, hostFactPath(before, after, s.Name))
		}
	}
	n.anchors(before, after)
	for _, d := range before.Detectors {
		if !after.HasDetector(d) {
			n.add(d, "spec.detectors")
		}
	}
	if after.ActivityWindow < before.ActivityWindow {
		n.addMember("spec.activity_window")
	}
	if before.SupportsTransform && !after.SupportsTransform {
		n.addMember("spec.supports_transform")
	}
	if after.ExpressionNodesMax < before.ExpressionNodesMax {
		n.addMember("spec.expression_nodes_max")
	}
	return n
}

// anchors records the core anchors after declares unsupported that before supported,
// and the host-native anchors before catalogued that after does not.
func (n *narrowed) anchors(before, after *engine.Capability) {
	var unsupported []any
	if a, ok := after.Document()["anchors"].(map[string]any); ok {
		unsupported, _ = a["unsupported"].([]any)
	}
	for _, core := range engine.CoreAnchors {
		_, was := before.LocalAnchor(core)
		if _, is := after.LocalAnchor(core); !was || is {
			continue
		}
		path := "spec.anchors"
		if i := slices.Index(unsupported, any(core)); i >= 0 {
			path = fmt.Sprintf("spec.anchors.unsupported[%d]", i)
		}
		n.add(core, path)
	}
	for _, a := range before.HostAnchors {
		if !slices.Contains(after.HostAnchors, a) {
			n.add(a, "spec.anchors.host")
		}
	}
}

// sameDeclaration reports whether two declarations of one name mean the same to a rule.
func sameDeclaration(a, b types.Symbol) bool {
	return a.Func == b.Func && a.Type == b.Type && a.Arg == b.Arg && a.RuleRef == b.RuleRef
}

// hostFactPath is the member that no longer provides name as before did: its entry in
// after's host_facts when after declares it there still (its type changed), the list
// when it is gone from it, and spec.profiles for a profile's fact or function.
func hostFactPath(before, after *engine.Capability, name string) string {
	isNamed := func(f engine.HostFact) bool { return f.Name == name }
	if !slices.ContainsFunc(before.HostFacts, isNamed) {
		return "spec.profiles"
	}
	if i := slices.IndexFunc(after.HostFacts, isNamed); i >= 0 {
		return fmt.Sprintf("spec.host_facts[%d].type", i)
	}
	return "spec.host_facts"
}

func (n *narrowed) add(name, path string) {
	n.paths[name] = path
	n.addMember(path)
}

func (n *narrowed) addMember(path string) {
	if !slices.Contains(n.members, path) {
		n.members = append(n.members, path)
	}
}

// member is the path of the member of the later Capability whose narrowing made a
// published rule or configuration raise e: the one the clause decides for a scalar
// member; else the member of a narrowed name the diagnostic carries (its value, the
// identifier at its offset, or one its condition names); else the member the clause
// decides (CapabilityMember); else the only member narrowed. "spec" when none says.
func (n narrowed) member(e *diag.Error) string {
	if m := scalarMember(e.Clause); m != "" {
		return m
	}
	if p, ok := n.named(e); ok {
		return p
	}
	if m := CapabilityMember(e); m != "spec" {
		return m
	}
	if len(n.members) == 1 {
		return n.members[0]
	}
	return "spec"
}

// scalarMember is the scalar member of the capability document that alone decides
// clause, "" for any other clause.
func scalarMember(clause string) string {
	switch clause {
	case "OAR-OPS-18":
		return "spec.supports_transform"
	case "OAR-PROF-3", "OAR-FACT-13":
		return "spec.activity_window"
	case "OAR-EXPR-17":
		return "spec.expression_nodes_max"
	}
	return ""
}

// named finds a narrowed name in e: its value (a profile, fact, anchor or detector a
// rule names in a field of its own), the identifier at its offset into a condition or
// copy text ([OAR-FACT-3], [OAR-COPY-2]), or else the first narrowed identifier the
// text names outside its string literals (a type error, whose offset is the operator's).
func (n narrowed) named(e *diag.Error) (string, bool) {
	if p, ok := n.paths[e.Value]; ok {
		return p, true
	}
	if name := identifierAt(e.Value, e.Offset); name != "" {
		if p, ok := n.paths[name]; ok {
			return p, true
		}
	}
	for _, name := range identifiers(e.Value) {
		if p, ok := n.paths[name]; ok {
			return p, true
		}
	}
	return "", false
}

// identifierAt is the identifier (Appendix A: names joined by dots) starting at the
// code-point offset of s, "" when none does.
func identifierAt(s string, offset int) string {
	if offset < 0 {
		return ""
	}
	i := 0
	for ; offset > 0 && i < len(s); offset-- {
		_, size := utf8.DecodeRuneInString(s[i:])
		i += size
	}
	if i >= len(s) || !isNameStart(s[i]) {
		return ""
	}
	return s[i:identifierEnd(s, i)]
}

// identifiers lists the identifiers of a condition or copy text, in order, skipping
// double-quoted string literals.
func identifiers(s string) []string {
	var out []string
	for i := 0; i < len(s); {
		switch c := s[i]; {
		case c == '"':
			i = literalEnd(s, i)
		case isNameStart(c):
			end := identifierEnd(s, i)
			out = append(out, s[i:end])
			i = end
		case isNameChar(c):
			// the rest of a number, or of a name that started with a digit
			for i < len(s) && isNameChar(s[i]) {
				i++
			}
		default:
			i++
		}
	}
	return out
}

// literalEnd is the index just past the string literal opening at s[i].
func literalEnd(s string, i int) int {
	for i++; i < len(s); i++ {
		switch s[i] {
		case '\\':
			i++
		case '"':
			return i + 1
		}
	}
	return len(s)
}

// identifierEnd is the index just past the identifier starting at s[i]: names joined
// by dots, a trailing dot excluded.
func identifierEnd(s string, i int) int {
	end := i
	for i < len(s) && isNameStart(s[i]) {
		i++
		for i < len(s) && isNameChar(s[i]) {
			i++
		}
		end = i
		if i >= len(s) || s[i] != '.' {
			break
		}
		i++
	}
	return end
}

func isNameStart(c byte) bool {
	return c == '_' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z'
}

func isNameChar(c byte) bool { return isNameStart(c) || '0' <= c && c <= '9' }
