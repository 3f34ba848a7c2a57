package bundle

import (
	"fmt"
	"slices"
	"strings"

	"github.com/oar-operator/oar-operator/internal/engine"
	"github.com/oar-operator/oar-operator/internal/engine/diag"
)

// qidOf returns a rule document's qualified identifier, or "" when its id or namespace
// is malformed (the engine refuses such a rule anyway).
func qidOf(doc any) string {
	qid, _ := engine.QualifiedID(doc)
	return qid
}

// namespaceOf returns the namespace part of a qualified identifier.
func namespaceOf(qid string) string {
	if i := strings.LastIndex(qid, "/"); i >= 0 {
		return qid[:i]
	}
	return ""
}

// stub returns a minimal rule with the given qualified identifier. Stubs stand in for
// the rules of packs not yet considered, so that a reference to a later pack's rule
// resolves, while that pack's own conflicts wait for its turn.
func (a *assembler) stub(qid string) map[string]any {
	if d, ok := a.stubs[qid]; ok {
		return d
	}
	d := map[string]any{"oar": "1.0", "kind": "policy", "anchor": a.stubAnchor, "effect": "allow"}
	if i := strings.LastIndex(qid, "/"); i >= 0 {
		d["namespace"], d["id"] = qid[:i], qid[i+1:]
	} else {
		d["id"] = qid
	}
	a.stubs[qid] = d
	return d
}

// segment is the span of one pack's (or one stub's) rules in a load.
type segment struct {
	start int
	// s and o are nil for a stub.
	s *slot
	o *option
}

// verdict is the engine's answer on one candidate set.
type verdict struct {
	rs       *engine.RuleSet
	errs     diag.List
	segs     []segment
	tooLarge *TooLargeError
	// exact says the set held no stub and no pack beyond the ones asked about.
	exact bool
}

func (v *verdict) ok() bool { return len(v.errs) == 0 && v.tooLarge == nil }

// segAt returns the segment holding rule index i.
func (v *verdict) segAt(i int) *segment {
	lo, hi := 0, len(v.segs)
	for hi-lo > 1 {
		mid := (lo + hi) / 2
		if v.segs[mid].start <= i {
			lo = mid
		} else {
			hi = mid
		}
	}
	if lo < len(v.segs) && v.segs[lo].start <= i {
		return &v.segs[lo]
	}
	return nil
}

// owners maps each qualified identifier to the first pack providing it in the load.
func (v *verdict) owners() map[string]*slot {
	m := map[string]*slot{}
	for _, sg := range v.segs {
		if sg.s == nil {
			continue
		}
		for _, q := range sg.o.qids {
			if _, ok := m[q]; !ok && q != "" {
				m[q] = sg.s
			}
		}
	}
	return m
}

// check loads taken plus add, plus what stands for the packs from slot after on: the
// working enforcement of the incumbents, which an earlier pack's edit must not evict —
// the published generation of an unchanged incumbent, and of one whose current
// generation does not load on its own — and stubs for every other rule those packs may
// contribute. The set must load and, stubs aside, fit in a ConfigMap.
func (a *assembler) check(taken, add []pick, after int) *verdict {
	picks := make([]pick, 0, len(taken)+len(add))
	picks = append(append(picks, taken...), add...)
	for _, s := range a.slots[after:] {
		if u := s.usable(); s.keepsPublished() && len(u) > 0 {
			picks = append(picks, pick{s, u[0]})
		}
	}
	v := &verdict{exact: len(picks) == len(taken)+len(add)}
	var docs []any
	real := map[string]bool{}
	for _, p := range picks {
		v.segs = append(v.segs, segment{start: len(docs), s: p.s, o: p.o})
		docs = append(docs, p.o.rules...)
		for _, q := range p.o.qids {
			real[q] = true
		}
	}
	if stubbed := a.appendStubs(docs, real, a.slots[after:], nil); len(stubbed) > len(docs) {
		v.segs = append(v.segs, segment{start: len(docs)})
		v.exact = false
		docs = stubbed
	}
	v.rs, v.errs = engine.LoadRules(a.cap, docs)
	if len(v.errs) == 0 {
		v.tooLarge = a.tooLarge(picks, nil)
	}
	return v
}

// keepsPublished says incumbent s will serve its published generation whatever the
// packs before it do: it is unchanged, or its current generation does not load on its
// own. Its published generation, published with the other incumbents', loads with
// theirs, so it constrains the packs before it without blaming them for others' faults.
func (s *slot) keepsPublished() bool {
	return s.unchanged || s.incumbent && s.opts[0].fail != nil && s.opts[0].fail.sticky
}

