package bundle

import (
	"encoding/base64"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/oar-operator/oar-operator/internal/engine"
	"github.com/oar-operator/oar-operator/internal/engine/diag"
)

// assembled publishes in and returns the result as Current for the next assembly.
func assembled(t *testing.T, in Input) *Bundle {
	t.Helper()
	return mustAssemble(t, in).Bundle
}

func wantPublished(t *testing.T, res *Result, want ...string) {
	t.Helper()
	if got := published(res.Bundle); !slices.Equal(got, want) {
		t.Errorf("published packs %v, want %v", got, want)
	}
}

func wantOutcome(t *testing.T, got Outcome, published bool, gen int64, reason string) {
	t.Helper()
	if got.Published != published || got.PublishedGeneration != gen || got.Reason != reason {
		t.Errorf("outcome {Published:%v PublishedGeneration:%d Reason:%q}, want {%v %d %q}; message: %s",
			got.Published, got.PublishedGeneration, got.Reason, published, gen, reason, got.Message)
	}
	if reason != "" && got.Message == "" {
		t.Errorf("outcome %s carries no message", reason)
	}
}

// wantLoads checks that the result's bundle round-trips through its ConfigMap encoding
// with its digest and loads.
func wantLoads(t *testing.T, res *Result) {
	t.Helper()
	b, err := Decode(res.Encoded.Data, res.Encoded.BinaryData)
	if err != nil {
		t.Fatalf("Decode of the result: %v", err)
	}
	if b.Digest != res.Bundle.Digest || res.Encoded.Digest != b.Digest {
		t.Fatalf("digest %s after decoding, %s in the result, %s in the encoding", b.Digest, res.Bundle.Digest, res.Encoded.Digest)
	}
	if _, err := Load(b); err != nil {
		t.Fatalf("the decoded bundle does not load: %v", err)
	}
}

// decision evaluates a tool call at the test capability's pre-invoke anchor against the
// result's bundle.
func decision(t *testing.T, res *Result) string {
	t.Helper()
	occ := &engine.Occurrence{Anchor: "gw.pre_call", SessionID: "s",
		Facts: map[string]any{"tool": "shell"}, ToolCall: &engine.ToolCall{Name: "shell", Arguments: map[string]any{}}}
	return res.Loaded.Program.Evaluate(engine.NewMemoryRuntime(), occ).Decision
}

