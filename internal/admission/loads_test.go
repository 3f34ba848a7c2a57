package admission

import (
	"context"
	"crypto/sha256"
	"fmt"
	"slices"
	"strings"
	"testing"
	"unsafe"

	rulesv1alpha1 "github.com/oar-operator/oar-operator/api/v1alpha1"
	"github.com/oar-operator/oar-operator/internal/engine/diag"
	"github.com/oar-operator/oar-operator/internal/engine/types"
)

// A pack validated again with nothing changed is not loaded again; a pack whose
// Capability or neighbours changed is, since its verdict may differ.
func TestValidationReusesLoadOnlyForTheSameInputs(t *testing.T) {
	loads.forget()
	t.Cleanup(loads.forget)
	ctx := context.Background()
	const ns = "loads"
	mem := &memoryCluster{capabilities: []*rulesv1alpha1.Capability{capabilityObject(ns, "gateway", gatewaySpec())}}
	v := &RulePackValidator{Cluster: mem}
	pack := rulePack(t, ns, "mine", "gateway", 1, []map[string]any{with(rule("acme.mine", "READ"), "overrides", []any{"acme.other/TARGET"})})
	verdict := func() string {
		_, err := v.ValidateCreate(ctx, pack.DeepCopy())
		if err == nil {
			return "admitted"
		}
		return err.Error()
	}

	if got := verdict(); !strings.Contains(got, "OAR-EVAL-13") {
		t.Fatalf("an override of a rule no pack defines: %s", got)
	}
	if len(loads.current) != 1 {
		t.Fatalf("%d loads kept, want 1", len(loads.current))
	}
	for key := range loads.current {
		e := diag.New("OAR-DOC-2", "id", "planted")
		e.Index = 0
		loads.current[key] = loadResult{errs: diag.List{e}}
	}
	if got := verdict(); !strings.Contains(got, "planted") {
		t.Errorf("the same pack was loaded again: %s", got)
	}

	// Another pack now defines the target: the pack loads next to a stand-in for it.
	mem.packs = append(mem.packs, *rulePack(t, ns, "other", "gateway", 1, []map[string]any{rule("acme.other", "TARGET")}))
	if got := verdict(); got != "admitted" {
		t.Errorf("with the override's target defined elsewhere: %s", got)
	}

	// The Capability no longer supports the rule's anchor.
	spec := gatewaySpec()
	delete(spec.Anchors.Core, "tool.pre_invoke")
	spec.Anchors.Unsupported = append(spec.Anchors.Unsupported, "tool.pre_invoke")
	mem.capabilities[0] = capabilityObject(ns, "gateway", spec)
	if got := verdict(); !strings.Contains(got, "OAR-PROF-4") {
		t.Errorf("under a Capability without the rule's anchor: %s", got)
	}
}

// forget empties the cache, keeping its maps' room.
func (g *generations[K, V]) forget() {
	g.mu.Lock()
	defer g.mu.Unlock()
	clear(g.current)
	clear(g.previous)
}

// A condition checked under one Capability is checked again under another: what it
// references may not be declared there ([OAR-FACT-3]).
func TestKeptConditionsAreTheCapabilitys(t *testing.T) {
	ctx := context.Background()
	const ns = "conditions"
	mem := &memoryCluster{capabilities: []*rulesv1alpha1.Capability{capabilityObject(ns, "gateway", gatewaySpec())}}
	v := &RulePackValidator{Cluster: mem}
	tier := with(rule("acme.tier", "GOLD"), "when", `acme.gateway.tenant_tier == "gold"`,
		"requires", map[string]any{"profiles": []any{"tool"}, "facts": []any{"acme.gateway.tenant_tier"}})
	pack := rulePack(t, ns, "tier", "gateway", 1, []map[string]any{tier})
	if _, err := v.ValidateCreate(ctx, pack.DeepCopy()); err != nil {
		t.Fatalf("under a Capability declaring the fact: %v", err)
	}
	spec := gatewaySpec()
	spec.HostFacts = spec.HostFacts[:1]
	mem.capabilities[0] = capabilityObject(ns, "gateway", spec)
	_, err := v.ValidateCreate(ctx, pack.DeepCopy())
	if err == nil || !strings.Contains(err.Error(), "OAR-FACT-3") {
		t.Errorf("under a Capability without the fact: %v", err)
	}
}

