package controllers

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	dto "github.com/prometheus/client_model/go"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
	"sigs.k8s.io/yaml"

	rulesv1alpha1 "github.com/oar-operator/oar-operator/api/v1alpha1"
	"github.com/oar-operator/oar-operator/internal/bundle"
	"github.com/oar-operator/oar-operator/internal/resource"
	"github.com/oar-operator/oar-operator/internal/testenv"
	"github.com/oar-operator/oar-operator/internal/testpoll"
)

var (
	env *testenv.Env
	k8s client.Client

	mgrMu   sync.Mutex
	stopMgr func()
	// cached reads through the running manager's cache.
	cached client.Reader
)

func TestMain(m *testing.M) {
	// The manager's logs are noise in a passing run; OAR_TEST_VERBOSE shows them.
	ctrl.SetLogger(logr.Discard())
	if os.Getenv("OAR_TEST_VERBOSE") != "" {
		ctrl.SetLogger(zap.New(zap.WriteTo(os.Stderr)))
	}
	var err error
	if env, err = testenv.Start(testenv.Options{}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	k8s = env.Client
	code := 1
	if err := startManager(); err != nil {
		fmt.Fprintln(os.Stderr, err)
	} else {
		code = m.Run()
		stopManager()
	}
	if err := env.Stop(); err != nil {
		fmt.Fprintln(os.Stderr, err)
	}
	os.Exit(code)
}

// suiteConcurrency is the Capabilities the suite's manager reconciles at once: more
// than one, as the operator binary's default, so the tests' Capabilities also reconcile
// side by side.
const suiteConcurrency = 2

// startManager runs a manager with the bundle controller, as the operator binary does.
// The restart test stops it and starts another.
func startManager() error {
	mgr, err := env.StartManager(func(mgr ctrl.Manager) error {
		return (&BundleReconciler{Client: holdingClient{mgr.GetClient()}, APIReader: mgr.GetAPIReader(), Scheme: mgr.GetScheme(), Recorder: mgr.GetEventRecorder("oar-operator"),
			Concurrency: suiteConcurrency}).SetupWithManager(mgr)
	})
	if err != nil {
		return err
	}
	mgrMu.Lock()
	stopMgr, cached = mgr.Stop, mgr.GetCache()
	mgrMu.Unlock()
	return nil
}

// heldCapabilities are the Capabilities whose reads by the bundle controller wait for
// a test (holdCapability), keyed by types.NamespacedName: a reconcile of one of them
// runs until the test lets it go.
var heldCapabilities sync.Map

// hold is one held Capability: entered is closed once a reconcile reads it, and its
// reads wait until release is closed.
type hold struct {
	entered, release chan struct{}
	enter            sync.Once
}

// holdingClient is the bundle controller's client, whose reads of a held Capability
// wait until the test releases it.
type holdingClient struct{ client.Client }

func (c holdingClient) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	if _, ok := obj.(*rulesv1alpha1.Capability); ok {
		if v, ok := heldCapabilities.Load(key); ok {
			h := v.(*hold)
			h.enter.Do(func() { close(h.entered) })
			select {
			case <-h.release:
			case <-ctx.Done():
				return ctx.Err()
			}
		}
	}
	return c.Client.Get(ctx, key, obj, opts...)
}

// holdCapability makes the bundle controller's reads of the Capability key wait until
// the returned release is called (at the latest when the test ends), and returns a
// channel closed once a reconcile has read it.
func holdCapability(t *testing.T, key types.NamespacedName) (entered <-chan struct{}, release func()) {
	h := &hold{entered: make(chan struct{}), release: make(chan struct{})}
	heldCapabilities.Store(key, h)
	release = sync.OnceFunc(func() {
		heldCapabilities.Delete(key)
		close(h.release)
	})
	t.Cleanup(release)
	return h.entered, release
}

func stopManager() {
	mgrMu.Lock()
	defer mgrMu.Unlock()
	if stopMgr != nil {
		stopMgr()
		stopMgr = nil
	}
}

// reconcileCount reads how many reconciles the bundle controller has finished.
func reconcileCount(t *testing.T) float64 {
	return bundleMetric(t, "controller_runtime_reconcile_total", func(m *dto.Metric) float64 { return m.GetCounter().GetValue() })
}

