package admission

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/oar-operator/oar-operator/internal/bundle"
	"github.com/oar-operator/oar-operator/internal/resource"
)

// TestForeignConfigMapUnderTheBundleNameHoldsNoBundle: a ConfigMap under a Capability's
// bundle name that carries the capability label but neither the operator's managed-by
// label nor the Capability as controller is foreign to the controller, which publishes
// nothing over it (resource.OperatorBundle). The webhook does not read it as the
// published bundle either, though it decodes as one.
func TestForeignConfigMapUnderTheBundleNameHoldsNoBundle(t *testing.T) {
	needEnv(t)
	ns := namespace(t)
	ctx := context.Background()
	doc, err := resource.CapabilityDocument(capabilityObject(ns, "gateway", gatewaySpec()))
	if err != nil {
		t.Fatal(err)
	}
	rules, errs := resource.PackRules(rulePack(t, ns, "base", "gateway", 1, []map[string]any{rule("acme.base", "A")}))
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	enc, err := bundle.Encode(&bundle.Bundle{Capability: doc, Packs: []bundle.Pack{{Name: "base", Generation: 1, Rules: rules}}})
	if err != nil {
		t.Fatal(err)
	}
	cm := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: resource.BundleName("gateway"), Labels: map[string]string{resource.CapabilityLabel: "gateway"}},
		Data:       enc.Data, BinaryData: enc.BinaryData,
	}
	mustCreate(t, cm)
	if b, err := bundle.Decode(cm.Data, cm.BinaryData); err != nil || b == nil {
		t.Fatalf("the ConfigMap does not hold a bundle: the test shows nothing: %v", err)
	}
	if resource.OperatorBundle(cm, "gateway", nil) {
		t.Fatal("the controller's test takes the ConfigMap as the operator's")
	}
	b, uids, err := (&ClientCluster{Reader: k8s}).Bundle(ctx, types.NamespacedName{Namespace: ns, Name: "gateway"})
	if err != nil {
		t.Fatal(err)
	}
	if b != nil || uids != nil {
		t.Errorf("a foreign ConfigMap is read as the published bundle: %d packs", len(b.Packs))
	}
}
