package bundle

import (
	"slices"
	"strings"
	"testing"
)

// TestConflictDiagnosticsNameThePacksOwnField: a conflict with another pack's rule is
// reported at this pack's own field (its rules[i].id), names the other pack and the
// rule, and leaks no index into the assembled set — whichever of the two the engine
// reported the duplicate on ([OAR-DOC-9]).
func TestConflictDiagnosticsNameThePacksOwnField(t *testing.T) {
	// The engine reports a duplicate on the later member: for "first", the later one is
	// the unchanged incumbent "second"; for "newcomer", it is its own rule.
	in := Input{Capability: capability(t), Packs: []PackInput{pack("first", 1, 1, rule(t, "a.sec", "X")), pack("second", 1, 2, rule(t, "b.sec", "Y"))}}
	in.Current = mustAssemble(t, in).Bundle
	in.Packs[0] = pack("first", 2, 1, rule(t, "a.sec", "X"), rule(t, "a.sec", "Z"), rule(t, "b.sec", "Y"))
	in.Packs = append(in.Packs, pack("newcomer", 1, 3, rule(t, "c.sec", "W"), rule(t, "b.sec", "Y")))
	res := mustAssemble(t, in)
	for _, c := range []struct {
		pack  string
		index int
	}{{"first", 2}, {"newcomer", 1}} {
		o := res.Packs[c.pack]
		if o.Reason != ReasonConflict || o.ConflictsWith != "second" {
			t.Errorf("%s: %+v, want a Conflict with second", c.pack, o)
			continue
		}
		if len(o.Errors) == 0 {
			t.Errorf("%s: no diagnostics", c.pack)
		}
		for _, e := range o.Errors {
			if e.Index != c.index || e.Field != "id" || e.Clause != "OAR-DOC-9" || e.Rule != "b.sec/Y" {
				t.Errorf("%s: diagnostic %+v, want OAR-DOC-9 at its rules[%d].id", c.pack, *e, c.index)
			}
			if !strings.Contains(e.Message, `RulePack "second"`) || strings.Contains(e.Message, "member") {
				t.Errorf("%s: message %q should name RulePack \"second\" and no set member", c.pack, e.Message)
			}
		}
		if strings.Contains(o.Message, "member") {
			t.Errorf("%s: message %q names a set member", c.pack, o.Message)
		}
	}
}

// TestLeftOutPackReportsTheFinalReason: a pack left out in an abandoned pass (it named
// a rule of a pack that pass left out) reports why it is left out of the bundle that is
// published — here, a Conflict with the pack it names, published in the end — not the
// abandoned pass's LoadFailed claiming that pack is not published.
func TestLeftOutPackReportsTheFinalReason(t *testing.T) {
	res := mustAssemble(t, Input{Capability: capability(t), Packs: []PackInput{
		pack("suppressor", 1, 1, rule(t, "s.sec", "QUIET", `"overrides":["n.sec/MUST"]`)),
		pack("mandates", 1, 2, rule(t, "n.sec", "MUST", `"mandatory":true`)),
	}})
	if got := published(res.Bundle); !slices.Equal(got, []string{"mandates@1"}) {
		t.Fatalf("published %v, want mandates@1", got)
	}
	o := res.Packs["suppressor"]
	if o.Reason != ReasonConflict || o.ConflictsWith != "mandates" || strings.Contains(o.Message, "not published") {
		t.Errorf("suppressor: reason %s with %q: %s; want a Conflict with mandates", o.Reason, o.ConflictsWith, o.Message)
	}
}
