package admission

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	rulesv1alpha1 "github.com/oar-operator/oar-operator/api/v1alpha1"
	"github.com/oar-operator/oar-operator/internal/bundle"
	"github.com/oar-operator/oar-operator/internal/engine"
	"github.com/oar-operator/oar-operator/internal/resource"
)

// defaultVariants is how many packs TestEquivalence sends through the API server in
// `make test`; `make fuzz` sends more through variantsEnv.
const defaultVariants = 1200

// variantsEnv, when set, is the number of pack variants TestEquivalence sends.
const variantsEnv = "OAR_EQUIVALENCE_VARIANTS"

// equivalenceVariants is the number of pack variants to send; a sixth as many
// Capability updates go with them.
func equivalenceVariants(t *testing.T) int {
	v := os.Getenv(variantsEnv)
	if v == "" {
		return defaultVariants
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		t.Fatalf("%s=%q: want a positive count", variantsEnv, v)
	}
	return n
}

// equivalenceBases are rules that load against gatewaySpec, one per shape: a tool
// policy, a content invariant, a transform, a host-anchored rule, a flow, a detector.
func equivalenceBases() []map[string]any {
	return []map[string]any{
		rule("acme.security", "READ"),
		{"oar": "1.0", "namespace": "acme.ops", "id": "LARGE", "kind": "invariant", "anchor": "model.output",
			"requires": map[string]any{"profiles": []any{"content"}}, "when": "content_length > 2000", "effect": "warn"},
		{"oar": "1.0", "namespace": "acme.privacy", "id": "REDACT", "kind": "policy", "anchor": "model.output",
			"requires": map[string]any{"facts": []any{"acme.gateway.email_spans"}}, "effect": "transform",
			"transform": map[string]any{"action": "redact", "target": "acme.gateway.email_spans"}},
		{"oar": "1.0", "namespace": "acme.ui", "id": "RENDER", "kind": "policy", "anchor": "gateway.pre_render", "effect": "allow"},
		{"oar": "1.0", "namespace": "acme.security", "id": "EXFIL", "kind": "policy", "anchor": "tool.pre_invoke",
			"flow": []any{"read", "send"}, "effect": "block"},
		{"oar": "1.0", "namespace": "acme.privacy", "id": "PII", "kind": "detector", "anchor": "model.output",
			"detector": map[string]any{"ref": "detector://presidio"}, "effect": "warn"},
	}
}

// mutation changes one rule of a pack; others are the qualified identifiers of the pack.
type mutation func(rng *rand.Rand, r map[string]any, others []string)

// pick returns one of the values.
func pick(rng *rand.Rand, values ...any) any { return values[rng.IntN(len(values))] }

// setOrDelete sets the member to v, or removes it when v is nil.
func setOrDelete(r map[string]any, member string, v any) {
	if v == nil {
		delete(r, member)
	} else {
		r[member] = v
	}
}

