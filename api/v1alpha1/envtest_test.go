package v1alpha1_test

// These tests run the rules.oar.dev resources through a real kube-apiserver and etcd
// (internal/testenv): the generated CRDs install, the samples round-trip, OAR documents
// survive verbatim whatever their shape (the OAR engine, not the schema, judges them),
// status is written through the status subresource, and the names, categories and
// printer columns kubectl relies on are served.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/oar-operator/oar-operator/api/v1alpha1"
	"github.com/oar-operator/oar-operator/internal/engine"
	"github.com/oar-operator/oar-operator/internal/testenv"
)

var env *testenv.Env

func TestMain(m *testing.M) {
	var err error
	if env, err = testenv.Start(testenv.Options{}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := m.Run()
	if err := env.Stop(); err != nil {
		fmt.Fprintln(os.Stderr, "stopping the control plane:", err)
	}
	os.Exit(code)
}

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(t.Context(), time.Minute)
	t.Cleanup(cancel)
	return c
}

// namespace creates a fresh namespace for one test.
func namespace(t *testing.T) string {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "oar-test-"}}
	if err := env.Client.Create(ctx(t), ns); err != nil {
		t.Fatalf("creating a namespace: %v", err)
	}
	return ns.Name
}

// readSample decodes config/samples/NAME strictly into obj, so a sample member the Go
// types do not know fails here instead of being pruned by the API server.
func readSample(t *testing.T, name string, obj any) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(env.Root, "config", "samples", name))
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.UnmarshalStrict(data, obj); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
}

// generic turns JSON text into plain Go values for comparison (numbers as float64, so
// 1 and 1.0 compare equal; the number/string distinction is kept).
func generic(t *testing.T, data []byte) any {
	t.Helper()
	var v any
	if err := json.Unmarshal(data, &v); err != nil {
		t.Fatalf("%s: %v", data, err)
	}
	return v
}

func genericOf(t *testing.T, v any) any {
	t.Helper()
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return generic(t, data)
}

func sameJSON(t *testing.T, what string, got, want any) {
	t.Helper()
	if g, w := genericOf(t, got), genericOf(t, want); !reflect.DeepEqual(g, w) {
		gj, _ := json.Marshal(g)
		wj, _ := json.Marshal(w)
		t.Errorf("%s changed on the way through the API server:\n got %s\nwant %s", what, gj, wj)
	}
}

// oarDocuments reads config/samples/oar/NAME, a YAML stream of OAR documents, as the
// engine decodes it.
func oarDocuments(t *testing.T, name string) []any {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(env.Root, "config", "samples", "oar", name))
	if err != nil {
		t.Fatal(err)
	}
	docs, err := engine.DecodeDocuments(data)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return docs
}

// engineDoc decodes JSON text the way the controller hands it to the engine.
func engineDoc(t *testing.T, data []byte) any {
	t.Helper()
	v, err := engine.DecodeJSON(data)
	if err != nil {
		t.Fatalf("%s: %v", data, err)
	}
	return v
}