func TestAssemble(t *testing.T) {
	tests := []struct {
		name  string
		input func(t *testing.T) Input
		check func(t *testing.T, res *Result)
	}{{
		name: "valid capability, two packs and a configuration load and the digest verifies",
		input: func(t *testing.T) Input {
			return Input{
				Capability: capability(t),
				Packs: []PackInput{
					pack("alpha", 3, 1, rule(t, "alpha.sec", "READ"), rule(t, "alpha.sec", "WRITE")),
					pack("beta", 1, 2, rule(t, "beta.sec", "EXEC", `"overrides":["alpha.sec/READ"]`)),
				},
				Configs: []ConfigInput{{Name: "ops", Generation: 2, Order: 10, CreationTime: at(3),
					Document: config(t, `{"oar_config":"1.0","enforcement":{"alpha.sec/WRITE":"monitor"}}`)}},
			}
		},
		check: func(t *testing.T, res *Result) {
			wantPublished(t, res, "alpha@3", "beta@1")
			wantOutcome(t, res.Packs["alpha"], true, 3, "")
			wantOutcome(t, res.Packs["beta"], true, 1, "")
			wantOutcome(t, res.Configs["ops"], true, 2, "")
			if !res.Changed || res.Encoded.Compressed || res.Encoded.Data[KeyPlain] == "" {
				t.Errorf("Changed %v, Compressed %v: want a new plain bundle", res.Changed, res.Encoded.Compressed)
			}
			if want := []string{"alpha", "alpha", "beta"}; !slices.Equal(res.Loaded.RuleOwner, want) {
				t.Errorf("RuleOwner %v, want %v", res.Loaded.RuleOwner, want)
			}
			wantLoads(t, res)
		},
	}, {
		name: "a capability with no packs still yields a bundle",
		input: func(t *testing.T) Input {
			return Input{Capability: capability(t)}
		},
		check: func(t *testing.T, res *Result) {
			if res.Bundle == nil || res.Bundle.Packs == nil || len(res.Bundle.Packs) != 0 || !res.Changed {
				t.Fatalf("want a capability-only bundle, got %+v", res.Bundle)
			}
			wantLoads(t, res)
		},
	}, {
		name: "an invalid rule is LoadFailed with a diagnostic carrying clause, field and rule index",
		input: func(t *testing.T) Input {
			return Input{Capability: capability(t), Packs: []PackInput{
				pack("good", 1, 1, rule(t, "good.sec", "OK")),
				pack("bad", 4, 2, rule(t, "bad.sec", "FINE"), rule(t, "bad.sec", "BROKEN", `"when":"no_such_fact > 1"`)),
			}}
		},
		check: func(t *testing.T, res *Result) {
			wantPublished(t, res, "good@1")
			got := res.Packs["bad"]
			wantOutcome(t, got, false, 0, ReasonLoadFailed)
			if len(got.Errors) != 1 {
				t.Fatalf("errors %v, want one", got.Errors)
			}
			e := got.Errors[0]
			if e.Clause != "OAR-FACT-3" || e.Field != "when" || e.Index != 1 || e.Rule != "bad.sec/BROKEN" {
				t.Errorf("diagnostic %+v, want OAR-FACT-3 on rules[1].when of bad.sec/BROKEN", *e)
			}
			if !strings.Contains(got.Message, "rules[1].when") || !strings.Contains(got.Message, "OAR-FACT-3") {
				t.Errorf("message %q does not name the field and the clause", got.Message)
			}
			wantLoads(t, res)
		},
	}, {
		name: "[OAR-DOC-9] a duplicate qualified id across packs makes the later pack a Conflict naming the earlier pack and the rule",
		input: func(t *testing.T) Input {
			return Input{Capability: capability(t), Packs: []PackInput{
				pack("later", 1, 2, rule(t, "later.sec", "OWN"), rule(t, "shared.sec", "DUP")),
				pack("earlier", 1, 1, rule(t, "shared.sec", "DUP")),
			}}
		},
		check: func(t *testing.T, res *Result) {
			wantPublished(t, res, "earlier@1")
			got := res.Packs["later"]
			wantOutcome(t, got, false, 0, ReasonConflict)
			if got.ConflictsWith != "earlier" || !strings.Contains(got.Message, `"earlier"`) || !strings.Contains(got.Message, "shared.sec/DUP") {
				t.Errorf("ConflictsWith %q, message %q: want the earlier pack and the rule named", got.ConflictsWith, got.Message)
			}
			if !hasDiag(got.Errors, "OAR-DOC-9", "id") || got.Errors[0].Index != 1 {
				t.Errorf("errors %v, want [OAR-DOC-9] on rules[1].id", got.Errors)
			}
			wantOutcome(t, res.Packs["earlier"], true, 1, "")
		},
	}, {
		name: "an incumbent's bad edit keeps its last published generation",
		input: func(t *testing.T) Input {
			in := Input{Capability: capability(t), Packs: []PackInput{pack("team", 1, 1, rule(t, "team.sec", "GUARD"))}}
			in.Current = assembled(t, in)
			in.Packs[0] = pack("team", 2, 1, rule(t, "team.sec", "GUARD", `"effect":"explode"`))
			return in
		},
		check: func(t *testing.T, res *Result) {
			wantPublished(t, res, "team@1")
			got := res.Packs["team"]
			wantOutcome(t, got, false, 1, ReasonLoadFailed)
			if !hasDiag(got.Errors, "OAR-DOC-11", "effect") || !strings.Contains(got.Message, "generation 1 stays published") {
				t.Errorf("errors %v, message %q", got.Errors, got.Message)
			}
			if res.Changed {
				t.Error("the bundle changed although only a refused edit came in")
			}
		},
	}, {
		// Found in review: the later incumbent serves its last published generation after
		// a bad edit; an earlier incumbent's edit taking one of its ids must not evict it.
		name: "an incumbent's edit never evicts another incumbent's last published generation",
		input: func(t *testing.T) Input {
			in := Input{Capability: capability(t), Packs: []PackInput{pack("first", 1, 1, rule(t, "a.sec", "X")), pack("second", 1, 2, rule(t, "b.sec", "Y"))}}
			in.Current = assembled(t, in)
			in.Packs[1] = pack("second", 2, 2, rule(t, "b.sec", "Y", `"effect":"explode"`))
			in.Current = mustAssemble(t, in).Bundle
			in.Packs[0] = pack("first", 2, 1, rule(t, "a.sec", "X"), rule(t, "b.sec", "Y"))
			return in
		},
		check: func(t *testing.T, res *Result) {
			wantPublished(t, res, "first@1", "second@1")
			wantOutcome(t, res.Packs["first"], false, 1, ReasonConflict)
			wantOutcome(t, res.Packs["second"], false, 1, ReasonLoadFailed)
		},
	}, {
		// The same move done right: the later incumbent's edit gives the id up.
		name: "a rule may move from one incumbent to another",
		input: func(t *testing.T) Input {
			in := Input{Capability: capability(t), Packs: []PackInput{pack("first", 1, 1, rule(t, "a.sec", "X")), pack("second", 1, 2, rule(t, "b.sec", "Y"), rule(t, "b.sec", "Z"))}}
			in.Current = assembled(t, in)
			in.Packs[0] = pack("first", 2, 1, rule(t, "a.sec", "X"), rule(t, "b.sec", "Y"))
			in.Packs[1] = pack("second", 2, 2, rule(t, "b.sec", "Z"))
			return in
		},
		check: func(t *testing.T, res *Result) {
			wantPublished(t, res, "first@2", "second@2")
		},
	}, {
		// Found in review: configurations were decided after every pack, so a newcomer
		// whose rule shares a bare id made a published configuration ambiguous
		// ([OAR-CFG-8]), the configuration was left out, and the rule it raised to
		// enforce dropped back to monitor.
		name: "a newcomer never leaves a published configuration out",
		input: func(t *testing.T) Input {
			in := Input{Capability: capability(t),
				Packs:   []PackInput{pack("p", 1, 1, rule(t, "a.sec", "X", `"enforcement":"monitor"`))},
				Configs: []ConfigInput{{Name: "ops", Generation: 1, Document: config(t, `{"oar_config":"1.0","enforcement":{"X":"enforce"}}`)}}}
			in.Current = assembled(t, in)
			in.Packs = append(in.Packs, pack("newcomer", 1, 2, rule(t, "b.vendor", "X")), pack("other", 1, 3, rule(t, "c.sec", "Z")))
			return in
		},
		check: func(t *testing.T, res *Result) {
			wantPublished(t, res, "p@1", "other@1")
			if got := publishedConfigs(res.Bundle); !slices.Equal(got, []string{"ops@1"}) {
				t.Errorf("configurations %v, want ops@1", got)
			}
			got := res.Packs["newcomer"]
			wantOutcome(t, got, false, 0, ReasonConflict)
			if got.ConflictsWith != "ops" || !strings.Contains(got.Message, `configuration "ops"`) || !strings.Contains(got.Message, "OAR-CFG-8") {
				t.Errorf("ConflictsWith %q, message %q; want configuration ops and OAR-CFG-8 named", got.ConflictsWith, got.Message)
			}
			wantOutcome(t, res.Configs["ops"], true, 1, "")
		},
	}, {
		// The same configuration created after the pack that makes it ambiguous is the
		// newcomer: it is left out (rule 3), the pack stays.
		name: "a new configuration that a published pack makes ambiguous is left out",
		input: func(t *testing.T) Input {
			in := Input{Capability: capability(t), Packs: []PackInput{pack("p", 1, 1, rule(t, "a.sec", "X")), pack("q", 1, 2, rule(t, "b.vendor", "X"))}}
			in.Current = assembled(t, in)
			in.Configs = []ConfigInput{{Name: "ops", Generation: 1, Document: config(t, `{"oar_config":"1.0","enforcement":{"X":"enforce"}}`)}}
			return in
		},
		check: func(t *testing.T, res *Result) {
			wantPublished(t, res, "p@1", "q@1")
			wantOutcome(t, res.Configs["ops"], false, 0, ReasonLoadFailed)
		},
	}, {
		name: "a newcomer never evicts an incumbent, even one created after it",
		input: func(t *testing.T) Input {
			in := Input{Capability: capability(t), Packs: []PackInput{pack("incumbent", 1, 5, rule(t, "shared.sec", "DUP"))}}
			in.Current = assembled(t, in)
			in.Packs = append(in.Packs, pack("newcomer", 1, 1, rule(t, "shared.sec", "DUP")))
			return in
		},
		check: func(t *testing.T, res *Result) {
			wantPublished(t, res, "incumbent@1")
			got := res.Packs["newcomer"]
			wantOutcome(t, got, false, 0, ReasonConflict)
			if got.ConflictsWith != "incumbent" {
				t.Errorf("ConflictsWith %q, want incumbent", got.ConflictsWith)
			}
		},
	}, {
		name: "an earlier incumbent's edit does not evict a later unchanged incumbent",
		input: func(t *testing.T) Input {
			in := Input{Capability: capability(t), Packs: []PackInput{
				pack("first", 1, 1, rule(t, "first.sec", "A")),
				pack("second", 1, 2, rule(t, "second.sec", "B")),
			}}
			in.Current = assembled(t, in)
			in.Packs[0] = pack("first", 2, 1, rule(t, "first.sec", "A"), rule(t, "second.sec", "B"))
			return in
		},
		check: func(t *testing.T, res *Result) {
			wantPublished(t, res, "first@1", "second@1")
			got := res.Packs["first"]
			wantOutcome(t, got, false, 1, ReasonConflict)
			if got.ConflictsWith != "second" {
				t.Errorf("ConflictsWith %q, want second", got.ConflictsWith)
			}
		},
	}, {
		name: "[OAR-EVAL-17] a pack suppressing another pack's mandatory rule conflicts with it",
		input: func(t *testing.T) Input {
			return Input{Capability: capability(t), Packs: []PackInput{
				pack("base", 1, 1, rule(t, "base.sec", "MUST", `"mandatory":true`)),
				pack("overlay", 1, 2, rule(t, "overlay.sec", "QUIET", `"overrides":["base.sec/MUST"]`)),
			}}
		},
		check: func(t *testing.T, res *Result) {
			wantPublished(t, res, "base@1")
			got := res.Packs["overlay"]
			wantOutcome(t, got, false, 0, ReasonConflict)
			if got.ConflictsWith != "base" || !hasDiag(got.Errors, "OAR-EVAL-17", "overrides[0]") {
				t.Errorf("ConflictsWith %q, errors %v", got.ConflictsWith, got.Errors)
			}
		},
	}, {
		name: "[OAR-EVAL-17] a bare override naming a mandatory rule of another pack in the same namespace conflicts with that pack",
		input: func(t *testing.T) Input {
			return Input{Capability: capability(t), Packs: []PackInput{
				pack("base", 1, 1, rule(t, "corp.sec", "MUST", `"mandatory":true`)),
				pack("overlay", 1, 2, rule(t, "corp.sec", "QUIET", `"overrides":["MUST"]`)),
			}}
		},
		check: func(t *testing.T, res *Result) {
			wantPublished(t, res, "base@1")
			if got := res.Packs["overlay"]; got.Reason != ReasonConflict || got.ConflictsWith != "base" {
				t.Errorf("overlay: %+v", got)
			}
		},
	}, {
		name: "[OAR-EVAL-16] an update closing an override cycle across packs keeps the last published generation",
		input: func(t *testing.T) Input {
			in := Input{Capability: capability(t), Packs: []PackInput{
				pack("upper", 1, 1, rule(t, "upper.sec", "X", `"overrides":["lower.sec/Y"]`)),
				pack("lower", 1, 2, rule(t, "lower.sec", "Y")),
			}}
			in.Current = assembled(t, in)
			in.Packs[1] = pack("lower", 2, 2, rule(t, "lower.sec", "Y", `"overrides":["upper.sec/X"]`))
			return in
		},
		check: func(t *testing.T, res *Result) {
			wantPublished(t, res, "upper@1", "lower@1")
			got := res.Packs["lower"]
			wantOutcome(t, got, false, 1, ReasonConflict)
			if got.ConflictsWith != "upper" || !hasDiag(got.Errors, "OAR-EVAL-16", "overrides") {
				t.Errorf("ConflictsWith %q, errors %v", got.ConflictsWith, got.Errors)
			}
		},
	}, {
		name: "a reference to a later pack's rule resolves, whatever the creation order",
		input: func(t *testing.T) Input {
			return Input{Capability: capability(t), Packs: []PackInput{
				pack("dependent", 1, 1, rule(t, "dep.sec", "USE", `"on_error":"prov.sec/FALLBACK"`)),
				pack("provider", 1, 2, rule(t, "prov.sec", "FALLBACK")),
				pack("clash", 1, 3, rule(t, "dep.sec", "USE")),
			}}
		},
		check: func(t *testing.T, res *Result) {
			wantPublished(t, res, "dependent@1", "provider@1")
			wantOutcome(t, res.Packs["clash"], false, 0, ReasonConflict)
			wantLoads(t, res)
		},
	}, {
		name: "a pack naming a rule of a pack left out is left out too",
		input: func(t *testing.T) Input {
			in := Input{Capability: capability(t), Packs: []PackInput{pack("incumbent", 1, 9, rule(t, "shared.sec", "DUP"))}}
			in.Current = assembled(t, in)
			in.Packs = append(in.Packs,
				pack("dependent", 1, 1, rule(t, "dep.sec", "USE", `"overrides":["prov.sec/P"]`)),
				pack("provider", 1, 2, rule(t, "prov.sec", "P"), rule(t, "shared.sec", "DUP")))
			return in
		},
		check: func(t *testing.T, res *Result) {
			wantPublished(t, res, "incumbent@1")
			wantOutcome(t, res.Packs["provider"], false, 0, ReasonConflict)
			got := res.Packs["dependent"]
			wantOutcome(t, got, false, 0, ReasonLoadFailed)
			if !hasDiag(got.Errors, "OAR-EVAL-13", "overrides[0]") || !strings.Contains(got.Message, `"provider"`) {
				t.Errorf("errors %v, message %q: want the unresolved override and the pack holding it", got.Errors, got.Message)
			}
		},
	}, {
		name: "[OAR-CFG-4] a configuration naming an absent rule is left out",
		input: func(t *testing.T) Input {
			return Input{Capability: capability(t),
				Packs: []PackInput{pack("p", 1, 1, rule(t, "p.sec", "R"))},
				Configs: []ConfigInput{
					{Name: "typo", Generation: 1, Order: 1, Document: config(t, `{"oar_config":"1.0","disable":["p.sec/NOPE"]}`)},
					{Name: "fine", Generation: 1, Order: 2, Document: config(t, `{"oar_config":"1.0","disable":["p.sec/R"]}`)},
				}}
		},
		check: func(t *testing.T, res *Result) {
			if got := publishedConfigs(res.Bundle); !slices.Equal(got, []string{"fine@1"}) {
				t.Errorf("published configurations %v", got)
			}
			got := res.Configs["typo"]
			wantOutcome(t, got, false, 0, ReasonLoadFailed)
			if !hasDiag(got.Errors, "OAR-CFG-4", "disable[0]") || got.Errors[0].Index != -1 {
				t.Errorf("errors %v, want [OAR-CFG-4] on disable[0]", got.Errors)
			}
			wantLoads(t, res)
		},
	}, {
		// Found in review: the configuration was left out and whatever else it said went
		// with it. A published configuration is an incumbent: the edit is held back.
		name: "[OAR-CFG-4] a pack update removing a rule a published configuration names is held back and the configuration stays",
		input: func(t *testing.T) Input {
			in := Input{Capability: capability(t),
				Packs: []PackInput{pack("p", 1, 1, rule(t, "p.sec", "KEEP"), rule(t, "p.sec", "GONE"))},
				Configs: []ConfigInput{{Name: "quiet", Generation: 1, Order: 1,
					Document: config(t, `{"oar_config":"1.0","enforcement":{"p.sec/GONE":"off"}}`)}}}
			in.Current = assembled(t, in)
			in.Packs[0] = pack("p", 2, 1, rule(t, "p.sec", "KEEP"))
			return in
		},
		check: func(t *testing.T, res *Result) {
			wantPublished(t, res, "p@1")
			got := res.Packs["p"]
			wantOutcome(t, got, false, 1, ReasonConflict)
			if got.ConflictsWith != "quiet" || !strings.Contains(got.Message, `configuration "quiet"`) || !strings.Contains(got.Message, "OAR-CFG-4") {
				t.Errorf("ConflictsWith %q, message %q; want configuration quiet and OAR-CFG-4 named", got.ConflictsWith, got.Message)
			}
			wantOutcome(t, res.Configs["quiet"], true, 1, "")
			if got := publishedConfigs(res.Bundle); !slices.Equal(got, []string{"quiet@1"}) {
				t.Errorf("configurations %v, want quiet@1", got)
			}
			if len(res.Dropped) != 0 {
				t.Errorf("Dropped %v, want none", res.Dropped)
			}
			wantLoads(t, res)
		},
	}, {
		// Found in review: the newcomer case above, done by an incumbent's edit. Vendor
		// pack q's update ships a rule with the bare id X, which makes ops' "X" ambiguous
		// ([OAR-CFG-8]); leaving ops out would drop a.sec/X from enforce back to its
		// declared monitor ([OAR-CFG-3]).
		name: "[OAR-CFG-3] [OAR-CFG-8] an incumbent's edit never leaves out a published configuration that raises enforcement",
		input: func(t *testing.T) Input {
			in := Input{Capability: capability(t),
				Packs: []PackInput{pack("p", 1, 1, rule(t, "a.sec", "X", `"effect":"block"`, `"enforcement":"monitor"`)),
					pack("q", 1, 2, rule(t, "b.vendor", "Y"))},
				Configs: []ConfigInput{{Name: "ops", Generation: 1, Document: config(t, `{"oar_config":"1.0","enforcement":{"X":"enforce"}}`)}}}
			in.Current = assembled(t, in)
			in.Packs[1] = pack("q", 2, 2, rule(t, "b.vendor", "Y"), rule(t, "b.vendor", "X"))
			return in
		},
		check: func(t *testing.T, res *Result) {
			wantPublished(t, res, "p@1", "q@1")
			got := res.Packs["q"]
			wantOutcome(t, got, false, 1, ReasonConflict)
			if got.ConflictsWith != "ops" || !strings.Contains(got.Message, `configuration "ops"`) || !strings.Contains(got.Message, "OAR-CFG-8") {
				t.Errorf("ConflictsWith %q, message %q; want configuration ops and OAR-CFG-8 named", got.ConflictsWith, got.Message)
			}
			wantOutcome(t, res.Configs["ops"], true, 1, "")
			if d := decision(t, res); d != "block" {
				t.Errorf("a.sec/X resolves to %q, want block: ops no longer raises it to enforce", d)
			}
			wantLoads(t, res)
		},
	}, {
		// How a rule a configuration names is removed: the configuration and the pack
		// change together (or the configuration first), and both are published.
		name: "a pack update and the configuration change that stops naming its removed rule are published together",
		input: func(t *testing.T) Input {
			in := Input{Capability: capability(t),
				Packs: []PackInput{pack("p", 1, 1, rule(t, "p.sec", "KEEP"), rule(t, "p.sec", "GONE"))},
				Configs: []ConfigInput{{Name: "quiet", Generation: 1, Order: 1,
					Document: config(t, `{"oar_config":"1.0","enforcement":{"p.sec/GONE":"off","p.sec/KEEP":"monitor"}}`)}}}
			in.Current = assembled(t, in)
			in.Packs[0] = pack("p", 2, 1, rule(t, "p.sec", "KEEP"))
			in.Configs[0].Generation = 2
			in.Configs[0].Document = config(t, `{"oar_config":"1.0","enforcement":{"p.sec/KEEP":"monitor"}}`)
			return in
		},
		check: func(t *testing.T, res *Result) {
			wantPublished(t, res, "p@2")
			wantOutcome(t, res.Packs["p"], true, 2, "")
			wantOutcome(t, res.Configs["quiet"], true, 2, "")
		},
	}, {
		// No pack change to hold back: deleting a pack is allowed ([OAR-OPS-7]), and a
		// published configuration naming its rule no longer applies ([OAR-CFG-4]). It
		// is left out, and the result says so.
		name: "a published configuration naming a rule of a deleted pack is left out and Dropped names it",
		input: func(t *testing.T) Input {
			in := Input{Capability: capability(t),
				Packs: []PackInput{pack("p", 1, 1, rule(t, "p.sec", "R")), pack("gone", 1, 2, rule(t, "gone.sec", "G"))},
				Configs: []ConfigInput{{Name: "ops", Generation: 1, Order: 1,
					Document: config(t, `{"oar_config":"1.0","enforcement":{"p.sec/R":"monitor","gone.sec/G":"enforce"}}`)}}}
			in.Current = assembled(t, in)
			in.Packs = in.Packs[:1]
			return in
		},
		check: func(t *testing.T, res *Result) {
			wantPublished(t, res, "p@1")
			got := res.Configs["ops"]
			wantOutcome(t, got, false, 0, ReasonLoadFailed)
			if !hasDiag(got.Errors, "OAR-CFG-4", "enforcement.gone.sec/G") {
				t.Errorf("errors %v", got.Errors)
			}
			if want := []Ref{{Name: "ops", Config: true}}; !slices.Equal(res.Dropped, want) {
				t.Errorf("Dropped %v, want %v", res.Dropped, want)
			}
		},
	}, {
		name: "a configuration's bad edit keeps its last published generation, and configurations apply by (order, name)",
		input: func(t *testing.T) Input {
			in := Input{Capability: capability(t),
				Packs: []PackInput{pack("p", 1, 1, rule(t, "p.sec", "R"), rule(t, "p.sec", "S"))},
				Configs: []ConfigInput{
					{Name: "b", Generation: 1, Order: 20, Document: config(t, `{"oar_config":"1.0","disable":["p.sec/R"]}`)},
					{Name: "a", Generation: 1, Order: 20, Document: config(t, `{"oar_config":"1.0","disable":["p.sec/S"]}`)},
					{Name: "z", Generation: 1, Order: 5, Document: config(t, `{"oar_config":"1.0"}`)},
				}}
			in.Current = assembled(t, in)
			in.Configs[0].Generation = 2
			in.Configs[0].Document = config(t, `{"oar_config":"1.0","disable":["p.sec/R"],"surprise":true}`)
			return in
		},
		check: func(t *testing.T, res *Result) {
			if got := publishedConfigs(res.Bundle); !slices.Equal(got, []string{"z@1", "a@1", "b@1"}) {
				t.Errorf("configurations %v, want z@1 a@1 b@1", got)
			}
			got := res.Configs["b"]
			wantOutcome(t, got, false, 1, ReasonLoadFailed)
			if !hasDiag(got.Errors, "OAR-CFG-1", "") {
				t.Errorf("errors %v", got.Errors)
			}
			if res.Changed {
				t.Error("the bundle changed although only a refused edit came in")
			}
		},
	}, {
		// The webhook may have been down: a spec the API server stored but the controller
		// cannot read must not take the last good generation with it.
		name: "an unreadable edit of a pack or configuration keeps its last published generation",
		input: func(t *testing.T) Input {
			in := Input{Capability: capability(t),
				Packs:   []PackInput{pack("p", 1, 1, rule(t, "p.sec", "R")), pack("q", 1, 2, rule(t, "q.sec", "S", `"overrides":["p.sec/R"]`))},
				Configs: []ConfigInput{{Name: "c", Generation: 1, Document: config(t, `{"oar_config":"1.0","disable":["p.sec/R"]}`)}}}
			in.Current = assembled(t, in)
			unreadable := diag.List{diag.New("OAR-DOC-1", "", "rule is not a JSON document")}
			in.Packs[0] = PackInput{Name: "p", Generation: 2, CreationTime: at(1), Rules: []any{nil}, Refused: unreadable}
			in.Configs[0] = ConfigInput{Name: "c", Generation: 2, Refused: diag.List{diag.New("OAR-CFG-1", "", "a configuration document must be a JSON object")}}
			in.Packs = append(in.Packs, PackInput{Name: "new", Generation: 1, CreationTime: at(3), Rules: []any{nil}, Refused: unreadable})
			return in
		},
		check: func(t *testing.T, res *Result) {
			if got := published(res.Bundle); !slices.Equal(got, []string{"p@1", "q@1"}) {
				t.Errorf("packs %v, want p@1 q@1", got)
			}
			if got := publishedConfigs(res.Bundle); !slices.Equal(got, []string{"c@1"}) {
				t.Errorf("configurations %v, want c@1", got)
			}
			wantOutcome(t, res.Packs["p"], false, 1, ReasonLoadFailed)
			wantOutcome(t, res.Packs["new"], false, 0, ReasonLoadFailed)
			wantOutcome(t, res.Configs["c"], false, 1, ReasonLoadFailed)
			if !hasDiag(res.Packs["p"].Errors, "OAR-DOC-1", "") || !hasDiag(res.Configs["c"].Errors, "OAR-CFG-1", "") {
				t.Errorf("errors %v, %v", res.Packs["p"].Errors, res.Configs["c"].Errors)
			}
			if res.Changed {
				t.Error("the bundle changed although only unreadable edits came in")
			}
		},
	}, {
		name: "a missing capability publishes nothing new and says CapabilityMissing",
		input: func(t *testing.T) Input {
			in := Input{Capability: capability(t), Packs: []PackInput{pack("p", 1, 1, rule(t, "p.sec", "R"))}}
			in.Current = assembled(t, in)
			in.Capability = nil
			in.Packs[0].Generation = 2
			in.Configs = []ConfigInput{{Name: "c", Generation: 1, Document: config(t, `{"oar_config":"1.0"}`)}}
			return in
		},
		check: func(t *testing.T, res *Result) {
			wantOutcome(t, res.Packs["p"], false, 1, ReasonCapabilityMissing)
			wantOutcome(t, res.Configs["c"], false, 0, ReasonCapabilityMissing)
			if res.Changed || res.Bundle == nil || res.Loaded != nil {
				t.Errorf("Changed %v, Bundle %v: want the current bundle kept", res.Changed, published(res.Bundle))
			}
		},
	}, {
		name: "a missing capability with nothing published yields no bundle",
		input: func(t *testing.T) Input {
			return Input{Packs: []PackInput{pack("p", 1, 1, rule(t, "p.sec", "R"))}}
		},
		check: func(t *testing.T, res *Result) {
			wantOutcome(t, res.Packs["p"], false, 0, ReasonCapabilityMissing)
			if res.Bundle != nil || res.Changed || res.Encoded.Digest != "" {
				t.Errorf("want no bundle, got %+v", res.Bundle)
			}
		},
	}, {
		name: "[OAR-FACT-24] an invalid capability keeps the current bundle and says CapabilityInvalid",
		input: func(t *testing.T) Input {
			in := Input{Capability: capability(t), Packs: []PackInput{pack("p", 1, 1, rule(t, "p.sec", "R"))}}
			in.Current = assembled(t, in)
			broken := capability(t)
			broken["activity_window"] = "eight"
			in.Capability = broken
			return in
		},
		check: func(t *testing.T, res *Result) {
			if len(res.CapabilityErrors) == 0 {
				t.Fatal("no capability errors")
			}
			wantOutcome(t, res.Packs["p"], false, 1, ReasonCapabilityInvalid)
			if res.Changed || res.Bundle == nil || res.Encoded.Digest != res.Bundle.Digest {
				t.Errorf("want the current bundle kept and encoded")
			}
		},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.check(t, mustAssemble(t, tt.input(t)))
		})
	}
}

