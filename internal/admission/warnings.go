package admission

import (
	"fmt"

	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
)

// The webhook admits every object it warns about, and the controller decides in status.
// Most warnings say that the controller will not publish what was written — a pack or a
// configuration is published whole or left out — the rest are
// advice about what it publishes as written. WarningKind says which, in one place, so
// that `oarctl validate --strict` fails on the former without reading the words.

// WarningKind is what an admission warning says will become of what was written.
type WarningKind int

// The kinds of warning: LoadAdvice is advice; every other kind means the controller will
// not serve what was written, as its summary says.
const (
	// LoadAdvice is the engine loader's load-time advice about a rule it loads and
	// serves as written ([OAR-SEL-6]: a selector clause that matches nothing).
	LoadAdvice WarningKind = iota
	// CapabilityUnavailable: the Capability a RulePack or OperatorConfig names does not
	// exist or does not load, so nothing is published for it.
	CapabilityUnavailable
	// DuplicateRule: another pack defines one of the pack's rules ([OAR-DOC-9]).
	DuplicateRule
	// UnpublishedReference: a rule references a rule that only an unpublished pack
	// defines ([OAR-EVAL-13], [OAR-OPS-5], [OAR-FIRE-11]).
	UnpublishedReference
	// PackConflict: the pack and a published pack do not load together ([OAR-EVAL-16],
	// [OAR-EVAL-17], a reference the change leaves unresolved).
	PackConflict
	// ConfigurationConflict: with the pack, a published configuration would no longer
	// apply ([OAR-CFG-4], [OAR-CFG-5], [OAR-CFG-8]).
	ConfigurationConflict
	// BundleTooLarge: with the packs and configurations published, the bundle would not
	// fit in its ConfigMap.
	BundleTooLarge
	// PackDoesNotLoad: a pack naming the Capability does not load against its document.
	PackDoesNotLoad
	// RuleNotPublished: a configuration names a rule that only an unpublished pack
	// defines ([OAR-CFG-4]).
	RuleNotPublished
	// ConfigurationBreaks: a configuration stops applying once an unpublished pack it
	// names a rule of is published ([OAR-CFG-5], [OAR-CFG-8]).
	ConfigurationBreaks
)

// kindInfo is a kind's name, whether the controller serves what a warning of the kind is
// about as written, and what the kind says, for the documentation.
type kindInfo struct {
	name     string
	unserved bool
	summary  string
}

// warningKinds describes each kind, in the order of the constants: the one list of which
// kinds are not served.
var warningKinds = [...]kindInfo{
	LoadAdvice:            {"load-advice", false, "the loader's advice about a rule it loads and publishes as written ([OAR-SEL-6]: a selector clause that matches nothing)"},
	CapabilityUnavailable: {"capability-unavailable", true, "the Capability a RulePack or OperatorConfig names does not exist (in its namespace) or is invalid: nothing is published for it"},
	DuplicateRule:         {"duplicate-rule", true, "two packs define the same rule [OAR-DOC-9]: only one of them is published"},
	UnpublishedReference:  {"unpublished-reference", true, "a rule references a rule that only an unpublished pack defines: the pack is held back until that one is published"},
	PackConflict:          {"pack-conflict", true, "a pack and a published pack do not load together (a suppression cycle, a suppressed mandatory rule, a reference left unresolved): one of them is left out or held back"},
	ConfigurationConflict: {"configuration-conflict", true, "with the pack, a published configuration would no longer apply: the pack is held back, or the configuration left out"},
	BundleTooLarge:        {"bundle-too-large", true, "with what is published, the bundle would not fit in its ConfigMap: the pack is held back (BundleTooLarge)"},
	PackDoesNotLoad:       {"pack-does-not-load", true, "a pack naming the Capability does not load against it: the pack is left out"},
	RuleNotPublished:      {"rule-not-published", true, "a configuration names a rule only an unpublished pack defines [OAR-CFG-4]: the configuration does not apply"},
	ConfigurationBreaks:   {"configuration-breaks", true, "a configuration stops applying once a pack it names a rule of is published [OAR-CFG-5] [OAR-CFG-8]: the configuration or that pack is held back"},
}

// WarningKinds lists every kind, in order.
func WarningKinds() []WarningKind {
	out := make([]WarningKind, len(warningKinds))
	for i := range out {
		out[i] = WarningKind(i)
	}
	return out
}

// String is the kind's name, as `oarctl validate --strict` prints it.
func (k WarningKind) String() string {
	if !k.known() {
		return fmt.Sprintf("WarningKind(%d)", int(k))
	}
	return warningKinds[k].name
}

// Unserved reports whether a warning of this kind means that the controller will not
// serve what was written as written.
func (k WarningKind) Unserved() bool { return k.known() && warningKinds[k].unserved }

// Summary says what a warning of this kind is about and, for a kind that is not served,
// what the controller does instead.
func (k WarningKind) Summary() string {
	if !k.known() {
		return ""
	}
	return warningKinds[k].summary
}

func (k WarningKind) known() bool { return k >= 0 && int(k) < len(warningKinds) }

// Warning is one admission warning: the line kubectl prints, and its kind.
type Warning struct {
	Text string
	Kind WarningKind
}

// warnings collects the admission warnings of one response, one line each naming the
// clause, the rule or field, and the other resource involved.
type warnings []Warning

func (w *warnings) add(kind WarningKind, clause, where, format string, args ...any) {
	line := fmt.Sprintf(format, args...)
	if where != "" {
		line = where + ": " + line
	}
	if clause != "" {
		line = "[" + clause + "] " + line
	}
	*w = append(*w, Warning{Text: HeaderText(line), Kind: kind})
}

// list returns at most maxWarnings warnings and one counting the rest, of the first
// unserved kind among them — so a warning left out of a response still counts.
func (w warnings) list() warnings {
	n := len(w) - maxWarnings
	if n <= 0 {
		return w
	}
	rest := Warning{Text: fmt.Sprintf("and %s not listed here", count(n, "more warning")), Kind: LoadAdvice}
	for _, x := range w[maxWarnings:] {
		if x.Kind.Unserved() {
			rest.Kind = x.Kind
			break
		}
	}
	return append(w[:maxWarnings:maxWarnings], rest)
}

// response is what the webhook answers of w: the lines of list.
func (w warnings) response() admission.Warnings {
	if len(w) == 0 {
		return nil
	}
	listed := w.list()
	out := make(admission.Warnings, len(listed))
	for i, x := range listed {
		out[i] = x.Text
	}
	return out
}
