package admission

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/client"

	rulesv1alpha1 "github.com/oar-operator/oar-operator/api/v1alpha1"
	"github.com/oar-operator/oar-operator/internal/bundle"
	"github.com/oar-operator/oar-operator/internal/resource"
)

// skipAdmission labels the objects TestJudgeEquivalence puts in place around the one it
// judges: while it runs, the webhooks' objectSelector leaves them to the API server
// alone, so a set may hold objects the webhook would refuse, as Judge's sets do.
const skipAdmission = "test.rules.oar.dev/skip-admission"

// judgeScenario is a set of manifests, built in a namespace.
type judgeScenario struct {
	name    string
	objects func(tb testing.TB, ns string) []client.Object
}

// judgeScenarios cover what Judge reproduces of the webhook: refusals and their
// truncation, warnings about other packs, missing and invalid Capabilities, published
// configurations, and warnings past what the API server relays whole.
func judgeScenarios() []judgeScenario {
	gateway := func(ns string) client.Object { return capabilityObject(ns, "gateway", gatewaySpec()) }
	pk := func(tb testing.TB, ns, name string, rules ...map[string]any) client.Object {
		return rulePack(tb, ns, name, "gateway", 0, rules)
	}
	cfg := func(tb testing.TB, ns, name string, doc map[string]any) client.Object {
		return operatorConfig(tb, ns, name, "gateway", doc)
	}
	broken := func(ns, id string) map[string]any { return with(rule(ns, id), "when", "pth == 1") }
	return []judgeScenario{
		{"the samples", func(tb testing.TB, ns string) []client.Object {
			return []client.Object{gateway(ns), pk(tb, ns, "baseline", rule("acme.security", "READ")),
				cfg(tb, ns, "rollout", map[string]any{"oar_config": "1.0", "enforcement": map[string]any{"acme.security/READ": "monitor"}})}
		}},
		{"a pack that does not load, and a configuration naming its rule", func(tb testing.TB, ns string) []client.Object {
			return []client.Object{gateway(ns), pk(tb, ns, "broken", broken("acme.security", "READ")),
				cfg(tb, ns, "quiet", map[string]any{"oar_config": "1.0", "disable": []any{"acme.security/READ"}})}
		}},
		{"a rule two packs define", func(tb testing.TB, ns string) []client.Object {
			return []client.Object{gateway(ns), pk(tb, ns, "a", rule("acme.security", "READ")), pk(tb, ns, "b", rule("acme.security", "READ"))}
		}},
		{"overrides of other packs' rules", func(tb testing.TB, ns string) []client.Object {
			return []client.Object{gateway(ns),
				pk(tb, ns, "base", rule("acme.base", "A"), with(rule("acme.base", "B"), "mandatory", true)),
				pk(tb, ns, "drafts", broken("acme.drafts", "D")),
				pk(tb, ns, "team", with(rule("acme.team", "A"), "overrides", []any{"acme.base/A"}),
					with(rule("acme.team", "B"), "overrides", []any{"acme.base/B"}),
					with(rule("acme.team", "D"), "overrides", []any{"acme.drafts/D"}))}
		}},
		{"a suppression cycle across packs", func(tb testing.TB, ns string) []client.Object {
			return []client.Object{gateway(ns),
				pk(tb, ns, "a", with(rule("acme.a", "A"), "overrides", []any{"acme.b/B"})),
				pk(tb, ns, "b", with(rule("acme.b", "B"), "overrides", []any{"acme.a/A"}))}
		}},
		{"a missing Capability", func(tb testing.TB, ns string) []client.Object {
			return []client.Object{pk(tb, ns, "orphan", rule("acme.security", "READ")),
				cfg(tb, ns, "orphan", map[string]any{"oar_config": "1.0", "disable": []any{"acme.security/READ"}})}
		}},
		{"an invalid Capability", func(tb testing.TB, ns string) []client.Object {
			spec := gatewaySpec()
			spec.Profiles = append(spec.Profiles, "telepathy")
			return []client.Object{capabilityObject(ns, "gateway", spec), pk(tb, ns, "p", with(rule("acme.security", "READ"), "when", "pth == 1"))}
		}},
		{"a Capability without a profile a pack requires", func(tb testing.TB, ns string) []client.Object {
			spec := gatewaySpec()
			spec.Profiles = slices.DeleteFunc(spec.Profiles, func(p string) bool { return p == "filesystem" })
			return []client.Object{capabilityObject(ns, "gateway", spec), pk(tb, ns, "files", rule("acme.security", "READ"))}
		}},
		{"configurations against the published rule set", func(tb testing.TB, ns string) []client.Object {
			return []client.Object{gateway(ns), pk(tb, ns, "base", rule("acme.base", "A"), with(rule("acme.base", "B"), "mandatory", true)),
				cfg(tb, ns, "unknown", map[string]any{"oar_config": "1.0", "disable": []any{"acme.base/NONE"}}),
				cfg(tb, ns, "mandatory", map[string]any{"oar_config": "1.0", "disable": []any{"acme.base/B"}}),
				cfg(tb, ns, "shape", map[string]any{"oar_config": "1.0", "colour": "red"})}
		}},
		{"a bare id two packs define", func(tb testing.TB, ns string) []client.Object {
			return []client.Object{gateway(ns), pk(tb, ns, "base", rule("acme.base", "B")), pk(tb, ns, "twin", rule("acme.twin", "B")),
				cfg(tb, ns, "bare", map[string]any{"oar_config": "1.0", "enforcement": map[string]any{"B": "monitor"}})}
		}},
		{"more causes than a refusal lists", func(tb testing.TB, ns string) []client.Object {
			rules := make([]map[string]any, maxCauses+3)
			for i := range rules {
				rules[i] = broken("acme.many", fmt.Sprintf("R%02d", i))
			}
			return []client.Object{gateway(ns), pk(tb, ns, "many", rules...)}
		}},
		{"more warnings than the API server relays whole", func(tb testing.TB, ns string) []client.Object {
			rules := make([]map[string]any, maxWarnings+2)
			for i := range rules {
				rules[i] = rule("acme.twice", fmt.Sprintf("R%02d", i))
			}
			long := strings.Repeat("longname-", 28) + "x"
			return []client.Object{gateway(ns), pk(tb, ns, "short", rules...), pk(tb, ns, long, rules...)}
		}},
	}
}

