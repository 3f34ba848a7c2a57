package engine

import (
	"fmt"
	"testing"

	"github.com/oar-operator/oar-operator/internal/engine/types"
)

// Checking a set whose conditions are kept costs a few allocations a rule: its Rule, its
// qualified identifier, its requires and selector lists, its share of the set's — not
// one for each condition or each on_fire list.
func TestCheckKeptAllocatesFewTimesARule(t *testing.T) {
	c := benchCap(t)
	const n = 200
	docs := make([]any, n)
	for i := range docs {
		docs[i] = benchRule(i, fmt.Sprintf("tool_%d", i))
	}
	store := &mapStore{refs: map[string][]types.Symbol{}}
	if _, errs := CheckRulesKept(c, docs, store); len(errs) > 0 {
		t.Fatal(errs)
	}
	allocs := testing.AllocsPerRun(10, func() { CheckRulesKept(c, docs, store) })
	if perRule := allocs / n; perRule > 7 {
		t.Errorf("checking %d rules with kept conditions allocates %v times, %.1f a rule; want at most 7", n, allocs, perRule)
	}
}
