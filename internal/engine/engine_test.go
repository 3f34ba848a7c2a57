package engine

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/oar-operator/oar-operator/internal/engine/diag"
	"github.com/oar-operator/oar-operator/internal/engine/toolobs"
	"github.com/oar-operator/oar-operator/internal/engine/types"
)

const testCapability = `{"oar_capability_version":"1.0","host":"oar.test",
 "anchors":{"core":{"tool.pre_invoke":"gw.pre_call","model.output":"model.output"},
  "unsupported":["tool.handler","tool.post_invoke","agent.post_turn","agent.finalize","model.input","model.tool_result"],
  "host":["gw.render"]},
 "profiles":["tool","session"],"activity_window":3,"supports_transform":true,
 "host_facts":[{"name":"oar.test.tier","type":"string"},{"name":"oar.test.allowed","type":"(string) -> bool"}]}`

func mustCap(t testing.TB, src string) *Capability {
	t.Helper()
	doc, err := DecodeJSON([]byte(src))
	if err != nil {
		t.Fatal(err)
	}
	c, errs := LoadCapability(doc)
	if len(errs) > 0 {
		t.Fatalf("capability: %v", errs)
	}
	return c
}

func mustDocs(t testing.TB, src string) []any {
	t.Helper()
	docs, err := DecodeDocuments([]byte(src))
	if err != nil {
		t.Fatal(err)
	}
	return docs
}

func mustProgram(t testing.TB, rules string, configs ...string) *Program {
	t.Helper()
	rs, errs := LoadRules(mustCap(t, testCapability), mustDocs(t, rules))
	if len(errs) > 0 {
		t.Fatalf("rules: %v", errs)
	}
	var cfgs []any
	for _, c := range configs {
		cfgs = append(cfgs, mustDocs(t, c)...)
	}
	p, errs := Configure(rs, cfgs)
	if len(errs) > 0 {
		t.Fatalf("config: %v", errs)
	}
	return p
}

func hasDiag(l diag.List, clause, field, rule string) bool {
	for _, e := range l {
		if e.Clause == clause && (field == "" || e.Field == field) && (rule == "" || e.Rule == rule) {
			return true
		}
	}
	return false
}

func TestDOC1_DuplicateKeysRefused(t *testing.T) {
	for _, src := range []string{
		`{"oar":"1.0","id":"A","id":"B"}`,
		"oar: \"1.0\"\nid: A\nid: B\n",
	} {
		_, err := DecodeDocuments([]byte(src))
		if err == nil || !strings.Contains(err.Error(), "OAR-DOC-1") {
			t.Errorf("%q: want a duplicate-key error citing OAR-DOC-1, got %v", src, err)
		}
	}
}

func TestDOC31_YAMLStreamAndJSONArray(t *testing.T) {
	yaml := "# a pack\n---\noar: \"1.0\"\nid: A\n---\n# nothing here\n---\noar: \"1.0\"\nid: B\n"
	docs, err := DecodeDocuments([]byte(yaml))
	if err != nil || len(docs) != 2 {
		t.Fatalf("YAML stream: got %d documents, %v", len(docs), err)
	}
	docs, err = DecodeDocuments([]byte(`[{"id":"A"},{"id":"B"},{"id":"C"}]`))
	if err != nil || len(docs) != 3 {
		t.Fatalf("JSON array: got %d documents, %v", len(docs), err)
	}
}

func TestDOC3_UnquotedVersionGetsAHint(t *testing.T) {
	docs := mustDocs(t, "oar: 1.0\nid: A\nkind: policy\nanchor: tool.pre_invoke\neffect: block\n")
	_, errs := LoadRules(mustCap(t, testCapability), docs)
	if len(errs) != 1 || errs[0].Clause != "OAR-DOC-3" || errs[0].Field != "oar" {
		t.Fatalf("want one OAR-DOC-3 diagnostic on oar, got %v", errs)
	}
	msg := errs[0].Message
	if !strings.Contains(msg, "must be a string") || !strings.Contains(msg, `"1.0"`) || strings.Contains(msg, "version 1 ") {
		t.Errorf("message should say oar must be a string and show the quoted form: %s", msg)
	}
}

func TestCONF1_EveryErrorOfEveryMemberIsCollected(t *testing.T) {
	docs := mustDocs(t, `[
	 {"oar":"1.0","id":"A","kind":"rule","anchor":"tool.pre_invoke","effect":"block","colour":"red"},
	 {"oar":"1.0","id":"B","namespace":"acme.security","kind":"policy","anchor":"tool.pre_invoke","effect":"block","when":"pth == 1"}]`)
	_, errs := LoadRules(mustCap(t, testCapability), docs)
	for _, want := range []struct{ clause, field, rule string }{
		{"OAR-DOC-10", "kind", "A"},
		{"OAR-DOC-27", "colour", "A"},
		{"OAR-FACT-3", "when", "acme.security/B"},
	} {
		if !hasDiag(errs, want.clause, want.field, want.rule) {
			t.Errorf("missing %s on %s of %s in %v", want.clause, want.field, want.rule, errs)
		}
	}
	for _, e := range errs {
		if e.Clause == "OAR-FACT-3" {
			if e.Index != 1 || e.Value != "pth == 1" || e.Offset != 0 {
				t.Errorf("condition error should carry index 1, the expression and offset 0: %+v", e)
			}
			if got := e.Format("spec.rules[1]"); !strings.HasPrefix(got, `spec.rules[1].when: [OAR-FACT-3] `) || !strings.HasSuffix(got, "(rule acme.security/B)") {
				t.Errorf("formatted diagnostic: %s", got)
			}
		}
	}
}

