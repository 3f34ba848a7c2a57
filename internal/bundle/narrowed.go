package bundle

import (
	"fmt"
	"slices"
	"strings"
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
// copy text ([OAR-FACT-3], [OAR-COPY-2]), or else one an operand next to its offset names
// (a type error such as [OAR-EXPR-11], whose offset is the operator's), every
// identifier of the text when it has no offset. When those name narrowed names of more
// than one member, it is the member holding them all (commonMember): which of them broke
// the rule is not told.
func (n narrowed) named(e *diag.Error) (string, bool) {
	if p, ok := n.paths[e.Value]; ok {
		return p, true
	}
	if name := identifierAt(e.Value, e.Offset); name != "" {
		if p, ok := n.paths[name]; ok {
			return p, true
		}
	}
	var paths []string
	for _, name := range operandNames(e.Value, e.Offset) {
		if p, ok := n.paths[name]; ok && !slices.Contains(paths, p) {
			paths = append(paths, p)
		}
	}
	switch len(paths) {
	case 0:
		return "", false
	case 1:
		return paths[0], true
	}
	return commonMember(paths), true
}

// commonMember is the member holding every one of paths: the list their entries are in
// (spec.host_facts for spec.host_facts[0].type and spec.host_facts[1].type), "spec" when
// they are in different members.
func commonMember(paths []string) string {
	list := func(p string) string {
		if i := strings.IndexByte(p, '['); i >= 0 {
			return p[:i]
		}
		return p
	}
	first := list(paths[0])
	for _, p := range paths[1:] {
		if list(p) != first {
			return "spec"
		}
	}
	return first
}

// identifierAt is the identifier (Appendix A: names joined by dots) starting at the
// code-point offset of s, "" when none does.
func identifierAt(s string, offset int) string {
	i := byteIndex(s, offset)
	if i < 0 || i >= len(s) || !isNameStart(s[i]) {
		return ""
	}
	return s[i:identifierEnd(s, i)]
}

// byteIndex is the index in s of the code-point offset, -1 for a negative offset and
// len(s) past the end.
func byteIndex(s string, offset int) int {
	if offset < 0 {
		return -1
	}
	i := 0
	for ; offset > 0 && i < len(s); offset-- {
		_, size := utf8.DecodeRuneInString(s[i:])
		i += size
	}
	return i
}

// operandNames lists the identifiers of s, a condition or copy text, that a diagnostic
// at the code-point offset may be about: the nearest one on each side of the operator
// there, each within the operand next to it — not past &&, ||, ?, :, a comma or a
// bracket that encloses the operator. Every identifier of s when offset is -1.
func operandNames(s string, offset int) []string {
	lx := lexemes(s)
	if offset < 0 {
		var out []string
		for _, l := range lx {
			if l.name {
				out = append(out, l.text)
			}
		}
		return out
	}
	at := byteIndex(s, offset)
	op := slices.IndexFunc(lx, func(l lexeme) bool { return l.start >= at })
	if op < 0 {
		return nil
	}
	var out []string
	if name := nearestName(lx[:op], -1, ")]", "(["); name != "" {
		out = append(out, name)
	}
	if name := nearestName(lx[op+1:], 1, "([", ")]"); name != "" {
		out = append(out, name)
	}
	return out
}

// nearestName walks lx from its end (step -1) or its start (step 1) away from an
// operator and returns the first identifier of the operand there, "" when the operand
// has none: opens are the brackets that open away from the operator, closes those that
// close toward it.
func nearestName(lx []lexeme, step int, opens, closes string) string {
	i := 0
	if step < 0 {
		i = len(lx) - 1
	}
	depth := 0
	for ; 0 <= i && i < len(lx); i += step {
		l := lx[i]
		switch {
		case l.name:
			return l.text
		case strings.Contains(opens, l.text):
			depth++
		case strings.Contains(closes, l.text):
			if depth == 0 {
				return ""
			}
			depth--
		case depth == 0 && slices.Contains(operandEnds, l.text):
			return ""
		}
	}
	return ""
}

// operandEnds are the tokens no operand of a comparison extends past.
var operandEnds = []string{"&&", "||", "?", ":", ","}

// lexeme is a token of a condition or copy text, as far as operandNames tells them
// apart: identifiers, string and number literals, && and ||, and single characters.
type lexeme struct {
	text  string
	start int
	// name says the lexeme is an identifier, not a keyword.
	name bool
}

// lexemes splits s into lexemes, leaving out white space.
func lexemes(s string) []lexeme {
	var out []lexeme
	for i := 0; i < len(s); {
		start := i
		switch c := s[i]; {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			i++
			continue
		case c == '"' || c == '\'':
			i = literalEnd(s, i)
		case isNameStart(c):
			i = identifierEnd(s, i)
		case isNameChar(c):
			// a number, or a name that starts with a digit
			for i < len(s) && isNameChar(s[i]) {
				i++
			}
		case strings.HasPrefix(s[i:], "&&") || strings.HasPrefix(s[i:], "||"):
			i += 2
		default:
			i++
		}
		text := s[start:i]
		out = append(out, lexeme{text: text, start: start, name: isNameStart(s[start]) && !keywords[text]})
	}
	return out
}

// keywords are the words of the condition language that are no identifier.
var keywords = map[string]bool{"true": true, "false": true, "in": true}

// literalEnd is the index just past the string literal that the quote s[i] opens.
func literalEnd(s string, i int) int {
	quote := s[i]
	for i++; i < len(s); i++ {
		switch s[i] {
		case '\\':
			i++
		case quote:
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
