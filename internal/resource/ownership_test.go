package resource

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	rulesv1alpha1 "github.com/oar-operator/oar-operator/api/v1alpha1"
)

// TestOperatorBundle: a ConfigMap under the bundle name is the operator's when it
// carries both labels the operator writes, or when the Capability controls it; the
// capability label alone does not make it so.
func TestOperatorBundle(t *testing.T) {
	capability := &rulesv1alpha1.Capability{ObjectMeta: metav1.ObjectMeta{Name: "gateway", UID: "cap-1"}}
	controlled := []metav1.OwnerReference{{APIVersion: rulesv1alpha1.GroupVersion.String(), Kind: "Capability", Name: "gateway", UID: "cap-1", Controller: ptr.To(true)}}
	for _, c := range []struct {
		name       string
		labels     map[string]string
		owners     []metav1.OwnerReference
		capability *rulesv1alpha1.Capability
		want       bool
	}{
		{"both labels", map[string]string{ManagedByLabel: ManagedBy, CapabilityLabel: "gateway"}, nil, nil, true},
		{"both labels, another Capability's", map[string]string{ManagedByLabel: ManagedBy, CapabilityLabel: "other"}, nil, capability, false},
		{"the capability label alone", map[string]string{CapabilityLabel: "gateway"}, nil, capability, false},
		{"controlled by the Capability", nil, controlled, capability, true},
		{"controlled by a Capability that no longer exists", nil, controlled, nil, false},
	} {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: BundleName("gateway"), Labels: c.labels, OwnerReferences: c.owners}}
		if got := OperatorBundle(cm, "gateway", c.capability); got != c.want {
			t.Errorf("%s: OperatorBundle = %v, want %v", c.name, got, c.want)
		}
	}
}