func TestFACT24_InvalidCapabilitiesAreRefused(t *testing.T) {
	cases := []struct {
		name, doc, clause string
	}{
		{"omitted core anchor", `{"oar_capability_version":"1.0","host":"h","anchors":{"core":{"tool.pre_invoke":"x"}}}`, "OAR-PROF-2"},
		{"twice", `{"oar_capability_version":"1.0","host":"h","anchors":{"core":{"tool.pre_invoke":"x"},"unsupported":["tool.pre_invoke","tool.handler","tool.post_invoke","agent.post_turn","agent.finalize","model.input","model.output","model.tool_result"]}}`, "OAR-PROF-2"},
		{"unknown profile", `{"oar_capability_version":"1.0","host":"h","anchors":{"unsupported":["tool.pre_invoke","tool.handler","tool.post_invoke","agent.post_turn","agent.finalize","model.input","model.output","model.tool_result"]},"profiles":["tools"]}`, "OAR-FACT-24"},
		{"detector profile without detectors", `{"oar_capability_version":"1.0","host":"h","anchors":{"unsupported":["tool.pre_invoke","tool.handler","tool.post_invoke","agent.post_turn","agent.finalize","model.input","model.output","model.tool_result"]},"profiles":["pii"]}`, "OAR-OPS-22"},
		{"host fact without namespace", `{"oar_capability_version":"1.0","host":"h","anchors":{"unsupported":["tool.pre_invoke","tool.handler","tool.post_invoke","agent.post_turn","agent.finalize","model.input","model.output","model.tool_result"]},"host_facts":[{"name":"tier","type":"string"}]}`, "OAR-FACT-18"},
		{"host fact with a reserved segment", `{"oar_capability_version":"1.0","host":"h","anchors":{"unsupported":["tool.pre_invoke","tool.handler","tool.post_invoke","agent.post_turn","agent.finalize","model.input","model.output","model.tool_result"]},"host_facts":[{"name":"h.in","type":"string"}]}`, "OAR-FACT-18"},
		{"host function under a host with a reserved label", `{"oar_capability_version":"1.0","host":"acme.in","anchors":{"unsupported":["tool.pre_invoke","tool.handler","tool.post_invoke","agent.post_turn","agent.finalize","model.input","model.output","model.tool_result"]},"host_facts":[{"name":"acme.in.allowed","type":"(string) -> bool"}]}`, "OAR-FACT-18"},
		{"bad fact type", `{"oar_capability_version":"1.0","host":"h","anchors":{"unsupported":["tool.pre_invoke","tool.handler","tool.post_invoke","agent.post_turn","agent.finalize","model.input","model.output","model.tool_result"]},"host_facts":[{"name":"h.x","type":"list<int>"}]}`, "OAR-FACT-22"},
		{"function returning a map", `{"oar_capability_version":"1.0","host":"h","anchors":{"unsupported":["tool.pre_invoke","tool.handler","tool.post_invoke","agent.post_turn","agent.finalize","model.input","model.output","model.tool_result"]},"host_facts":[{"name":"h.x","type":"(string) -> map"}]}`, "OAR-FACT-27"},
		{"host anchor colliding with a core anchor", `{"oar_capability_version":"1.0","host":"h","anchors":{"unsupported":["tool.pre_invoke","tool.handler","tool.post_invoke","agent.post_turn","agent.finalize","model.input","model.output","model.tool_result"],"host":["model.input"]}}`, "OAR-PROF-5"},
		{"node limit below the floor", `{"oar_capability_version":"1.0","host":"h","anchors":{"unsupported":["tool.pre_invoke","tool.handler","tool.post_invoke","agent.post_turn","agent.finalize","model.input","model.output","model.tool_result"]},"expression_nodes_max":100}`, "OAR-EXPR-17"},
		{"later minor", `{"oar_capability_version":"1.1","host":"h"}`, "OAR-DOC-5"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			doc, err := DecodeJSON([]byte(tc.doc))
			if err != nil {
				t.Fatal(err)
			}
			c, errs := LoadCapability(doc)
			if c != nil || !hasDiag(errs, tc.clause, "", "") {
				t.Fatalf("want refusal citing %s, got %v", tc.clause, errs)
			}
		})
	}
}

func TestCFG8_BareIdentifierResolution(t *testing.T) {
	rules := `[{"oar":"1.0","id":"A","kind":"policy","anchor":"tool.pre_invoke","effect":"warn"},
	 {"oar":"1.0","namespace":"pub.one","id":"A","kind":"policy","anchor":"tool.pre_invoke","effect":"warn"},
	 {"oar":"1.0","namespace":"pub.one","id":"B","kind":"policy","anchor":"tool.pre_invoke","effect":"warn"},
	 {"oar":"1.0","namespace":"pub.two","id":"B","kind":"policy","anchor":"tool.pre_invoke","effect":"warn"}]`
	rs, errs := LoadRules(mustCap(t, testCapability), mustDocs(t, rules))
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	p, errs := Configure(rs, mustDocs(t, `{"oar_config":"1.0","disable":["A"]}`))
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	if p.Enforcement(0) != EnforceOff || p.Enforcement(1) != EnforceOn {
		t.Errorf("bare A must name the unnamespaced rule alone: %v %v", p.Enforcement(0), p.Enforcement(1))
	}
	_, errs = Configure(rs, mustDocs(t, `{"oar_config":"1.0","disable":["B"]}`))
	if !hasDiag(errs, "OAR-CFG-8", "disable[0]", "") || !strings.Contains(errs[0].Message, "pub.one/B") || !strings.Contains(errs[0].Message, "pub.two/B") {
		t.Errorf("ambiguous bare B must be refused naming both rules: %v", errs)
	}
	_, errs = Configure(rs, mustDocs(t, `{"oar_config":"1.0","enforcement":{"pub.three/C":"monitor"}}`))
	if !hasDiag(errs, "OAR-CFG-4", "enforcement.pub.three/C", "pub.three/C") {
		t.Errorf("naming an unloaded rule must be refused: %v", errs)
	}
}

func TestEVAL18_OrderIsDeterministic(t *testing.T) {
	// Z (schema) sorts first; S (policy) suppresses Z, so S moves before Z, and only
	// that far: A (schema) keeps its place ahead of both.
	p := mustProgram(t, `[
	 {"oar":"1.0","id":"Z","kind":"schema","anchor":"tool.pre_invoke","effect":"warn"},
	 {"oar":"1.0","id":"A","kind":"schema","anchor":"tool.pre_invoke","effect":"warn"},
	 {"oar":"1.0","id":"S","kind":"policy","anchor":"tool.pre_invoke","effect":"warn","overrides":["Z"]}]`)
	d := p.Evaluate(NewMemoryRuntime(), &Occurrence{Anchor: "gw.pre_call"})
	want := []string{"A:fired", "S:fired", "Z:suppressed"}
	if strings.Join(d.Applied, " ") != strings.Join(want, " ") {
		t.Errorf("applied %v, want %v", d.Applied, want)
	}
	if len(d.Advisories) != 2 || d.Advisories[0].Rule != "A" || d.Advisories[1].Rule != "S" {
		t.Errorf("advisories %+v", d.Advisories)
	}
}