// TestJudgeEquivalence: for every object of every scenario, Judge's verdict is what
// kubectl gets when that object is created (a server-side dry run) into a namespace
// holding the scenario's other objects, once the controller has published them — the
// refusal's status whole, and the warnings.
func TestJudgeEquivalence(t *testing.T) {
	needEnv(t)
	skipAdmissionByLabel(t)
	ctx := context.Background()
	wc, warned := warningClient(t)
	for _, sc := range judgeScenarios() {
		t.Run(sc.name, func(t *testing.T) {
			for i := range sc.objects(t, "") {
				ns := namespace(t)
				objects := sc.objects(t, ns)
				verdicts, err := Judge(ctx, objects)
				if err != nil {
					t.Fatal(err)
				}
				others := slices.Delete(slices.Clone(objects), i, i+1)
				setUp(t, objects[i], others)
				warned.take()
				err = wc.Create(ctx, objects[i], client.DryRunAll)
				compareVerdict(t, fmt.Sprintf("%T %s", objects[i], objects[i].GetName()), verdicts[i], err, warned.take())
			}
		})
	}
}

// compareVerdict fails the test where the webhook's answer (err, warnings) and Judge's
// verdict differ.
func compareVerdict(t *testing.T, what string, v Verdict, err error, warnings []string) {
	t.Helper()
	if !slices.Equal(warnings, texts(v.Warnings)) {
		t.Errorf("%s: warnings\n webhook: %q\n Judge:   %q", what, warnings, texts(v.Warnings))
	}
	if err == nil || v.Refusal == nil {
		if (err == nil) != (v.Refusal == nil) {
			t.Errorf("%s: the webhook says %v, Judge says %v", what, err, v.Refusal)
		}
		return
	}
	var status apierrors.APIStatus
	if !errors.As(err, &status) {
		t.Fatalf("%s: not a status: %v", what, err)
	}
	live, offline := status.Status(), v.Refusal.Status()
	if live.Message != offline.Message || live.Reason != offline.Reason || live.Code != offline.Code || !reflect.DeepEqual(live.Details, offline.Details) {
		t.Errorf("%s: refusal\n webhook: %+v\n Judge:   %+v", what, live, offline)
	}
	listed := offline.Details.Causes
	n := min(len(listed), maxCauses)
	if len(v.Causes) < n || !reflect.DeepEqual(causesOf(v.Causes[:n]), listed[:n]) || len(listed) <= maxCauses && len(v.Causes) != len(listed) {
		t.Errorf("%s: the causes listed are not the first of every cause:\n listed: %v\n every:  %v", what, listed, v.Causes)
	}
}

