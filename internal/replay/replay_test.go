package replay

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"

	"github.com/oar-operator/oar-operator/internal/bundle"
	"github.com/oar-operator/oar-operator/internal/decisionlog"
	"github.com/oar-operator/oar-operator/internal/engine"
	"github.com/oar-operator/oar-operator/internal/sidecar"
)

const capability = `
oar_capability_version: "1.0"
host: acme.gateway
anchors:
  core: {tool.pre_invoke: tool.pre_invoke, tool.post_invoke: tool.post_invoke, model.output: content.output}
  unsupported: [tool.handler, agent.post_turn, agent.finalize, model.input, model.tool_result]
profiles: [tool, content]
activity_window: 4
supports_transform: true
host_facts:
- {name: acme.gateway.tenant_tier, type: string}
- {name: acme.gateway.email_spans, type: list<map>}
`

// rules exercise what a replay must reproduce: a per-session counter and the breaker
// that reads it, a flow over the activity window, a fact, and a transform of content.
const rules = `
oar: "1.0"
namespace: acme.ops
id: COUNT_SHELL
kind: policy
anchor: tool.pre_invoke
selector: {tool: [shell]}
requires: {profiles: [tool]}
on_fire: [increment_counter, publish_event]
effect: warn
---
oar: "1.0"
namespace: acme.ops
id: SHELL_LIMIT
kind: invariant
anchor: tool.pre_invoke
selector: {tool: [shell]}
requires: {profiles: [tool]}
when: fire_count_of("acme.ops/COUNT_SHELL") >= 3
effect: block
---
oar: "1.0"
namespace: acme.security
id: DEPLOY_AFTER_FETCH
kind: policy
anchor: tool.pre_invoke
selector: {tool: [deploy]}
requires: {profiles: [tool]}
flow: [web_fetch]
effect: nudge
---
oar: "1.0"
namespace: acme.tenant
id: FREE_TIER
kind: policy
anchor: model.output
requires: {facts: [acme.gateway.tenant_tier]}
when: acme.gateway.tenant_tier == "free"
effect: warn
---
oar: "1.0"
namespace: acme.privacy
id: REDACT_EMAILS
kind: policy
anchor: model.output
requires: {facts: [acme.gateway.email_spans]}
effect: transform
transform: {action: redact, target: acme.gateway.email_spans}
`

// sealedBundle is the bundle of the capability and one pack of rules.
func sealedBundle(t testing.TB, rules string) *bundle.Bundle {
	t.Helper()
	capDocs, err := engine.DecodeDocuments([]byte(capability))
	if err != nil {
		t.Fatal(err)
	}
	ruleDocs, err := engine.DecodeDocuments([]byte(rules))
	if err != nil {
		t.Fatal(err)
	}
	b := &bundle.Bundle{Capability: capDocs[0].(map[string]any), Packs: []bundle.Pack{{Name: "acme", Generation: 1, Rules: ruleDocs}}, Configs: []bundle.Config{}}
	if err := b.Seal(); err != nil {
		t.Fatal(err)
	}
	return b
}

func side(t testing.TB, b *bundle.Bundle) Side {
	t.Helper()
	l, err := bundle.Load(b)
	if err != nil {
		t.Fatal(err)
	}
	return Side{Program: l.Program, Digest: b.Digest}
}

// generated is a deterministic workload: occurrence bodies, and how many are
// model.output occurrences of a free-tier tenant (what FREE_TIER fires on).
type generated struct {
	bodies   []string
	freeTier int
}

func generate(n, sessions int) generated {
	r := rand.New(rand.NewPCG(17, 17))
	tools := []string{"shell", "deploy", "web_fetch", "read", "search"}
	var g generated
	for range n {
		s := fmt.Sprintf("session-%03d", r.IntN(sessions))
		var body map[string]any
		switch k := r.IntN(10); {
		case k < 6:
			tool := tools[r.IntN(len(tools))]
			body = map[string]any{"anchor": "tool.pre_invoke", "session_id": s, "tool_call": map[string]any{"name": tool, "arguments": map[string]any{"n": r.IntN(100)}}}
			if r.IntN(20) == 0 {
				body["recent_activity"] = []string{"web_fetch"}
			}
		case k < 7:
			body = map[string]any{"anchor": "tool.post_invoke", "session_id": s, "tool_call": map[string]any{"name": tools[r.IntN(len(tools))], "arguments": map[string]any{}}}
		default:
			tier := []string{"free", "pro", "team"}[r.IntN(3)]
			if tier == "free" {
				g.freeTier++
			}
			// Spans inside the content are redacted; those past its end are skipped.
			n := r.IntN(100)
			spans := []any{}
			for range r.IntN(3) {
				start := r.IntN(600)
				spans = append(spans, map[string]any{"start": start, "end": start + 1 + r.IntN(20)})
			}
			body = map[string]any{"anchor": "content.output", "session_id": s, "content": strings.Repeat("wörd ", n),
				"facts": map[string]any{"acme.gateway.tenant_tier": tier, "acme.gateway.email_spans": spans}}
		}
		b, _ := json.Marshal(body)
		g.bodies = append(g.bodies, string(b))
	}
	return g
}

