package expr

import (
	"reflect"
	"testing"
)

// A condition's nodes and its calls' operands come from a few chunks: parsing one of
// seventeen nodes allocates far fewer than seventeen times.
func TestParseAllocatesFewTimes(t *testing.T) {
	const src = `tool_arg_int("size") > 7 && (starts_with(tool_arg_string("path"), "/etc") || "admin" in principal_roles) && fire_count < 5`
	tr, errs := parse(src, MaxNodesCeiling)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	allocs := testing.AllocsPerRun(100, func() { parse(src, MaxNodesCeiling) })
	if allocs > 9 {
		t.Errorf("parsing %d nodes allocates %v times, want at most 9", tr.nodes, allocs)
	}
}

// The symbols a condition references are gathered in one slice, made with room for
// every identifier and call of the condition; a condition that references none has
// none.
func TestCheckGathersReferencesOnce(t *testing.T) {
	opts := Options{Symbols: testSymbols, MaxNodes: 256}
	const src = `flag && n > small && big < n`
	refs, errs := Check(src, opts)
	if len(errs) > 0 || len(refs) != 4 {
		t.Fatalf("refs %v, errs %v", refs, errs)
	}
	parsing := testing.AllocsPerRun(100, func() { parse(src, MaxNodesCeiling) })
	if checking := testing.AllocsPerRun(100, func() { Check(src, opts) }); checking > parsing+1 {
		t.Errorf("checking allocates %v times, parsing %v: want one more at most, the references", checking, parsing)
	}
	if refs, errs := Check(`1 + 2 > 2`, opts); len(errs) > 0 || refs != nil {
		t.Errorf("refs %#v, errs %v; want none", refs, errs)
	}
}

// A parser used again parses every condition as a new one does, whatever it parsed
// before: a condition that stopped it halfway, a longer or a shorter one.
func TestParserUsedAgainParsesAsNew(t *testing.T) {
	srcs := []string{
		`tool_arg_int("size") > 7 && (starts_with(tool_arg_string("path"), "/etc") || "admin" in principal_roles) && fire_count < 5`,
		`size([a, b, c]) > 2 && f(g(h(x, y), [z]), "w"`,
		`flag`,
		`x ? [a, b] : c[1] == -9223372036854775808`,
		`a == == b`,
		`contains(list, "v") && !flag || n % 3 == 1`,
	}
	var p parser
	for range 2 {
		for _, src := range srcs {
			want, wantErrs := parse(src, MaxNodesCeiling)
			got, gotErrs := p.parse(src, MaxNodesCeiling)
			if !reflect.DeepEqual(got, want) || !reflect.DeepEqual(gotErrs, wantErrs) {
				t.Errorf("%q: parsed again %+v, %v; new %+v, %v", src, got, gotErrs, want, wantErrs)
			}
		}
	}
}