// conflicted is a cluster state with conflicts, kept editions and cross-pack
// references, for the determinism and stability tests.
func conflicted(t *testing.T) Input {
	in := Input{Capability: capability(t), Packs: []PackInput{
		pack("a", 1, 1, rule(t, "a.sec", "A"), rule(t, "shared.sec", "ONE")),
		pack("b", 1, 2, rule(t, "b.sec", "B", `"overrides":["a.sec/A"]`)),
		pack("c", 1, 3, rule(t, "c.sec", "C")),
	}, Configs: []ConfigInput{
		{Name: "x", Generation: 1, Order: 1, Document: config(t, `{"oar_config":"1.0","enforcement":{"b.sec/B":"monitor"}}`)},
	}}
	in.Current = assembled(t, in)
	in.Packs[2] = pack("c", 2, 3, rule(t, "c.sec", "C"), rule(t, "shared.sec", "ONE"))
	in.Packs = append(in.Packs,
		pack("d", 1, 0, rule(t, "d.sec", "D", `"on_error":"e.sec/E"`)),
		pack("e", 1, 4, rule(t, "e.sec", "E")),
		pack("f", 1, 5, rule(t, "b.sec", "B")),
		pack("g", 1, 6, rule(t, "g.sec", "G", `"when":"nope"`)))
	in.Configs = append(in.Configs,
		ConfigInput{Name: "y", Generation: 1, Order: 1, Document: config(t, `{"oar_config":"1.0","disable":["d.sec/D"]}`)},
		ConfigInput{Name: "w", Generation: 1, Order: 0, Document: config(t, `{"oar_config":"1.0","disable":["g.sec/G"]}`)})
	return in
}