// mutations change fields, conditions and references, into valid and invalid rules.
var mutations = []mutation{
	func(rng *rand.Rand, r map[string]any, _ []string) {
		r["oar"] = pick(rng, "1.0", "1.1", "2.0", json.Number("1.0"), "1", "01.0")
	},
	func(rng *rand.Rand, r map[string]any, _ []string) {
		setOrDelete(r, "id", pick(rng, fmt.Sprintf("RULE_%d", rng.IntN(1000)), "bad-id", json.Number("42"), "", nil))
	},
	func(rng *rand.Rand, r map[string]any, _ []string) {
		setOrDelete(r, "namespace", pick(rng, "acme.extra", "Acme", json.Number("7"), nil))
	},
	func(rng *rand.Rand, r map[string]any, _ []string) {
		r["kind"] = pick(rng, "policy", "schema", "invariant", "detector", "rule", true)
	},
	func(rng *rand.Rand, r map[string]any, _ []string) {
		r["anchor"] = pick(rng, "tool.pre_invoke", "model.output", "agent.finalize", "gateway.pre_render", "nowhere", "")
	},
	func(rng *rand.Rand, r map[string]any, _ []string) {
		r["effect"] = pick(rng, "block", "warn", "allow", "nudge", "transform", "deny")
	},
	func(rng *rand.Rand, r map[string]any, others []string) {
		r["when"] = pick(rng, `tool == "read"`, "content_length > 10", `"admin" in principal_roles`, "pth == 1", "tool ==",
			"tool > 3", `acme.gateway.tenant_tier == "gold"`, `path_outside_scope("read")`,
			fmt.Sprintf(`fire_count_of(%q) > 1`, others[rng.IntN(len(others))]), `fire_count_of("acme.nowhere/GONE") > 1`,
			// [OAR-EXPR-3]: a \u escape may name a surrogate; \x is no escape.
			`tool == "\ud800"`, `size("\ud83d\ude00") == 2`, `tool == "\x41"`)
	},
	func(rng *rand.Rand, r map[string]any, _ []string) {
		setOrDelete(r, "requires", pick(rng,
			map[string]any{"profiles": []any{"tool", "filesystem"}}, map[string]any{"profiles": []any{"mcp"}},
			map[string]any{"profiles": []any{"tool", "session", "content"}}, map[string]any{"facts": []any{"acme.gateway.tenant_tier"}},
			map[string]any{"profiles": "tool"}, nil))
	},
	func(rng *rand.Rand, r map[string]any, _ []string) {
		setOrDelete(r, "selector", pick(rng, map[string]any{"tool": []any{"read"}}, map[string]any{"tool": "read"},
			map[string]any{"nope": []any{"x"}}, map[string]any{"tool": []any{}}, nil))
	},
	func(rng *rand.Rand, r map[string]any, others []string) {
		r["overrides"] = pick(rng, []any{others[rng.IntN(len(others))]}, []any{"acme.nowhere/GONE"}, []any{"bad ref!"}, "READ")
	},
	func(rng *rand.Rand, r map[string]any, others []string) {
		r["on_error"] = pick(rng, "fail_open", "fail_closed", others[rng.IntN(len(others))], "acme.nowhere/GONE", "explode!")
	},
	func(rng *rand.Rand, r map[string]any, _ []string) {
		r["mandatory"] = pick(rng, true, false, "yes")
	},
	func(rng *rand.Rand, r map[string]any, _ []string) {
		setOrDelete(r, "copy", pick(rng, map[string]any{"what": "{{ tool }} was called"}, map[string]any{"what": "{{ nope }}"},
			map[string]any{"what": "{% if tool %}open"}, "text", nil))
	},
	func(rng *rand.Rand, r map[string]any, _ []string) {
		k := pick(rng, "severity", "x-acme-owner").(string)
		r[k] = "someone"
	},
	func(rng *rand.Rand, r map[string]any, _ []string) {
		setOrDelete(r, "transform", pick(rng, map[string]any{"action": "redact", "target": "acme.gateway.email_spans"},
			map[string]any{"action": "shred", "target": "content"}, map[string]any{"action": "replace", "target": "content"}, nil))
	},
	func(rng *rand.Rand, r map[string]any, _ []string) {
		long := make([]any, 17)
		for i := range long {
			long[i] = "read"
		}
		setOrDelete(r, "flow", pick(rng, []any{"read"}, []any{}, []any{""}, long, nil))
	},
	func(rng *rand.Rand, r map[string]any, others []string) {
		qid := others[rng.IntN(len(others))]
		r["namespace"], r["id"] = namespaceOf(qid), idOf(qid)
	},
	func(rng *rand.Rand, r map[string]any, _ []string) {
		r["on_fire"] = pick(rng, []any{"increment_counter"}, []any{"explode"}, "publish_event")
	},
	func(rng *rand.Rand, r map[string]any, _ []string) {
		r["enforcement"] = pick(rng, "monitor", "off", "loud")
	},
}

// variant is a pack of one to four rules taken from the bases (each with an id of its
// own), then zero to two mutations.
func variant(rng *rand.Rand) []map[string]any {
	bases := equivalenceBases()
	rules := make([]map[string]any, 1+rng.IntN(4))
	qids := make([]string, len(rules))
	for i := range rules {
		rules[i] = with(bases[rng.IntN(len(bases))], "id", fmt.Sprintf("R%d", i))
		qids[i] = rules[i]["namespace"].(string) + "/" + rules[i]["id"].(string)
	}
	for range rng.IntN(3) {
		mutations[rng.IntN(len(mutations))](rng, rules[rng.IntN(len(rules))], qids)
	}
	return rules
}

// TestEquivalence: for generated valid and invalid packs, the webhook admits exactly the
// packs the engine loads. The packs go through the API server as dry runs, against a
// Capability no other pack names, and straight to engine.LoadRules. Then generated
// Capability updates go through as dry runs against a Capability with a published pack:
// the webhook admits exactly the updates the controller would publish (bundle.Assemble
// holds none of it back as CapabilityNarrowed).
func TestEquivalence(t *testing.T) {
	needEnv(t)
	ns := namespace(t)
	ctx := context.Background()
	capability := capabilityObject(ns, "gateway", gatewaySpec())
	mustCreate(t, capability)
	doc, err := resource.CapabilityDocument(capability)
	if err != nil {
		t.Fatal(err)
	}
	c, errs := engine.LoadCapability(doc)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	for _, b := range equivalenceBases() {
		if _, errs := engine.LoadRules(c, []any{decodedDoc(t, b)}); len(errs) > 0 {
			t.Fatalf("base %s/%s does not load: %v", b["namespace"], b["id"], errs)
		}
	}
	variants := equivalenceVariants(t)
	rng := rand.New(rand.NewPCG(2026, 4))
	admitted, refused := 0, 0
	for i := range variants {
		pack := rulePack(t, ns, fmt.Sprintf("variant-%04d", i), "gateway", 0, variant(rng))
		rules, errs := resource.PackRules(pack)
		if len(errs) == 0 {
			_, errs = engine.LoadRules(c, rules)
		}
		err := k8s.Create(ctx, pack, client.DryRunAll)
		switch {
		case err == nil:
			admitted++
		case apierrors.IsInvalid(err):
			refused++
		default:
			t.Fatalf("variant %d: %v", i, err)
		}
		if loads := len(errs) == 0; loads != (err == nil) {
			t.Errorf("variant %d: the engine says loads=%v, the webhook says %v\nrules: %s\nengine: %v", i, loads, err, pack.Spec.Rules, errs)
		}
	}
	t.Logf("%d pack variants: %d admitted, %d refused", variants, admitted, refused)
	if admitted < variants/5 || refused < variants/5 {
		t.Errorf("the variants do not exercise both verdicts: %d admitted, %d refused", admitted, refused)
	}
	capabilityUpdates(t, ns, rng, variants/6)
}