// logThroughSidecar posts every body to a sidecar serving b with the decision log on,
// as an agent host would, and returns the log it wrote.
func logThroughSidecar(t testing.TB, b *bundle.Bundle, bodies []string, mode decisionlog.ContentMode) []byte {
	t.Helper()
	var out bytes.Buffer
	dl := decisionlog.NewWriter(&out, decisionlog.Options{Content: mode, Sample: 1, Buffer: len(bodies)})
	sc := sidecar.New(sidecar.Options{DecisionLog: dl, Log: logr.Discard()})
	if _, err := sc.Source().Install(b); err != nil {
		t.Fatal(err)
	}
	h := sc.Handler()
	for _, body := range bodies {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/v1/evaluate", strings.NewReader(body)))
		if rec.Code != http.StatusOK {
			t.Fatalf("%s: %d %s", body, rec.Code, rec.Body)
		}
	}
	if err := dl.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if dl.Dropped() != 0 || dl.Written() != uint64(len(bodies)) {
		t.Fatalf("the log wrote %d lines and dropped %d of %d", dl.Written(), dl.Dropped(), len(bodies))
	}
	return out.Bytes()
}

func read(t testing.TB, data []byte) []decisionlog.Entry {
	t.Helper()
	log, err := decisionlog.Read(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	return log.Entries
}

// TestRoundTrip is the test that the log is complete: 10,000 occurrences over 150
// sessions, logged by a sidecar as it answered them, replayed against the rules that
// answered reproduce every logged decision and change none; against the same rules
// with FREE_TIER's effect changed from warn to block, exactly the free-tier model
// outputs change, to block, and the report names FREE_TIER for each.
func TestRoundTrip(t *testing.T) {
	g := generate(10000, 150)
	b := sealedBundle(t, rules)
	entries := read(t, logThroughSidecar(t, b, g.bodies, decisionlog.ContentFull))
	if len(entries) != 10000 {
		t.Fatalf("%d entries", len(entries))
	}

	same := Run(entries, Options{Before: side(t, b), After: side(t, b)})
	if same.Occurrences != 10000 || same.Sessions != 150 || same.Reproduced != 10000 || same.Mismatched != 0 || same.Changed != 0 || len(same.Unreproducible) != 0 {
		t.Fatalf("replay against the same rules: %d occurrences, %d sessions, %d reproduced, %d mismatched %v, %d changed, unreproducible %v",
			same.Occurrences, same.Sessions, same.Reproduced, same.Mismatched, same.Mismatches, same.Changed, same.Unreproducible)
	}
	// The workload exercises what must replay in order: the breaker, the flow, content.
	for _, want := range []string{"block", "transform", "nudge", "warn", "none"} {
		if same.Before.Of(want) == 0 {
			t.Errorf("no %s decision in the workload: %v", want, same.Before)
		}
	}

	changed := strings.Replace(rules, "when: acme.gateway.tenant_tier == \"free\"\neffect: warn", "when: acme.gateway.tenant_tier == \"free\"\neffect: block", 1)
	if changed == rules {
		t.Fatal("the rule change did not apply")
	}
	rep := Run(entries, Options{Before: side(t, b), After: side(t, sealedBundle(t, changed)), MaxListed: 5})
	if rep.Mismatched != 0 || rep.Changed != g.freeTier {
		t.Fatalf("%d changed (want %d, the free-tier outputs), %d mismatched", rep.Changed, g.freeTier, rep.Mismatched)
	}
	if rep.After.Of("block")-rep.Before.Of("block") != g.freeTier {
		t.Errorf("blocks before %v after %v; want %d more", rep.Before, rep.After, g.freeTier)
	}
	if len(rep.ByRule) != 1 || rep.ByRule[0] != (Count{"acme.tenant/FREE_TIER", g.freeTier}) || len(rep.ByTool) != 1 || rep.ByTool[0].Count != g.freeTier {
		t.Errorf("by rule %v, by tool %v", rep.ByRule, rep.ByTool)
	}
	if len(rep.Changes) != 5 || rep.ChangesNotListed != g.freeTier-5 {
		t.Errorf("%d changes listed and %d not; want 5 and %d", len(rep.Changes), rep.ChangesNotListed, g.freeTier-5)
	}
	for _, c := range rep.Changes {
		if c.Anchor != "content.output" || c.After.Decision != "block" || c.After.Rule != "acme.tenant/FREE_TIER" || !slices.Contains(c.Rules, "acme.tenant/FREE_TIER") {
			t.Errorf("change %+v", c)
		}
	}
}

// TestContentNotLogged: in omit mode the occurrences that carried content are
// reported, by line, as replayed without their text, and yet every decision
// reproduces: a placeholder of the logged length applies and skips the same spans.
func TestContentNotLogged(t *testing.T) {
	g := generate(2000, 40)
	b := sealedBundle(t, rules)
	entries := read(t, logThroughSidecar(t, b, g.bodies, decisionlog.ContentOmit))
	withContent, transformed := 0, 0
	for _, e := range entries {
		if e.Record.Content != nil {
			withContent++
		}
		if e.Record.Decision == "transform" {
			transformed++
		}
	}
	if transformed == 0 {
		t.Fatal("no transform in the workload")
	}
	rep := Run(entries, Options{Before: side(t, b), After: side(t, b)})
	if len(rep.Unreproducible) != 1 || rep.Unreproducible[0].Count != withContent || !strings.HasPrefix(rep.Unreproducible[0].Reason, ReasonContent+" (omit mode)") ||
		len(rep.Unreproducible[0].Lines) != DefaultMaxListed {
		t.Fatalf("unreproducible %+v; want the %d occurrences with content", rep.Unreproducible, withContent)
	}
	if rep.Mismatched != 0 || rep.Reproduced != len(entries) {
		t.Fatalf("%d mismatched: %+v", rep.Mismatched, rep.Mismatches)
	}
}

// TestAnotherBundle: lines a different bundle answered are named as such when they
// are not reproduced.
func TestAnotherBundle(t *testing.T) {
	g := generate(500, 10)
	b := sealedBundle(t, rules)
	entries := read(t, logThroughSidecar(t, b, g.bodies, decisionlog.ContentFull))
	other := sealedBundle(t, strings.Replace(rules, ">= 3", ">= 2", 1))
	rep := Run(entries, Options{Before: side(t, other), After: side(t, other)})
	if rep.Mismatched == 0 {
		t.Fatal("a tighter breaker reproduced every logged decision")
	}
	for _, m := range rep.Mismatches {
		if !strings.HasPrefix(m.Reason, ReasonBundle) || !strings.Contains(m.Reason, b.Digest) {
			t.Errorf("mismatch reason %q", m.Reason)
		}
	}
}

// TestSessionOrder: the entries of several logs read together replay per session in
// time order, whatever order the files came in.
func TestSessionOrder(t *testing.T) {
	g := generate(3000, 30)
	b := sealedBundle(t, rules)
	entries := read(t, logThroughSidecar(t, b, g.bodies, decisionlog.ContentFull))
	half := len(entries) / 2
	swapped := append(append([]decisionlog.Entry{}, entries[half:]...), entries[:half]...)
	rep := Run(swapped, Options{Before: side(t, b), After: side(t, b)})
	if rep.Mismatched != 0 || rep.Reproduced != len(entries) {
		t.Errorf("logs read out of order: %d mismatched %v", rep.Mismatched, rep.Mismatches)
	}
}

// TestResponsibleRules: a tighter breaker names the breaker, not the counting rule
// that fired on both sides; a rule that only lost the decision to a changed one is not
// named.
func TestResponsibleRules(t *testing.T) {
	g := generate(3000, 30)
	b := sealedBundle(t, rules)
	entries := read(t, logThroughSidecar(t, b, g.bodies, decisionlog.ContentFull))
	rep := Run(entries, Options{Before: side(t, b), After: side(t, sealedBundle(t, strings.Replace(rules, ">= 3", ">= 2", 1)))})
	if rep.Changed == 0 || len(rep.ByRule) != 1 || rep.ByRule[0] != (Count{"acme.ops/SHELL_LIMIT", rep.Changed}) {
		t.Errorf("%d changed, by rule %v; want all of them SHELL_LIMIT's", rep.Changed, rep.ByRule)
	}
	for _, c := range rep.Changes {
		if c.Tool != "shell" || c.Before.Decision != "warn" || c.After.Decision != "block" {
			t.Errorf("change %+v", c)
		}
	}
}

// line is a hand-built entry of session s: its line number, time (in seconds from an
// origin) and session versions (nil: none).
func line(n, at int, state *decisionlog.SessionState) decisionlog.Entry {
	origin := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	return decisionlog.Entry{Line: n, Occ: &engine.Occurrence{Anchor: "tool.pre_invoke", SessionID: "s"},
		Record: decisionlog.Record{Time: origin.Add(time.Duration(at) * time.Second), Session: "s", SessionState: state}}
}

func versions(read, written string) *decisionlog.SessionState {
	return &decisionlog.SessionState{Read: read, Written: written}
}

// TestInOrder: a session's lines that carry versions replay in the order the versions
// chain, whatever the replicas' clocks say, with the lines that carry none placed by
// time among them; when no line carries versions, or they make no order, in time order.
func TestInOrder(t *testing.T) {
	for _, tc := range []struct {
		name  string
		lines []decisionlog.Entry
		want  []int
	}{{
		name: "a chain through skewed times",
		lines: []decisionlog.Entry{line(1, 10, versions("", "v1")), line(2, 8, versions("v1", "v2")),
			line(3, 11, versions("v2", "v3")), line(4, 9, versions("v3", "v4"))},
		want: []int{1, 2, 3, 4},
	}, {
		name: "readers after the writer of their version and before its changer",
		lines: []decisionlog.Entry{line(1, 5, versions("", "v1")), line(2, 2, versions("v1", "v1")), line(3, 1, versions("v1", "v1")),
			line(4, 3, versions("v1", "v2")), line(5, 0, versions("v2", "v2"))},
		want: []int{1, 3, 2, 4, 5},
	}, {
		name: "several chains from the empty version, and a reader of it, in time order",
		lines: []decisionlog.Entry{line(1, 1, versions("", "a1")), line(2, 3, versions("a1", "a2")), line(3, 10, versions("", "c1")),
			line(4, 9, versions("c1", "c2")), line(5, 5, versions("", ""))},
		want: []int{1, 2, 5, 3, 4},
	}, {
		name:  "a chain starting at a version whose writer is not in the logs",
		lines: []decisionlog.Entry{line(1, 2, versions("v0", "v1")), line(2, 1, versions("v1", "v2")), line(3, 0, versions("v0", "v0"))},
		want:  []int{3, 1, 2},
	}, {
		name:  "two lines changing one version: time order",
		lines: []decisionlog.Entry{line(1, 3, versions("", "v1")), line(2, 2, versions("v1", "v2")), line(3, 1, versions("v1", "v3"))},
		want:  []int{3, 2, 1},
	}, {
		name:  "two lines writing one version: time order",
		lines: []decisionlog.Entry{line(1, 3, versions("", "v1")), line(2, 2, versions("v1", "v2")), line(3, 1, versions("", "v2"))},
		want:  []int{3, 2, 1},
	}, {
		name:  "a cycle no chain reaches: time order",
		lines: []decisionlog.Entry{line(1, 3, versions("", "v1")), line(2, 2, versions("v2", "v3")), line(3, 1, versions("v3", "v2"))},
		want:  []int{3, 2, 1},
	}, {
		name: "lines without versions placed by time among the chained ones",
		lines: []decisionlog.Entry{line(1, 3, versions("", "v1")), line(2, 2, versions("v1", "v2")), line(3, 1, nil),
			line(4, 4, versions("v2", "v3")), line(5, 3, nil), line(6, 9, nil)},
		want: []int{3, 1, 2, 5, 4, 6},
	}, {
		name:  "lines without versions among versions that make no order: time order",
		lines: []decisionlog.Entry{line(1, 3, versions("", "v1")), line(2, 2, versions("v1", "v2")), line(3, 1, versions("v1", "v3")), line(4, 0, nil)},
		want:  []int{4, 3, 2, 1},
	}, {
		name:  "no versions: time order, the log's order where times tie",
		lines: []decisionlog.Entry{line(1, 2, nil), line(2, 1, nil), line(3, 1, nil)},
		want:  []int{2, 3, 1},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			var got []int
			for _, e := range inOrder(slices.Clone(tc.lines), nil) {
				got = append(got, e.Line)
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("order %v, want %v", got, tc.want)
			}
		})
	}
}