// A pack refused for more than keptDiagnosticsMax problems is not kept.
func TestLoadWithManyDiagnosticsIsNotKept(t *testing.T) {
	loads.forget()
	t.Cleanup(loads.forget)
	const ns = "many"
	v := &RulePackValidator{Cluster: &memoryCluster{capabilities: []*rulesv1alpha1.Capability{capabilityObject(ns, "gateway", gatewaySpec())}}}
	rules := make([]map[string]any, keptDiagnosticsMax+1)
	for i := range rules {
		rules[i] = with(rule("acme.many", fmt.Sprintf("R%d", i)), "when", "pth == 1")
	}
	if _, err := v.ValidateCreate(context.Background(), rulePack(t, ns, "many", "gateway", 1, rules)); err == nil {
		t.Fatal("admitted")
	}
	if n := len(loads.current); n != 0 {
		t.Errorf("%d loads kept, want none", n)
	}
	rules = rules[:keptDiagnosticsMax]
	if _, err := v.ValidateCreate(context.Background(), rulePack(t, ns, "many", "gateway", 1, rules)); err == nil {
		t.Fatal("admitted")
	}
	if n := len(loads.current); n != 1 {
		t.Errorf("%d loads kept, want 1", n)
	}
}

// A kept condition's source is a copy: the source handed over is cut from its rule's
// JSON (engine.SharedJSON), which the kept condition must not keep in memory.
func TestKeptConditionKeepsNotItsRule(t *testing.T) {
	conditions.forget()
	t.Cleanup(conditions.forget)
	doc := `{"when":"fire_count < 5"}`
	src := doc[9 : len(doc)-2]
	store := conditionStore{}
	store.KeepChecked(src, nil)
	if _, ok := store.Checked("fire_count < 5"); !ok {
		t.Fatal("the condition was not kept")
	}
	for key := range conditions.current {
		if unsafe.StringData(key.src) == unsafe.StringData(src) {
			t.Error("the kept source shares its rule's JSON")
		}
	}
}

// Kept conditions that reference the same symbols in the same order hold one list of
// them; others hold lists of their own, and each finds its own.
func TestKeptConditionsShareTheirReferences(t *testing.T) {
	conditions.forget()
	t.Cleanup(conditions.forget)
	a, b := types.Symbol{Name: "tool", Type: types.String, ID: 1}, types.Symbol{Name: "fire_count", Type: types.Int, ID: 2}
	store := conditionStore{capability: [sha256.Size]byte{1}}
	other := conditionStore{capability: [sha256.Size]byte{2}}
	store.KeepChecked(`tool == "a" && fire_count < 1`, []types.Symbol{a, b})
	store.KeepChecked(`tool == "b" && fire_count < 2`, []types.Symbol{a, b})
	store.KeepChecked(`fire_count < 3 && tool == "c"`, []types.Symbol{b, a})
	other.KeepChecked(`tool == "d" && fire_count < 4`, []types.Symbol{a, b})
	refs := func(s conditionStore, src string) []types.Symbol {
		t.Helper()
		r, ok := s.Checked(src)
		if !ok {
			t.Fatalf("%s was not kept", src)
		}
		return r
	}
	first, second := refs(store, `tool == "a" && fire_count < 1`), refs(store, `tool == "b" && fire_count < 2`)
	reversed, elsewhere := refs(store, `fire_count < 3 && tool == "c"`), refs(other, `tool == "d" && fire_count < 4`)
	if &first[0] != &second[0] {
		t.Error("two conditions referencing the same symbols hold two lists")
	}
	if !slices.Equal(reversed, []types.Symbol{b, a}) || &reversed[0] == &first[0] {
		t.Errorf("the condition referencing them in another order holds %v", reversed)
	}
	if !slices.Equal(elsewhere, []types.Symbol{a, b}) || &elsewhere[0] == &first[0] {
		t.Errorf("the condition under another Capability holds %v, shared: %v", elsewhere, &elsewhere[0] == &first[0])
	}
}
