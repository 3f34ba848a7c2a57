package engine

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
)

// listCapability is testCapability with a host string fact and a host list fact more,
// so that generated selectors leave clauses of both types to the list index.
const listCapability = `{"oar_capability_version":"1.0","host":"oar.test",
 "anchors":{"core":{"tool.pre_invoke":"gw.pre_call","model.output":"model.output"},
  "unsupported":["tool.handler","tool.post_invoke","agent.post_turn","agent.finalize","model.input","model.tool_result"]},
 "profiles":["tool","session"],"activity_window":3,
 "host_facts":[{"name":"oar.test.tier","type":"string"},{"name":"oar.test.groups","type":"list<string>"}]}`

// TestSEL2_ListIndexSelectsWhatTestingEachClauseDoes: on generated rule sets whose
// selectors leave a clause on a list fact (or a string fact) to test, many with the
// same lists, some empty or long, the list index selects exactly the rules, with
// exactly the errors, that testing each candidate's clauses selects, and evaluation
// decides byte for byte what it decides without the index: whatever the occurrence
// holds of the fact (members listed or not, none, the fact absent, of the wrong type or
// with a member of the wrong type), with plans and merging the buckets alike
// ([OAR-SEL-2], [OAR-SEL-4], [OAR-FACT-26], [OAR-EVAL-1], [OAR-EVAL-18]).
func TestSEL2_ListIndexSelectsWhatTestingEachClauseDoes(t *testing.T) {
	c := mustCap(t, listCapability)
	r := rand.New(rand.NewPCG(14, 2))
	// indexed counts the plan entries the list index decides, by the type of its fact.
	indexed := map[string]int{}
	for set := range 150 {
		rules := generatedSelectors(r, 12+r.IntN(30))
		rs, errs := LoadRules(c, mustDocs(t, rules))
		if len(errs) > 0 {
			t.Fatalf("set %d: %v", set, errs)
		}
		p, errs := Configure(rs, nil)
		if len(errs) > 0 {
			t.Fatalf("set %d: %v", set, errs)
		}
		sel := p.byAnchor["gw.pre_call"]
		if sel.plans != nil && sel.list >= 0 {
			for pl := range sel.plans.all() {
				for _, e := range pl.entries {
					if e.list {
						indexed[p.cap.symbol(sel.list).Type.String()]++
					}
				}
			}
		}
		tested := withoutListIndex(p)
		for range 25 {
			occ := generatedOccurrence(r)
			for _, q := range []*Program{p, withoutPlans(p)} {
				got, want := selectedWithErrors(q, occ), selectedByMeaning(q, occ)
				if got != want {
					t.Fatalf("set %d %s\noccurrence %v %+v: selected %s, testing each clause %s", set, rules, occ.Facts, occ.ToolCall, got, want)
				}
			}
			got, _ := json.Marshal(p.Evaluate(NewMemoryRuntime(), occ))
			want, _ := json.Marshal(tested.Evaluate(NewMemoryRuntime(), occ))
			if !bytes.Equal(got, want) {
				t.Fatalf("set %d %s\noccurrence %v %+v: decided %s, without the list index %s", set, rules, occ.Facts, occ.ToolCall, got, want)
			}
		}
	}
	if indexed["list<string>"] < 500 || indexed["string"] < 20 {
		t.Errorf("the list index decided %v plan entries: too few for the test to mean anything", indexed)
	}
}

