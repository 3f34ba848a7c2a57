package v1alpha1

import (
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// OperatorConfigSpec is an operator's OAR configuration document, bound to
// one Capability.
type OperatorConfigSpec struct {
	// The Capability, in this namespace, whose published rule set the
	// configuration applies to.
	// +required
	CapabilityRef CapabilityReference `json:"capabilityRef"`

	// Where this configuration applies among the others naming the same
	// Capability: ascending order, then by name; the last statement about a
	// rule wins ([OAR-CFG-7]).
	// +optional
	// +kubebuilder:default=0
	Order int64 `json:"order,omitempty"`

	// The OAR configuration document (OAR 1.0 section 9), verbatim: oar_config
	// (a version string, quoted in YAML: "1.0") and any of disable (qualified
	// rule ids) and enforcement (qualified rule id to enforce or monitor). No
	// other member is allowed ([OAR-CFG-1]); the OAR engine, not this schema,
	// checks it and names the clause.
	// +required
	Config *apiextensionsv1.JSON `json:"config"`
}

// OperatorConfigStatus is what the controller observed of an
// OperatorConfig.
type OperatorConfigStatus struct {
	// The generation of the OperatorConfig this status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// Ready (the current generation is in the published bundle) and Accepted
	// (the configuration applies to the Capability's published rule set), each
	// with a reason.
	// +optional
	// +listType=map
	// +listMapKey=type
	// +patchStrategy=merge
	// +patchMergeKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty" patchStrategy:"merge" patchMergeKey:"type"`

	// Why the configuration does not apply, one entry per problem, each naming
	// the clause and the field (spec.config.disable[0]).
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=100
	LoadErrors []LoadError `json:"loadErrors,omitempty"`

	// The generation of this OperatorConfig serving in the published bundle,
	// if any.
	// +optional
	PublishedGeneration *int64 `json:"publishedGeneration,omitempty"`
}

// OperatorConfig is an operator's OAR configuration document (OAR 1.0
// section 9): disable rules or move them between enforce and monitor
// without forking the publisher's pack. Mandatory rules cannot be
// disabled, downgraded or suppressed ([OAR-OPS-7]).
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Namespaced,shortName=oarconfig,categories=oar
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Capability",type=string,JSONPath=`.spec.capabilityRef.name`
// +kubebuilder:printcolumn:name="Order",type=integer,JSONPath=`.spec.order`
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].reason`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type OperatorConfig struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// The configuration document, its order and the Capability it applies to.
	// +required
	Spec OperatorConfigSpec `json:"spec"`

	// What the controller observed and published.
	// +optional
	Status OperatorConfigStatus `json:"status,omitempty"`
}

// OperatorConfigList is a list of OperatorConfigs.
//
// +kubebuilder:object:root=true
type OperatorConfigList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []OperatorConfig `json:"items"`
}
