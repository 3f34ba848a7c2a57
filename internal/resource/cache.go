package resource

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// BundleSelector selects the ConfigMaps carrying the labels the operator writes on every
// bundle ConfigMap (LabelledBundle, for some Capability).
func BundleSelector() labels.Selector {
	// Both requirements are made of constants that are valid label keys and values.
	managed, _ := labels.NewRequirement(ManagedByLabel, selection.Equals, []string{ManagedBy})
	capability, _ := labels.NewRequirement(CapabilityLabel, selection.Exists, nil)
	return labels.NewSelector().Add(*managed, *capability)
}

// CacheOptions is what the manager caches: of ConfigMaps, only the bundles
// (BundleSelector). Caching every ConfigMap of the cluster (kube-root-ca.crt in each
// namespace, applications' configuration) would cost the manager memory in proportion
// to the cluster rather than to its own resources. A ConfigMap under a bundle's name
// without those labels — someone else's, or a bundle whose labels were removed — is
// then not in the cache: whoever must tell it from an absent one reads past the cache
// when the cache has none.
func CacheOptions() cache.Options {
	return cache.Options{ByObject: map[client.Object]cache.ByObject{
		&corev1.ConfigMap{}: {Label: BundleSelector()},
	}}
}