// TestSelectionListIndexHasABitPerValue: a selection whose list clauses list more
// values than a bit mask holds has no list index, and selects what the clauses mean.
func TestSelectionListIndexHasABitPerValue(t *testing.T) {
	var long []string
	for i := range 64 {
		long = append(long, fmt.Sprintf("%q", fmt.Sprint("role", i)))
	}
	docs := []string{
		`{"oar":"1.0","id":"A","kind":"policy","anchor":"tool.pre_invoke","effect":"allow","selector":{"principal_roles":[` + strings.Join(long, ",") + `]},"requires":{"profiles":["session"]}}`,
		`{"oar":"1.0","id":"B","kind":"policy","anchor":"tool.pre_invoke","effect":"allow","selector":{"principal_roles":["role63"]},"requires":{"profiles":["session"]}}`,
	}
	for _, extra := range []string{`"role0"`, `"role64"`} {
		src := "[" + strings.Join(docs, ",") + `,{"oar":"1.0","id":"C","kind":"policy","anchor":"tool.pre_invoke","effect":"allow","selector":{"principal_roles":[` + extra + `]},"requires":{"profiles":["session"]}}]`
		p := mustProgram(t, src)
		if sel := p.byAnchor["gw.pre_call"]; (sel.list >= 0) != (extra == `"role0"`) {
			t.Errorf("with C listing %s: list index on %d, want one only while the values fit 64 bits", extra, sel.list)
		}
		for _, roles := range [][]any{{"role63"}, {"role64"}, {"role0", "x"}, {}} {
			occ := &Occurrence{Anchor: "gw.pre_call", Facts: map[string]any{"principal_roles": roles}}
			if got, want := selectedWithErrors(p, occ), selectedByMeaning(p, occ); got != want {
				t.Errorf("C listing %s, roles %v: selected %s, testing each clause %s", extra, roles, got, want)
			}
		}
	}
}

// generatedSelectors is n rules at tool.pre_invoke whose selectors draw clauses on
// tool, principal, oar.test.tier, principal_roles and oar.test.groups from small pools,
// so that many share a list; some lists are empty, long (past fewValues) or repeat a
// value, and some rules suppress an earlier one.
func generatedSelectors(r *rand.Rand, n int) string {
	pick := func(pool []string, most int) string {
		var vs []string
		for range r.IntN(most + 1) {
			vs = append(vs, fmt.Sprintf("%q", pool[r.IntN(len(pool))]))
		}
		return "[" + strings.Join(vs, ",") + "]"
	}
	roles := []string{"sre", "dev", "admin", "intern", "auditor", "contractor"}
	shared := []string{`["sre","dev"]`, `["dev","sre"]`, `["auditor","admin"]`, `["intern"]`, `[]`, `["a","b","c","d","admin","sre"]`}
	clauses := []func() string{
		func() string { return `"tool":` + pick([]string{"read", "write", "bash"}, 2) },
		func() string { return `"principal":` + pick([]string{"ana", "bo"}, 2) },
		func() string { return `"oar.test.tier":` + pick([]string{"gold", "silver", "bronze"}, 2) },
		func() string { return `"principal_roles":` + pick(roles, 6) },
		func() string { return `"principal_roles":` + shared[r.IntN(len(shared))] },
		func() string { return `"oar.test.groups":` + pick([]string{"g1", "g2", "g3"}, 3) },
	}
	// Clauses on principal_roles, shared lists most of all, come more often, or, in
	// some sets, clauses on the string facts, so that one of those is left to the list
	// index.
	weights := []int{0, 0, 1, 2, 3, 4, 4, 4, 5}
	if r.IntN(3) == 0 {
		weights = []int{0, 0, 0, 1, 1, 1, 2, 2, 3, 4, 5}
	}
	var docs []string
	for i := range n {
		var sel []string
		seen := map[string]bool{}
		for range r.IntN(4) {
			k := weights[r.IntN(len(weights))]
			cl := clauses[k]()
			if name := strings.SplitN(cl, ":", 2)[0]; !seen[name] {
				seen[name] = true
				sel = append(sel, cl)
			}
		}
		extra := ""
		if i > 0 && r.IntN(6) == 0 {
			extra = fmt.Sprintf(`,"overrides":["R%03d"]`, r.IntN(i))
		}
		docs = append(docs, fmt.Sprintf(`{"oar":"1.0","id":"R%03d","kind":"%s","anchor":"tool.pre_invoke","effect":"allow","selector":{%s},"requires":{"profiles":["tool","session"],"facts":["oar.test.tier","oar.test.groups"]}%s}`,
			i, []string{"schema", "policy", "invariant"}[r.IntN(3)], strings.Join(sel, ","), extra))
	}
	return "[" + strings.Join(docs, ",") + "]"
}