// appendStubs adds to docs a stub for every rule the usable generations of slots may
// contribute (skip's aside) that real does not already provide, and records them in real.
func (a *assembler) appendStubs(docs []any, real map[string]bool, slots []*slot, skip *slot) []any {
	if a.stubAnchor == "" {
		return docs
	}
	docs = slices.Clip(docs)
	for _, s := range slots {
		if s == skip {
			continue
		}
		for _, o := range s.usable() {
			for _, q := range o.qids {
				if q != "" && !real[q] {
					real[q] = true
					docs = append(docs, a.stub(q))
				}
			}
		}
	}
	return docs
}

// packs runs rule 2 when the current generations do not all load and fit together;
// fast is that first load.
func (a *assembler) packs(fast *verdict) ([]pick, *engine.RuleSet, error) {
	a.alone()
	for _, s := range a.slots {
		if s.opts[0].fail != nil {
			fast = nil
		}
	}
	for {
		for _, s := range a.slots {
			s.chosen = nil
			for _, o := range s.opts {
				if o.fail != nil && !o.fail.sticky {
					o.fail = nil
				}
			}
		}
		taken, rs, restart := a.pass(fast)
		fast = nil
		if restart {
			continue
		}
		if rs == nil {
			v := a.check(taken, nil, len(a.slots))
			if !v.ok() {
				if a.refuseDangling(v) {
					continue
				}
				return nil, nil, fmt.Errorf("bundle: the packs taken do not load together: %w", v.errs)
			}
			rs = v.rs
		}
		a.explainDangling(taken)
		return taken, rs, nil
	}
}

// explainDangling says anew why a generation refused in an abandoned pass for naming a
// rule of a pack left out is not published, when that pack is published in the end: it
// does not load with the packs taken (a Conflict with that pack, say), and that is the
// reason it gives, not the abandoned pass's.
func (a *assembler) explainDangling(taken []pick) {
	for _, s := range a.slots {
		if s.chosen != nil {
			continue
		}
		for _, o := range s.opts {
			if o.fail == nil || !o.fail.dangling || a.missing(o.fail.errs) != "" {
				continue
			}
			if v := a.check(taken, []pick{{s, o}}, len(a.slots)); !v.ok() {
				f := a.classify(v, s, o)
				f.sticky = true
				o.fail = f
			}
		}
	}
}

// alone loads every generation on its own, then each one that does not load with
// stubs for the rules every other pack may contribute, until no more is refused. A
// generation refused here does not load in any set: LoadFailed, and sticky.
//
// A refusal takes the refused generation's stubs from the loads after it, so it can
// refuse another; the rounds go through the generations forward and backward in turn,
// so that a chain of such refusals running either way ends in two rounds. Going
// forward only, a chain running backward (each pack naming a rule of the next, the
// last naming none there is) was refused one pack a round: 160 packs took 2 s and
// 1.3 GB. Which generations are refused does not depend on the order: a refusal only
// ever takes stubs away, which never lets another generation load.
func (a *assembler) alone() {
	var pending []pick
	for _, s := range a.slots {
		for _, o := range s.opts {
			if o.fail != nil {
				continue
			}
			if !o.alone {
				_, errs := engine.LoadRules(a.cap, o.rules)
				o.alone, o.failsAlone = true, len(errs) > 0
			}
			if o.failsAlone {
				pending = append(pending, pick{s, o})
			}
		}
	}
	for refused, backward := true, false; refused; backward = !backward {
		refused = false
		for k := range pending {
			p := pending[k]
			if backward {
				p = pending[len(pending)-1-k]
			}
			if p.o.fail != nil {
				continue
			}
			real := map[string]bool{}
			for _, q := range p.o.qids {
				real[q] = true
			}
			_, errs := engine.LoadRules(a.cap, a.appendStubs(p.o.rules, real, a.slots, p.s))
			if len(errs) == 0 {
				continue
			}
			var own diag.List
			for _, e := range errs {
				if e.Index < len(p.o.rules) {
					cp := *e
					own = append(own, &cp)
				}
			}
			p.o.fail = &failure{reason: ReasonLoadFailed, errs: own, sticky: true,
				message: fmt.Sprintf("generation %d does not load: %s", p.o.gen, describe(own))}
			refused = true
		}
	}
}