func TestSamplesRoundTripAndLoad(t *testing.T) {
	ns := namespace(t)
	c := env.Client

	var capability v1alpha1.Capability
	var pack, broken v1alpha1.RulePack
	var config v1alpha1.OperatorConfig
	readSample(t, "rules_v1alpha1_capability.yaml", &capability)
	readSample(t, "rules_v1alpha1_rulepack.yaml", &pack)
	readSample(t, "rules_v1alpha1_rulepack_broken.yaml", &broken)
	readSample(t, "rules_v1alpha1_operatorconfig.yaml", &config)

	// The samples wrap the documents of config/samples/oar, member for member.
	sameJSON(t, "the Capability sample's spec vs oar/capability.yaml", capability.Spec, oarDocuments(t, "capability.yaml")[0])
	sameJSON(t, "the OperatorConfig sample's config vs oar/config.yaml", config.Spec.Config, oarDocuments(t, "config.yaml")[0])
	byID := map[string]any{}
	for _, d := range oarDocuments(t, "rules.yaml") {
		byID[d.(map[string]any)["id"].(string)] = d
	}
	for i, r := range pack.Spec.Rules {
		var rule struct{ ID string }
		if err := json.Unmarshal(r.Raw, &rule); err != nil || byID[rule.ID] == nil {
			t.Fatalf("RulePack sample rule %d (%s) is not one of oar/rules.yaml (%v)", i, r.Raw, err)
		}
		sameJSON(t, "RulePack sample rule "+rule.ID, r, byID[rule.ID])
	}

	want := map[string]any{}
	for _, obj := range []client.Object{&capability, &pack, &broken, &config} {
		obj.SetNamespace(ns)
		want[obj.GetName()] = genericOf(t, reflect.ValueOf(obj).Elem().FieldByName("Spec").Interface())
		if err := c.Create(ctx(t), obj); err != nil {
			t.Fatalf("creating %s %s: %v", obj.GetObjectKind().GroupVersionKind().Kind, obj.GetName(), err)
		}
	}

	// Read every object back with a fresh value: the spec is what was sent.
	gotCap := &v1alpha1.Capability{}
	gotPack := &v1alpha1.RulePack{}
	gotBroken := &v1alpha1.RulePack{}
	gotConfig := &v1alpha1.OperatorConfig{}
	for name, obj := range map[string]client.Object{
		capability.Name: gotCap, pack.Name: gotPack, broken.Name: gotBroken, config.Name: gotConfig,
	} {
		if err := c.Get(ctx(t), client.ObjectKey{Namespace: ns, Name: name}, obj); err != nil {
			t.Fatalf("reading %s back: %v", name, err)
		}
		sameJSON(t, name+" spec", reflect.ValueOf(obj).Elem().FieldByName("Spec").Interface(), want[name])
	}

	// What the API server stored is what the engine loads: the capability is valid,
	// the pack loads against it, the configuration applies, and the broken pack is
	// refused for its unknown identifier.
	capJSON, err := json.Marshal(gotCap.Spec)
	if err != nil {
		t.Fatal(err)
	}
	loaded, errs := engine.LoadCapability(engineDoc(t, capJSON))
	if len(errs) > 0 {
		t.Fatalf("the stored Capability does not load: %v", errs)
	}
	rules := func(p *v1alpha1.RulePack) []any {
		var docs []any
		for _, r := range p.Spec.Rules {
			docs = append(docs, engineDoc(t, r.Raw))
		}
		return docs
	}
	rs, errs := engine.LoadRules(loaded, rules(gotPack))
	if len(errs) > 0 {
		t.Fatalf("the stored RulePack does not load: %v", errs)
	}
	if len(rs.Rules) != len(pack.Spec.Rules) {
		t.Errorf("loaded %d rules, want %d", len(rs.Rules), len(pack.Spec.Rules))
	}
	if _, errs := engine.Configure(rs, []any{engineDoc(t, gotConfig.Spec.Config.Raw)}); len(errs) > 0 {
		t.Fatalf("the stored OperatorConfig does not apply: %v", errs)
	}
	_, errs = engine.LoadRules(loaded, rules(gotBroken))
	if len(errs) == 0 {
		t.Fatal("the broken RulePack sample loads; it should be refused for an unknown identifier")
	}
	if e := errs[0]; e.Clause != "OAR-FACT-3" || e.Field != "when" || e.Index != 0 {
		t.Errorf("the broken sample is refused with %v; want [OAR-FACT-3] at [0].when", errs)
	}
}

// verbatimPack is applied the way kubectl applies YAML: converted to JSON on the
// client. Nothing in it is a valid OAR rule set, and the API server must keep it anyway.
const verbatimPack = `
apiVersion: rules.oar.dev/v1alpha1
kind: RulePack
metadata:
  name: verbatim
spec:
  capabilityRef: {name: acme-gateway}
  rules:
  - oar: 1.0
    namespace: acme.security
    id: NESTED
    anchor: tool.pre_invoke
    selector:
      tool: [read, write]
      x-acme-args: {path: {prefix: /etc, depth: 2, follow: false}}
    x-acme-owner: {team: security, tickets: [SEC-1, SEC-2]}
    when: tool_arg_int("size") > 2.5
    effect: block
    copy: {what: "{{ tool }} reads {{ tool_args.path }}"}
  - just a string
  - 42
  - [a, [nested], {list: true}]
  - false
  - {}
`