// bundleMetric sums the values of the bundle controller's series of a metric family.
func bundleMetric(t *testing.T, family string, value func(*dto.Metric) float64) float64 {
	t.Helper()
	families, err := metrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var n float64
	for _, f := range families {
		if f.GetName() != family {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "controller" && l.GetValue() == "bundle" {
					n += value(m)
				}
			}
		}
	}
	return n
}

// TestCapabilitiesReconcileSideBySide: the bundle controller runs as many reconciles
// at once as it is given (controller-runtime never runs two of one Capability at once).
func TestCapabilitiesReconcileSideBySide(t *testing.T) {
	got := bundleMetric(t, "controller_runtime_max_concurrent_reconciles", func(m *dto.Metric) float64 { return m.GetGauge().GetValue() })
	if got != suiteConcurrency {
		t.Errorf("the bundle controller reconciles %v Capabilities at once, want %d", got, suiteConcurrency)
	}
}

// TestASlowCapabilityHoldsUpOnlyItself: while one Capability's reconcile is held in
// the middle, another Capability's pack is published all the same, and the held one's
// once it goes on (BundleReconciler.Concurrency).
func TestASlowCapabilityHoldsUpOnlyItself(t *testing.T) {
	slowNS, quickNS := namespace(t), namespace(t)
	slowCapability := sampleCapability(t, slowNS)
	entered, release := holdCapability(t, client.ObjectKeyFromObject(slowCapability))
	create(t, slowCapability)
	slow := pack(slowNS, "security", slowCapability.Name, rulesJSON(t, rule("acme.security", "SHELL")))
	create(t, slow)
	select {
	case <-entered:
	case <-time.After(timeout):
		t.Fatal("no reconcile read the held Capability")
	}

	publishedPack(t, quickNS)
	if c := meta.FindStatusCondition(conditionsOf(t, slow), rulesv1alpha1.ConditionReady); c != nil && c.Reason == rulesv1alpha1.ReasonPublished {
		t.Fatalf("the held Capability's pack is published: %+v", c)
	}
	release()
	waitReady(t, slow, metav1.ConditionTrue, rulesv1alpha1.ReasonPublished)
}

const (
	timeout = 30 * time.Second
	poll    = 10 * time.Millisecond
)

// eventually polls cond until it holds or the timeout passes.
func eventually(t *testing.T, what string, cond func() (bool, string)) {
	t.Helper()
	testpoll.Eventually(t, timeout, poll, what, cond)
}

// namespace creates a namespace of its own for one test.
func namespace(t *testing.T) string {
	t.Helper()
	return env.Namespace(t, "oar-test-")
}

// fromYAML decodes a manifest into obj and places it in ns.
func fromYAML(t *testing.T, ns, src string, obj client.Object) client.Object {
	t.Helper()
	if err := yaml.UnmarshalStrict([]byte(src), obj); err != nil {
		t.Fatalf("manifest: %v", err)
	}
	obj.SetNamespace(ns)
	return obj
}

func create(t *testing.T, obj client.Object) {
	t.Helper()
	if err := k8s.Create(context.Background(), obj); err != nil {
		t.Fatalf("create %T %s: %v", obj, obj.GetName(), err)
	}
}

// rulesJSON renders rule documents as the RulePack's verbatim items.
func rulesJSON(t testing.TB, rules ...map[string]any) []apiextensionsv1.JSON {
	t.Helper()
	out := make([]apiextensionsv1.JSON, len(rules))
	for i, r := range rules {
		raw, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		out[i] = apiextensionsv1.JSON{Raw: raw}
	}
	return out
}

// rule is a small valid rule of the sample capability.
func rule(ns, id string, extra ...any) map[string]any {
	r := map[string]any{"oar": "1.0", "namespace": ns, "id": id, "kind": "policy", "anchor": "tool.pre_invoke",
		"requires": map[string]any{"profiles": []any{"tool"}}, "when": `tool == "shell"`, "effect": "warn"}
	for i := 0; i+1 < len(extra); i += 2 {
		r[extra[i].(string)] = extra[i+1]
	}
	return r
}