// TestSEL7_UndeclaredAnchorSelectsNothing: the core identifier is not what occurrences
// carry when the map renames it; such an occurrence selects nothing and is no error.
func TestSEL7_UndeclaredAnchorSelectsNothing(t *testing.T) {
	p := mustProgram(t, `{"oar":"1.0","id":"A","kind":"policy","anchor":"tool.pre_invoke","effect":"warn"}`)
	if p.Capability().DeclaresAnchor("tool.pre_invoke") {
		t.Fatal("tool.pre_invoke is the core identifier, not the declared local anchor")
	}
	d := p.Evaluate(NewMemoryRuntime(), &Occurrence{Anchor: "tool.pre_invoke"})
	if d.Decision != "none" || len(d.Applied) != 0 {
		t.Fatalf("want decision none with an empty trace, got %+v", d)
	}
}

func TestSEL6_EmptyClauseWarns(t *testing.T) {
	rs, errs := LoadRules(mustCap(t, testCapability), mustDocs(t,
		`{"oar":"1.0","id":"A","kind":"policy","anchor":"tool.pre_invoke","effect":"warn","selector":{"tool":[]},"requires":{"profiles":["tool"]}}`))
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	if !hasDiag(rs.Warnings, "OAR-SEL-6", "selector.tool", "A") {
		t.Errorf("want an OAR-SEL-6 warning, got %v", rs.Warnings)
	}
}

// A set only checked warns as a set loaded does: admission says what the loader says.
func TestSEL6_CheckedSetWarnsAsLoaded(t *testing.T) {
	docs := mustDocs(t,
		`{"oar":"1.0","id":"A","kind":"policy","anchor":"tool.pre_invoke","effect":"warn","selector":{"tool":[]},"requires":{"profiles":["tool"]}}`)
	warnings, errs := CheckRulesKept(mustCap(t, testCapability), docs, nil)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	if !hasDiag(warnings, "OAR-SEL-6", "selector.tool", "A") {
		t.Errorf("want an OAR-SEL-6 warning from the check, got %v", warnings)
	}
}

// TestProgramIsSafeForConcurrentUse evaluates one program from many goroutines, each
// its own session; run with -race.
func TestProgramIsSafeForConcurrentUse(t *testing.T) {
	p := mustProgram(t, `[
	 {"oar":"1.0","id":"COUNT","kind":"policy","anchor":"tool.pre_invoke","effect":"warn","on_fire":["increment_counter"],"requires":{"profiles":["tool"]},"counter_scope":"tool"},
	 {"oar":"1.0","id":"STOP","kind":"policy","anchor":"tool.pre_invoke","effect":"block","when":"fire_count_of(\"COUNT\") >= 3"}]`)
	rt := NewMemoryRuntime()
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			session := string(rune('a' + g))
			for i := 0; i < 5; i++ {
				d := p.Evaluate(rt, &Occurrence{Anchor: "gw.pre_call", SessionID: session, ToolCall: &ToolCall{Name: "read"}})
				want := "warn"
				if i >= 3 {
					want = "block"
				}
				if d.Decision != want {
					t.Errorf("session %s occurrence %d: %s, want %s", session, i, d.Decision, want)
				}
			}
		}()
	}
	wg.Wait()
}

// racingCounters is a counter store that another occurrence of the same session writes
// to right after this occurrence's first read of a counter, as a concurrent call could.
type racingCounters struct {
	CounterStore
	raced bool
}

func (r *racingCounters) Get(k CounterKey) (Counts, error) {
	c, err := r.CounterStore.Get(k)
	if !r.raced {
		r.raced = true
		_, _ = r.CounterStore.Apply(k, ActionIncrementCounter)
	}
	return c, err
}

// TestFIRE6_OneSnapshotDespiteConcurrentWrites: a rule's own fire_count and another
// rule's fire_count_of of the same counter read one value at an occurrence, even when
// the store changes between the two reads ([OAR-FIRE-6]: two rules at one occurrence
// cannot disagree about a counter's value).
func TestFIRE6_OneSnapshotDespiteConcurrentWrites(t *testing.T) {
	p := mustProgram(t, `[
	 {"oar":"1.0","id":"COUNT","kind":"policy","anchor":"tool.pre_invoke","effect":"warn","on_fire":["increment_counter"],"when":"fire_count == 0"},
	 {"oar":"1.0","id":"SECOND","kind":"policy","anchor":"tool.pre_invoke","effect":"warn","when":"fire_count_of(\"COUNT\") == 1"}]`)
	rt := NewMemoryRuntime()
	rt.Counters = &racingCounters{CounterStore: rt.Counters}
	d := p.Evaluate(rt, &Occurrence{Anchor: "gw.pre_call", SessionID: "s", ToolCall: &ToolCall{Name: "read"}})
	if got := strings.Join(d.Applied, " "); got != "COUNT:fired SECOND:passed" {
		t.Errorf("applied %s; want COUNT:fired SECOND:passed (both rules read the counter at 0)", got)
	}
}

type failingCounters struct{ CounterStore }

func (failingCounters) Apply(CounterKey, Action) (Counts, error) {
	return Counts{}, errors.New("counter store unreachable")
}

type failingEvents struct{}

func (failingEvents) Publish(Event) error { return errors.New("event stream refused the write") }

// TestFIRE9_UnappliedSideEffectGoesToOnError: a declared side-effect that cannot be
// applied makes its rule one that cannot be evaluated, handled by its on_error; it is
// never reported as applied.
func TestFIRE9_UnappliedSideEffectGoesToOnError(t *testing.T) {
	rules := `[
	 {"oar":"1.0","id":"COUNT","kind":"policy","anchor":"tool.pre_invoke","effect":"warn","on_fire":["increment_breaker"]%s},
	 {"oar":"1.0","id":"EVENT","kind":"policy","anchor":"tool.pre_invoke","effect":"warn","on_fire":["publish_event"]%s},
	 {"oar":"1.0","id":"LATER","kind":"schema","anchor":"tool.pre_invoke","effect":"nudge"}]`
	cases := []struct {
		name, onError  string
		decision, rule string
		applied        []string
	}{
		{"fail_closed blocks with the failing rule", "", "block", "COUNT", []string{"LATER:fired", "COUNT:errored"}},
		{"fail_open records and continues", `,"on_error":"fail_open"`, "nudge", "LATER", []string{"LATER:fired", "COUNT:errored", "EVENT:errored"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := mustProgram(t, fmt.Sprintf(rules, tc.onError, tc.onError))
			rt := NewMemoryRuntime()
			rt.Counters = failingCounters{rt.Counters}
			rt.Events = failingEvents{}
			d := p.Evaluate(rt, &Occurrence{Anchor: "gw.pre_call", SessionID: "s"})
			if d.Decision != tc.decision || d.Rule != tc.rule || strings.Join(d.Applied, " ") != strings.Join(tc.applied, " ") {
				t.Fatalf("got %s by %s, applied %v", d.Decision, d.Rule, d.Applied)
			}
			if len(d.OnFire) != 0 || len(d.Counters) != 0 || len(d.Events) != 0 {
				t.Errorf("a side-effect that failed is reported as applied: on_fire %v counters %v events %v", d.OnFire, d.Counters, d.Events)
			}
			if len(d.Failures) == 0 || d.Failures[0].Clause != "OAR-FIRE-9" {
				t.Errorf("failures should cite OAR-FIRE-9: %+v", d.Failures)
			}
		})
	}
}

