package bundle

import (
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