func TestAssembleIsDeterministicUnderShuffledInput(t *testing.T) {
	in := conflicted(t)
	want := mustAssemble(t, in)
	wantPublished(t, want, "d@1", "a@1", "b@1", "c@1", "e@1")
	r := rand.New(rand.NewPCG(1, 2))
	for range 20 {
		shuffled := in
		shuffled.Packs = slices.Clone(in.Packs)
		shuffled.Configs = slices.Clone(in.Configs)
		r.Shuffle(len(shuffled.Packs), func(i, j int) { shuffled.Packs[i], shuffled.Packs[j] = shuffled.Packs[j], shuffled.Packs[i] })
		r.Shuffle(len(shuffled.Configs), func(i, j int) {
			shuffled.Configs[i], shuffled.Configs[j] = shuffled.Configs[j], shuffled.Configs[i]
		})
		got := mustAssemble(t, shuffled)
		if got.Bundle.Digest != want.Bundle.Digest {
			t.Fatalf("digest %s for a shuffled input, want %s", got.Bundle.Digest, want.Bundle.Digest)
		}
		for name, o := range want.Packs {
			if g := got.Packs[name]; g.Reason != o.Reason || g.Message != o.Message || g.PublishedGeneration != o.PublishedGeneration {
				t.Fatalf("pack %s: %+v, want %+v", name, g, o)
			}
		}
	}
}