// TestOPS4_AFailedRuleTakesBackItsSideEffects: a rule whose side-effect cannot be
// applied contributes none ([OAR-OPS-4], [OAR-FIRE-9]), although its actions are
// applied in listed order ([OAR-FIRE-8]). What can fail before any change is checked
// first, so an event listed before an unreadable counter is never published; counter
// actions applied before a refused event are taken back in the store and in the
// report. Only a published event stays, reported, when a later counter write fails:
// no stream can take a record back.
func TestOPS4_AFailedRuleTakesBackItsSideEffects(t *testing.T) {
	const rule = `[{"oar":"1.0","id":"R","kind":"policy","anchor":"tool.pre_invoke","effect":"warn","on_error":"fail_open","on_fire":%s}]`
	key := CounterKey{Rule: "R", Session: "s"}
	cases := []struct {
		name, onFire string
		counters     func(CounterStore) CounterStore
		refuseEvents bool
		failing      string
		published    int
	}{
		{"counters taken back when the event is refused", `["increment_counter","increment_breaker","publish_event"]`,
			func(c CounterStore) CounterStore { return c }, true, "publish_event", 0},
		{"nothing published when the counter cannot be read", `["publish_event","increment_counter"]`,
			func(c CounterStore) CounterStore { return &flakyReads{CounterStore: c} }, false, "increment_counter", 0},
		{"a published event stays when the counter write fails", `["publish_event","increment_counter"]`,
			func(c CounterStore) CounterStore { return failingCounters{c} }, false, "increment_counter", 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := mustProgram(t, fmt.Sprintf(rule, tc.onFire))
			rt := NewMemoryRuntime()
			store := rt.Counters
			rt.Counters = tc.counters(store)
			log := &EventLog{}
			rt.Events = log
			if tc.refuseEvents {
				rt.Events = failingEvents{}
			}
			d := p.Evaluate(rt, &Occurrence{Anchor: "gw.pre_call", SessionID: "s"})
			if got := strings.Join(d.Applied, " "); got != "R:errored" || d.Decision != "none" {
				t.Fatalf("decision %s, applied %s; want none, R:errored", d.Decision, got)
			}
			if len(d.Failures) != 1 || d.Failures[0].Clause != "OAR-FIRE-9" || !strings.Contains(d.Failures[0].Error, tc.failing) {
				t.Errorf("failures %+v; want one citing OAR-FIRE-9 and %s", d.Failures, tc.failing)
			}
			if c, _ := store.Get(key); c != (Counts{}) || len(d.Counters) != 0 {
				t.Errorf("the store holds %+v and the decision reports counters %v; want both untouched", c, d.Counters)
			}
			if len(log.Events) != tc.published || len(d.Events) != tc.published {
				t.Errorf("%d events published, %d reported; want %d", len(log.Events), len(d.Events), tc.published)
			}
			want := ""
			if tc.published == 1 {
				want = "publish_event"
			}
			if got := strings.Join(d.OnFire, " "); got != want {
				t.Errorf("on_fire %q; want %q", got, want)
			}
		})
	}
}

// flakyReads fails the first counter read it is asked for and answers the others.
type flakyReads struct {
	CounterStore
	reads int
}

func (f *flakyReads) Get(k CounterKey) (Counts, error) {
	if f.reads++; f.reads == 1 {
		return Counts{}, errors.New("counter store timed out")
	}
	return f.CounterStore.Get(k)
}

// TestFIRE6_ACounterThatCouldNotBeReadStaysUnreadable: a counter read that fails at an
// occurrence fails every later read of that counter there too ([OAR-FIRE-6] is one
// snapshot per occurrence, [OAR-OPS-3] routes the failure to on_error), rather than
// asking the store again and carrying on with what a second read returned. Here the
// copy's read fails, so the rule is errored and blocks (fail_closed), whether its copy
// is rendered at once or when the decision takes it, and the block carries no copy
// ([OAR-COPY-11]) rather than one rendered from a second read.
func TestFIRE6_ACounterThatCouldNotBeReadStaysUnreadable(t *testing.T) {
	p := mustProgram(t, `[{"oar":"1.0","id":"W","kind":"policy","anchor":"tool.pre_invoke","effect":"warn",
	  "on_fire":["increment_counter"],"copy":{"title":"seen {{ fire_count }}"}}]`)
	rt := NewMemoryRuntime()
	store := &flakyReads{CounterStore: rt.Counters}
	rt.Counters = store
	d := p.Evaluate(rt, &Occurrence{Anchor: "gw.pre_call", SessionID: "s"})
	if d.Decision != "block" || d.Rule != "W" || strings.Join(d.Applied, " ") != "W:errored" || d.Copy != nil {
		t.Errorf("got %s by %s, copy %v, applied %v; want a block by W errored, without copy", d.Decision, d.Rule, d.Copy, d.Applied)
	}
	if len(d.Failures) != 1 || d.Failures[0].Clause != "OAR-OPS-3" || !strings.Contains(d.Failures[0].Error, "counter store timed out") {
		t.Errorf("failures %+v; want the one read failure, under OAR-OPS-3", d.Failures)
	}
	if store.reads != 1 || len(d.Counters) != 0 {
		t.Errorf("the store was read %d times and counters %v changed; want one read and no change", store.reads, d.Counters)
	}
}

