package expr

import "testing"

// A condition's nodes come from a few slabs: parsing one of twenty nodes allocates
// far fewer than twenty times.
func TestParseAllocatesFewTimes(t *testing.T) {
	const src = `tool_arg_int("size") > 7 && (starts_with(tool_arg_string("path"), "/etc") || "admin" in principal_roles) && fire_count < 5`
	tr, errs := parse(src)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	allocs := testing.AllocsPerRun(100, func() { parse(src) })
	if allocs > 12 {
		t.Errorf("parsing %d nodes allocates %v times, want at most 12", tr.nodes, allocs)
	}
}