// describe renders the first diagnostic of a pack's own list and counts the rest.
func describe(l diag.List) string {
	if len(l) == 0 {
		return "the engine refused it"
	}
	s := format(l[0])
	if len(l) > 1 {
		s += fmt.Sprintf(" (and %d more)", len(l)-1)
	}
	return s
}

func format(e *diag.Error) string {
	if e.Index >= 0 {
		return e.Format(fmt.Sprintf("rules[%d]", e.Index))
	}
	return e.Format("")
}

// pass walks the slots in order, starting from the verdict on all of them when given.
// It returns the packs taken, the rule set when the last load was exactly them, and
// restart when a pack left out made a taken one dangle.
func (a *assembler) pass(v *verdict) ([]pick, *engine.RuleSet, bool) {
	var taken []pick
	var rs *engine.RuleSet
	n := len(a.slots)
	for i := 0; i < n; {
		batch := a.first(i, n)
		if len(batch) == 0 {
			break
		}
		if v == nil {
			v = a.check(taken, batch, n)
		}
		if v.ok() {
			a.take(batch)
			return append(taken, batch...), v.rs, false
		}
		if a.blamesTaken(v, i) && a.refuseDangling(a.check(taken, nil, i)) {
			return nil, nil, true
		}
		k := a.search(taken, i, n, v)
		prefix := a.first(i, k)
		a.take(prefix)
		taken = append(taken, prefix...)
		var done bool
		if taken, rs, done = a.step(taken, k); done {
			return taken, rs, false
		}
		v = nil
		i = k + 1
	}
	return taken, rs, false
}

// blamesTaken says a diagnostic of v concerns a pack taken before slot i.
func (a *assembler) blamesTaken(v *verdict, i int) bool {
	for _, e := range v.errs {
		if sg := v.segAt(e.Index); sg != nil && sg.s != nil && a.slotIndex(sg.s) < i {
			return true
		}
	}
	return false
}

// first returns the preferred usable generation of each slot in [from, to).
func (a *assembler) first(from, to int) []pick {
	var out []pick
	for _, s := range a.slots[from:to] {
		if u := s.usable(); len(u) > 0 {
			out = append(out, pick{s, u[0]})
		}
	}
	return out
}

func (a *assembler) take(picks []pick) {
	for _, p := range picks {
		p.s.chosen = p.o
	}
}

// search returns the slot in [i, n) to decide next, given that all of [i, n) does not
// load (or fit) after the packs taken: the first one that does not load after the ones
// before it, which are then taken together. Taking slots [i, k) together is the same as
// taking them one by one, since a conflict among packs stays a conflict in any larger
// set. The first slot a diagnostic of v concerns is tried first; if it turns out to
// load after all, step takes it and the walk goes on.
func (a *assembler) search(taken []pick, i, n int, v *verdict) int {
	lo, hi := i, n // the slots [i, lo) load together; [i, hi) do not
	probe := func(k int) bool {
		if a.check(taken, a.first(i, k), k).ok() {
			lo = k
			return true
		}
		hi = k
		return false
	}
	hint := n
	for _, e := range v.errs {
		if sg := v.segAt(e.Index); sg != nil && sg.s != nil {
			if k := a.slotIndex(sg.s); k >= i && k < hint {
				hint = k
			}
		}
	}
	if hint < n && (hint == lo || probe(hint)) {
		return hint
	}
	for hi-lo > 1 {
		probe((lo + hi) / 2)
	}
	return lo
}

func (a *assembler) slotIndex(s *slot) int {
	for i, x := range a.slots {
		if x == s {
			return i
		}
	}
	return -1
}

// step decides slot k against the packs taken: its current generation, else (for an
// incumbent) its last published one, else it is left out. A generation tried after a
// refused one is first tried with all the slots after it, which usually load: then the
// pass is done.
func (a *assembler) step(taken []pick, k int) ([]pick, *engine.RuleSet, bool) {
	s := a.slots[k]
	for j, o := range s.usable() {
		here := pick{s, o}
		if rest := a.first(k+1, len(a.slots)); j > 0 && len(rest) > 0 {
			all := append([]pick{here}, rest...)
			if v := a.check(taken, all, len(a.slots)); v.ok() {
				a.take(all)
				return append(taken, all...), v.rs, true
			}
		}
		v := a.check(taken, []pick{here}, k+1)
		if v.ok() {
			s.chosen = o
			var rs *engine.RuleSet
			if v.exact {
				rs = v.rs
			}
			return append(taken, here), rs, false
		}
		o.fail = a.classify(v, s, o)
	}
	return taken, nil, false
}

