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
//
// No cached object keeps its metadata.managedFields, which nothing in the manager
// reads and which can outweigh the rest of a small object. An update sent from a cached
// copy, without them, leaves the API server's as they were (it keeps the live
// object's when a request has none); server-side apply (the chart's CRDs) goes through
// a client of its own, not the manager's cache.
func CacheOptions() cache.Options {
	return cache.Options{
		ByObject: map[client.Object]cache.ByObject{
			&corev1.ConfigMap{}: {Label: BundleSelector()},
		},
		DefaultTransform: cache.TransformStripManagedFields(),
	}
}
