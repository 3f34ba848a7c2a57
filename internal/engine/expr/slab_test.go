package expr

import "testing"

// A condition's nodes and its calls' operands come from a few chunks: parsing one of
// seventeen nodes allocates far fewer than seventeen times.
func TestParseAllocatesFewTimes(t *testing.T) {
	const src = `tool_arg_int("size") > 7 && (starts_with(tool_arg_string("path"), "/etc") || "admin" in principal_roles) && fire_count < 5`
	tr, errs := parse(src)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	allocs := testing.AllocsPerRun(100, func() { parse(src) })
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
	parsing := testing.AllocsPerRun(100, func() { parse(src) })
	if checking := testing.AllocsPerRun(100, func() { Check(src, opts) }); checking > parsing+1 {
		t.Errorf("checking allocates %v times, parsing %v: want one more at most, the references", checking, parsing)
	}
	if refs, errs := Check(`1 + 2 > 2`, opts); len(errs) > 0 || refs != nil {
		t.Errorf("refs %#v, errs %v; want none", refs, errs)
	}
}
