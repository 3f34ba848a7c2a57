package admission

import (
	"slices"
	"testing"
)

// references lists a rule's overrides and the rules its condition counts the firings
// of; a rule with neither costs it no allocation, as most rules of a pack have neither.
func TestReferences(t *testing.T) {
	c, _, _, why := capabilityFor("gateway", capabilityObject("refs", "gateway", gatewaySpec()))
	if c == nil {
		t.Fatal(why)
	}
	plain := rule("acme.refs", "PLAIN")
	related := with(rule("acme.refs", "RELATED"), "overrides", []any{"OTHER"}, "when", `fire_count_of("acme.more/COUNTED") > 1`)
	want := []reference{{"overrides[0]", "OAR-EVAL-13", "acme.refs/OTHER"}, {"when", "OAR-FIRE-11", "acme.more/COUNTED"}}
	if got := references(related, c); !slices.Equal(got, want) {
		t.Errorf("references = %v, want %v", got, want)
	}
	if got := references(plain, c); len(got) > 0 {
		t.Errorf("references of a plain rule = %v", got)
	}
	if n := testing.AllocsPerRun(100, func() { references(plain, c) }); n > 0 {
		t.Errorf("references of a plain rule allocates %v times", n)
	}
}