// generatedOccurrence is a tool call whose selector facts are each absent, listed by
// some clause or not, empty, or of the wrong type (a list with a member of the wrong
// type too).
func generatedOccurrence(r *rand.Rand) *Occurrence {
	list := func(pool []string) any {
		switch r.IntN(8) {
		case 0:
			return "dev"
		case 1:
			return 7
		case 2:
			return []any{"dev", 1}
		}
		var l []any
		for range r.IntN(4) {
			l = append(l, pool[r.IntN(len(pool))])
		}
		if l == nil {
			l = []any{}
		}
		return l
	}
	str := func(pool ...string) any {
		if r.IntN(8) == 0 {
			return []any{pool[0]}
		}
		return pool[r.IntN(len(pool))]
	}
	facts := map[string]any{}
	for _, f := range []struct {
		name  string
		value func() any
	}{
		{"principal", func() any { return str("ana", "bo", "cy") }},
		{"oar.test.tier", func() any { return str("gold", "silver", "tin") }},
		{"principal_roles", func() any { return list([]string{"sre", "dev", "admin", "intern", "auditor", "nobody"}) }},
		{"oar.test.groups", func() any { return list([]string{"g1", "g2", "g9"}) }},
	} {
		if r.IntN(5) > 0 {
			facts[f.name] = f.value()
		}
	}
	occ := &Occurrence{Anchor: "gw.pre_call", Facts: facts}
	switch r.IntN(6) {
	case 0:
	case 1:
		facts["tool"] = 7
	default:
		occ.ToolCall = &ToolCall{Name: []string{"read", "write", "bash", "other"}[r.IntN(4)]}
	}
	return occ
}

// selectedWithErrors is what p's selection at gw.pre_call selects for occ, in the
// order [OAR-EVAL-18] gives it, each rule with the error it is selected with.
func selectedWithErrors(p *Program, occ *Occurrence) string {
	s := &evalState{}
	s.reset(p, NewMemoryRuntime(), occ, &DecisionBuffer{})
	s.anchor = "tool.pre_invoke"
	selected, reorder := s.selectRules(p.byAnchor["gw.pre_call"])
	if reorder {
		selected = p.order(selected, nil, &orderScratch{})
	}
	var out []string
	for _, i := range selected {
		out = append(out, fmt.Sprintf("%s:%v", p.rs.Rules[i].ID, s.selErr[i]))
	}
	return strings.Join(out, " ")
}

// selectedByMeaning is what testing each candidate's clauses (selectsByMeaning)
// selects for occ, in the same order and form.
func selectedByMeaning(p *Program, occ *Occurrence) string {
	s := &evalState{}
	s.reset(p, NewMemoryRuntime(), occ, &DecisionBuffer{})
	s.anchor = "tool.pre_invoke"
	var selected []int
	errs := map[int]error{}
	for _, i := range p.byAnchor["gw.pre_call"].rules {
		if ok, err := s.selectsByMeaning(p.rs.Rules[i]); err != nil || ok {
			selected, errs[i] = append(selected, i), err
		}
	}
	var out []string
	for _, i := range p.order(selected, nil, &orderScratch{}) {
		out = append(out, fmt.Sprintf("%s:%v", p.rs.Rules[i].ID, errs[i]))
	}
	return strings.Join(out, " ")
}

// withoutListIndex is p with every selection testing each candidate's clauses where
// the list index would decide them: its plans made again without it.
func withoutListIndex(p *Program) *Program {
	q := *p
	q.byAnchor = map[string]*selection{}
	for anchor, sel := range p.byAnchor {
		tested := *sel
		tested.list, tested.listBits, tested.listMask = -1, nil, nil
		if sel.plans != nil {
			tested.plans = tested.makePlans(p.rs.Rules, planBudget)
			q.orderPlans(&tested)
		}
		q.byAnchor[anchor] = &tested
	}
	return &q
}
