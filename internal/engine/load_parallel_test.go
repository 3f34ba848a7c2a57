package engine

import (
	"encoding/json"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/oar-operator/oar-operator/internal/engine/types"
)

// mixedRule is member i of a set that exercises every part of the loader: well-formed
// rules with conditions and copy shared across namespaces, references resolved and
// not, mandatory targets, duplicates, empty selectors (a warning), and members refused
// in pass 1 and in pass 2 for many reasons.
func mixedRule(i int) any {
	ns := fmt.Sprintf("ns%d", i%3)
	r := benchRule(i, fmt.Sprintf("tool_%d", i%7))
	r["namespace"] = ns
	switch i % 23 {
	case 1:
		r["when"] = `fire_count_of("RULE_0000") < 3 && fire_count < 2` // shared per namespace
	case 2:
		r["when"] = fmt.Sprintf(`fire_count_of("ns%d/RULE_%04d") > 1`, (i+1)%3, (i*7)%400)
	case 3:
		r["when"] = `tool_arg_int("size") >` // a syntax error, repeated
	case 4:
		r["when"] = fmt.Sprintf(`unknown_fact_%d == 1`, i%2)
	case 5:
		r["overrides"] = []any{fmt.Sprintf("RULE_%04d", (i*13)%500), "ns9/NOWHERE"}
	case 6:
		r["mandatory"] = true
	case 7:
		r["overrides"] = []any{fmt.Sprintf("RULE_%04d", i-1)}
	case 8:
		r["selector"] = map[string]any{"tool": []any{}}
	case 9:
		r["id"] = fmt.Sprintf("RULE_%04d", i-9) // a duplicate
	case 10:
		r["copy"] = map[string]any{"what": "{{ nothing_here }}", "fix": "{% if %}"}
	case 11:
		r["requires"] = map[string]any{"profiles": []any{"tool", "sesion"}, "facts": []any{"nope"}}
	case 12:
		r["oar"] = "2.0"
	case 13:
		r["bogus"], r["selector"] = 1, map[string]any{"tool": "read", "nofact": []any{"x"}}
	case 14:
		r["on_error"] = fmt.Sprintf("RULE_%04d", (i*3)%450)
	case 15:
		return fmt.Sprintf("member %d", i)
	case 16:
		r["counter_scope"] = "tool"
	case 17:
		r["when"] = `principal_roles == 3 || tool_arg_string(1)`
	case 18:
		r["kind"], r["effect"] = "detector", "transform"
	}
	return r
}

// loadWith loads docs with at least perWorker members to a worker.
func loadWith(t *testing.T, c *Capability, docs []any, perWorker int) (*RuleSet, string) {
	t.Helper()
	saved := rulesPerWorker
	rulesPerWorker = perWorker
	defer func() { rulesPerWorker = saved }()
	rs, errs := LoadRules(c, docs)
	text, err := json.Marshal(errs)
	if err != nil {
		t.Fatal(err)
	}
	return rs, string(text)
}

// checkWith checks docs with at least perWorker members to a worker.
func checkWith(t *testing.T, c *Capability, docs []any, perWorker int) string {
	t.Helper()
	saved := rulesPerWorker
	rulesPerWorker = perWorker
	defer func() { rulesPerWorker = saved }()
	text, err := json.Marshal(CheckRules(c, docs))
	if err != nil {
		t.Fatal(err)
	}
	return string(text)
}