// TestFACT11_ADetectorsObservationDoesNotReachTheFingerprintOfLaterRules: D1's detector
// reports a tool name. D1's own tool_args_fingerprint is over what its detector
// observed, but that observation stays D1's ([OAR-FACT-11]): D2, evaluated after it,
// reads the fingerprint of the occurrence's own tool call, exactly as when D1's detector
// reports nothing.
func TestFACT11_ADetectorsObservationDoesNotReachTheFingerprintOfLaterRules(t *testing.T) {
	capSrc := strings.Replace(testCapability, `"supports_transform":true,`, `"supports_transform":true,"detectors":["detector://noop","detector://fixture"],`, 1)
	rs, errs := LoadRules(mustCap(t, capSrc), mustDocs(t, `[
	 {"oar":"1.0","id":"D1","kind":"detector","detector":{"ref":"detector://fixture"},"anchor":"tool.pre_invoke","effect":"warn",
	  "requires":{"profiles":["tool"]},"copy":{"title":"{{ tool_args_fingerprint }}"}},
	 {"oar":"1.0","id":"D2","kind":"detector","detector":{"ref":"detector://noop"},"anchor":"tool.pre_invoke","effect":"warn",
	  "requires":{"profiles":["tool"]},"copy":{"title":"{{ tool_args_fingerprint }}"}}]`))
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	p, errs := Configure(rs, nil)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	fingerprints := func(detected map[string]any) (d1, d2 string) {
		t.Helper()
		d := p.Evaluate(NewMemoryRuntime(), &Occurrence{Anchor: "gw.pre_call",
			ToolCall: &ToolCall{Name: "read", Arguments: map[string]any{"path": "/tmp/x"}}, DetectorFacts: detected})
		if len(d.Advisories) != 2 {
			t.Fatalf("advisories %+v; want D1's and D2's", d.Advisories)
		}
		return d.Advisories[0].Copy.Get("title"), d.Advisories[1].Copy.Get("title")
	}
	read, err := toolobs.Fingerprint("read", map[string]any{"path": "/tmp/x"})
	if err != nil {
		t.Fatal(err)
	}
	evil, err := toolobs.Fingerprint("evil", map[string]any{"path": "/tmp/x"})
	if err != nil {
		t.Fatal(err)
	}
	if d1, d2 := fingerprints(nil); d1 != read || d2 != read {
		t.Errorf("no finding: D1 %s, D2 %s; want both %s", d1, d2, read)
	}
	if d1, d2 := fingerprints(map[string]any{"tool": "evil"}); d1 != evil || d2 != read {
		t.Errorf("D1's detector reports tool evil: D1 %s (want %s), D2 %s (want the occurrence's %s)", d1, evil, d2, read)
	}
}

// TestFACT11_ADetectorsObservationOfAnArgumentStaysItsRule: a detector rule whose
// findings report tool_arg_string, or the tool_args it reads, sees the reported path
// whether or not a rule before it read the occurrence's path; a rule after it reads the
// occurrence's path, not the detector's ([OAR-FACT-11]). Each case also holds with the
// findings silent, so every rule reads the occurrence's path.
func TestFACT11_ADetectorsObservationOfAnArgumentStaysItsRule(t *testing.T) {
	capSrc := strings.Replace(testCapability, `"supports_transform":true,`, `"supports_transform":true,"detectors":["detector://fixture"],`, 1)
	rule := func(id, kind, when, extra string) string {
		if kind == "detector" {
			extra += `,"detector":{"ref":"detector://fixture"}`
		}
		return fmt.Sprintf(`{"oar":"1.0","id":%q,"kind":%q,"anchor":"tool.pre_invoke","effect":"warn","requires":{"profiles":["tool"]},"when":%q%s}`,
			id, kind, when, extra)
	}
	const occurrences, reported = `tool_arg_string("path") == "/etc/passwd"`, `tool_arg_string("path") == "/evil"`
	for _, tc := range []struct {
		name  string
		rules []string
		// applied is the trace when the findings report /evil, quiet when they report
		// nothing.
		applied, quiet string
	}{{
		// The policy rule reads the path first.
		name:    "detector after",
		rules:   []string{rule("P", "policy", occurrences, ""), rule("D", "detector", reported, "")},
		applied: "P:fired D:fired", quiet: "P:fired D:passed",
	}, {
		// D suppresses P, so it is evaluated first ([OAR-EVAL-18]); it does not fire, so
		// P is evaluated after it.
		name:    "detector before",
		rules:   []string{rule("P", "policy", occurrences, ""), rule("D", "detector", occurrences, `,"overrides":["P"]`)},
		applied: "D:passed P:fired", quiet: "D:fired P:suppressed",
	}} {
		rs, errs := LoadRules(mustCap(t, capSrc), mustDocs(t, "["+strings.Join(tc.rules, ",")+"]"))
		if len(errs) > 0 {
			t.Fatal(errs)
		}
		p, errs := Configure(rs, nil)
		if len(errs) > 0 {
			t.Fatal(errs)
		}
		for _, detected := range []map[string]any{
			{"tool_arg_string": "/evil"},
			{"tool_args": map[string]any{"path": "/evil"}},
			nil,
		} {
			d := p.Evaluate(NewMemoryRuntime(), &Occurrence{Anchor: "gw.pre_call",
				ToolCall: &ToolCall{Name: "read", Arguments: map[string]any{"path": "/etc/passwd"}}, DetectorFacts: detected})
			want := tc.applied
			if detected == nil {
				want = tc.quiet
			}
			if got := strings.Join(d.Applied, " "); got != want || len(d.Failures) > 0 {
				t.Errorf("%s, findings %v: applied %q, failures %v; want %q", tc.name, detected, got, d.Failures, want)
			}
		}
	}
}

func TestPROF8_PortabilityReport(t *testing.T) {
	p := mustProgram(t, `[
	 {"oar":"1.0","id":"PORTABLE","kind":"policy","anchor":"tool.pre_invoke","effect":"warn","requires":{"profiles":["tool"]},"when":"tool == 'read'"},
	 {"oar":"1.0","id":"HOSTLY","kind":"policy","anchor":"gw.render","effect":"warn","requires":{"facts":["oar.test.tier","principal"]},"when":"oar.test.tier == 'gold' && principal == 'x'"}]`)
	rs := p.RuleSet()
	if got := rs.Portability(rs.Rules[0]); !got.Portable || len(got.Reasons) != 0 {
		t.Errorf("PORTABLE: %+v", got)
	}
	got := rs.Portability(rs.Rules[1])
	want := []string{`anchor "gw.render" is host-native`, `references host-tier "oar.test.tier"`, `references "principal" of profile session, which requires.profiles does not name`}
	if got.Portable || strings.Join(got.Reasons, "|") != strings.Join(want, "|") {
		t.Errorf("HOSTLY: %+v", got)
	}
}

