package engine

import (
	"encoding/json"
	"math"
	"slices"
	"strings"
	"testing"
)

// checkCountersAreTheirMap fails t unless c, made of m, encodes as m does with HTML
// escaping on and off, and in a decision (omitempty) and a struct without omitempty as
// m does there, and unless c reads back from m's encoding as m does.
func checkCountersAreTheirMap(t *testing.T, m map[string]Counts) {
	t.Helper()
	c := CountersOf(m)
	for k, v := range m {
		if got := c.Get(k); got != v {
			t.Errorf("Get(%q) = %+v, want %+v", k, got, v)
		}
	}
	if !slices.IsSortedFunc(c, func(a, b ReportedCounter) int { return strings.Compare(a.Key, b.Key) }) {
		t.Errorf("counters %+v are not in key order", c)
	}
	encode := func(v any, html bool) string { return encodeJSON(t, v, html) }
	type plain struct {
		Counters Counters `json:"counters"`
	}
	type plainOfMap struct {
		Counters map[string]Counts `json:"counters"`
	}
	for _, html := range []bool{true, false} {
		if got, want := encode(c, html), encode(m, html); got != want {
			t.Errorf("HTML escaping %v: counters encode as %s, their map as %s", html, got, want)
		}
		// The counters are the last member of a decision with no failures, left out
		// when there are none.
		want := encode(Decision{Decision: "<"}, html)
		if len(m) > 0 {
			want = strings.TrimSuffix(want, "}\n") + `,"counters":` + strings.TrimSuffix(encode(m, html), "\n") + "}\n"
		}
		if got := encode(Decision{Decision: "<", Counters: c}, html); got != want {
			t.Errorf("HTML escaping %v: a decision with the counters encodes as %s, with their map as %s", html, got, want)
		}
		if got, want := encode(plain{c}, html), encode(plainOfMap{m}, html); got != want {
			t.Errorf("HTML escaping %v: a member without omitempty encodes as %s, with the map as %s", html, got, want)
		}
	}
	checkReadsAsItsMap(t, m, CountersOf)
}

// countCases are counts at the ends of int64 and between.
var countCases = []Counts{{}, {Fire: 1}, {Breaker: 1}, {Fire: -1, Breaker: math.MinInt64}, {Fire: math.MaxInt64, Breaker: 42}}

// TestCountersEncodeAsTheirMap: a counter report is written and read as the
// map[string]Counts of its counters, byte for byte, for every pair of keys of
// copyStrings (which encoding/json escapes in every way it has) and counts of countCases;
// a key that is a prefix of another, or ends in '#', included.
func TestCountersEncodeAsTheirMap(t *testing.T) {
	checkCountersAreTheirMap(t, nil)
	checkCountersAreTheirMap(t, map[string]Counts{})
	for i, a := range copyStrings {
		for j, b := range copyStrings {
			checkCountersAreTheirMap(t, map[string]Counts{a: countCases[i%len(countCases)], b: countCases[j%len(countCases)],
				a + "#" + b: {Fire: int64(i), Breaker: int64(j)}, a + b: countCases[(i+j)%len(countCases)]})
		}
	}
	all := map[string]Counts{}
	for i, s := range copyStrings {
		all["ns/R"+s] = countCases[i%len(countCases)]
		all["ns/R#"+s] = Counts{Fire: int64(i)}
	}
	checkCountersAreTheirMap(t, all)
}

// FuzzCountersEncodeAsTheirMap: TestCountersEncodeAsTheirMap for any three keys and
// counts.
func FuzzCountersEncodeAsTheirMap(f *testing.F) {
	for i, s := range copyStrings {
		f.Add(s, copyStrings[(i+1)%len(copyStrings)], copyStrings[(i+7)%len(copyStrings)], int64(i), int64(-i))
	}
	f.Fuzz(func(t *testing.T, a, b, c string, fire, breaker int64) {
		checkCountersAreTheirMap(t, map[string]Counts{a: {Fire: fire}, b: {Breaker: breaker}, c: {Fire: breaker, Breaker: fire}})
	})
}

// TestCountersReadAsTheirMap: null, an object naming a key twice, an object added to a
// report and counts missing a member read as they do into a map.
func TestCountersReadAsTheirMap(t *testing.T) {
	for _, tt := range []struct {
		into Counters
		data string
	}{
		{nil, `null`},
		{Counters{{"a", Counts{Fire: 1}}}, `null`},
		{nil, `{}`},
		{nil, `{"b":{"fire_count":1},"a":{"breaker_count":2},"b":{"breaker_count":3}}`},
		{Counters{{"a", Counts{Fire: 1}}, {"c", Counts{Fire: 2}}}, `{"b":{"fire_count":3},"c":{"fire_count":4}}`},
		{nil, `{"\ud800":{"fire_count":1},"<":{"fire_count":2,"other":3}}`},
	} {
		m, c := tt.into.Map(), slices.Clone(tt.into)
		if err := json.Unmarshal([]byte(tt.data), &m); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal([]byte(tt.data), &c); err != nil {
			t.Fatal(err)
		}
		if want := CountersOf(m); !slices.Equal(c, want) || (c == nil) != (m == nil) {
			t.Errorf("%s into %+v reads as %#v, want %#v", tt.data, tt.into, c, want)
		}
	}
	for _, data := range []string{`["a"]`, `{"a":1}`, `{"a":{"fire_count":"1"}}`} {
		var c Counters
		if err := json.Unmarshal([]byte(data), &c); err == nil {
			t.Errorf("%s reads as the counters %+v, want an error", data, c)
		}
	}
}