// Loading on every processor yields what loading on one does: the same diagnostics in
// the same order, the same warnings, the same compiled rules ([OAR-CONF-1]). Checking
// finds what loading finds.
func TestLoadRulesParallelIsSequential(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(4))
	c := benchCap(t)
	mixed := make([]any, 460)
	for i := range mixed {
		mixed[i] = mixedRule(i)
	}
	_, one := loadWith(t, c, mixed, len(mixed)+1)
	_, many := loadWith(t, c, mixed, 1)
	if one == "[]" || one == "null" {
		t.Fatal("the mixed set loaded; it must exercise refusals")
	}
	if one != many {
		t.Errorf("diagnostics differ:\none processor: %.3000s\nmany: %.3000s", one, many)
	}
	if checked := checkWith(t, c, mixed, 1); checked != one {
		t.Errorf("CheckRules differs from LoadRules:\n%.3000s\n%.3000s", checked, one)
	}

	// Member i is ns<i%3>/RULE_<i/3>: every namespace has the same ids.
	valid := make([]any, 460)
	ref := func(j int) string { return fmt.Sprintf("ns%d/RULE_%04d", j%3, j/3) }
	for i := range valid {
		r := benchRule(i/3, fmt.Sprintf("tool_%d", i%7))
		r["namespace"] = fmt.Sprintf("ns%d", i%3)
		switch i % 11 {
		case 1:
			r["when"] = `fire_count_of("RULE_0000") < 3 && fire_count < 2` // a different rule in each namespace
		case 2:
			r["when"] = fmt.Sprintf(`fire_count_of(%q) > 1`, ref((i+1)%450))
		case 3:
			r["mandatory"] = true
		case 4:
			r["overrides"] = []any{fmt.Sprintf("RULE_%04d", ((i+3)%450)/3)} // i+3 is not mandatory
		case 5:
			r["selector"] = map[string]any{"tool": []any{}}
		case 6:
			r["on_error"] = ref((i + 2) % 450)
		case 7:
			r["counter_scope"] = "tool"
		}
		valid[i] = r
	}
	rsOne, errsOne := loadWith(t, c, valid, len(valid)+1)
	rsMany, errsMany := loadWith(t, c, valid, 1)
	if rsOne == nil || rsMany == nil {
		t.Fatalf("the valid set did not load: %.2000s / %.2000s", errsOne, errsMany)
	}
	if checked := checkWith(t, c, valid, 1); checked != "null" {
		t.Errorf("CheckRules refuses the valid set: %.3000s", checked)
	}
	if w1, w2 := fmt.Sprint(rsOne.Warnings), fmt.Sprint(rsMany.Warnings); w1 != w2 || len(rsOne.Warnings) == 0 {
		t.Errorf("warnings differ or are missing:\n%s\n%s", w1, w2)
	}
	if len(rsOne.Rules) != len(rsMany.Rules) {
		t.Fatalf("%d rules against %d", len(rsOne.Rules), len(rsMany.Rules))
	}
	for i, a := range rsOne.Rules {
		b := rsMany.Rules[i]
		if x, y := ruleSummary(a), ruleSummary(b); x != y {
			t.Errorf("rule %d differs:\n%s\n%s", i, x, y)
		}
	}
}

// ruleSummary prints what loading decides about a rule.
func ruleSummary(r *Rule) string {
	copyNames := []string{}
	for _, m := range r.copy {
		copyNames = append(copyNames, m.name)
	}
	return fmt.Sprintf("%s %d %v %d %v %v %v when=%v %v %v %v", r.QID, r.Index, r.Overrides, r.OnErrorRule, r.refs,
		r.selector, r.trace, r.when != nil && r.when.Refs() != nil, r.counterScope, copyNames, r.Local)
}

// mapStore is a ConditionStore in a map.
type mapStore struct {
	mu   sync.Mutex
	refs map[string][]types.Symbol
}

func (s *mapStore) Checked(src string) ([]types.Symbol, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	refs, ok := s.refs[src]
	return refs, ok
}

func (s *mapStore) KeepChecked(src string, refs []types.Symbol) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.refs[src] = refs
}

// Conditions kept from one check to the next change nothing a check finds; a condition
// that names a rule is not kept, since whether that rule exists depends on the set
// ([OAR-FIRE-11]).
func TestCheckRulesKeptIsCheckRules(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(4))
	c := benchCap(t)
	store := &mapStore{refs: map[string][]types.Symbol{}}
	mixed := make([]any, 460)
	for i := range mixed {
		mixed[i] = mixedRule(i)
	}
	want := checkWith(t, c, mixed, 1)
	for round := range 2 {
		saved := rulesPerWorker
		rulesPerWorker = 1
		_, kept := CheckRulesKept(c, mixed, store)
		got, err := json.Marshal(kept)
		rulesPerWorker = saved
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != want {
			t.Errorf("round %d with kept conditions:\n%.3000s\nwithout:\n%.3000s", round, got, want)
		}
	}
	if len(store.refs) == 0 {
		t.Fatal("no condition was kept")
	}
	for src := range store.refs {
		if strings.Contains(src, "_count_of") {
			t.Errorf("a condition naming a rule was kept: %s", src)
		}
	}

	counted := benchRule(1, "read")
	counted["when"] = `fire_count_of("RULE_0000") > 1`
	with := []any{benchRule(0, "read"), counted}
	if _, errs := CheckRulesKept(c, with, store); len(errs) > 0 {
		t.Fatalf("the counted rule is there: %v", errs)
	}
	without := []any{benchRule(2, "read"), counted}
	if _, errs := CheckRulesKept(c, without, store); len(errs) != 1 || errs[0].Clause != "OAR-FIRE-11" {
		t.Errorf("the counted rule is gone: %v", errs)
	}
}
