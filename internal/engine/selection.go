package engine

import (
	"iter"
	"slices"
	"sort"

	"github.com/oar-operator/oar-operator/internal/engine/types"
)

// selection is an anchor's candidates indexed over up to two selector facts, so an
// occurrence skips every rule whose clause on those facts cannot match with a map
// lookup or two instead of testing each rule ([OAR-SEL-1], [OAR-SEL-7]). The first
// fact is the string fact most candidates have a clause on (a tool name); the second,
// under each value of the first, the string fact most candidates test next (a tenant
// of a multi-tenant bundle), so a thousand rules of ten tenants cost the lookups and
// the rules of one tenant's tool. A third fact, the one most candidates are left to
// test alone (a list of roles), gives each value its clauses list a bit, so that an
// occurrence decides those candidates by looking its own few values up.
type selection struct {
	// rules are the candidates in [OAR-EVAL-1] order.
	rules []int
	// fact is the first indexed string fact's symbol ID, or -1 when no candidate has a
	// clause on a string fact.
	fact int
	// byValue holds, per value of fact, the candidates whose clause on fact lists it;
	// rest holds the candidates without a clause on fact (every candidate when fact is
	// -1).
	byValue map[string]*bucket
	rest    *bucket
	// skip is, per position, the index of the clause on fact, or -1.
	skip []int
	// fact2 is the second indexed string fact's symbol ID, or -1.
	fact2 int
	// skip2 is, per position, the index of the clause on fact2 when a bucket indexes
	// the candidate by it, or -1.
	skip2 []int
	// list is the fact of the clause most candidates have left to test once the
	// indexes decided theirs, when it is their only one (principal_roles: [sre, dev]),
	// or -1. listBits gives each value those clauses list a bit, and listMask is, per
	// position, the bits of the values of such a candidate's clause: an occurrence reads
	// the fact once, looks its few members up, and selects each such candidate whose
	// bits it has, instead of testing the clauses one by one ([OAR-SEL-2]). -1 too when
	// the clauses list more than 64 values.
	list     int
	listBits map[string]uint64
	listMask []uint64
	// suppressing reports that some candidate suppresses another, the only case in
	// which [OAR-EVAL-18] can change the order.
	suppressing bool
	// plans are the buckets merged ahead of time for every value pair the indexes
	// tell apart, so an occurrence walks one list; nil when they would take more than
	// planBudget entries, and selectRules then merges the buckets itself.
	plans *planSet
}

// planBudget bounds the entries a selection's plans may hold: the plans repeat a
// candidate under every value pair that selects it, which pathological selectors
// (many values of both indexed facts on many rules) could multiply beyond memory.
const planBudget = 1 << 15

// planSet is a selection's plans: per value of fact (other for a value no clause
// lists) and, under it, per value of fact2.
type planSet struct {
	byValue map[string]*valuePlans
	other   *valuePlans
}

// valuePlans are the plans of one value of fact. When no candidate it reaches is
// indexed on fact2 (needs2 false) base is the only plan; otherwise the plan is
// byValue2's for fact2's value, other2 for a value none lists, and err2 when fact2
// cannot be read.
type valuePlans struct {
	needs2   bool
	base     *plan
	byValue2 map[string]*plan
	other2   *plan
	err2     *plan
}

// plan is the candidates one occurrence considers, merged in [OAR-EVAL-1] order.
type plan struct {
	entries []planEntry
	// selected is every entry's rule when no entry needs a test or carries an error:
	// the selection itself, in the order [OAR-EVAL-18] gives it (Program.orderPlans),
	// shared by every occurrence the plan serves. nil otherwise.
	selected []int
	// suppressing reports that some entry suppresses another, so that [OAR-EVAL-18]
	// may reorder the selection, unless selected is already in that order.
	suppressing bool
}

// planEntry is one candidate of a plan.
type planEntry struct {
	rule, pos int32
	// skip2 is the candidate's clause the fact2 index decided, or -1.
	skip2 int32
	// test reports that clauses other than the indexed ones remain to be tested.
	test bool
	// err2 reports that the candidate is selected with fact2's error.
	err2 bool
	// list reports that the clause left to test is the one on selection.list, whose
	// value bits are mask.
	list bool
	mask uint64
}