func TestAssembleUnchangedInputIsNotChanged(t *testing.T) {
	for name, in := range map[string]Input{
		"clean":      {Capability: capability(t), Packs: benchPacks(t, 3, 2)},
		"conflicted": conflicted(t),
	} {
		t.Run(name, func(t *testing.T) {
			first := mustAssemble(t, in)
			in.Current = first.Bundle
			again := mustAssemble(t, in)
			if again.Changed || again.Bundle.Digest != first.Bundle.Digest {
				t.Fatalf("re-assembling the published state changed the bundle: %v -> %v",
					published(first.Bundle), published(again.Bundle))
			}
			for name, o := range first.Packs {
				if g := again.Packs[name]; g.PublishedGeneration != o.PublishedGeneration {
					t.Errorf("pack %s serves generation %d, then %d", name, o.PublishedGeneration, g.PublishedGeneration)
				}
			}
		})
	}
}

func TestAssembleLargeBundleIsCompressedAndDecodes(t *testing.T) {
	res := mustAssemble(t, Input{Capability: capability(t), Packs: benchPacks(t, 220, 10)})
	plain, err := canonical(res.Bundle)
	if err != nil {
		t.Fatal(err)
	}
	if len(plain) <= 1<<20 {
		t.Fatalf("the bundle is %d bytes of JSON; the test wants more than 1 MiB", len(plain))
	}
	if !res.Encoded.Compressed || len(res.Encoded.BinaryData[KeyGzip]) != res.Encoded.Size || res.Encoded.Size > ConfigMapLimit {
		t.Fatalf("Compressed %v, Size %d: want a gzip payload within the limit", res.Encoded.Compressed, res.Encoded.Size)
	}
	wantLoads(t, res)
}