// setUp creates the others in the namespace, past the webhook, and waits until the
// webhook's cache holds them and the bundles published are the ones Judge assumes. The
// packs and configurations come first, in name order, and the Capabilities once the
// cache holds those, so the controller assembles what it publishes from all of them at
// once, as Judge does.
func setUp(t *testing.T, judged client.Object, others []client.Object) {
	t.Helper()
	var capabilities, rest []client.Object
	for _, o := range others {
		o.SetLabels(map[string]string{skipAdmission: "true"})
		if _, ok := o.(*rulesv1alpha1.Capability); ok {
			capabilities = append(capabilities, o)
		} else {
			rest = append(rest, o)
		}
	}
	slices.SortStableFunc(rest, func(a, b client.Object) int { return strings.Compare(a.GetName(), b.GetName()) })
	for _, group := range [][]client.Object{rest, capabilities} {
		for _, o := range group {
			mustCreate(t, o.DeepCopyObject().(client.Object))
		}
		for _, o := range group {
			seen(t, o)
		}
	}
	set, created, err := newSet(append([]client.Object{judged}, others...))
	if err != nil {
		t.Fatal(err)
	}
	view := set.without(created[0])
	for _, key := range capabilityKeys(append([]client.Object{judged}, others...)) {
		want, _, err := view.Bundle(context.Background(), key)
		if err != nil {
			t.Fatal(err)
		}
		eventually(t, "the bundle of "+key.String(), func() (bool, string) {
			got := liveBundle(key)
			return got == contentsOf(want), fmt.Sprintf("published %s, Judge assumes %s", got, contentsOf(want))
		})
	}
}

// capabilityKeys are the Capabilities the objects are or name.
func capabilityKeys(objects []client.Object) []types.NamespacedName {
	var keys []types.NamespacedName
	for _, o := range objects {
		key := types.NamespacedName{Namespace: o.GetNamespace()}
		switch o := o.(type) {
		case *rulesv1alpha1.Capability:
			key.Name = o.Name
		case *rulesv1alpha1.RulePack:
			key.Name = o.Spec.CapabilityRef.Name
		case *rulesv1alpha1.OperatorConfig:
			key.Name = o.Spec.CapabilityRef.Name
		}
		if !slices.Contains(keys, key) {
			keys = append(keys, key)
		}
	}
	return keys
}

// liveBundle is contentsOf the bundle the webhook's cache holds for the Capability.
func liveBundle(key types.NamespacedName) string {
	mgrMu.Lock()
	reader := cached
	mgrMu.Unlock()
	cm := &corev1.ConfigMap{}
	err := reader.Get(context.Background(), types.NamespacedName{Namespace: key.Namespace, Name: resource.BundleName(key.Name)}, cm)
	if apierrors.IsNotFound(err) {
		return contentsOf(nil)
	}
	if err != nil {
		return err.Error()
	}
	b, err := bundle.Decode(cm.Data, cm.BinaryData)
	if err != nil {
		return err.Error()
	}
	return contentsOf(b)
}

// contentsOf names the packs and configurations of a bundle, with their generations.
func contentsOf(b *bundle.Bundle) string {
	if b == nil {
		return "no bundle"
	}
	var parts []string
	for _, p := range b.Packs {
		parts = append(parts, fmt.Sprintf("pack %s@%d", p.Name, p.Generation))
	}
	for _, c := range b.Configs {
		parts = append(parts, fmt.Sprintf("config %s@%d", c.Name, c.Generation))
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

// causesOf renders field errors as the causes of a status.
func causesOf(errs []*field.Error) []metav1.StatusCause {
	out := make([]metav1.StatusCause, len(errs))
	for i, e := range errs {
		out[i] = metav1.StatusCause{Type: metav1.CauseType(e.Type), Message: e.ErrorBody(), Field: e.Field}
	}
	return out
}

// skipAdmissionByLabel gives the webhooks an objectSelector that leaves objects
// labelled skipAdmission alone until the test ends, and waits until the API server
// applies it.
func skipAdmissionByLabel(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	var list admissionregistrationv1.ValidatingWebhookConfigurationList
	if err := k8s.List(ctx, &list); err != nil {
		t.Fatal(err)
	}
	selector := &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: skipAdmission, Operator: metav1.LabelSelectorOpDoesNotExist}}}
	setSelector := func(s *metav1.LabelSelector) {
		for i := range list.Items {
			c := &list.Items[i]
			if !strings.HasSuffix(c.Webhooks[0].Name, ".rules.oar.dev") {
				continue
			}
			if err := k8s.Get(ctx, client.ObjectKeyFromObject(c), c); err != nil {
				t.Fatal(err)
			}
			for j := range c.Webhooks {
				c.Webhooks[j].ObjectSelector = s
			}
			if err := k8s.Update(ctx, c); err != nil {
				t.Fatal(err)
			}
		}
	}
	setSelector(selector)
	t.Cleanup(func() { setSelector(nil) })
	ns := namespace(t)
	probe := rulePack(t, ns, "probe", "gateway", 0, []map[string]any{with(rule("acme.probe", "P"), "oar", "9.9")})
	probe.Labels = map[string]string{skipAdmission: "true"}
	eventually(t, "the webhooks to skip labelled objects", func() (bool, string) {
		err := k8s.Create(ctx, probe.DeepCopy(), client.DryRunAll)
		return err == nil, fmt.Sprint(err)
	})
}