// bucket holds candidates, by position in selection.rules, ascending: those whose
// first clause after the one on selection.fact is on selection.fact2, by the values
// it lists (byValue) and all together (indexed), and the others (rest).
type bucket struct {
	byValue map[string][]int
	indexed []int
	rest    []int
}

// newSelection indexes the candidates.
func newSelection(c *Capability, rules []*Rule, candidates []int) *selection {
	n := len(candidates)
	sel := &selection{rules: candidates, fact: -1, fact2: -1, list: -1, skip: make([]int, n), skip2: make([]int, n), rest: &bucket{}}
	for pos := range candidates {
		sel.skip[pos], sel.skip2[pos] = -1, -1
	}
	sel.fact = mostUsed(c, rules, candidates, false, func(r *Rule, _ int) []selectorClause { return r.selector })
	if sel.fact >= 0 {
		sel.byValue = map[string]*bucket{}
		for pos, i := range candidates {
			sel.skip[pos] = clauseOn(rules[i], sel.fact)
		}
		// The clause a candidate tests after the one on fact: its first other clause.
		next := func(r *Rule, pos int) []selectorClause {
			for k := range r.selector {
				if k != sel.skip[pos] {
					return r.selector[k : k+1]
				}
			}
			return nil
		}
		sel.fact2 = mostUsed(c, rules, candidates, false, next)
	}
	in := map[int]bool{}
	for _, i := range candidates {
		in[i] = true
	}
	for pos, i := range candidates {
		r := rules[i]
		for _, t := range r.Overrides {
			sel.suppressing = sel.suppressing || in[t]
		}
		if k := sel.skip[pos]; k >= 0 {
			for v := range r.selector[k].each() {
				b := sel.byValue[v]
				if b == nil {
					b = &bucket{}
					sel.byValue[v] = b
				}
				sel.add(b, r, pos)
			}
		} else {
			sel.add(sel.rest, r, pos)
		}
	}
	sel.indexList(c, rules)
	sel.plans = sel.makePlans(rules, planBudget)
	return sel
}

// indexList chooses selection.list among the clauses candidates have left alone to
// test once the indexes decided theirs, and gives their values bits.
func (sel *selection) indexList(c *Capability, rules []*Rule) {
	left := func(r *Rule, pos int) []selectorClause {
		if k := sel.left(r, pos); k >= 0 {
			return r.selector[k : k+1]
		}
		return nil
	}
	if sel.list = mostUsed(c, rules, sel.rules, true, left); sel.list < 0 {
		return
	}
	sel.listBits, sel.listMask = map[string]uint64{}, make([]uint64, len(sel.rules))
	for pos, i := range sel.rules {
		cl := left(rules[i], pos)
		if len(cl) == 0 || cl[0].sym.ID != sel.list {
			continue
		}
		for v := range cl[0].each() {
			bit, ok := sel.listBits[v]
			if !ok {
				if len(sel.listBits) == 64 {
					sel.list, sel.listBits, sel.listMask = -1, nil, nil
					return
				}
				bit = 1 << len(sel.listBits)
				sel.listBits[v] = bit
			}
			sel.listMask[pos] |= bit
		}
	}
}

// left is the index of the one clause of the candidate r at pos that the indexes do
// not decide, or -1 when it has none or more than one.
func (sel *selection) left(r *Rule, pos int) int {
	k := -1
	for j := range r.selector {
		if j == sel.skip[pos] || j == sel.skip2[pos] {
			continue
		}
		if k >= 0 {
			return -1
		}
		k = j
	}
	return k
}

// makePlans merges the buckets for every value pair the indexes tell apart, or
// returns nil when that takes more than budget entries; it stops making plans as soon
// as they exceed it.
func (sel *selection) makePlans(rules []*Rule, budget int) *planSet {
	ps := &planSet{byValue: make(map[string]*valuePlans, len(sel.byValue))}
	left := budget
	for v, b := range sel.byValue {
		if ps.byValue[v] = sel.valuePlans(rules, b, &left); ps.byValue[v] == nil {
			return nil
		}
	}
	if ps.other = sel.valuePlans(rules, nil, &left); ps.other == nil {
		return nil
	}
	return ps
}