// bulky is a rule carrying n bytes of incompressible text in its references.
func bulky(t *testing.T, ns, id string, n int, seed uint64) any {
	r := rand.New(rand.NewPCG(seed, seed))
	raw := make([]byte, n*3/4)
	for i := range raw {
		raw[i] = byte(r.Uint32())
	}
	return rule(t, ns, id, `"references":{"blob":"`+base64.StdEncoding.EncodeToString(raw)+`"}`)
}

func TestAssemblePackTooLargeIsHeldBack(t *testing.T) {
	in := Input{Capability: capability(t), Packs: []PackInput{
		pack("small", 1, 1, rule(t, "small.sec", "S")),
		pack("medium", 1, 2, bulky(t, "medium.sec", "M", 400<<10, 1)),
	}}
	in.Current = assembled(t, in)
	in.Packs[1] = pack("medium", 2, 2, bulky(t, "medium.sec", "M", 1400<<10, 2))
	in.Packs = append(in.Packs,
		pack("huge", 1, 3, bulky(t, "huge.sec", "H", 1000<<10, 3)),
		pack("tiny", 1, 4, rule(t, "tiny.sec", "T")))
	res := mustAssemble(t, in)
	wantPublished(t, res, "small@1", "medium@1", "tiny@1")
	wantOutcome(t, res.Packs["medium"], false, 1, ReasonBundleTooLarge)
	wantOutcome(t, res.Packs["huge"], false, 0, ReasonBundleTooLarge)
	wantOutcome(t, res.Packs["tiny"], true, 1, "")
	if !strings.Contains(res.Packs["huge"].Message, "limit") {
		t.Errorf("message %q does not state the limit", res.Packs["huge"].Message)
	}
	wantLoads(t, res)
}