// capabilityUpdates sends n generated updates of a Capability whose bundle publishes one
// pack of every base rule, as dry runs, and checks each verdict against the controller's.
func capabilityUpdates(t *testing.T, ns string, rng *rand.Rand, n int) {
	ctx := context.Background()
	narrowing := capabilityObject(ns, "narrowing", gatewaySpec())
	mustCreate(t, narrowing)
	bases := equivalenceBases()
	for i := range bases {
		bases[i] = with(bases[i], "id", fmt.Sprintf("P%d", i))
	}
	held := rulePack(t, ns, "published", "narrowing", 0, bases)
	mustCreate(t, held)
	published(t, ns, "narrowing", []*rulesv1alpha1.RulePack{held})
	cm := &corev1.ConfigMap{}
	if err := k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: resource.BundleName("narrowing")}, cm); err != nil {
		t.Fatal(err)
	}
	current, err := bundle.Decode(cm.Data, cm.BinaryData)
	if err != nil {
		t.Fatal(err)
	}
	if err := k8s.Get(ctx, client.ObjectKeyFromObject(held), held); err != nil {
		t.Fatal(err)
	}
	packs := []bundle.PackInput{resource.AssemblyPack(held)}
	admitted, refused := 0, 0
	for i := range n {
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(narrowing), narrowing); err != nil {
			t.Fatal(err)
		}
		update := narrowing.DeepCopy()
		capabilityVariant(rng, &update.Spec)
		err := k8s.Update(ctx, update, client.DryRunAll)
		switch {
		case err == nil:
			admitted++
		case apierrors.IsInvalid(err):
			refused++
		default:
			t.Fatalf("capability update %d: %v", i, err)
		}
		doc, derr := resource.CapabilityDocument(update)
		if derr != nil {
			t.Fatal(derr)
		}
		res, aerr := bundle.Assemble(bundle.Input{Capability: doc, Packs: packs, Current: current})
		if aerr != nil {
			t.Fatal(aerr)
		}
		publishes := len(res.CapabilityErrors) == 0 && len(res.Held) == 0
		if publishes != (err == nil) {
			t.Errorf("capability update %d: the controller publishes=%v (held %v, %v), the webhook says %v\nspec: %+v",
				i, publishes, res.Held, res.CapabilityErrors, err, update.Spec)
		}
	}
	t.Logf("%d capability updates: %d admitted, %d refused", n, admitted, refused)
	if admitted < n/5 || refused < n/5 {
		t.Errorf("the capability updates do not exercise both verdicts: %d admitted, %d refused", admitted, refused)
	}
}

// capabilityVariant narrows, widens or breaks one to three members of a capability
// document.
func capabilityVariant(rng *rand.Rand, s *rulesv1alpha1.CapabilitySpec) {
	edits := []func(){
		func() {
			all := []string{"tool", "session", "filesystem", "content", "mcp"}
			var keep []string
			for _, p := range all {
				if rng.IntN(3) > 0 {
					keep = append(keep, p)
				}
			}
			if rng.IntN(20) == 0 {
				keep = append(keep, "telepathy")
			}
			s.Profiles = keep
		},
		func() {
			anchor := pick(rng, "tool.pre_invoke", "tool.post_invoke", "model.input", "model.output").(string)
			delete(s.Anchors.Core, anchor)
			if rng.IntN(4) > 0 {
				s.Anchors.Unsupported = append(s.Anchors.Unsupported, anchor)
			}
		},
		func() {
			s.Anchors.Host = pick(rng, []string{}, []string{"gateway.pre_render", "gateway.post_render"}).([]string)
		},
		func() { s.HostFacts = s.HostFacts[:rng.IntN(len(s.HostFacts)+1)] },
		func() { s.Detectors = pick(rng, []string{}, []string{"detector://other"}).([]string) },
		func() { s.SupportsTransform = ptr.To(rng.IntN(2) == 0) },
		func() { s.ActivityWindow = ptr.To(int64(pick(rng, 1, 4, 16, 64).(int))) },
		func() { s.ExpressionNodesMax = ptr.To(int64(pick(rng, 4, 16, 1024).(int))) },
	}
	for range 1 + rng.IntN(3) {
		edits[rng.IntN(len(edits))]()
	}
}

// decodedDoc decodes a document the way the engine reads one.
func decodedDoc(tb testing.TB, v any) any {
	tb.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		tb.Fatal(err)
	}
	d, err := engine.DecodeJSON(b)
	if err != nil {
		tb.Fatal(err)
	}
	return d
}