// all yields every plan of ps.
func (ps *planSet) all() iter.Seq[*plan] {
	return func(yield func(*plan) bool) {
		for _, vp := range ps.byValue {
			if !vp.each(yield) {
				return
			}
		}
		ps.other.each(yield)
	}
}

// each yields the plans of vp, reporting whether yield asked for more.
func (vp *valuePlans) each(yield func(*plan) bool) bool {
	if !vp.needs2 {
		return yield(vp.base)
	}
	for _, pl := range vp.byValue2 {
		if !yield(pl) {
			return false
		}
	}
	return yield(vp.other2) && yield(vp.err2)
}

// valuePlans makes the plans of a value of fact whose bucket is b, nil for a value no
// clause lists, taking their entries from the budget *left; nil when it runs out.
func (sel *selection) valuePlans(rules []*Rule, b *bucket, left *int) *valuePlans {
	buckets := [2]*bucket{b, sel.rest}
	// rest holds the lists of candidates not indexed on fact2; a plan adds to them the
	// indexed lists that apply, which carry fact2's error when err2 says so.
	var rest [4][]int
	var err2 [4]bool
	n := 0
	vp := &valuePlans{}
	for _, b := range buckets {
		if b != nil {
			rest[n] = b.rest
			n++
			vp.needs2 = vp.needs2 || len(b.indexed) > 0
		}
	}
	// with makes the plan of the rest lists and the lists indexed gives, or nil when
	// the budget is spent.
	with := func(indexed func(*bucket) []int, isErr bool) *plan {
		lists, errs, m := rest, err2, n
		for _, b := range buckets {
			if b != nil && indexed != nil {
				lists[m], errs[m] = indexed(b), isErr
				m++
			}
		}
		pl := sel.plan(rules, lists[:m], errs[:m])
		if *left -= len(pl.entries); *left < 0 {
			return nil
		}
		return pl
	}
	if !vp.needs2 {
		if vp.base = with(nil, false); vp.base == nil {
			return nil
		}
		return vp
	}
	vp.byValue2 = map[string]*plan{}
	for _, b := range buckets {
		if b == nil {
			continue
		}
		for v := range b.byValue {
			if vp.byValue2[v] != nil {
				continue
			}
			if vp.byValue2[v] = with(func(b *bucket) []int { return b.byValue[v] }, false); vp.byValue2[v] == nil {
				return nil
			}
		}
	}
	vp.other2 = with(nil, false)
	vp.err2 = with(func(b *bucket) []int { return b.indexed }, true)
	if vp.other2 == nil || vp.err2 == nil {
		return nil
	}
	return vp
}

// plan merges the ascending position lists, which it consumes, into one plan; the
// candidates of lists[j] carry fact2's error when err2[j].
func (sel *selection) plan(rules []*Rule, lists [][]int, err2 []bool) *plan {
	total := 0
	for _, l := range lists {
		total += len(l)
	}
	pl := &plan{entries: make([]planEntry, 0, total)}
	static := true
	mergeAscending(lists, func(j, pos int) {
		e := planEntry{rule: int32(sel.rules[pos]), pos: int32(pos), skip2: int32(sel.skip2[pos]), err2: err2[j]}
		r := rules[e.rule]
		for k := range r.selector {
			if k != sel.skip[pos] && k != int(e.skip2) {
				e.test = true
			}
		}
		if k := sel.left(r, pos); sel.list >= 0 && k >= 0 && r.selector[k].sym.ID == sel.list {
			e.list, e.mask = true, sel.listMask[pos]
		}
		static = static && !e.test && !e.err2
		pl.entries = append(pl.entries, e)
	})
	if static {
		pl.selected = make([]int, len(pl.entries))
		for j, e := range pl.entries {
			pl.selected[j] = int(e.rule)
		}
	}
	for _, e := range pl.entries {
		for _, t := range rules[e.rule].Overrides {
			if slices.ContainsFunc(pl.entries, func(o planEntry) bool { return int(o.rule) == t }) {
				pl.suppressing = true
			}
		}
	}
	return pl
}