// refuseDangling leaves out for good each pack of v that names a rule of a pack left
// out, and says whether there was one; the pass then starts over.
func (a *assembler) refuseDangling(v *verdict) bool {
	refused := false
	for _, e := range v.errs {
		sg := v.segAt(e.Index)
		if sg == nil || sg.s == nil || sg.o.fail != nil {
			continue
		}
		f := a.classify(v, sg.s, sg.o)
		f.reason, f.with, f.sticky, f.dangling = ReasonLoadFailed, "", true, true
		f.message = fmt.Sprintf("generation %d names a rule of a pack that is not published: %s%s", sg.o.gen, describeOwn(f.errs), a.missing(f.errs))
		sg.o.fail = f
		refused = true
	}
	return refused
}

// describeOwn describes the first diagnostic about the pack's own rules.
func describeOwn(l diag.List) string {
	for _, e := range l {
		if e.Index >= 0 {
			return format(e)
		}
	}
	return describe(l)
}

// classify explains why option o of slot s did not load or fit with the set of v.
func (a *assembler) classify(v *verdict, s *slot, o *option) *failure {
	if v.tooLarge != nil {
		return &failure{reason: ReasonBundleTooLarge, message: fmt.Sprintf("generation %d would make the bundle too large: %s", o.gen, v.tooLarge.sizes())}
	}
	owners := v.owners()
	var errs diag.List
	var partner *slot
	var cause *diag.Error
	for _, e := range v.errs {
		sg := v.segAt(e.Index)
		if sg == nil || sg.s == nil {
			continue
		}
		cp := *e
		if sg.s == s {
			cp.Index = e.Index - sg.start
		} else {
			placeInPack(&cp, o, sg.s.name)
		}
		if e.Clause == "OAR-DOC-9" {
			if other := partnerOf(e, sg.s, s, owners); other != nil {
				cp.Message = fmt.Sprintf("rule set contains two rules with qualified identifier %s: RulePack %q defines it too", e.Rule, other.name)
			}
		}
		errs = append(errs, &cp)
		if partner == nil {
			if partner = partnerOf(e, sg.s, s, owners); partner != nil {
				cause = &cp
			}
		}
	}
	if partner != nil {
		return &failure{reason: ReasonConflict, errs: errs, with: partner.name, message: fmt.Sprintf(
			"generation %d conflicts with pack %q over rule %s: %s", o.gen, partner.name, cause.Rule, format(cause))}
	}
	return &failure{reason: ReasonLoadFailed, errs: errs, message: fmt.Sprintf(
		"generation %d does not load with the packs taken before it: %s%s", o.gen, describeOwn(errs), a.missing(errs))}
}

// placeInPack moves a diagnostic about another pack's rule to the rule of option o it
// concerns: the rule with the same qualified identifier ([OAR-DOC-9], at its id), or one
// the diagnostic relates (a cycle, an override), else the pack's rules as a whole. The
// message then names the other pack and its rule; no index into the assembled set stays.
func placeInPack(e *diag.Error, o *option, other string) {
	own := slices.Index(o.qids, e.Rule)
	if own < 0 {
		for _, q := range e.Related {
			if own = slices.Index(o.qids, q); own >= 0 {
				break
			}
		}
	}
	e.Index = own
	if e.Clause == "OAR-DOC-9" && own >= 0 {
		return // the same identifier, at this pack's own id
	}
	e.Message = fmt.Sprintf("%s (reported on rule %s of RulePack %q)", e.Message, e.Rule, other)
	e.Field, e.Value, e.Offset = "", "", -1
	if own >= 0 {
		e.Rule = o.qids[own]
		if e.Clause == "OAR-EVAL-16" {
			e.Field = "overrides" // the rule takes part in the cycle by its overrides
		}
	}
}

// partnerOf names the other pack a diagnostic about set member owner implicates, when
// s is the pack being added: the owner itself, the first provider of a duplicated
// identifier ([OAR-DOC-9]), the provider of a mandatory rule an override names
// ([OAR-EVAL-17]), or another pack's rule in an override cycle ([OAR-EVAL-16]).
func partnerOf(e *diag.Error, owner, s *slot, owners map[string]*slot) *slot {
	other := func(p *slot) *slot {
		if p != nil && p != s {
			return p
		}
		return nil
	}
	if owner != s {
		return owner
	}
	switch e.Clause {
	case "OAR-DOC-9":
		return other(owners[e.Rule])
	case "OAR-EVAL-16", "OAR-EVAL-17":
		for _, q := range e.Related {
			if p := other(owners[q]); p != nil {
				return p
			}
		}
	}
	return nil
}

