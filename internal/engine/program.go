package engine

import (
	"sort"

	"github.com/oar-operator/oar-operator/internal/engine/expr"
)

// Program is a configured rule set ready to evaluate occurrences. It is immutable and
// safe for concurrent use; all per-session state lives in the Runtime's stores.
type Program struct {
	rs          *RuleSet
	cap         *Capability
	enforcement []Enforcement
	// byAnchor holds, per local anchor, the rules that may be selected there
	// (enforcement not off, [OAR-EVAL-11]) in kind-then-identifier order
	// ([OAR-EVAL-1]), indexed for selection.
	byAnchor map[string]*selection
	// suppressors lists, per rule, the rules whose overrides name it.
	suppressors [][]int
	// session marks the anchors whose occurrences may touch session state
	// (UsesSession).
	session map[string]bool
	// outcomeSlot gives, by rule index, the slot where an evaluation keeps the outcome
	// of the rule's condition for every rule sharing it, or -1 when the outcome is the
	// rule's alone (outcomeSlots); outcomes counts the slots.
	outcomeSlot []int32
	outcomes    int
}

func newProgram(rs *RuleSet, enforcement []Enforcement) *Program {
	p := &Program{
		rs:          rs,
		cap:         rs.Capability,
		enforcement: enforcement,
		byAnchor:    map[string]*selection{},
		suppressors: make([][]int, len(rs.Rules)),
	}
	candidates := map[string][]int{}
	for _, r := range rs.Rules {
		for _, t := range r.Overrides {
			p.suppressors[t] = append(p.suppressors[t], r.Index)
		}
		if enforcement[r.Index] == EnforceOff || r.neverSelected() {
			// Neither is a candidate: a rule that is off is not evaluated, and one
			// carrying an empty clause is never selected, even where its clause's fact
			// cannot be read ([OAR-SEL-6]).
			continue
		}
		candidates[r.Local] = append(candidates[r.Local], r.Index)
	}
	for anchor, list := range candidates {
		sort.Slice(list, func(i, j int) bool { return p.before(list[i], list[j]) })
		sel := newSelection(p.cap, rs.Rules, list)
		p.orderPlans(sel)
		p.byAnchor[anchor] = sel
	}
	p.session = sessionAnchors(p)
	p.outcomeSlots()
	return p
}

// outcomeSlots numbers the conditions several rules share whose outcome at an
// occurrence is the same for each: the set compiles a source once per namespace, so
// rules sharing a condition share its program. A condition reading fire_count or
// breaker_count reads the evaluated rule's own counter, and a rule with a detector
// evaluates under its own findings: their outcomes are the rule's alone.
func (p *Program) outcomeSlots() {
	p.outcomeSlot = make([]int32, len(p.rs.Rules))
	users := map[*expr.Program]int32{}
	for _, r := range p.rs.Rules {
		p.outcomeSlot[r.Index] = -1
		if r.when != nil && r.Detector == "" && !p.readsOwnCounter(r.when) {
			users[r.when]++
		}
	}
	slots := map[*expr.Program]int32{}
	for _, r := range p.rs.Rules {
		if r.when == nil || r.Detector != "" || users[r.when] < 2 {
			continue
		}
		i, ok := slots[r.when]
		if !ok {
			i = int32(len(slots))
			slots[r.when] = i
		}
		p.outcomeSlot[r.Index] = i
	}
	p.outcomes = len(slots)
}

// readsOwnCounter reports whether cond reads the counter of the rule evaluating it.
func (p *Program) readsOwnCounter(cond *expr.Program) bool {
	for _, sym := range cond.Refs() {
		if b := p.cap.symbol(sym.ID).builtin; b == builtinFireCount || b == builtinBreakerCount {
			return true
		}
	}
	return false
}

// orderPlans puts the selection of every plan that needs no test in the order
// [OAR-EVAL-18] gives it, once: the order depends only on which rules are selected.
func (p *Program) orderPlans(sel *selection) {
	if sel.plans == nil {
		return
	}
	var sc orderScratch
	for pl := range sel.plans.all() {
		if pl.selected != nil && pl.suppressing {
			pl.selected, pl.suppressing = p.order(pl.selected, make([]int, 0, len(pl.selected)), &sc), false
		}
	}
}

// before is the order of [OAR-EVAL-1]: kind, then qualified identifier by code point
// (byte order of UTF-8 is code-point order).
func (p *Program) before(a, b int) bool {
	ra, rb := p.rs.Rules[a], p.rs.Rules[b]
	if ra.Kind != rb.Kind {
		return ra.Kind < rb.Kind
	}
	return ra.QID < rb.QID
}

// RuleSet returns the loaded rules.
func (p *Program) RuleSet() *RuleSet { return p.rs }

// Capability returns the capability the program was compiled against.
func (p *Program) Capability() *Capability { return p.cap }

// Enforcement returns a rule's enforcement after configuration ([OAR-CFG-3]).
func (p *Program) Enforcement(rule int) Enforcement { return p.enforcement[rule] }

// orderScratch is the working memory of order, kept with the pooled evaluation state
// so ordering allocates nothing once warm.
type orderScratch struct {
	// pos maps a rule index to its position among the selected rules plus one; zero
	// for a rule not selected. Every entry is zero between calls.
	pos       []int32
	remaining []int
	done      []bool
}

// order applies [OAR-EVAL-18] to the selected rules, which arrive in [OAR-EVAL-1]
// order: repeatedly take the first rule none of whose selected suppressors is still
// unevaluated. The search for it resumes where the last one ended, or at a rule the
// last one taken unblocked, if earlier: every rule before that is taken or blocked.
func (p *Program) order(selected []int, out []int, sc *orderScratch) []int {
	if n := len(p.rs.Rules); len(sc.pos) < n {
		sc.pos = make([]int32, n)
	}
	sc.remaining = append(sc.remaining[:0], make([]int, len(selected))...)
	sc.done = append(sc.done[:0], make([]bool, len(selected))...)
	pos, remaining, done := sc.pos, sc.remaining, sc.done
	for i, r := range selected {
		pos[r] = int32(i) + 1
	}
	blocked := false
	for i, r := range selected {
		for _, s := range p.suppressors[r] {
			if pos[s] > 0 {
				remaining[i]++
				blocked = true
			}
		}
	}
	if !blocked {
		// No selected rule has a selected suppressor: the order is the selection's.
		out = append(out, selected...)
	}
	for next := 0; blocked; {
		i := next
		for i < len(selected) && (done[i] || remaining[i] > 0) {
			i++
		}
		if i == len(selected) {
			break
		}
		done[i] = true
		r := selected[i]
		out = append(out, r)
		next = i + 1
		for _, t := range p.rs.Rules[r].Overrides {
			if j := int(pos[t]) - 1; j >= 0 {
				if remaining[j]--; remaining[j] == 0 && j < next {
					next = j
				}
			}
		}
	}
	for _, r := range selected {
		pos[r] = 0
	}
	return out
}