// add puts the candidate at pos into b, indexed by its clause on fact2 when that is
// the first clause it tests after the one on fact.
func (sel *selection) add(b *bucket, r *Rule, pos int) {
	for k, cl := range r.selector {
		if k == sel.skip[pos] {
			continue
		}
		if sel.fact2 >= 0 && cl.sym.ID == sel.fact2 {
			sel.skip2[pos] = k
			if b.byValue == nil {
				b.byValue = map[string][]int{}
			}
			for v := range cl.each() {
				b.byValue[v] = append(b.byValue[v], pos)
			}
			b.indexed = append(b.indexed, pos)
			return
		}
		break
	}
	b.rest = append(b.rest, pos)
}

// clauseOn is the index of r's clause on fact, or -1.
func clauseOn(r *Rule, fact int) int {
	for k, cl := range r.selector {
		if cl.sym.ID == fact {
			return k
		}
	}
	return -1
}

// mostUsed is the string fact (or list<string> fact too, with lists) the most
// candidates have a clause on, among the clauses clauses returns for each, when at
// least two do; else -1. Ties go to the name first in code-point order.
func mostUsed(c *Capability, rules []*Rule, candidates []int, lists bool, clauses func(*Rule, int) []selectorClause) int {
	uses := map[int]int{}
	for pos, i := range candidates {
		for _, cl := range clauses(rules[i], pos) {
			if cl.sym.Type == types.String || lists && cl.sym.Type == types.ListString {
				uses[cl.sym.ID]++
			}
		}
	}
	ids := make([]int, 0, len(uses))
	for id := range uses {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(a, b int) bool {
		if uses[ids[a]] != uses[ids[b]] {
			return uses[ids[a]] > uses[ids[b]]
		}
		return c.symbols[ids[a]].Name < c.symbols[ids[b]].Name
	})
	if len(ids) > 0 && uses[ids[0]] > 1 {
		return ids[0]
	}
	return -1
}

// selectRules returns, in [OAR-EVAL-1] order, every candidate whose clauses all match;
// a candidate whose clause cannot be evaluated is selected with the error in s.selErr,
// which its on_error then handles ([OAR-FACT-26]). It also reports whether
// [OAR-EVAL-18] may reorder the selection. The indexes decide exactly what testing the
// clauses in order would: a candidate leaves them only when the first clause it tests,
// after the one on fact, is on fact2 and does not match. The list returned may be a
// plan's, shared: it is only read.
func (s *evalState) selectRules(sel *selection) ([]int, bool) {
	if sel.fact < 0 {
		if sel.plans != nil {
			return s.follow(sel, sel.plans.other.base)
		}
		for _, pos := range sel.rest.rest {
			s.considerOne(sel, pos, false, -1)
		}
		return s.sel, sel.suppressing
	}
	v, err := s.occurrenceFact(s.p.cap.symbol(sel.fact))
	if err != nil {
		// Every candidate with a clause on fact is decided by all of its clauses.
		for pos := range sel.rules {
			s.considerOne(sel, pos, sel.skip[pos] >= 0, -1)
		}
		return s.sel, sel.suppressing
	}
	if sel.plans != nil {
		vp := sel.plans.byValue[v.Str()]
		if vp == nil {
			vp = sel.plans.other
		}
		if !vp.needs2 {
			return s.follow(sel, vp.base)
		}
		v2, err2 := s.occurrenceFact(s.p.cap.symbol(sel.fact2))
		if err2 != nil {
			return s.follow(sel, vp.err2)
		}
		if pl := vp.byValue2[v2.Str()]; pl != nil {
			return s.follow(sel, pl)
		}
		return s.follow(sel, vp.other2)
	}
	var lists [4][]int
	var failed [4]bool
	n := 0
	var v2 types.Value
	var err2 error
	read2 := false
	for _, b := range [2]*bucket{sel.byValue[v.Str()], sel.rest} {
		if b == nil {
			continue
		}
		lists[n] = b.rest
		n++
		if len(b.indexed) == 0 {
			continue
		}
		if !read2 {
			v2, err2 = s.occurrenceFact(s.p.cap.symbol(sel.fact2))
			read2 = true
		}
		if err2 != nil {
			lists[n], failed[n] = b.indexed, true
		} else {
			lists[n] = b.byValue[v2.Str()]
		}
		n++
	}
	s.merge(sel, lists[:n], failed[:n])
	return s.sel, sel.suppressing
}

