package resource

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	rulesv1alpha1 "github.com/oar-operator/oar-operator/api/v1alpha1"
)

// LabelledBundle reports whether cm carries the labels the operator writes on the
// bundle ConfigMap of the Capability named capability.
func LabelledBundle(cm *corev1.ConfigMap, capability string) bool {
	return cm.Labels[ManagedByLabel] == ManagedBy && cm.Labels[CapabilityLabel] == capability
}

// OperatorBundle reports whether cm is the bundle ConfigMap the operator publishes for
// the Capability named name, capability (nil when it does not exist): labelled so, or
// controlled by it. Any other ConfigMap under the bundle's name is foreign: the
// controller publishes nothing over it, and what it holds is no published bundle.
func OperatorBundle(cm *corev1.ConfigMap, name string, capability *rulesv1alpha1.Capability) bool {
	return LabelledBundle(cm, name) || capability != nil && metav1.IsControlledBy(cm, capability)
}