func TestRulesSurviveVerbatim(t *testing.T) {
	ns := namespace(t)
	c := env.Client

	var pack v1alpha1.RulePack
	if err := yaml.UnmarshalStrict([]byte(verbatimPack), &pack); err != nil {
		t.Fatal(err)
	}
	// A client sending JSON directly: the version as the number 1.0, not "1.0".
	pack.Spec.Rules = append(pack.Spec.Rules, apiextensionsv1.JSON{Raw: []byte(`{"oar":1.0,"id":"RAW","x-n":[1.5,-0,1e3]}`)})
	sent := genericOf(t, pack.Spec.Rules)
	pack.Namespace = ns
	if err := c.Create(ctx(t), &pack); err != nil {
		t.Fatalf("the API server refused rules it should keep verbatim: %v", err)
	}

	var got v1alpha1.RulePack
	if err := c.Get(ctx(t), client.ObjectKeyFromObject(&pack), &got); err != nil {
		t.Fatal(err)
	}
	if len(got.Spec.Rules) != 7 {
		t.Fatalf("stored %d rules, want 7: %s", len(got.Spec.Rules), genericOf(t, got.Spec.Rules))
	}
	sameJSON(t, "spec.rules", got.Spec.Rules, sent)

	first := engineDoc(t, got.Spec.Rules[0].Raw).(map[string]any)
	if v, ok := first["oar"].(json.Number); !ok || v.String() != "1" && v.String() != "1.0" {
		t.Errorf(`oar: 1.0 came back as %#v; want the number 1 (the engine must see a number, not "1.0")`, first["oar"])
	}
	owner, _ := first["x-acme-owner"].(map[string]any)
	if owner == nil || owner["team"] != "security" || !reflect.DeepEqual(owner["tickets"], []any{"SEC-1", "SEC-2"}) {
		t.Errorf("the x- extension member came back as %#v", first["x-acme-owner"])
	}
	depth := first["selector"].(map[string]any)["x-acme-args"].(map[string]any)["path"].(map[string]any)["depth"]
	if depth != json.Number("2") {
		t.Errorf("a nested number came back as %#v", depth)
	}
	for i, want := range []string{`"just a string"`, `42`, `false`, `{}`} {
		idx := []int{1, 2, 4, 5}[i]
		if raw := string(bytes.TrimSpace(got.Spec.Rules[idx].Raw)); raw != want {
			t.Errorf("rules[%d] came back as %s, want %s", idx, raw, want)
		}
	}
	last := engineDoc(t, got.Spec.Rules[6].Raw).(map[string]any)
	if _, ok := last["oar"].(json.Number); !ok {
		t.Errorf(`"oar":1.0 sent as JSON came back as %#v; want a number`, last["oar"])
	}

	// The same through an unstructured read, as a GitOps tool sees it.
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(v1alpha1.GroupVersion.WithKind("RulePack"))
	if err := c.Get(ctx(t), client.ObjectKeyFromObject(&pack), u); err != nil {
		t.Fatal(err)
	}
	items, _, _ := unstructured.NestedSlice(u.Object, "spec", "rules")
	sameJSON(t, "spec.rules read unstructured", items, sent)

	// An OperatorConfig keeps a document of any shape too: the engine names [OAR-CFG-1].
	cfg := &v1alpha1.OperatorConfig{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "not-an-object"},
		Spec: v1alpha1.OperatorConfigSpec{
			CapabilityRef: v1alpha1.CapabilityReference{Name: "acme-gateway"},
			Config:        &apiextensionsv1.JSON{Raw: []byte(`["disable", {"oar_config": 1.0, "x-y": {"z": null}}]`)},
		},
	}
	if err := c.Create(ctx(t), cfg); err != nil {
		t.Fatalf("the API server refused a configuration it should keep verbatim: %v", err)
	}
	var gotCfg v1alpha1.OperatorConfig
	if err := c.Get(ctx(t), client.ObjectKeyFromObject(cfg), &gotCfg); err != nil {
		t.Fatal(err)
	}
	sameJSON(t, "spec.config", gotCfg.Spec.Config, cfg.Spec.Config)
	if gotCfg.Spec.Order != 0 {
		t.Errorf("spec.order defaulted to %d, want 0", gotCfg.Spec.Order)
	}
}