func pack(ns, name, capability string, rules []apiextensionsv1.JSON) *rulesv1alpha1.RulePack {
	return &rulesv1alpha1.RulePack{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec:       rulesv1alpha1.RulePackSpec{CapabilityRef: rulesv1alpha1.CapabilityReference{Name: capability}, Rules: rules},
	}
}

func operatorConfig(t *testing.T, ns, name, capability string, order int64, doc map[string]any) *rulesv1alpha1.OperatorConfig {
	raw, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	return &rulesv1alpha1.OperatorConfig{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: rulesv1alpha1.OperatorConfigSpec{CapabilityRef: rulesv1alpha1.CapabilityReference{Name: capability},
			Order: order, Config: &apiextensionsv1.JSON{Raw: raw}},
	}
}

// sampleCapability is config/samples' Capability in ns.
func sampleCapability(t *testing.T, ns string) *rulesv1alpha1.Capability {
	t.Helper()
	data, err := os.ReadFile("../config/samples/rules_v1alpha1_capability.yaml")
	if err != nil {
		t.Fatal(err)
	}
	return fromYAML(t, ns, string(data), &rulesv1alpha1.Capability{}).(*rulesv1alpha1.Capability)
}

// published reads and verifies the bundle of a Capability, or nil.
func published(t *testing.T, ns, capability string) (*bundle.Bundle, *corev1.ConfigMap) {
	t.Helper()
	cm := &corev1.ConfigMap{}
	err := k8s.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: resource.BundleName(capability)}, cm)
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		t.Fatal(err)
	}
	b, err := bundle.Decode(cm.Data, cm.BinaryData)
	if err != nil {
		t.Fatalf("the published bundle does not decode: %v", err)
	}
	return b, cm
}

// waitBundle waits for a published bundle that satisfies ok.
func waitBundle(t *testing.T, ns, capability, what string, ok func(*bundle.Bundle) bool) (*bundle.Bundle, *corev1.ConfigMap) {
	t.Helper()
	var b *bundle.Bundle
	var cm *corev1.ConfigMap
	eventually(t, what, func() (bool, string) {
		b, cm = published(t, ns, capability)
		if b == nil {
			return false, "no bundle"
		}
		return ok(b), describeBundle(b)
	})
	return b, cm
}

func describeBundle(b *bundle.Bundle) string {
	s := "packs:"
	for _, p := range b.Packs {
		s += fmt.Sprintf(" %s@%d(%d rules)", p.Name, p.Generation, len(p.Rules))
	}
	s += " configs:"
	for _, c := range b.Configs {
		s += fmt.Sprintf(" %s@%d", c.Name, c.Generation)
	}
	return s
}

func packNames(b *bundle.Bundle) map[string]int64 {
	m := map[string]int64{}
	for _, p := range b.Packs {
		m[p.Name] = p.Generation
	}
	return m
}

// conditionsOf returns an object's conditions and observed generation after reading it.
func conditionsOf(t *testing.T, obj client.Object) []metav1.Condition {
	t.Helper()
	if err := k8s.Get(context.Background(), client.ObjectKeyFromObject(obj), obj); err != nil {
		t.Fatal(err)
	}
	switch o := obj.(type) {
	case *rulesv1alpha1.RulePack:
		return o.Status.Conditions
	case *rulesv1alpha1.OperatorConfig:
		return o.Status.Conditions
	case *rulesv1alpha1.Capability:
		return o.Status.Conditions
	}
	t.Fatalf("no conditions on %T", obj)
	return nil
}

// waitReady waits until obj's Ready condition has status and reason for its current
// generation.
func waitReady(t *testing.T, obj client.Object, status metav1.ConditionStatus, reason string) *metav1.Condition {
	t.Helper()
	var c *metav1.Condition
	eventually(t, fmt.Sprintf("%s Ready=%s/%s", obj.GetName(), status, reason), func() (bool, string) {
		c = meta.FindStatusCondition(conditionsOf(t, obj), rulesv1alpha1.ConditionReady)
		if c == nil {
			return false, "no Ready condition"
		}
		return c.Status == status && c.Reason == reason && c.ObservedGeneration == obj.GetGeneration(),
			fmt.Sprintf("%s/%s gen %d (object gen %d): %s", c.Status, c.Reason, c.ObservedGeneration, obj.GetGeneration(), c.Message)
	})
	return c
}
