package replay

import (
	"slices"
	"strings"
	"testing"

	"github.com/oar-operator/oar-operator/internal/decisionlog"
)

// annotate is a transform rule on model outputs that fires on every one, so it can
// decide while another transform rule's part changes.
const annotate = `
---
oar: "1.0"
namespace: acme.aa
id: ANNOTATE
kind: policy
anchor: model.output
effect: transform
transform: {action: annotate, target: content, replacement: " [reviewed]"}
`

// redactEmails is REDACT_EMAILS of rules, as a document to remove.
const redactEmails = `---
oar: "1.0"
namespace: acme.privacy
id: REDACT_EMAILS
kind: policy
anchor: model.output
requires: {facts: [acme.gateway.email_spans]}
effect: transform
transform: {action: redact, target: acme.gateway.email_spans}
`

// advise warns on every shell call next to COUNT_SHELL, which decides, with copy of
// its own.
const advise = `
---
oar: "1.0"
namespace: acme.zz
id: ADVISE
kind: policy
anchor: tool.pre_invoke
selector: {tool: [shell]}
requires: {profiles: [tool]}
effect: warn
copy: {what: "Prefer the deploy tool."}
`

// changeOf replays the bodies, logged by a sidecar serving before, under before and
// after, and returns the report, which must reproduce the log.
func changeOf(t *testing.T, before, after string, bodies ...string) *Report {
	t.Helper()
	if before == after {
		t.Fatal("the rule change did not apply")
	}
	b := sealedBundle(t, before)
	entries := read(t, logThroughSidecar(t, b, bodies, decisionlog.ContentFull))
	rep := Run(entries, Options{Before: side(t, b), After: side(t, sealedBundle(t, after))})
	if rep.Mismatched != 0 {
		t.Fatalf("the log does not reproduce: %+v", rep.Mismatches)
	}
	return rep
}

func wantChange(t *testing.T, rep *Report, differs, rules []string) {
	t.Helper()
	if rep.Changed != 1 || len(rep.Changes) != 1 {
		t.Fatalf("%d changed, %+v; want one", rep.Changed, rep.Changes)
	}
	c := rep.Changes[0]
	if !slices.Equal(c.Differs, differs) || !slices.Equal(c.Rules, rules) {
		t.Errorf("the change differs in %v, due to %v; want %v, due to %v", c.Differs, c.Rules, differs, rules)
	}
}

const mailOutput = `{"anchor":"content.output","session_id":"s","content":"mail bob@example.com now","facts":{"acme.gateway.tenant_tier":"pro","acme.gateway.email_spans":[{"start":5,"end":20}]}}`

// TestRemovedTransformIsAChange: with ANNOTATE deciding on both sides, removing the
// rule that redacts emails changes the content delivered, which is a change, due to
// REDACT_EMAILS, though the effect and deciding rule are the same.
func TestRemovedTransformIsAChange(t *testing.T) {
	before := rules + annotate
	rep := changeOf(t, before, strings.Replace(before, redactEmails, "", 1), mailOutput)
	wantChange(t, rep, []string{PartTrace, PartTransforms, PartContent}, []string{"acme.privacy/REDACT_EMAILS"})
	if c := rep.Changes[0]; c.Before.Decision != c.After.Decision || c.Before.Rule != c.After.Rule {
		t.Errorf("the effect or deciding rule changed: %+v → %+v", c.Before, c.After)
	}
}

// TestChangedReplacementIsAChange: another replacement text changes the transforms and
// the content, nothing else.
func TestChangedReplacementIsAChange(t *testing.T) {
	before := rules + annotate
	rep := changeOf(t, before, strings.Replace(before, `" [reviewed]"`, `" [checked]"`, 1), mailOutput)
	wantChange(t, rep, []string{PartTransforms, PartContent}, []string{"acme.aa/ANNOTATE"})
}

// TestAdvisoryChangeIsAChange: the copy of a rule that only advises, and an advisory
// removed, are changes, due to the rule advising.
func TestAdvisoryChangeIsAChange(t *testing.T) {
	before := rules + advise
	shell := `{"anchor":"tool.pre_invoke","session_id":"s","tool_call":{"name":"shell","arguments":{}}}`
	rep := changeOf(t, before, strings.Replace(before, "Prefer the deploy tool.", "Use the deploy tool.", 1), shell)
	wantChange(t, rep, []string{PartAdvisories}, []string{"acme.zz/ADVISE"})
	if c := rep.Changes[0]; c.Before.Rule == "acme.zz/ADVISE" {
		t.Errorf("ADVISE decides: %+v; it must only advise", c.Before)
	}

	rep = changeOf(t, before, strings.Replace(before, "id: ADVISE\n", "id: ADVISE\nwhen: \"false\"\n", 1), shell)
	wantChange(t, rep, []string{PartTrace, PartAdvisories}, []string{"acme.zz/ADVISE"})
}

// TestCopyAndOnFireChangesAreChanges: copy given to the deciding rule, and a
// side-effect taken from a rule that fires, are changes, due to that rule.
func TestCopyAndOnFireChangesAreChanges(t *testing.T) {
	shell := `{"anchor":"tool.pre_invoke","session_id":"s","tool_call":{"name":"shell","arguments":{}}}`
	const countShell = "on_fire: [increment_counter, publish_event]\neffect: warn\n"
	rep := changeOf(t, rules, strings.Replace(rules, countShell, countShell+"copy: {what: \"Counted.\"}\n", 1), shell)
	wantChange(t, rep, []string{PartAdvisories, PartCopy}, []string{"acme.ops/COUNT_SHELL"})

	rep = changeOf(t, rules, strings.Replace(rules, countShell, "on_fire: [increment_counter]\neffect: warn\n", 1), shell)
	wantChange(t, rep, []string{PartOnFire}, []string{"acme.ops/COUNT_SHELL"})
}