// TestSEL7_IndexedSelectionEqualsClauseByClause: the selection index picks exactly the
// rules a clause-by-clause test picks, in the same order, whatever the occurrence.
func TestSEL7_IndexedSelectionEqualsClauseByClause(t *testing.T) {
	var docs []string
	for i, sel := range []string{
		`{"tool":["read"]}`, `{"tool":["read","write"]}`, `{"tool":["write"]}`, `{}`,
		`{"tool":["read"],"principal":["ana"]}`, `{"principal":["ana","bo"]}`, `{"principal_roles":["admin"]}`,
		`{"tool":["read"],"principal_roles":["dev","admin"]}`, `{"tool":[]}`, `{"anchor":["tool.pre_invoke"]}`,
		`{"principal_roles":["a","b","c","d","admin"]}`, `{"principal":["v","w","x","y","bo"]}`, `{"principal":["v","w","x","y","z"]}`,
	} {
		docs = append(docs, fmt.Sprintf(`{"oar":"1.0","id":"R%02d","kind":"%s","anchor":"tool.pre_invoke","effect":"allow","selector":%s,"requires":{"profiles":["tool","session"]}}`,
			i, []string{"schema", "policy", "invariant"}[i%3], sel))
	}
	withAndWithoutPlans(t, docs, indexedSelectionEqualsClauseByClause)
}

func indexedSelectionEqualsClauseByClause(t *testing.T, p *Program) {
	rules := p.RuleSet().Rules
	for _, facts := range []map[string]any{
		{},
		{"principal": "ana"},
		{"principal": "bo", "principal_roles": []any{"admin"}},
		{"principal_roles": []any{"dev"}},
		{"tool": "x"},
	} {
		for _, tool := range []string{"read", "write", "other", ""} {
			occ := &Occurrence{Anchor: "gw.pre_call", Facts: facts}
			if tool != "" {
				occ.ToolCall = &ToolCall{Name: tool}
			}
			d := p.Evaluate(NewMemoryRuntime(), occ)
			var want []string
			s := &evalState{}
			s.reset(p, NewMemoryRuntime(), occ, &DecisionBuffer{})
			s.anchor = "tool.pre_invoke"
			for _, i := range p.byAnchor["gw.pre_call"].rules {
				if ok, err := s.selectsByMeaning(rules[i]); err != nil || ok {
					want = append(want, rules[i].TraceEntry(Fired))
				}
			}
			if strings.Join(d.Applied, " ") != strings.Join(want, " ") {
				t.Errorf("facts %v tool %q: selected %v, clause by clause %v", facts, tool, d.Applied, want)
			}
		}
	}
}

// selectsByMeaning is selection as [OAR-SEL-1], [OAR-SEL-2], [OAR-SEL-4] and
// [OAR-FACT-26] state it, without the indexes, plans or lookups the engine uses: it
// compares each clause's fact with every value of the clause; a clause whose fact is
// read and matches none leaves the rule out; otherwise a clause whose fact cannot be
// read selects the rule with the error of the first such clause. A rule carrying an
// empty clause is never selected ([OAR-SEL-6]).
func (s *evalState) selectsByMeaning(r *Rule) (bool, error) {
	for _, c := range r.selector {
		if len(slices.Collect(c.each())) == 0 {
			return false, nil
		}
	}
	var first error
	for _, c := range r.selector {
		v, err := s.Fact(c.sym.ID)
		if err != nil {
			if first == nil {
				first = err
			}
			continue
		}
		values := []string{v.Str()}
		if v.Kind != types.String {
			values = v.List()
		}
		listed := slices.Collect(c.each())
		if !slices.ContainsFunc(values, func(m string) bool { return slices.Contains(listed, m) }) {
			return false, nil
		}
	}
	return true, first
}

// withAndWithoutPlans loads the rules docs, whose selection at gw.pre_call has plans,
// and runs check on the program and on it without plans (withoutPlans).
func withAndWithoutPlans(t *testing.T, docs []string, check func(*testing.T, *Program)) {
	t.Helper()
	planned := mustProgram(t, "["+strings.Join(docs, ",")+"]")
	if planned.byAnchor["gw.pre_call"].plans == nil {
		t.Fatal("the selection has no plans")
	}
	for _, p := range []*Program{planned, withoutPlans(planned)} {
		check(t, p)
	}
}

// withoutPlans is p with every selection merging its buckets at each occurrence, the
// path selection takes when its plans would exceed planBudget.
func withoutPlans(p *Program) *Program {
	q := *p
	q.byAnchor = map[string]*selection{}
	for anchor, sel := range p.byAnchor {
		merged := *sel
		merged.plans = nil
		q.byAnchor[anchor] = &merged
	}
	return &q
}

// TestFACT26_SelectorFactOfTheWrongTypeSelectsWithAnError: the indexed fact failing
// sends every rule whose only clause is on it down its on_error, not out of selection
// (a rule with another clause that is read and does not match is left out:
// TestSEL4_ARulesSelectionDoesNotDependOnOtherRules).
func TestFACT26_SelectorFactOfTheWrongTypeSelectsWithAnError(t *testing.T) {
	p := mustProgram(t, `[
	 {"oar":"1.0","id":"A","kind":"policy","anchor":"tool.pre_invoke","effect":"warn","selector":{"tool":["read"]},"requires":{"profiles":["tool"]},"on_error":"fail_open"},
	 {"oar":"1.0","id":"B","kind":"policy","anchor":"tool.pre_invoke","effect":"warn","selector":{"tool":["write"]},"requires":{"profiles":["tool"]}},
	 {"oar":"1.0","id":"C","kind":"schema","anchor":"tool.pre_invoke","effect":"nudge"}]`)
	d := p.Evaluate(NewMemoryRuntime(), &Occurrence{Anchor: "gw.pre_call", Facts: map[string]any{"tool": 7}})
	if d.Decision != "block" || d.Rule != "B" || strings.Join(d.Applied, " ") != "C:fired A:errored B:errored" {
		t.Errorf("got %s by %s, applied %v", d.Decision, d.Rule, d.Applied)
	}
}