func TestEncodeRefusesTooLargeWithSizes(t *testing.T) {
	b := &Bundle{Capability: capability(t), Packs: []Pack{{Name: "p", Generation: 1, Rules: []any{bulky(t, "p.sec", "P", 1500<<10, 4)}}}}
	_, err := Encode(b)
	var tl *TooLargeError
	if !errors.Is(err, ErrTooLarge) || !errors.As(err, &tl) || tl.Encoded <= ConfigMapLimit || tl.Plain < 1500<<10 {
		t.Fatalf("Encode: %v, want ErrTooLarge with the sizes", err)
	}
	if msg := err.Error(); !strings.Contains(msg, fmt.Sprint(tl.Encoded)) || !strings.Contains(msg, fmt.Sprint(ConfigMapLimit)) {
		t.Errorf("error %q does not report the sizes", msg)
	}
}

// Found in review: only the compressed size was checked, so repetitive packs could make
// a bundle that fits in a ConfigMap compressed but that Decode, and so the sidecar,
// refuses to decompress. The packs that would push it over MaxDecodedSize are held back.
func TestAssembleBundleOverDecodedSizeIsHeldBack(t *testing.T) {
	text := strings.Repeat("a", 9<<20) // compresses about a thousandfold
	var packs []PackInput
	for i := range 8 {
		packs = append(packs, pack(fmt.Sprintf("p%d", i), 1, i, withCopy(rule(t, fmt.Sprintf("p%d.sec", i), "R"), text)))
	}
	res := mustAssemble(t, Input{Capability: capability(t), Packs: packs})
	wantPublished(t, res, "p0@1", "p1@1", "p2@1", "p3@1", "p4@1", "p5@1", "p6@1")
	got := res.Packs["p7"]
	wantOutcome(t, got, false, 0, ReasonBundleTooLarge)
	if !strings.Contains(got.Message, fmt.Sprint(MaxDecodedSize)) {
		t.Errorf("message %q does not state the decompressed limit", got.Message)
	}
	wantLoads(t, res)
}

// withCopy sets rule r's copy text, without encoding it as JSON first.
func withCopy(r any, text string) any {
	r.(map[string]any)["copy"] = map[string]any{"what": text}
	return r
}

