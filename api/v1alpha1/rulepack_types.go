package v1alpha1

import (
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// RulePackSpec is a publisher's OAR rule set, bound to one Capability.
type RulePackSpec struct {
	// The Capability, in this namespace, the rules are loaded against.
	// +required
	CapabilityRef CapabilityReference `json:"capabilityRef"`

	// The OAR rule documents (OAR 1.0 section 3), verbatim, with their own
	// member names: oar, namespace, id, kind, anchor, selector, requires,
	// when, flow, effect, copy, transform, on_fire, ... Each item is kept
	// exactly as written; the admission webhook and the controller load them
	// with the OAR engine, which names the clause and the field of every
	// problem. Quote the version in YAML (oar: "1.0"). The pack loads or not
	// as a whole.
	// +optional
	// +listType=atomic
	Rules []apiextensionsv1.JSON `json:"rules,omitempty"`
}

// RulePackStatus is what the controller observed of a RulePack.
type RulePackStatus struct {
	// The generation of the RulePack this status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// Ready (the current generation is in the published bundle) and Accepted
	// (the rules load against the Capability on their own), each with a
	// reason: Published, LoadFailed, Conflict, CapabilityMissing,
	// CapabilityInvalid, BundleTooLarge, Pending.
	// +optional
	// +listType=map
	// +listMapKey=type
	// +patchStrategy=merge
	// +patchMergeKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty" patchStrategy:"merge" patchMergeKey:"type"`

	// Why the rules do not load, one entry per problem, each naming the
	// clause, the rule and the field (spec.rules[2].when).
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=100
	LoadErrors []LoadError `json:"loadErrors,omitempty"`

	// The number of rules in spec.rules.
	// +optional
	RuleCount int32 `json:"ruleCount,omitempty"`

	// The generation of this RulePack serving in the published bundle, if any.
	// It lags metadata.generation while a newer generation is refused: a bad
	// edit never removes enforcement that was working.
	// +optional
	PublishedGeneration *int64 `json:"publishedGeneration,omitempty"`

	// The bundle ConfigMap the pack is published in and its digest.
	// +optional
	Bundle *BundleReference `json:"bundle,omitempty"`

	// Which rules are portable across hosts ([OAR-PROF-6]) and why the others
	// are not ([OAR-PROF-8]). A non-portable rule is legal; this is a report,
	// not a failure.
	// +optional
	Portability *PortabilitySummary `json:"portability,omitempty"`

	// Warnings from the last load that are not failures: the engine's load
	// warnings about this pack's rules as published.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=50
	Warnings []string `json:"warnings,omitempty"`
}

// PortabilitySummary is a RulePack's portability report ([OAR-PROF-8]).
type PortabilitySummary struct {
	// The number of portable rules.
	// +optional
	Portable int32 `json:"portable,omitempty"`

	// The number of non-portable rules.
	// +optional
	NonPortable int32 `json:"nonPortable,omitempty"`

	// The non-portable rules and what makes each so (a host-native anchor, a
	// host-tier fact, a flow longer than some windows); at most 50, the count
	// above is exact.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=50
	Rules []RulePortability `json:"rules,omitempty"`
}

// RulePortability says why one rule is not portable.
type RulePortability struct {
	// The rule's qualified identifier (namespace/id).
	Rule string `json:"rule"`

	// What makes it non-portable, one entry per reason.
	// +optional
	// +listType=atomic
	Reasons []string `json:"reasons,omitempty"`
}

// RulePack is a publisher's OAR rule set, applied as a whole against one
// Capability. The admission webhook refuses a pack the OAR engine would
// refuse; the controller publishes accepted packs in the Capability's
// bundle.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Namespaced,shortName=rpack,categories=oar
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Rules",type=integer,JSONPath=`.status.ruleCount`
// +kubebuilder:printcolumn:name="Capability",type=string,JSONPath=`.spec.capabilityRef.name`
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].reason`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type RulePack struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// The rule set and the Capability it is written against.
	// +required
	Spec RulePackSpec `json:"spec"`

	// What the controller observed and published.
	// +optional
	Status RulePackStatus `json:"status,omitempty"`
}

// RulePackList is a list of RulePacks.
//
// +kubebuilder:object:root=true
type RulePackList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []RulePack `json:"items"`
}