// TestSEL4_ARulesSelectionDoesNotDependOnOtherRules: R's tool clause does not match
// and its tier clause cannot be read (and the other way round), so R is not selected
// ([OAR-SEL-4]) — alone, and beside a rule S that makes tool the fact the selection
// index tests first (S itself is selected only when tool cannot be read).
func TestSEL4_ARulesSelectionDoesNotDependOnOtherRules(t *testing.T) {
	r := `{"oar":"1.0","id":"R","kind":"policy","anchor":"tool.pre_invoke","effect":"warn",
	  "selector":{"oar.test.tier":["gold"],"tool":["read"]},"requires":{"profiles":["tool"],"facts":["oar.test.tier"]}}`
	s := `{"oar":"1.0","id":"S","kind":"policy","anchor":"tool.pre_invoke","effect":"warn",
	  "selector":{"tool":["other"]},"requires":{"profiles":["tool"]}}`
	for name, occ := range map[string]*Occurrence{
		"tier unreadable, tool another": {Anchor: "gw.pre_call", ToolCall: &ToolCall{Name: "write"}, Facts: map[string]any{"oar.test.tier": 7}},
		"tool unreadable, tier another": {Anchor: "gw.pre_call", Facts: map[string]any{"tool": 7, "oar.test.tier": "silver"}},
	} {
		for _, rules := range []string{"[" + r + "]", "[" + r + "," + s + "]"} {
			d := mustProgram(t, rules).Evaluate(NewMemoryRuntime(), occ)
			if d.Rule == "R" || slices.ContainsFunc(d.Applied, func(a string) bool { return strings.HasPrefix(a, "R:") }) {
				t.Errorf("%s, %d rules: %s by %q, applied %v; want R not selected", name, strings.Count(rules, `"id"`), d.Decision, d.Rule, d.Applied)
			}
		}
	}
}

func TestDOC1_DuplicateKeysAreFoundWherever(t *testing.T) {
	for _, tc := range []struct{ src, path string }{
		{`{"a":1,"\u0061":2}`, "a"},
		{`[{"x":[{"k":1}]},{"x":[{"k":1},{"k":2,"j":3,"k":4}]}]`, "[1].x[1].k"},
		{`{"selector":{"tool":["a"],"tool":["b"]}}`, "selector.tool"},
		{`{"a":{"b":1},"c":{"b":2},"d":"\"a\":1"}`, ""},
	} {
		_, err := DecodeJSON([]byte(tc.src))
		var dup *DuplicateKeyError
		switch {
		case tc.path == "" && err != nil:
			t.Errorf("%s: unexpected error %v", tc.src, err)
		case tc.path != "" && (!errors.As(err, &dup) || dup.Path != tc.path):
			t.Errorf("%s: want a duplicate at %q, got %v", tc.src, tc.path, err)
		}
	}
	many := `{"k00":0`
	for i := 1; i < 40; i++ {
		many += fmt.Sprintf(`,"k%02d":%d`, i, i)
	}
	if _, err := DecodeJSON([]byte(many + `,"k07":1}`)); err == nil {
		t.Error("a duplicate in a large object went unnoticed")
	}
	if _, err := DecodeJSON([]byte(strings.Repeat("[", 300) + strings.Repeat("]", 300))); err == nil {
		t.Error("nesting beyond the bound was accepted")
	}
}

// TestPROF2_RefusedEntryIsStillDeclared: a core anchor whose local anchor is refused was
// declared; the refusal names the entry and nothing claims the anchor is missing.
func TestPROF2_RefusedEntryIsStillDeclared(t *testing.T) {
	for name, local := range map[string]string{"empty": `""`, "not a string": `7`, "shared": `"gw.pre"`} {
		t.Run(name, func(t *testing.T) {
			doc, err := DecodeJSON([]byte(`{"oar_capability_version":"1.0","host":"h","anchors":{"core":{"tool.pre_invoke":"gw.pre","tool.post_invoke":` + local + `},"unsupported":["tool.handler","agent.post_turn","agent.finalize","model.input","model.output","model.tool_result"]}}`))
			if err != nil {
				t.Fatal(err)
			}
			_, errs := LoadCapability(doc)
			if len(errs) != 1 || !strings.HasPrefix(errs[0].Field, "anchors.core.") {
				t.Fatalf("want exactly one error, on an entry of anchors.core; got %v", errs)
			}
		})
	}
}

// TestSEL7_TwoIndexesSelectWhatTheClausesMean: with a second index (here on tool,
// under the one on principal), selection still picks exactly the rules, and the
// errors, that the rules' clauses mean (selectsByMeaning): a clause that is read and
// does not match leaves its rule out even when another's fact cannot be read, and a
// rule left in by its readable clauses is selected with the error of its first clause
// that cannot be read ([OAR-SEL-4], [OAR-FACT-26]).
func TestSEL7_TwoIndexesSelectWhatTheClausesMean(t *testing.T) {
	var docs []string
	for i, sel := range []string{
		`{"tool":["read"],"principal":["ana"]}`, `{"tool":["read","write"],"principal":["bo"]}`,
		`{"tool":["read"],"principal":["ana","bo"],"oar.test.tier":["gold"]}`, `{"principal":["ana"]}`,
		`{"principal":["bo"],"tool":["write"]}`, `{"oar.test.tier":["gold"],"principal":["ana"],"tool":["read"]}`,
		`{"tool":["read"]}`, `{}`, `{"principal_roles":["dev"],"tool":["read"]}`, `{"principal":["ana"],"principal_roles":["dev"]}`,
	} {
		docs = append(docs, fmt.Sprintf(`{"oar":"1.0","id":"R%02d","kind":"policy","anchor":"tool.pre_invoke","effect":"allow","selector":%s,"requires":{"profiles":["tool","session"],"facts":["oar.test.tier"]}}`, i, sel))
	}
	withAndWithoutPlans(t, docs, twoIndexesSelectWhatTheClausesMean)
}

func twoIndexesSelectWhatTheClausesMean(t *testing.T, p *Program) {
	sel := p.byAnchor["gw.pre_call"]
	if sel.fact < 0 || sel.fact2 < 0 || p.cap.symbol(sel.fact).Name != "principal" || p.cap.symbol(sel.fact2).Name != "tool" {
		t.Fatalf("indexes on %d and %d, want principal then tool", sel.fact, sel.fact2)
	}
	rules := p.RuleSet().Rules
	for _, facts := range []map[string]any{
		{}, {"principal": "ana"}, {"principal": "bo", "oar.test.tier": "gold"}, {"principal": 7},
		{"principal": "ana", "oar.test.tier": 1, "principal_roles": []any{"dev"}}, {"principal": 7, "principal_roles": "dev"},
		{"tool": 7, "principal": "ana"}, {"tool": 7, "principal": "bo"},
	} {
		for _, tool := range []string{"read", "write", ""} {
			occ := &Occurrence{Anchor: "gw.pre_call", Facts: facts}
			if tool != "" {
				occ.ToolCall = &ToolCall{Name: tool}
			}
			s := &evalState{}
			s.reset(p, NewMemoryRuntime(), occ, &DecisionBuffer{})
			s.anchor = "tool.pre_invoke"
			selected, _ := s.selectRules(sel)
			var got []string
			for _, i := range selected {
				got = append(got, fmt.Sprintf("%s:%v", rules[i].ID, s.selErr[i]))
			}
			ref := &evalState{}
			ref.reset(p, NewMemoryRuntime(), occ, &DecisionBuffer{})
			ref.anchor = "tool.pre_invoke"
			var want []string
			for _, i := range sel.rules {
				if ok, err := ref.selectsByMeaning(rules[i]); err != nil || ok {
					want = append(want, fmt.Sprintf("%s:%v", rules[i].ID, err))
				}
			}
			if strings.Join(got, " ") != strings.Join(want, " ") {
				t.Errorf("facts %v tool %q: selected %v, as the clauses mean %v", facts, tool, got, want)
			}
		}
	}
}