// follow selects the candidates of pl; those marked err2, whose clause on fact2 cannot
// be read, are decided by all of their clauses. Those marked list are selected when
// the occurrence's value of selection.list has one of their bits; when it cannot be
// read, testing them decides, as for any other candidate.
func (s *evalState) follow(sel *selection, pl *plan) ([]int, bool) {
	if pl.selected != nil {
		return pl.selected, pl.suppressing
	}
	var has uint64
	var listErr error
	read := false
	for _, e := range pl.entries {
		switch {
		case e.err2:
			s.considerOne(sel, int(e.pos), true, int(e.skip2))
		case !e.test:
			s.sel = append(s.sel, int(e.rule))
		case e.list:
			if !read {
				has, listErr = s.listBits(sel)
				read = true
			}
			switch {
			case listErr != nil:
				s.considerOne(sel, int(e.pos), false, int(e.skip2))
			case e.mask&has != 0:
				s.sel = append(s.sel, int(e.rule))
			}
		default:
			s.considerOne(sel, int(e.pos), false, int(e.skip2))
		}
	}
	return s.sel, pl.suppressing
}

// listBits is the bits of the members of the occurrence's value of selection.list,
// which clauseMatches would compare one by one with each clause's values.
func (s *evalState) listBits(sel *selection) (uint64, error) {
	v, err := s.occurrenceFact(s.p.cap.symbol(sel.list))
	if err != nil {
		return 0, err
	}
	if v.Kind == types.String {
		return sel.listBits[v.Str()], nil
	}
	var has uint64
	for _, m := range v.List() {
		has |= sel.listBits[m]
	}
	return has, nil
}

// merge considers the candidates of the ascending position lists in position order;
// failed[j] says that the index fact of a clause of lists[j]'s candidates cannot be read.
func (s *evalState) merge(sel *selection, lists [][]int, failed []bool) {
	mergeAscending(lists, func(j, pos int) { s.considerOne(sel, pos, failed[j], sel.skip2[pos]) })
}

// mergeAscending calls visit with each position of the ascending lists, which it
// consumes, in ascending order, and the index of the list holding it.
func mergeAscending(lists [][]int, visit func(j, pos int)) {
	for {
		best := -1
		for j, l := range lists {
			if len(l) > 0 && (best < 0 || l[0] < lists[best][0]) {
				best = j
			}
		}
		if best < 0 {
			return
		}
		pos := lists[best][0]
		lists[best] = lists[best][1:]
		visit(best, pos)
	}
}

// considerOne tests the candidate at pos but its clauses at sel.skip[pos] and skip2,
// which the indexes found matching; when an index could not read the fact of one of its
// clauses (indexFailed), all of its clauses decide (selectsAll).
func (s *evalState) considerOne(sel *selection, pos int, indexFailed bool, skip2 int) {
	i := sel.rules[pos]
	var ok bool
	var err error
	if indexFailed {
		ok, err = s.selectsAll(s.p.rs.Rules[i])
	} else {
		ok, err = s.selects(s.p.rs.Rules[i], sel.skip[pos], skip2)
	}
	switch {
	case err != nil:
		s.selectWithError(i, err)
	case ok:
		s.sel = append(s.sel, i)
	}
}

// selectWithError selects rule i with the error its on_error then handles.
func (s *evalState) selectWithError(i int, err error) {
	if s.selErr == nil {
		s.selErr = map[int]error{}
	}
	s.selErr[i] = err
	s.sel = append(s.sel, i)
}

// selectionErr is the error rule i was selected with, if any: the map is made only
// for an occurrence that has one, and most have none.
func (s *evalState) selectionErr(i int) error {
	if s.selErr == nil {
		return nil
	}
	return s.selErr[i]
}