func TestEncodeRefusesOverDecodedSize(t *testing.T) {
	text := strings.Repeat("a", MaxDecodedSize)
	b := &Bundle{Capability: capability(t), Packs: []Pack{{Name: "p", Generation: 1, Rules: []any{withCopy(rule(t, "p.sec", "P"), text)}}}}
	_, err := Encode(b)
	var tl *TooLargeError
	if !errors.Is(err, ErrTooLarge) || !errors.As(err, &tl) || tl.Limit != MaxDecodedSize || tl.Plain <= MaxDecodedSize {
		t.Fatalf("Encode: %v, want ErrTooLarge over MaxDecodedSize", err)
	}
	if msg := err.Error(); !strings.Contains(msg, fmt.Sprint(tl.Plain)) || !strings.Contains(msg, fmt.Sprint(MaxDecodedSize)) {
		t.Errorf("error %q does not report the sizes", msg)
	}
}

// storedLen decides the MaxDecodedSize check without building the JSON: it must be
// the exact length of what is stored.
func TestStoredLenIsExact(t *testing.T) {
	in := conflicted(t)
	c, errs := engine.LoadCapability(in.Capability)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	a := newAssembler(in, c)
	if err := a.encodeParts(); err != nil {
		t.Fatal(err)
	}
	for np := range 3 {
		for nc := range 3 {
			var packs []*option
			for _, s := range a.slots[:np] {
				packs = append(packs, s.opts[0])
			}
			var cfgs []*cfgOption
			for _, s := range a.cfgs[:nc] {
				cfgs = append(cfgs, s.opts[0])
			}
			canon := a.canonical(packs, cfgs)
			full, err := withDigest(canon, digestOf(canon))
			if err != nil {
				t.Fatal(err)
			}
			if got := a.storedLen(packs, cfgs); got != len(full) {
				t.Errorf("%d packs, %d configurations: storedLen %d, stored JSON %d bytes", np, nc, got, len(full))
			}
		}
	}
}

// TestAChainOfRefusalsIsRefusedWholeEitherWay: packs each naming a rule of the next,
// the last naming one no pack defines, are each LoadFailed ([OAR-EVAL-13]) — the last
// for its own reference, every other because the pack it names is refused — whether
// the chain runs with the packs' order or against it, and a pack beside the chain is
// published.
func TestAChainOfRefusalsIsRefusedWholeEitherWay(t *testing.T) {
	for _, reversed := range []bool{false, true} {
		chain := refusalChain(t, 12)
		if reversed {
			for k := range chain {
				chain[k].CreationTime = at(len(chain) - k)
			}
		}
		res, err := Assemble(Input{Capability: capability(t), Packs: append(chain, pack("beside", 1, 100, rule(t, "beside.sec", "OK")))})
		if err != nil {
			t.Fatal(err)
		}
		wantPublished(t, res, "beside@1")
		for _, p := range chain {
			wantOutcome(t, res.Packs[p.Name], false, 0, ReasonLoadFailed)
		}
	}
}

// A newcomer that leaves no room for a published configuration is refused for it, as
// one that makes its names ambiguous is, though it defines no rule the configuration
// names: the configuration's size, not its rules, is what it takes away.
func TestANewcomerLeavingNoRoomForAPublishedConfigurationIsRefused(t *testing.T) {
	// Rule ids of random letters, named again by the configuration more than the
	// deflate window after them, so that the configuration compresses little.
	r := rand.New(rand.NewPCG(7, 7))
	var rules []any
	var names []string
	for range 200 {
		id := make([]byte, 40)
		for i := range id {
			id[i] = 'A' + byte(r.IntN(26))
		}
		rules = append(rules, rule(t, "a-base.sec", string(id)))
		names = append(names, fmt.Sprintf("%q", "a-base.sec/"+string(id)))
	}
	base := pack("a-base", 1, 1, rules...)
	ops := ConfigInput{Name: "ops", Generation: 1, Order: 1, CreationTime: at(1),
		Document: config(t, `{"oar_config":"1.0","disable":[`+strings.Join(names, ",")+`]}`)}
	newcomer := func(n int) PackInput { return pack("b-new", 1, 2, bulky(t, "b-new.sec", "B", n, 5)) }
	fits := func(n int, cfgs ...ConfigInput) bool {
		b := &Bundle{Capability: capability(t), Packs: []Pack{{Name: "a-base", Generation: 1, Rules: base.Rules}, {Name: "b-new", Generation: 1, Rules: newcomer(n).Rules}}}
		for _, c := range cfgs {
			b.Configs = append(b.Configs, Config{Name: c.Name, Generation: c.Generation, Order: c.Order, Document: c.Document})
		}
		_, err := Encode(b)
		return err == nil
	}
	// The largest newcomer with which the configuration still fits, to 512 bytes.
	lo, hi := 64<<10, 2*ConfigMapLimit
	for hi-lo > 512 {
		if mid := (lo + hi) / 2; fits(mid, ops) {
			lo = mid
		} else {
			hi = mid
		}
	}
	n := hi + 512
	if fits(n, ops) || !fits(n) {
		t.Fatalf("a newcomer of %d bytes: the test wants it to fit alone and not with the configuration", n)
	}

	in := Input{Capability: capability(t), Packs: []PackInput{base}, Configs: []ConfigInput{ops}}
	in.Current = assembled(t, in)
	in.Packs = append(in.Packs, newcomer(n))
	res := mustAssemble(t, in)
	wantPublished(t, res, "a-base@1")
	wantOutcome(t, res.Configs["ops"], true, 1, "")
	got := res.Packs["b-new"]
	wantOutcome(t, got, false, 0, ReasonConflict)
	if got.ConflictsWith != "ops" || !strings.Contains(got.Message, "too large") {
		t.Errorf("conflicts with %q, message %q: want configuration ops, left out for its size", got.ConflictsWith, got.Message)
	}
	wantLoads(t, res)
}