// TestSelectionPlansStayWithinTheirBudget: a selection whose plans would take more
// entries than the budget makes none, and selection then merges the buckets at each
// occurrence (the path withoutPlans tests).
func TestSelectionPlansStayWithinTheirBudget(t *testing.T) {
	p := mustProgram(t, `[
	 {"oar":"1.0","id":"A","kind":"policy","anchor":"tool.pre_invoke","effect":"warn","selector":{"tool":["read","write"]},"requires":{"profiles":["tool"]}},
	 {"oar":"1.0","id":"B","kind":"policy","anchor":"tool.pre_invoke","effect":"warn","selector":{"tool":["write"]},"requires":{"profiles":["tool"]}},
	 {"oar":"1.0","id":"C","kind":"schema","anchor":"tool.pre_invoke","effect":"nudge"}]`)
	sel := p.byAnchor["gw.pre_call"]
	// read: A, C; write: A, B, C; any other tool: C.
	if ps := sel.makePlans(p.rs.Rules, 6); ps == nil || len(ps.byValue["write"].base.entries) != 3 {
		t.Fatalf("plans of 6 entries within a budget of 6: %+v", ps)
	}
	if ps := sel.makePlans(p.rs.Rules, 5); ps != nil {
		t.Errorf("plans of 6 entries made within a budget of 5")
	}
}

// TestCOPY4_CopyRendersInItsRulesEnvironmentWhenTheDecisionNeedsIt: a fired rule's
// copy is rendered once the decision is known, and still reads what it read while its
// rule was evaluated: its own counter's snapshot ([OAR-COPY-4], [OAR-FIRE-6]), not the
// counter of the rule evaluated last.
func TestCOPY4_CopyRendersInItsRulesEnvironmentWhenTheDecisionNeedsIt(t *testing.T) {
	p := mustProgram(t, `[
	 {"oar":"1.0","id":"A","kind":"policy","anchor":"tool.pre_invoke","effect":"nudge","when":"tool == \"read\"","on_fire":["increment_counter"],
	  "requires":{"profiles":["tool"]},"copy":{"title":"A: {{ tool }} seen {{ fire_count }}"}},
	 {"oar":"1.0","id":"B","kind":"policy","anchor":"tool.pre_invoke","effect":"nudge","on_fire":["increment_counter"],
	  "requires":{"profiles":["tool"]},"copy":{"title":"B: {{ tool }} seen {{ fire_count }}"}}]`)
	rt := NewMemoryRuntime()
	var got []string
	for _, tool := range []string{"write", "read", "read"} {
		d := p.Evaluate(rt, &Occurrence{Anchor: "gw.pre_call", SessionID: "s", ToolCall: &ToolCall{Name: tool}})
		for _, a := range d.Advisories {
			got = append(got, a.Copy.Get("title"))
		}
	}
	want := "B: write seen 0|A: read seen 0|B: read seen 1|A: read seen 1|B: read seen 2"
	if strings.Join(got, "|") != want {
		t.Errorf("advisory copy %q, want %q", strings.Join(got, "|"), want)
	}
}

// TestCOPY_FactsOnlyABranchNotTakenReadsDoNotFailTheCopy: a fact of the wrong type
// fails a copy only when rendering reads it ([OAR-FACT-26]); one behind a branch not
// taken leaves the rule fired with its copy. A fact the taken branch reads fails a
// monitored rule, whose trace predicts what enforcing it would do ([OAR-OPS-3]). An
// allow rule's copy is never rendered, since no decision carries it ([OAR-COPY-1]), so
// it fails nothing: its rule fires as the same rule without copy would ([OAR-COPY-6]).
func TestCOPY_FactsOnlyABranchNotTakenReadsDoNotFailTheCopy(t *testing.T) {
	p := mustProgram(t, `[
	 {"oar":"1.0","id":"W","kind":"policy","anchor":"tool.pre_invoke","effect":"warn","requires":{"profiles":["tool","session"]},
	  "copy":{"title":"{% if principal %}roles {{ principal_roles }}{% endif %}done"}},
	 {"oar":"1.0","id":"M","kind":"policy","anchor":"tool.pre_invoke","effect":"warn","enforcement":"monitor","requires":{"profiles":["tool","session"]},
	  "copy":{"title":"{% if tool %}roles {{ principal_roles }}{% endif %}"}},
	 {"oar":"1.0","id":"Z","kind":"policy","anchor":"tool.pre_invoke","effect":"allow","on_error":"fail_open","requires":{"profiles":["tool","session"]},
	  "copy":{"title":"{{ principal_roles }}"}}]`)
	rules := p.RuleSet().Rules
	d := p.Evaluate(NewMemoryRuntime(), &Occurrence{Anchor: "gw.pre_call", ToolCall: &ToolCall{Name: "read"},
		Facts: map[string]any{"principal": "", "principal_roles": 7}})
	byID := map[string]*Rule{}
	for _, r := range rules {
		byID[r.ID] = r
	}
	wantApplied := []string{byID["M"].TraceEntry(MonitoredErrored), byID["W"].TraceEntry(Fired), byID["Z"].TraceEntry(Fired)}
	if d.Decision != "warn" || d.Rule != "W" || d.Copy.Get("title") != "done" || strings.Join(d.Applied, " ") != strings.Join(wantApplied, " ") {
		t.Errorf("got %s by %s, copy %v, applied %v; want warn by W, copy done, applied %v", d.Decision, d.Rule, d.Copy, d.Applied, wantApplied)
	}
	if len(d.Failures) != 1 || d.Failures[0].Rule != byID["M"].QID {
		t.Errorf("failures %+v, want M's alone", d.Failures)
	}
}
