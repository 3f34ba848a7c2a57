package engine

import (
	"sort"

	"github.com/oar-operator/oar-operator/internal/engine/types"
)

// selection is an anchor's candidates indexed over up to two selector facts, so an
// occurrence skips every rule whose clause on those facts cannot match with a map
// lookup or two instead of testing each rule ([OAR-SEL-1], [OAR-SEL-7]). The first
// fact is the string fact most candidates have a clause on (a tool name); the second,
// under each value of the first, the string fact most candidates test next (a tenant
// of a multi-tenant bundle), so a thousand rules of ten tenants cost the lookups and
// the rules of one tenant's tool.
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
	sel := &selection{rules: candidates, fact: -1, fact2: -1, skip: make([]int, n), skip2: make([]int, n), rest: &bucket{}}
	for pos := range candidates {
		sel.skip[pos], sel.skip2[pos] = -1, -1
	}
	sel.fact = mostUsed(c, rules, candidates, func(r *Rule, _ int) []selectorClause { return r.selector })
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
		sel.fact2 = mostUsed(c, rules, candidates, next)
	}
	for pos, i := range candidates {
		r := rules[i]
		if k := sel.skip[pos]; k >= 0 {
			for v := range r.selector[k].values {
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
	return sel
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
			for v := range cl.values {
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

// mostUsed is the string fact the most candidates have a clause on, among the
// clauses clauses returns for each, when at least two do; else -1. Ties go to the
// name first in code-point order.
func mostUsed(c *Capability, rules []*Rule, candidates []int, clauses func(*Rule, int) []selectorClause) int {
	uses := map[int]int{}
	for pos, i := range candidates {
		for _, cl := range clauses(rules[i], pos) {
			if cl.sym.Type == types.String {
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

// selectRules appends to s.sel, in [OAR-EVAL-1] order, every candidate whose clauses
// all match; a candidate whose clause cannot be evaluated is selected with the error,
// which its on_error then handles ([OAR-FACT-26]). The indexes decide exactly what
// testing the clauses in order would: a candidate leaves them only when the first
// clause it tests, after the one on fact, is on fact2 and does not match.
func (s *evalState) selectRules(sel *selection) {
	if sel.fact < 0 {
		for _, pos := range sel.rest.rest {
			s.considerOne(sel, pos, nil, -1)
		}
		return
	}
	v, err := s.occurrenceFact(s.p.cap.symbol(sel.fact))
	if err != nil {
		// Every candidate with a clause on fact is selected with the error.
		for pos := range sel.rules {
			var posErr error
			if sel.skip[pos] >= 0 {
				posErr = err
			}
			s.considerOne(sel, pos, posErr, -1)
		}
		return
	}
	var lists [4][]int
	var errs [4]error
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
			lists[n], errs[n] = b.indexed, err2
		} else {
			lists[n] = b.byValue[v2.Str()]
		}
		n++
	}
	s.merge(sel, lists[:n], errs[:n])
}

// merge considers the candidates of the ascending position lists in position order;
// the candidates of lists[j] carry errs[j].
func (s *evalState) merge(sel *selection, lists [][]int, errs []error) {
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
		s.considerOne(sel, pos, errs[best], sel.skip2[pos])
		lists[best] = lists[best][1:]
	}
}

// considerOne tests the candidate at pos but its clauses at sel.skip[pos] and skip2,
// which the indexes decided, or selects it with err.
func (s *evalState) considerOne(sel *selection, pos int, err error, skip2 int) {
	i := sel.rules[pos]
	ok := true
	if err == nil {
		ok, err = s.selects(s.p.rs.Rules[i], sel.skip[pos], skip2)
	}
	if err != nil {
		if s.selErr == nil {
			s.selErr = map[int]error{}
		}
		s.selErr[i] = err
		ok = true
	}
	if ok {
		s.sel = append(s.sel, i)
	}
}