func TestStatusSubresource(t *testing.T) {
	ns := namespace(t)
	c := env.Client
	now := metav1.Now().Rfc3339Copy()

	var pack v1alpha1.RulePack
	readSample(t, "rules_v1alpha1_rulepack.yaml", &pack)
	pack.Namespace = ns
	if err := c.Create(ctx(t), &pack); err != nil {
		t.Fatal(err)
	}
	status := v1alpha1.RulePackStatus{
		ObservedGeneration: pack.Generation,
		Conditions: []metav1.Condition{
			{Type: v1alpha1.ConditionReady, Status: metav1.ConditionTrue, Reason: v1alpha1.ReasonPublished,
				Message: "generation 1 is in bundle acme-gateway-oar-bundle", ObservedGeneration: pack.Generation, LastTransitionTime: now},
			{Type: v1alpha1.ConditionAccepted, Status: metav1.ConditionTrue, Reason: v1alpha1.ReasonPublished,
				Message: "3 rules load", ObservedGeneration: pack.Generation, LastTransitionTime: now},
		},
		LoadErrors: []v1alpha1.LoadError{{
			Rule: "acme.security/READ_OUTSIDE_SCOPE", Index: 0, Clause: "OAR-FACT-3", Field: "spec.rules[0].when",
			Value: `pth_outside_scope("read")`, Offset: ptr.To[int64](0), Message: `unknown identifier "pth_outside_scope" at offset 0; did you mean "path_outside_scope"?`,
			Suggestion: "path_outside_scope",
		}, {Index: -1, Clause: "OAR-DOC-9", Message: "duplicate qualified id"}},
		RuleCount:           3,
		PublishedGeneration: ptr.To[int64](1),
		Bundle:              &v1alpha1.BundleReference{ConfigMapName: "acme-gateway-oar-bundle", Digest: "sha256:0123"},
		Portability: &v1alpha1.PortabilitySummary{Portable: 2, NonPortable: 1, Rules: []v1alpha1.RulePortability{
			{Rule: "acme.privacy/REDACT_EMAILS", Reasons: []string{"host-tier fact acme.gateway.email_spans"}},
		}},
		Warnings: []string{"OperatorConfig acme-rollout names a rule this pack no longer has"},
	}
	pack.Status = status
	if err := c.Status().Update(ctx(t), &pack); err != nil {
		t.Fatalf("updating RulePack status: %v", err)
	}
	var got v1alpha1.RulePack
	if err := c.Get(ctx(t), client.ObjectKeyFromObject(&pack), &got); err != nil {
		t.Fatal(err)
	}
	sameJSON(t, "RulePack status", got.Status, status)
	if got.Generation != 1 {
		t.Errorf("a status update moved metadata.generation to %d", got.Generation)
	}

	// The main resource ignores status, and a spec change bumps the generation.
	got.Status.RuleCount = 99
	got.Spec.Rules = got.Spec.Rules[:1]
	if err := c.Update(ctx(t), &got); err != nil {
		t.Fatal(err)
	}
	if err := c.Get(ctx(t), client.ObjectKeyFromObject(&pack), &got); err != nil {
		t.Fatal(err)
	}
	if got.Status.RuleCount != 3 || got.Generation != 2 {
		t.Errorf("after a spec update: ruleCount %d (want 3, untouched), generation %d (want 2)", got.Status.RuleCount, got.Generation)
	}

	// `kubectl get rulepacks` columns, from the server-side table.
	table := serverTable(t, ns, "rulepacks")
	wantColumns := []string{"Name", "Ready", "Rules", "Capability", "Reason", "Age"}
	if cols := columnNames(table); !slices.Equal(cols, wantColumns) {
		t.Errorf("rulepacks columns %v, want %v", cols, wantColumns)
	}
	if len(table.Rows) != 1 || !reflect.DeepEqual(table.Rows[0].Cells[:5], []any{pack.Name, "True", float64(3), "acme-gateway", "Published"}) {
		t.Errorf("rulepacks row %v", table.Rows)
	}

	// Capability and OperatorConfig.
	var capability v1alpha1.Capability
	readSample(t, "rules_v1alpha1_capability.yaml", &capability)
	capability.Namespace = ns
	if err := c.Create(ctx(t), &capability); err != nil {
		t.Fatal(err)
	}
	capStatus := v1alpha1.CapabilityStatus{
		ObservedGeneration: 1,
		Conditions: []metav1.Condition{{Type: v1alpha1.ConditionReady, Status: metav1.ConditionFalse,
			Reason: v1alpha1.ReasonBundleTooLarge, Message: "pack huge held back", ObservedGeneration: 1, LastTransitionTime: now}},
		LoadErrors: []v1alpha1.LoadError{{Index: -1, Clause: "OAR-PROF-2", Field: "spec.anchors", Message: "core anchor tool.handler is declared neither in anchors.core nor in anchors.unsupported"}},
		Bundle:     &v1alpha1.BundleReference{ConfigMapName: "acme-gateway-oar-bundle", Digest: "sha256:abcd"},
		Packs:      []string{"acme-baseline"},
		Configs:    []string{"acme-rollout"},
		RuleCount:  3,
	}
	capability.Status = capStatus
	if err := c.Status().Update(ctx(t), &capability); err != nil {
		t.Fatalf("updating Capability status: %v", err)
	}
	var gotCap v1alpha1.Capability
	if err := c.Get(ctx(t), client.ObjectKeyFromObject(&capability), &gotCap); err != nil {
		t.Fatal(err)
	}
	sameJSON(t, "Capability status", gotCap.Status, capStatus)
	wantColumns = []string{"Name", "Ready", "Host", "Rules", "Digest", "Reason", "Age"}
	if cols := columnNames(serverTable(t, ns, "capabilities")); !slices.Equal(cols, wantColumns) {
		t.Errorf("capabilities columns %v, want %v", cols, wantColumns)
	}

	var config v1alpha1.OperatorConfig
	readSample(t, "rules_v1alpha1_operatorconfig.yaml", &config)
	config.Namespace = ns
	if err := c.Create(ctx(t), &config); err != nil {
		t.Fatal(err)
	}
	cfgStatus := v1alpha1.OperatorConfigStatus{
		ObservedGeneration: 1,
		Conditions: []metav1.Condition{{Type: v1alpha1.ConditionReady, Status: metav1.ConditionFalse,
			Reason: v1alpha1.ReasonCapabilityMissing, Message: "Capability acme-gateway does not exist", ObservedGeneration: 1, LastTransitionTime: now}},
		LoadErrors:          []v1alpha1.LoadError{{Index: 0, Clause: "OAR-CFG-4", Field: "spec.config.enforcement", Value: `"acme.ops/GONE"`, Message: "names no loaded rule"}},
		PublishedGeneration: ptr.To[int64](1),
	}
	config.Status = cfgStatus
	if err := c.Status().Update(ctx(t), &config); err != nil {
		t.Fatalf("updating OperatorConfig status: %v", err)
	}
	var gotConfig v1alpha1.OperatorConfig
	if err := c.Get(ctx(t), client.ObjectKeyFromObject(&config), &gotConfig); err != nil {
		t.Fatal(err)
	}
	sameJSON(t, "OperatorConfig status", gotConfig.Status, cfgStatus)
	table = serverTable(t, ns, "operatorconfigs")
	wantColumns = []string{"Name", "Ready", "Capability", "Order", "Reason", "Age"}
	if cols := columnNames(table); !slices.Equal(cols, wantColumns) {
		t.Errorf("operatorconfigs columns %v, want %v", cols, wantColumns)
	}
	if len(table.Rows) != 1 || !reflect.DeepEqual(table.Rows[0].Cells[:5], []any{config.Name, "False", "acme-gateway", float64(10), "CapabilityMissing"}) {
		t.Errorf("operatorconfigs row %v", table.Rows)
	}
}

