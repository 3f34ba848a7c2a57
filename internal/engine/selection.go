package engine

import (
	"sort"

	"github.com/oar-operator/oar-operator/internal/engine/types"
)

// selection is an anchor's candidates with an index over one selector fact, so an
// occurrence skips every rule whose clause on that fact cannot match with one map
// lookup instead of testing each rule ([OAR-SEL-1], [OAR-SEL-7]).
type selection struct {
	// rules are the candidates in [OAR-EVAL-1] order.
	rules []int
	// fact is the indexed string fact's symbol ID, or -1 when no candidate has a
	// clause on a string fact.
	fact int
	// byValue maps a value of fact to the positions (in rules) of the candidates whose
	// clause on fact lists it, ascending.
	byValue map[string][]int
	// rest are the positions of candidates without a clause on fact, ascending.
	rest []int
	// skip is, per position, the index of the clause the index already decided, or -1.
	skip []int
}

// newSelection indexes the candidates by the string fact most of their selectors
// name.
func newSelection(c *Capability, rules []*Rule, candidates []int) *selection {
	sel := &selection{rules: candidates, fact: -1, skip: make([]int, len(candidates))}
	uses := map[int]int{}
	for _, i := range candidates {
		for _, cl := range rules[i].selector {
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
		sel.fact = ids[0]
		sel.byValue = map[string][]int{}
	}
	for pos, i := range candidates {
		sel.skip[pos] = -1
		if sel.fact < 0 {
			sel.rest = append(sel.rest, pos)
			continue
		}
		for k, cl := range rules[i].selector {
			if cl.sym.ID == sel.fact {
				sel.skip[pos] = k
				for v := range cl.values {
					sel.byValue[v] = append(sel.byValue[v], pos)
				}
				break
			}
		}
		if sel.skip[pos] < 0 {
			sel.rest = append(sel.rest, pos)
		}
	}
	for _, list := range sel.byValue {
		sort.Ints(list)
	}
	return sel
}

// selectRules appends to s.sel, in [OAR-EVAL-1] order, every candidate whose clauses
// all match; a candidate whose clause cannot be evaluated is selected with the error,
// which its on_error then handles ([OAR-FACT-26]).
func (s *evalState) selectRules(sel *selection) {
	rules := s.p.rs.Rules
	var indexed []int
	var indexErr error
	if sel.fact >= 0 {
		v, err := s.occurrenceFact(s.p.cap.symbol(sel.fact))
		if err != nil {
			indexErr = err
		} else {
			indexed = sel.byValue[v.Str()]
		}
	}
	consider := func(pos int, err error) {
		i := sel.rules[pos]
		ok := true
		if err == nil {
			ok, err = s.selects(rules[i], sel.skip[pos])
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
	if indexErr != nil {
		for pos := range sel.rules {
			var err error
			if sel.skip[pos] >= 0 {
				err = indexErr
			}
			consider(pos, err)
		}
		return
	}
	a, b := 0, 0
	for a < len(indexed) || b < len(sel.rest) {
		if b == len(sel.rest) || (a < len(indexed) && indexed[a] < sel.rest[b]) {
			consider(indexed[a], nil)
			a++
		} else {
			consider(sel.rest[b], nil)
			b++
		}
	}
}
