package admission

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/oar-operator/oar-operator/internal/bundle"
	"github.com/oar-operator/oar-operator/internal/resource"
)

// unsharedView is a view of a set as Judge read it before the views shared anything:
// each view assembles each Capability's bundle itself, from objects converted anew.
type unsharedView struct {
	*setCluster
	bundles map[types.NamespacedName]*bundle.Bundle
}

func (u *unsharedView) Bundle(ctx context.Context, key types.NamespacedName) (*bundle.Bundle, *resource.PublishedUIDs, error) {
	if b, ok := u.bundles[key]; ok {
		return b, nil, nil
	}
	var b *bundle.Bundle
	if capability, _ := u.Capability(ctx, key); capability != nil {
		doc, err := resource.CapabilityDocument(capability)
		if err != nil {
			return nil, nil, err
		}
		in := bundle.Input{Capability: doc}
		for _, p := range u.boundPacks(key) {
			in.Packs = append(in.Packs, resource.AssemblyPack(p))
		}
		for _, c := range u.boundConfigs(key) {
			in.Configs = append(in.Configs, resource.AssemblyConfig(c))
		}
		res, err := bundle.Assemble(in)
		if err != nil {
			return nil, nil, err
		}
		b = res.Bundle
	}
	u.bundles[key] = b
	return b, nil, nil
}

// sharingSet is every judgeScenario, each in a namespace of its own, and a namespace
// holding two Capabilities with packs and configurations bound to each: a pack each
// defining the same rule (no conflict across Capabilities), a pack the webhook refuses,
// configurations naming a rule of their own Capability's pack, of the other's, and a
// bare id, and a pack and a configuration naming a Capability that does not exist.
func sharingSet(tb testing.TB) []client.Object {
	var objects []client.Object
	for i, sc := range judgeScenarios() {
		objects = append(objects, sc.objects(tb, fmt.Sprintf("scenario-%02d", i))...)
	}
	const ns = "multi"
	edge := gatewaySpec()
	edge.Host, edge.HostFacts = "acme.edge", nil
	doc := func(kv ...any) map[string]any {
		d := map[string]any{"oar_config": "1.0"}
		for i := 0; i < len(kv); i += 2 {
			d[kv[i].(string)] = kv[i+1]
		}
		return d
	}
	return append(objects,
		capabilityObject(ns, "gateway", gatewaySpec()),
		capabilityObject(ns, "edge", edge),
		rulePack(tb, ns, "base", "gateway", 0, []map[string]any{rule("acme.security", "READ"), with(rule("acme.security", "M"), "mandatory", true)}),
		rulePack(tb, ns, "edge-base", "edge", 0, []map[string]any{rule("acme.security", "READ"), rule("acme.edge", "E")}),
		rulePack(tb, ns, "twin", "gateway", 0, []map[string]any{rule("acme.twin", "READ")}),
		rulePack(tb, ns, "edge-twin", "edge", 0, []map[string]any{rule("acme.security", "READ")}),
		rulePack(tb, ns, "broken", "edge", 0, []map[string]any{with(rule("acme.broken", "B"), "when", "pth == 1")}),
		rulePack(tb, ns, "override", "gateway", 0, []map[string]any{with(rule("acme.team", "A"), "overrides", []any{"acme.security/READ"})}),
		rulePack(tb, ns, "stray", "nowhere", 0, []map[string]any{rule("acme.stray", "S")}),
		operatorConfig(tb, ns, "monitor", "gateway", doc("enforcement", map[string]any{"acme.security/READ": "monitor"})),
		operatorConfig(tb, ns, "mandatory", "gateway", doc("disable", []any{"acme.security/M"})),
		operatorConfig(tb, ns, "other-capability", "gateway", doc("disable", []any{"acme.edge/E"})),
		operatorConfig(tb, ns, "bare", "gateway", doc("enforcement", map[string]any{"READ": "monitor"})),
		operatorConfig(tb, ns, "edge-quiet", "edge", doc("disable", []any{"acme.edge/E", "acme.broken/B"})),
		operatorConfig(tb, ns, "stray", "nowhere", doc("disable", []any{"acme.stray/S"})),
	)
}

// rendered is everything kubectl shows of a verdict, and oarctl prints.
func rendered(tb testing.TB, v Verdict) string {
	tb.Helper()
	var b strings.Builder
	fmt.Fprintf(&b, "webhook %s\n", v.Webhook)
	if v.Refusal != nil {
		status, err := json.Marshal(v.Refusal.Status())
		if err != nil {
			tb.Fatal(err)
		}
		fmt.Fprintf(&b, "refusal %s\n%s\n", v.Refusal.Error(), status)
	}
	for _, c := range v.Causes {
		fmt.Fprintf(&b, "cause %s\n", c.Error())
	}
	for _, w := range v.Warnings {
		fmt.Fprintf(&b, "warning %s %s\n", w.Kind, w.Text)
	}
	return b.String()
}

// TestJudgeSharesOnlyWhatIsTheSame: the views of a set share the inputs made of its
// objects; every verdict is the one a view sharing nothing gives, byte for byte, on a
// set of several Capabilities, with packs bound to different ones, configurations, and
// refused objects, and Judge, judging them at once, gives the same. Assembly leaves the
// inputs it shares as they were made.
func TestJudgeSharesOnlyWhatIsTheSame(t *testing.T) {
	ctx := context.Background()
	objects := sharingSet(t)
	set, created, err := newSet(objects)
	if err != nil {
		t.Fatal(err)
	}
	ref, refCreated, err := newSet(objects)
	if err != nil {
		t.Fatal(err)
	}
	refused, warned := 0, 0
	verdicts := make([]Verdict, len(created))
	for i, obj := range created {
		got, err := judge(ctx, set.without(obj), obj)
		if err != nil {
			t.Fatal(err)
		}
		verdicts[i] = got
		want, err := judge(ctx, &unsharedView{ref.without(refCreated[i]), map[types.NamespacedName]*bundle.Bundle{}}, refCreated[i])
		if err != nil {
			t.Fatal(err)
		}
		what := fmt.Sprintf("%T %s/%s", obj, obj.GetNamespace(), obj.GetName())
		if g, w := rendered(t, got), rendered(t, want); g != w {
			t.Errorf("%s: sharing\n%s\nalone\n%s", what, g, w)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s: the verdicts differ past what is shown:\n%#v\n%#v", what, got, want)
		}
		if got.Refusal != nil {
			refused++
		}
		if len(got.Warnings) > 0 {
			warned++
		}
	}
	if refused < 3 || warned < 10 {
		t.Errorf("%d objects refused and %d warned: the set no longer covers what it is meant to", refused, warned)
	}
	all, err := Judge(ctx, objects)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(all, verdicts) {
		t.Error("Judge's verdicts are not those of its views")
	}
	for p, in := range set.packInputs {
		if fresh := resource.AssemblyPack(p); !reflect.DeepEqual(in, fresh) {
			t.Errorf("pack %s/%s: assembly changed its input", p.Namespace, p.Name)
		}
	}
	for c, in := range set.configInputs {
		if fresh := resource.AssemblyConfig(c); !reflect.DeepEqual(in, fresh) {
			t.Errorf("configuration %s/%s: assembly changed its input", c.Namespace, c.Name)
		}
	}
}