// serverTable lists resource in ns as `kubectl get` does: as a server-side table.
func serverTable(t *testing.T, ns, resource string) *metav1.Table {
	t.Helper()
	cfg := rest.CopyConfig(env.Config)
	cfg.GroupVersion = &v1alpha1.GroupVersion
	cfg.APIPath = "/apis"
	cfg.NegotiatedSerializer = serializer.NewCodecFactory(env.Scheme).WithoutConversion()
	rc, err := rest.RESTClientFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	body, err := rc.Get().Namespace(ns).Resource(resource).
		SetHeader("Accept", "application/json;as=Table;v=v1;g=meta.k8s.io").DoRaw(ctx(t))
	if err != nil {
		t.Fatalf("listing %s as a table: %v", resource, err)
	}
	var table metav1.Table
	if err := json.Unmarshal(body, &table); err != nil {
		t.Fatal(err)
	}
	return &table
}

func columnNames(t *metav1.Table) []string {
	var names []string
	for _, c := range t.ColumnDefinitions {
		names = append(names, c.Name)
	}
	return names
}

func TestCRDNamesForKubectl(t *testing.T) {
	want := map[string]struct {
		kind, short string
		columns     []string
	}{
		"rulepacks.rules.oar.dev":       {"RulePack", "rpack", []string{"Ready", "Rules", "Capability", "Reason", "Age"}},
		"capabilities.rules.oar.dev":    {"Capability", "oarcap", []string{"Ready", "Host", "Rules", "Digest", "Reason", "Age"}},
		"operatorconfigs.rules.oar.dev": {"OperatorConfig", "oarconfig", []string{"Ready", "Capability", "Order", "Reason", "Age"}},
	}
	for name, w := range want {
		var crd apiextensionsv1.CustomResourceDefinition
		if err := env.Client.Get(ctx(t), client.ObjectKey{Name: name}, &crd); err != nil {
			t.Errorf("CRD %s: %v", name, err)
			continue
		}
		n := crd.Spec.Names
		if n.Kind != w.kind || !slices.Equal(n.ShortNames, []string{w.short}) || !slices.Equal(n.Categories, []string{"oar"}) ||
			crd.Spec.Scope != apiextensionsv1.NamespaceScoped {
			t.Errorf("%s: kind %s, short names %v, categories %v, scope %s; want %s, [%s], [oar], Namespaced",
				name, n.Kind, n.ShortNames, n.Categories, crd.Spec.Scope, w.kind, w.short)
		}
		if len(crd.Spec.Versions) != 1 || crd.Spec.Versions[0].Name != "v1alpha1" {
			t.Fatalf("%s: versions %v", name, crd.Spec.Versions)
		}
		v := crd.Spec.Versions[0]
		if v.Subresources == nil || v.Subresources.Status == nil {
			t.Errorf("%s: no status subresource", name)
		}
		var cols []string
		for _, c := range v.AdditionalPrinterColumns {
			cols = append(cols, c.Name)
			if c.Name == "Digest" && c.Priority != 1 {
				t.Errorf("%s: the Digest column has priority %d, want 1 (shown with -o wide)", name, c.Priority)
			}
		}
		if !slices.Equal(cols, w.columns) {
			t.Errorf("%s: printer columns %v, want %v", name, cols, w.columns)
		}
		spec := v.Schema.OpenAPIV3Schema.Properties["spec"]
		var verbatim apiextensionsv1.JSONSchemaProps
		switch w.kind {
		case "RulePack":
			verbatim = *spec.Properties["rules"].Items.Schema
		case "OperatorConfig":
			verbatim = spec.Properties["config"]
		default:
			continue
		}
		if verbatim.Type != "" || !ptr.Deref(verbatim.XPreserveUnknownFields, false) {
			t.Errorf("%s: the OAR documents' schema is type %q, preserve-unknown-fields %v; want no type, preserved",
				name, verbatim.Type, verbatim.XPreserveUnknownFields)
		}
	}

	// What `kubectl get oar` and `kubectl get rpack` resolve through: discovery.
	dc, err := discovery.NewDiscoveryClientForConfig(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	list, err := dc.ServerResourcesForGroupVersion(v1alpha1.GroupVersion.String())
	if err != nil {
		t.Fatal(err)
	}
	served := map[string]metav1.APIResource{}
	for _, r := range list.APIResources {
		served[r.Name] = r
	}
	for name, w := range want {
		plural := name[:len(name)-len(".rules.oar.dev")]
		r, ok := served[plural]
		if !ok {
			t.Errorf("discovery does not serve %s", plural)
			continue
		}
		if !slices.Contains(r.Categories, "oar") || !slices.Contains(r.ShortNames, w.short) || !r.Namespaced {
			t.Errorf("discovery serves %s with categories %v, short names %v, namespaced %v", plural, r.Categories, r.ShortNames, r.Namespaced)
		}
		if _, ok := served[plural+"/status"]; !ok {
			t.Errorf("discovery does not serve %s/status", plural)
		}
	}
}