// missing names the pack that holds a rule a reference could not resolve, when one does.
func (a *assembler) missing(errs diag.List) string {
	for _, e := range errs {
		if e.Clause != "OAR-EVAL-13" && e.Clause != "OAR-OPS-5" {
			continue
		}
		q := engine.ResolveRef(e.Value, namespaceOf(e.Rule))
		for _, s := range a.slots {
			for _, o := range s.opts {
				if o.fail != nil && containsQID(o, q) {
					return fmt.Sprintf(" (%s is in generation %d of pack %q, which is not published)", q, o.gen, s.name)
				}
			}
		}
	}
	return ""
}

func containsQID(o *option, q string) bool {
	for _, x := range o.qids {
		if x == q {
			return true
		}
	}
	return false
}

// configs runs rule 3 against the packs taken and their rule set.
func (a *assembler) configs(rs *engine.RuleSet, packs []pick) []*cfgOption {
	for _, s := range a.cfgs {
		s.chosen = nil
		for _, o := range s.opts {
			if o.fail != nil && !o.fail.sticky {
				o.fail = nil
			}
		}
	}
	var all []*cfgOption
	unread := false
	for _, s := range a.cfgs {
		all = append(all, s.opts[0])
		unread = unread || s.opts[0].fail != nil
	}
	if !unread {
		if _, errs := engine.Configure(rs, cfgDocs(all)); len(errs) == 0 && a.tooLarge(packs, all) == nil {
			a.choose(nil, all)
			return all
		}
	}
	// Most often every configuration whose first generation applying fits does: each
	// is then taken without one size check per configuration, which compressed the
	// whole bundle each time once it is near the limit (2,000 configurations: 21 s).
	check := engine.NewConfigChecker(rs)
	var first []*cfgOption
	for _, s := range a.cfgs {
		for _, o := range s.opts {
			if applies(check, o) {
				first = append(first, o)
				s.chosen = o
				break
			}
		}
	}
	if a.tooLarge(packs, first) == nil {
		return first
	}
	for _, s := range a.cfgs {
		s.chosen = nil
	}
	var taken []*cfgOption
	for _, s := range a.cfgs {
		for _, o := range s.opts {
			if !applies(check, o) {
				continue
			}
			if tl := a.tooLarge(packs, append(taken, o)); tl != nil {
				o.fail = &failure{reason: ReasonBundleTooLarge, message: fmt.Sprintf("generation %d would make the bundle too large: %s", o.gen, tl.sizes())}
				continue
			}
			s.chosen = o
			taken = append(taken, o)
			break
		}
	}
	return taken
}

// applies says configuration generation o applies to the rule set check checks
// against, and records why when it does not. A document's diagnostics depend on the
// rule set and that document alone, so it is checked alone: applying every one taken
// before it again, and making a program each time, cost the square of their number.
func applies(check *engine.ConfigChecker, o *cfgOption) bool {
	if o.fail != nil { // unreadable, or refused before
		return false
	}
	errs := check.Errors(o.doc)
	if len(errs) == 0 {
		return true
	}
	for _, e := range errs {
		e.Index = -1
	}
	o.fail = &failure{reason: ReasonLoadFailed, errs: errs, message: fmt.Sprintf(
		"generation %d does not apply to the published rules: %s", o.gen, describe(errs))}
	return false
}

func cfgDocs(cfgs []*cfgOption) []any {
	docs := make([]any, len(cfgs))
	for i, c := range cfgs {
		docs[i] = c.doc
	}
	return docs
}

