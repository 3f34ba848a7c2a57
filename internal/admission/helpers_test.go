package admission

import (
	"context"
	"encoding/json"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	rulesv1alpha1 "github.com/oar-operator/oar-operator/api/v1alpha1"
	"github.com/oar-operator/oar-operator/internal/bundle"
	"github.com/oar-operator/oar-operator/internal/resource"
)

// memoryCluster is a Cluster held in memory, for the validators' unit tests and the
// benchmark. Like ClientCluster, it lists no pack or configuration being deleted.
type memoryCluster struct {
	capabilities []*rulesv1alpha1.Capability
	packs        []rulesv1alpha1.RulePack
	configs      []rulesv1alpha1.OperatorConfig
	bundles      map[types.NamespacedName]*bundle.Bundle
	// uids are the identities recorded with each bundle, none when absent.
	uids map[types.NamespacedName]*resource.PublishedUIDs
}

func (m *memoryCluster) Capability(_ context.Context, key types.NamespacedName) (*rulesv1alpha1.Capability, error) {
	for _, c := range m.capabilities {
		if c.Namespace == key.Namespace && c.Name == key.Name {
			return c, nil
		}
	}
	return nil, nil
}

func (m *memoryCluster) RulePacks(_ context.Context, key types.NamespacedName) ([]rulesv1alpha1.RulePack, error) {
	var out []rulesv1alpha1.RulePack
	for _, p := range m.packs {
		if p.Namespace == key.Namespace && p.Spec.CapabilityRef.Name == key.Name && p.DeletionTimestamp.IsZero() {
			out = append(out, p)
		}
	}
	return out, nil
}

func (m *memoryCluster) OperatorConfigs(_ context.Context, key types.NamespacedName) ([]rulesv1alpha1.OperatorConfig, error) {
	var out []rulesv1alpha1.OperatorConfig
	for _, c := range m.configs {
		if c.Namespace == key.Namespace && c.Spec.CapabilityRef.Name == key.Name && c.DeletionTimestamp.IsZero() {
			out = append(out, c)
		}
	}
	return out, nil
}

func (m *memoryCluster) RulePack(ctx context.Context, key types.NamespacedName, name string) (*rulesv1alpha1.RulePack, error) {
	packs, _ := m.RulePacks(ctx, key)
	for i := range packs {
		if packs[i].Name == name {
			return &packs[i], nil
		}
	}
	return nil, nil
}

func (m *memoryCluster) OperatorConfig(ctx context.Context, key types.NamespacedName, name string) (*rulesv1alpha1.OperatorConfig, error) {
	configs, _ := m.OperatorConfigs(ctx, key)
	for i := range configs {
		if configs[i].Name == name {
			return &configs[i], nil
		}
	}
	return nil, nil
}

func (m *memoryCluster) Bundle(_ context.Context, key types.NamespacedName) (*bundle.Bundle, *resource.PublishedUIDs, error) {
	return m.bundles[key], m.uids[key], nil
}

// rawRules encodes rule documents as a RulePack's spec.rules.
func rawRules(tb testing.TB, rules []map[string]any) []apiextensionsv1.JSON {
	tb.Helper()
	out := make([]apiextensionsv1.JSON, len(rules))
	for i, r := range rules {
		b, err := json.Marshal(r)
		if err != nil {
			tb.Fatal(err)
		}
		out[i] = apiextensionsv1.JSON{Raw: b}
	}
	return out
}

// rulePack builds a RulePack object.
func rulePack(tb testing.TB, namespace, name, capability string, generation int64, rules []map[string]any) *rulesv1alpha1.RulePack {
	return &rulesv1alpha1.RulePack{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name, Generation: generation},
		Spec:       rulesv1alpha1.RulePackSpec{CapabilityRef: rulesv1alpha1.CapabilityReference{Name: capability}, Rules: rawRules(tb, rules)},
	}
}

// gatewaySpec is the sample Capability of config/samples with the session profile and a
// registered detector.
func gatewaySpec() rulesv1alpha1.CapabilitySpec {
	return rulesv1alpha1.CapabilitySpec{
		OARCapabilityVersion: "1.0",
		Host:                 "acme.gateway",
		Anchors: &rulesv1alpha1.CapabilityAnchors{
			Core: map[string]string{"tool.pre_invoke": "tool.pre_invoke", "tool.post_invoke": "tool.post_invoke",
				"model.input": "content.input", "model.output": "content.output"},
			Unsupported: []string{"tool.handler", "agent.post_turn", "agent.finalize", "model.tool_result"},
			Host:        []string{"gateway.pre_render"},
		},
		Profiles:           []string{"tool", "session", "filesystem", "content"},
		ActivityWindow:     ptr.To[int64](16),
		SupportsTransform:  ptr.To(true),
		ExpressionNodesMax: ptr.To[int64](1024),
		HostFacts:          []rulesv1alpha1.HostFact{{Name: "acme.gateway.email_spans", Type: "list<map>"}, {Name: "acme.gateway.tenant_tier", Type: "string"}},
		Detectors:          []string{"detector://presidio"},
	}
}

// capabilityObject builds a Capability object.
func capabilityObject(namespace, name string, spec rulesv1alpha1.CapabilitySpec) *rulesv1alpha1.Capability {
	return &rulesv1alpha1.Capability{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}, Spec: spec}
}

// rule is a valid rule of namespace ns: a selector, a condition, requirements and copy.
func rule(ns, id string) map[string]any {
	return map[string]any{
		"oar": "1.0", "namespace": ns, "id": id, "kind": "policy", "anchor": "tool.pre_invoke",
		"selector": map[string]any{"tool": []any{"read"}},
		"requires": map[string]any{"profiles": []any{"tool", "filesystem"}},
		"when":     `path_outside_scope("read")`,
		"effect":   "block",
		"copy":     map[string]any{"what": "The call to {{ tool }} reads outside the declared scope."},
	}
}

// with returns a copy of r with the members kv (name, value pairs) set; a nil value
// removes the member.
func with(r map[string]any, kv ...any) map[string]any {
	out := make(map[string]any, len(r)+len(kv)/2)
	for k, v := range r {
		out[k] = v
	}
	for i := 0; i < len(kv); i += 2 {
		if kv[i+1] == nil {
			delete(out, kv[i].(string))
		} else {
			out[kv[i].(string)] = kv[i+1]
		}
	}
	return out
}

// metaIn names an object in a namespace.
func metaIn(namespace, name string) metav1.ObjectMeta {
	return metav1.ObjectMeta{Namespace: namespace, Name: name}
}

// configJSON encodes a configuration document as an OperatorConfig's spec.config.
func configJSON(tb testing.TB, doc map[string]any) *apiextensionsv1.JSON {
	tb.Helper()
	b, err := json.Marshal(doc)
	if err != nil {
		tb.Fatal(err)
	}
	return &apiextensionsv1.JSON{Raw: b}
}

// operatorConfig builds an OperatorConfig object.
func operatorConfig(tb testing.TB, namespace, name, capability string, doc map[string]any) *rulesv1alpha1.OperatorConfig {
	return &rulesv1alpha1.OperatorConfig{
		ObjectMeta: metaIn(namespace, name),
		Spec: rulesv1alpha1.OperatorConfigSpec{CapabilityRef: rulesv1alpha1.CapabilityReference{Name: capability},
			Config: configJSON(tb, doc)},
	}
}
