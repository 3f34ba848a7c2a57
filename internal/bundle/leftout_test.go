package bundle

import (
	"slices"
	"testing"
)

// TestLeftOutStaysDroppedUntilPublished: deleting a pack is allowed ([OAR-OPS-7]), and a
// published configuration naming its rule is left out ([OAR-CFG-4]). The next assembly
// runs against the bundle published without it, where it is no incumbent; carried in
// Input.LeftOut it stays in Dropped, whatever else happens, until a generation of it is
// published again: it is changed so it applies, or what it names is restored. One no
// longer given (deleted) is not named.
func TestLeftOutStaysDroppedUntilPublished(t *testing.T) {
	ops := Ref{Name: "ops", Config: true}
	p := pack("p", 1, 1, rule(t, "p.sec", "R", `"effect":"block"`, `"enforcement":"monitor"`))
	gone := pack("gone", 1, 2, rule(t, "gone.sec", "G"))
	cfg := ConfigInput{Name: "ops", Generation: 1, Order: 1,
		Document: config(t, `{"oar_config":"1.0","enforcement":{"p.sec/R":"enforce","gone.sec/G":"enforce"}}`)}
	before := mustAssemble(t, Input{Capability: capability(t), Packs: []PackInput{p, gone}, Configs: []ConfigInput{cfg}})

	first := mustAssemble(t, Input{Capability: capability(t), Packs: []PackInput{p}, Configs: []ConfigInput{cfg}, Current: before.Bundle})
	if !slices.Equal(first.Dropped, []Ref{ops}) {
		t.Fatalf("deleting the pack: Dropped %v, want %v", first.Dropped, []Ref{ops})
	}
	after := first.Bundle
	newcomer := pack("third", 1, 3, rule(t, "third.sec", "T"))

	for _, tc := range []struct {
		name string
		in   Input
		want []Ref
		// kept: the capability document is invalid, so Current is kept as is.
		kept bool
	}{{
		name: "nothing changed",
		in:   Input{Capability: capability(t), Packs: []PackInput{p}, Configs: []ConfigInput{cfg}, Current: after, LeftOut: first.Dropped},
		want: []Ref{ops},
	}, {
		name: "an unrelated pack added",
		in:   Input{Capability: capability(t), Packs: []PackInput{p, newcomer}, Configs: []ConfigInput{cfg}, Current: after, LeftOut: first.Dropped},
		want: []Ref{ops},
	}, {
		name: "the configuration changed and still not applying",
		in: Input{Capability: capability(t), Packs: []PackInput{p}, Current: after, LeftOut: first.Dropped, Configs: []ConfigInput{{Name: "ops", Generation: 2, Order: 1,
			Document: config(t, `{"oar_config":"1.0","enforcement":{"p.sec/R":"enforce","other.sec/O":"enforce"}}`)}}},
		want: []Ref{ops},
	}, {
		name: "the capability document invalid, the bundle kept",
		in: Input{Capability: map[string]any{"oar_capability_version": "1.0"}, Packs: []PackInput{p}, Configs: []ConfigInput{cfg},
			Current: after, LeftOut: first.Dropped},
		want: []Ref{ops},
		kept: true,
	}, {
		name: "the configuration changed so it applies",
		in: Input{Capability: capability(t), Packs: []PackInput{p}, Current: after, LeftOut: first.Dropped, Configs: []ConfigInput{{Name: "ops", Generation: 2, Order: 1,
			Document: config(t, `{"oar_config":"1.0","enforcement":{"p.sec/R":"enforce"}}`)}}},
	}, {
		name: "the pack it names restored",
		in:   Input{Capability: capability(t), Packs: []PackInput{p, gone}, Configs: []ConfigInput{cfg}, Current: after, LeftOut: first.Dropped},
	}, {
		name: "the configuration deleted",
		in:   Input{Capability: capability(t), Packs: []PackInput{p}, Current: after, LeftOut: first.Dropped},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			res := mustAssemble(t, tc.in)
			if kept := res.Bundle == after && len(res.CapabilityErrors) > 0; kept != tc.kept {
				t.Fatalf("Current kept for an invalid capability: %v, want %v (capability errors %v)", kept, tc.kept, res.CapabilityErrors)
			}
			if !slices.Equal(res.Dropped, tc.want) {
				t.Errorf("Dropped %v, want %v", res.Dropped, tc.want)
			}
			if o, ok := res.Configs["ops"]; ok && (o.PublishedGeneration > 0) == slices.Contains(res.Dropped, ops) {
				t.Errorf("ops outcome %+v disagrees with Dropped %v", o, res.Dropped)
			}
		})
	}
}

// TestLeftOutWhileANarrowingIsHeld: a capability narrowed while a configuration is left
// out is held back (CapabilityNarrowed), and the configuration stays in Dropped, so it
// is still named once the narrowing is resolved.
func TestLeftOutWhileANarrowingIsHeld(t *testing.T) {
	ops := Ref{Name: "ops", Config: true}
	tools := pack("tools", 1, 0, toolRule(t, "acme", "SHELL"))
	gone := pack("gone", 1, 2, rule(t, "gone.sec", "G"))
	cfg := ConfigInput{Name: "ops", Generation: 1, Order: 1, Document: config(t, `{"oar_config":"1.0","enforcement":{"gone.sec/G":"enforce"}}`)}
	before := mustAssemble(t, Input{Capability: capability(t), Packs: []PackInput{tools, gone}, Configs: []ConfigInput{cfg}})
	first := mustAssemble(t, Input{Capability: capability(t), Packs: []PackInput{tools}, Configs: []ConfigInput{cfg}, Current: before.Bundle})
	if !slices.Equal(first.Dropped, []Ref{ops}) {
		t.Fatalf("Dropped %v, want %v", first.Dropped, []Ref{ops})
	}
	res := mustAssemble(t, Input{Capability: narrowCapability(t), Packs: []PackInput{tools}, Configs: []ConfigInput{cfg}, Current: first.Bundle, LeftOut: first.Dropped})
	if res.Bundle != first.Bundle || len(res.Held) == 0 {
		t.Fatalf("the narrowing was not held: held %v", res.Held)
	}
	if !slices.Equal(res.Dropped, []Ref{ops}) {
		t.Errorf("Dropped %v, want %v", res.Dropped, []Ref{ops})
	}
}

// TestDroppedListsPacksFirstEachByName: the order Dropped promises, whatever order
// Input.LeftOut gives.
func TestDroppedListsPacksFirstEachByName(t *testing.T) {
	res := &Result{Packs: map[string]Outcome{"b": {}, "a": {}}, Configs: map[string]Outcome{"z": {}, "c": {PublishedGeneration: 1}}}
	in := Input{LeftOut: []Ref{{Name: "z", Config: true}, {Name: "b"}, {Name: "c", Config: true}, {Name: "a"}, {Name: "absent"}}}
	want := []Ref{{Name: "a"}, {Name: "b"}, {Name: "z", Config: true}}
	if got := dropped(in, res); !slices.Equal(got, want) {
		t.Errorf("dropped %v, want %v", got, want)
	}
}