// configEvictor finds a published configuration that rule 3 left out (cfgs are the
// ones taken) and a pack change among taken without which it would be taken: applied
// after the configurations taken before it and within the size limit. The change is a
// newcomer (left out instead) or an incumbent's edit (its last published generation
// instead): a published configuration is an incumbent too, and neither evicts one.
// Newcomers are tried first. It returns nil when there is none: the configuration is
// then left out, for what no pack change undoes (a pack it names was deleted).
//
// Only changes that could matter are loaded, each at most once: a configuration's
// diagnostics depend on the rules it names alone, so a change touching none of them
// cannot make it apply, unless it was left out for its size. Loading every change for
// every configuration left out cost the cube of their number (a deleted pack named
// by 320 configurations, 320 newcomers: 54 s).
func (a *assembler) configEvictor(taken []pick, cfgs []*cfgOption) (*pick, *cfgSlot) {
	if a.in.Current == nil {
		return nil, nil
	}
	_, published := a.in.incumbents()
	type undone struct {
		rest  []pick
		check *engine.ConfigChecker // nil when rest does not load
	}
	undos := map[int]*undone{}
	changes := make([]map[string]bool, len(taken))
	before := 0 // cfgs[:before] are the configurations taken before slot j
	for _, s := range a.cfgs {
		if s.chosen != nil {
			before++
			continue
		}
		if _, ok := published[s.name]; !ok {
			continue
		}
		// names is nil when any change may matter.
		names, live, sized := map[string]bool{}, false, false
		for _, o := range s.opts {
			if o.fail != nil && o.fail.sticky {
				continue
			}
			live = true
			sized = sized || o.fail != nil && o.fail.reason == ReasonBundleTooLarge
			for _, n := range configNames(o.doc) {
				names[n] = true
			}
		}
		if !live {
			continue
		}
		if sized {
			names = nil
		}
		for i := len(taken) - 1; i >= 0; i-- {
			if names != nil {
				if changes[i] == nil {
					changes[i] = changedNames(taken[i])
				}
				if !overlaps(names, changes[i]) {
					continue
				}
			}
			u, seen := undos[i]
			if !seen {
				u = &undone{}
				undos[i] = u
				if rest, ok := undo(taken, i); ok {
					var docs []any
					for _, p := range rest {
						docs = append(docs, p.o.rules...)
					}
					if rs, errs := engine.LoadRules(a.cap, docs); len(errs) == 0 {
						u.rest, u.check = rest, engine.NewConfigChecker(rs)
					}
				}
			}
			if u.check == nil {
				continue
			}
			for _, o := range s.opts {
				if o.fail != nil && o.fail.sticky {
					continue
				}
				// o first: the configurations before it apply unless the change
				// touches what they name, so o is what fails most often.
				if !u.check.Applies(o.doc) || !allApply(u.check, cfgs[:before]) {
					continue
				}
				if a.tooLarge(u.rest, append(slices.Clone(cfgs[:before]), o)) == nil {
					return &taken[i], s
				}
			}
		}
	}
	return nil, nil
}

// allApply says every configuration document of cfgs applies.
func allApply(check *engine.ConfigChecker, cfgs []*cfgOption) bool {
	for _, c := range cfgs {
		if !check.Applies(c.doc) {
			return false
		}
	}
	return true
}

// configNames returns the rule identifiers a configuration document names: its
// enforcement members and disable entries.
func configNames(doc map[string]any) []string {
	var out []string
	if m, ok := doc["enforcement"].(map[string]any); ok {
		for k := range m {
			out = append(out, k)
		}
	}
	if l, ok := doc["disable"].([]any); ok {
		for _, v := range l {
			if s, ok := v.(string); ok {
				out = append(out, s)
			}
		}
	}
	return out
}

// changedNames returns the names by which a configuration can name the rules pick p's
// change adds, removes or edits (see undo): the qualified identifiers and bare ids of
// the rules of its generation, and for an incumbent of its last published one too.
func changedNames(p pick) map[string]bool {
	out := map[string]bool{}
	add := func(o *option) {
		for _, q := range o.qids {
			if q != "" {
				out[q] = true
				out[q[strings.LastIndex(q, "/")+1:]] = true
			}
		}
	}
	add(p.o)
	if p.s.incumbent && len(p.s.opts) > 1 {
		add(p.s.opts[1])
	}
	return out
}

func overlaps(a, b map[string]bool) bool {
	if len(b) < len(a) {
		a, b = b, a
	}
	for k := range a {
		if b[k] {
			return true
		}
	}
	return false
}

// undo returns taken without the change pick i brings: a newcomer left out, an
// incumbent's current generation replaced by its last published one. It says false
// when pick i changes nothing published (an unchanged incumbent, one already serving
// its last published generation) or that generation does not load on its own.
func undo(taken []pick, i int) ([]pick, bool) {
	p := taken[i]
	if !p.s.incumbent {
		return slices.Delete(slices.Clone(taken), i, i+1), true
	}
	if p.o != p.s.opts[0] || len(p.s.opts) < 2 || p.s.opts[1].fail != nil && p.s.opts[1].fail.sticky {
		return nil, false
	}
	rest := slices.Clone(taken)
	rest[i] = pick{p.s, p.s.opts[1]}
	return rest, true
}