// TestCONF33_ADecisionReportsItsCountersInKeyOrder: the counters member holds the
// changed counters sorted by report key, the order of the object encoding/json writes,
// though the rules evaluate in kind order and one rule's identifier is a prefix of a
// scoped one's; a reused buffer reports the next occurrence's counters alone.
func TestCONF33_ADecisionReportsItsCountersInKeyOrder(t *testing.T) {
	p := mustProgram(t, `[
	 {"oar":"1.0","id":"Z","kind":"schema","anchor":"tool.pre_invoke","effect":"warn","on_fire":["increment_counter"],"requires":{"profiles":["tool"]}},
	 {"oar":"1.0","id":"R1","kind":"policy","anchor":"tool.pre_invoke","effect":"warn","on_fire":["increment_counter"],"requires":{"profiles":["tool"]}},
	 {"oar":"1.0","id":"R","kind":"policy","anchor":"tool.pre_invoke","effect":"warn","on_fire":["increment_counter"],"requires":{"profiles":["tool"]},"counter_scope":"tool"},
	 {"oar":"1.0","id":"A","kind":"invariant","anchor":"tool.pre_invoke","effect":"warn","when":"tool == 'read'","on_fire":["increment_counter","increment_counter"],"requires":{"profiles":["tool"]}}]`)
	rt, buf := NewMemoryRuntime(), &DecisionBuffer{}
	keys := func(d *Decision) string {
		var out []string
		for _, c := range d.Counters {
			out = append(out, c.Key)
		}
		return strings.Join(out, " ")
	}
	d := p.EvaluateInto(rt, &Occurrence{Anchor: "gw.pre_call", SessionID: "s", ToolCall: &ToolCall{Name: "read"}}, buf)
	if got, want := keys(d), "A R#read R1 Z"; got != want || d.Counters.Get("A").Fire != 2 || d.Counters.Get("R#read").Fire != 1 {
		t.Errorf("counters %+v (applied %v); want %s, A at 2", d.Counters, d.Applied, want)
	}
	data, err := json.Marshal(d.Counters)
	if want, _ := json.Marshal(d.Counters.Map()); err != nil || string(data) != string(want) {
		t.Errorf("counters encode as %s, their map as %s", data, want)
	}
	d = p.EvaluateInto(rt, &Occurrence{Anchor: "gw.pre_call", SessionID: "s", ToolCall: &ToolCall{Name: "write"}}, buf)
	if got, want := keys(d), "R#write R1 Z"; got != want || d.Counters.Get("R1").Fire != 2 || d.Counters.Get("A") != (Counts{}) {
		t.Errorf("counters %+v; want %s, R1 at 2", d.Counters, want)
	}
}

// TestCONF21_ACounterLeftWhereItWasIsNotReported: a decision reports the counters whose
// values the occurrence changed ([OAR-CONF-21]), not every counter an action touched: a
// reset of a counter at zero, and an increment taken back by a reset at the same
// occurrence, leave nothing to report, though on_fire lists the actions applied.
func TestCONF21_ACounterLeftWhereItWasIsNotReported(t *testing.T) {
	p := mustProgram(t, `[
	 {"oar":"1.0","id":"RESET","kind":"policy","anchor":"tool.pre_invoke","effect":"warn","on_fire":["reset_counter"],"requires":{"profiles":["tool"]}},
	 {"oar":"1.0","id":"UNDO","kind":"policy","anchor":"tool.pre_invoke","effect":"warn","on_fire":["increment_counter","reset_counter"],"requires":{"profiles":["tool"]}},
	 {"oar":"1.0","id":"UP","kind":"policy","anchor":"tool.pre_invoke","effect":"warn","on_fire":["increment_counter"],"requires":{"profiles":["tool"]}}]`)
	d := p.Evaluate(NewMemoryRuntime(), &Occurrence{Anchor: "gw.pre_call", SessionID: "s", ToolCall: &ToolCall{Name: "read"}})
	if len(d.Counters) != 1 || d.Counters.Get("UP").Fire != 1 {
		t.Errorf("counters %+v; want UP at 1 alone", d.Counters)
	}
	if want := "reset_counter increment_counter reset_counter increment_counter"; strings.Join(d.OnFire, " ") != want {
		t.Errorf("on_fire %v; want %s", d.OnFire, want)
	}
}
