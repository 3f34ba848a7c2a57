package bundle

import (
	"fmt"
	"slices"
	"testing"
)

// BenchmarkAssemble200Packs assembles 200 packs of 10 realistic rules with nothing
// published yet. Goal: well under 2 s on a 2-core machine.
func BenchmarkAssemble200Packs(b *testing.B) {
	in := Input{Capability: capability(b), Packs: benchPacks(b, 200, 10)}
	b.ReportAllocs()
	for b.Loop() {
		res, err := Assemble(in)
		if err != nil {
			b.Fatal(err)
		}
		if len(res.Bundle.Packs) != 200 {
			b.Fatalf("published %d packs", len(res.Bundle.Packs))
		}
	}
}

// BenchmarkAssembleOneUpdate assembles the same 200 packs, all published, with one of
// them at a new generation. Goal: well under 200 ms.
func BenchmarkAssembleOneUpdate(b *testing.B) {
	in := Input{Capability: capability(b), Packs: benchPacks(b, 200, 10)}
	res, err := Assemble(in)
	if err != nil {
		b.Fatal(err)
	}
	in.Current = res.Bundle
	in.Packs[57].Generation = 2
	in.Packs[57].Rules = in.Packs[57].Rules[:9]
	b.ReportAllocs()
	for b.Loop() {
		res, err := Assemble(in)
		if err != nil {
			b.Fatal(err)
		}
		if !res.Changed || !res.Packs["pack-057"].Published {
			b.Fatalf("update not published: %+v", res.Packs["pack-057"])
		}
	}
}

// BenchmarkAssembleOneConflict is the slow path: the same 200 packs published, one of
// them edited to duplicate another pack's rule, so it keeps its last published
// generation. It costs a few loads of the whole set rather than one per pack.
func BenchmarkAssembleOneConflict(b *testing.B) {
	in := Input{Capability: capability(b), Packs: benchPacks(b, 200, 10)}
	res, err := Assemble(in)
	if err != nil {
		b.Fatal(err)
	}
	in.Current = res.Bundle
	in.Packs[100].Generation = 2
	in.Packs[100].Rules = append(slices.Clone(in.Packs[100].Rules), in.Packs[3].Rules[0])
	b.ReportAllocs()
	for b.Loop() {
		res, err := Assemble(in)
		if err != nil {
			b.Fatal(err)
		}
		if got := res.Packs["pack-100"]; got.Reason != ReasonConflict || got.PublishedGeneration != 1 || res.Changed {
			b.Fatalf("conflict not held back: %+v", got)
		}
	}
}

// BenchmarkAssembleRefusalChain assembles 160 new packs in a chain: each one's rule
// overrides the next pack's, and the last one's overrides a rule no pack defines. No
// pack loads, and each is refused only once the one after it is.
func BenchmarkAssembleRefusalChain(b *testing.B) {
	in := Input{Capability: capability(b), Packs: refusalChain(b, 160)}
	b.ReportAllocs()
	for b.Loop() {
		res, err := Assemble(in)
		if err != nil {
			b.Fatal(err)
		}
		if len(res.Bundle.Packs) != 0 {
			b.Fatalf("published %d packs", len(res.Bundle.Packs))
		}
	}
}

// BenchmarkAssembleGonePackConfigs publishes pack gone and 320 configurations, each
// enforcing one of its rules; then gone is deleted and 320 one-rule newcomers arrive.
// Every configuration is left out, and no newcomer is why: none defines a rule a
// configuration names.
func BenchmarkAssembleGonePackConfigs(b *testing.B) {
	const n = 320
	in, newcomers := gonePackConfigs(b, n)
	in.Packs = append(in.Packs[:0], newcomers...)
	b.ReportAllocs()
	for b.Loop() {
		res, err := Assemble(in)
		if err != nil {
			b.Fatal(err)
		}
		if len(res.Bundle.Packs) != n || len(res.Bundle.Configs) != 0 {
			b.Fatalf("published %d packs, %d configurations", len(res.Bundle.Packs), len(res.Bundle.Configs))
		}
	}
}

// BenchmarkAssembleAmbiguousConfigs publishes pack base, rules X0…X319, and 320
// configurations, configuration k naming Xk by its bare id; then 320 newcomers arrive,
// newcomer k defining an Xk of its own, which makes configuration k's name ambiguous.
// Each newcomer is refused for the configuration it would leave out.
func BenchmarkAssembleAmbiguousConfigs(b *testing.B) {
	const n = 320
	in, newcomers := ambiguousConfigs(b, n)
	in.Packs = append(in.Packs, newcomers...)
	b.ReportAllocs()
	for b.Loop() {
		res, err := Assemble(in)
		if err != nil {
			b.Fatal(err)
		}
		if len(res.Bundle.Packs) != 1 || len(res.Bundle.Configs) != n {
			b.Fatalf("published %d packs, %d configurations", len(res.Bundle.Packs), len(res.Bundle.Configs))
		}
	}
}

// BenchmarkAssembleManyConfigs publishes 2,000 configurations, each naming one rule of
// a pack, with one more naming a rule no pack defines: configurations are then taken
// one by one.
func BenchmarkAssembleManyConfigs(b *testing.B) {
	const n = 2000
	in := Input{Capability: capability(b), Packs: benchPacks(b, 200, 10)}
	for k := range n {
		in.Configs = append(in.Configs, ConfigInput{Name: fmt.Sprintf("cfg-%04d", k), Generation: 1, Order: int64(k), CreationTime: at(k),
			Document: config(b, fmt.Sprintf(`{"oar_config":"1.0","enforcement":{"bench.pack-%03d/RULE_%04d":"monitor"}}`, k%200, k%10))})
	}
	in.Configs = append(in.Configs, ConfigInput{Name: "stray", Generation: 1, Order: n, CreationTime: at(n),
		Document: config(b, `{"oar_config":"1.0","disable":["nope.sec/X"]}`)})
	b.ReportAllocs()
	for b.Loop() {
		res, err := Assemble(in)
		if err != nil {
			b.Fatal(err)
		}
		if len(res.Bundle.Configs) != n {
			b.Fatalf("published %d configurations", len(res.Bundle.Configs))
		}
	}
}

// BenchmarkAssembleSharedBareID publishes pack base, rule X, and 320 configurations
// each naming X by its bare id; then 320 newcomers arrive, each defining an X of its
// own. No one newcomer left out would make X name one rule again, so every
// configuration is left out, each having tried every newcomer.
func BenchmarkAssembleSharedBareID(b *testing.B) {
	const n = 320
	in := Input{Capability: capability(b), Packs: []PackInput{pack("base", 1, 0, rule(b, "base.sec", "X"))}}
	for k := range n {
		in.Configs = append(in.Configs, ConfigInput{Name: fmt.Sprintf("cfg-%03d", k), Generation: 1, Order: int64(k), CreationTime: at(k),
			Document: config(b, `{"oar_config":"1.0","enforcement":{"X":"enforce"}}`)})
	}
	in.Current = mustAssemble(b, in).Bundle
	for k := range n {
		in.Packs = append(in.Packs, pack(fmt.Sprintf("new-%03d", k), 1, n+k, rule(b, fmt.Sprintf("q%d.sec", k), "X")))
	}
	b.ReportAllocs()
	for b.Loop() {
		res, err := Assemble(in)
		if err != nil {
			b.Fatal(err)
		}
		if len(res.Bundle.Packs) != n+1 || len(res.Bundle.Configs) != 0 {
			b.Fatalf("published %d packs, %d configurations", len(res.Bundle.Packs), len(res.Bundle.Configs))
		}
	}
}
