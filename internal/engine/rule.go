package engine

import (
	"iter"
	"maps"
	"slices"

	"github.com/oar-operator/oar-operator/internal/engine/copytext"
	"github.com/oar-operator/oar-operator/internal/engine/expr"
	"github.com/oar-operator/oar-operator/internal/engine/transform"
	"github.com/oar-operator/oar-operator/internal/engine/types"
)

// Kind is a rule's kind; it fixes evaluation order and nothing else ([OAR-DOC-10],
// [OAR-EVAL-2]). The constants are in evaluation order.
type Kind uint8

// The kinds in the order of [OAR-EVAL-1].
const (
	KindSchema Kind = iota
	KindPolicy
	KindInvariant
	KindDetector
)

var kindNames = []string{"schema", "policy", "invariant", "detector"}

func (k Kind) String() string { return kindNames[k] }

// Effect is what a firing rule does ([OAR-DOC-11]).
type Effect uint8

// The effects. EffectNone is the decision of an occurrence nothing decided.
const (
	EffectNone Effect = iota
	EffectAllow
	EffectWarn
	EffectNudge
	EffectTransform
	EffectBlock
)

var effectNames = []string{"none", "allow", "warn", "nudge", "transform", "block"}

func (e Effect) String() string { return effectNames[e] }

// Enforcement is how loudly a rule runs ([OAR-DOC-16]); larger is stricter.
type Enforcement uint8

// The enforcement levels, least strict first.
const (
	EnforceOff Enforcement = iota
	EnforceMonitor
	EnforceOn
)

var enforcementNames = []string{"off", "monitor", "enforce"}

func (e Enforcement) String() string { return enforcementNames[e] }

// Action is an on_fire side-effect ([OAR-FIRE-1]).
type Action uint8

// The closed vocabulary of section 6.
const (
	ActionIncrementCounter Action = iota
	ActionResetCounter
	ActionPublishEvent
	ActionIncrementBreaker
	ActionResetBreaker
)

var actionNames = []string{"increment_counter", "reset_counter", "publish_event", "increment_breaker", "reset_breaker"}

func (a Action) String() string { return actionNames[a] }

// OnErrorMode is how a rule that cannot be evaluated is handled ([OAR-DOC-18]).
type OnErrorMode uint8

// The on_error modes.
const (
	FailClosed OnErrorMode = iota
	FailOpen
	Substitute
)

// Outcome is a rule's entry in the applied-rules trace ([OAR-OPS-9]).
type Outcome uint8

// The seven outcomes.
const (
	Fired Outcome = iota
	Passed
	Errored
	Suppressed
	MonitoredFired
	MonitoredPassed
	MonitoredErrored
)

var outcomeNames = []string{"fired", "passed", "errored", "suppressed", "monitored_fired", "monitored_passed", "monitored_errored"}

// outcomeNamesLen is the total length of outcomeNames.
const outcomeNamesLen = len("fired") + len("passed") + len("errored") + len("suppressed") +
	len("monitored_fired") + len("monitored_passed") + len("monitored_errored")

func (o Outcome) String() string { return outcomeNames[o] }

// copyMemberNames is the closed member set of copy, in presentation order ([OAR-DOC-24]).
var copyMemberNames = [...]string{"title", "what", "cause", "why", "fix", "instead"}

// Rule is one loaded, compiled rule document.
type Rule struct {
	// Index is the rule's position in the loaded set.
	Index     int
	ID        string
	Namespace string
	// QID is the qualified identifier ([OAR-DOC-8]).
	QID    string
	Kind   Kind
	Anchor string
	// Local is the anchor as occurrences name it: the core anchor resolved through the
	// profile map, or the host-native anchor itself ([OAR-CONF-3]).
	Local       string
	Core        bool
	Effect      Effect
	Enforcement Enforcement
	Mandatory   bool
	OnError     OnErrorMode
	// OnErrorRule is the substituted rule's index when OnError is Substitute.
	OnErrorRule int
	OnFire      []Action
	// Overrides are the indices of the rules this rule suppresses.
	Overrides []int
	Flow      []string
	Detector  string

	selector  []selectorClause
	when      *expr.Program
	transform *transformSpec
	copy      []copyMember
	// copyFacts are the facts r's copy templates bind or test, each once, which
	// checkCopy reads to know that the copy renders.
	copyFacts    []types.Symbol
	counterScope *types.Symbol

	// refs is every fact and function the rule references ([OAR-FACT-11]).
	refs []types.Symbol
	// trace holds the rule's trace entries, one per outcome, built once.
	trace [7]string
	doc   map[string]any
}

type selectorClause struct {
	sym types.Symbol
	// values holds the clause's values when it has more than fewValues; few lists them
	// otherwise, where comparing each is quicker than hashing the value looked up.
	values map[string]struct{}
	few    []string
}

// fewValues is the most values a clause lists in few.
const fewValues = 4

// newSelectorClause is the clause on sym listing the strings of list.
func newSelectorClause(sym types.Symbol, list []any) selectorClause {
	c := selectorClause{sym: sym}
	if len(list) <= fewValues {
		c.few = make([]string, 0, len(list))
		for _, v := range list {
			if s := v.(string); !slices.Contains(c.few, s) {
				c.few = append(c.few, s)
			}
		}
		return c
	}
	c.values = make(map[string]struct{}, len(list))
	for _, v := range list {
		c.values[v.(string)] = struct{}{}
	}
	return c
}

// has reports whether v is one of c's values.
func (c *selectorClause) has(v string) bool {
	if c.values != nil {
		_, ok := c.values[v]
		return ok
	}
	for _, w := range c.few {
		if w == v {
			return true
		}
	}
	return false
}

// empty reports whether c lists no value: it matches nothing ([OAR-SEL-6]).
func (c *selectorClause) empty() bool { return len(c.values) == 0 && len(c.few) == 0 }

// neverSelected reports whether r carries an empty selector clause, which matches
// nothing whatever its fact holds, an unreadable fact included ([OAR-SEL-6]).
func (r *Rule) neverSelected() bool {
	return slices.ContainsFunc(r.selector, func(c selectorClause) bool { return c.empty() })
}

// each yields c's values, each once.
func (c *selectorClause) each() iter.Seq[string] {
	if c.values != nil {
		return maps.Keys(c.values)
	}
	return slices.Values(c.few)
}

type transformSpec struct {
	action      transform.Action
	replacement string
	whole       bool
	target      types.Symbol
	targetName  string
}

// copyMember is a member of a rule's copy, which the rule lists in presentation order,
// the order they render in; pos is its position in name order among the rule's
// members, where renderCopy puts it so that a copy object needs no sorting.
type copyMember struct {
	name string
	tmpl *copytext.Template
	pos  int
}

// copyFacts lists the facts of lists, each once: lists itself when there is one list,
// which names each fact once already (copytext.Template.Refs), else a list of its own.
func copyFacts(lists [][]types.Symbol) []types.Symbol {
	switch len(lists) {
	case 0:
		return nil
	case 1:
		return slices.Clip(lists[0])
	}
	n := 0
	for _, l := range lists {
		n += len(l)
	}
	out := make([]types.Symbol, 0, n)
	for _, l := range lists {
		for _, sym := range l {
			if !slices.ContainsFunc(out, func(o types.Symbol) bool { return o.ID == sym.ID }) {
				out = append(out, sym)
			}
		}
	}
	return out
}

// Document returns the rule document as it was loaded.
func (r *Rule) Document() map[string]any { return r.doc }

// TraceEntry is "<qualified id>:<outcome>".
func (r *Rule) TraceEntry(o Outcome) string { return r.trace[o] }
