package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// CapabilitySpec is exactly an OAR capability document (OAR 1.0 section
// 8.2, [OAR-FACT-21]), with its own member names: what one agent host can
// observe, where rules can attach, and what it can do with content. Every
// rule pack and configuration naming this Capability is loaded against it.
//
// Every member is optional here: the OAR engine, not the API schema,
// decides whether the document is valid ([OAR-FACT-24]) and says which
// clause a problem breaks.
type CapabilitySpec struct {
	// The OAR capability document version; "1.0" for OAR 1.0. Quote it in
	// YAML.
	// +optional
	OARCapabilityVersion string `json:"oar_capability_version,omitempty"`

	// The host's name, following the namespace grammar of [OAR-DOC-7], for
	// example acme.gateway.
	// +optional
	Host string `json:"host,omitempty"`

	// The anchor profile map ([OAR-PROF-2]) and the host-native anchor
	// catalogue ([OAR-PROF-5]): which core anchors the host implements and
	// under which local names, which it does not support, and its own anchors.
	// +optional
	Anchors *CapabilityAnchors `json:"anchors,omitempty"`

	// The standard profiles the host provides, each whole ([OAR-FACT-15]), for
	// example tool, filesystem, content. Profiles produced by detectors
	// (secrets, pii, prompt-injection, jailbreak, moderation) need a
	// registered detector ([OAR-OPS-22]).
	// +optional
	Profiles []string `json:"profiles,omitempty"`

	// The number of recent tool-call steps a flow condition matches against
	// ([OAR-PROF-3]); 0 for a host that does not track recent activity, which
	// then refuses any rule carrying flow.
	// +optional
	ActivityWindow *int64 `json:"activity_window,omitempty"`

	// Whether the host implements content mutation; a host that does not
	// refuses every rule with effect: transform ([OAR-OPS-18]).
	// +optional
	SupportsTransform *bool `json:"supports_transform,omitempty"`

	// The largest condition parse tree the host accepts, in nodes
	// ([OAR-EXPR-17]); at least 256, which is also the value when omitted.
	// +optional
	ExpressionNodesMax *int64 `json:"expression_nodes_max,omitempty"`

	// The host-tier facts and observation functions the host provides, each
	// with its type ([OAR-FACT-27]). Rules naming them load here but are not
	// portable.
	// +optional
	HostFacts []HostFact `json:"host_facts,omitempty"`

	// The detector references the host resolves ([OAR-OPS-12]), each of the
	// form detector://<name>, for example detector://presidio.
	// +optional
	Detectors []string `json:"detectors,omitempty"`
}

// CapabilityAnchors is the anchors member of a capability document.
type CapabilityAnchors struct {
	// Maps each core anchor the host implements (section 8.1: tool.pre_invoke,
	// tool.handler, tool.post_invoke, model.input, model.output,
	// model.tool_result, agent.post_turn, agent.finalize) to the local anchor
	// that implements it. Every core anchor appears exactly once across core
	// and unsupported.
	// +optional
	Core map[string]string `json:"core,omitempty"`

	// The core anchors the host does not support; a rule attached to one of
	// them is refused at load ([OAR-PROF-4]).
	// +optional
	Unsupported []string `json:"unsupported,omitempty"`

	// The host's own anchors ([OAR-PROF-5]). Rules attached to them load but
	// are not portable.
	// +optional
	Host []string `json:"host,omitempty"`
}

// HostFact is one entry of host_facts ([OAR-FACT-27]).
type HostFact struct {
	// The fact's name, in the host's namespace, for example acme.gateway.tenant_tier.
	// +optional
	Name string `json:"name,omitempty"`

	// The fact's type (bool, int, double, string, list<string>,
	// map<string,string>, list<map>, map), or for an observation function its
	// signature (argument_type) -> result_type.
	// +optional
	Type string `json:"type,omitempty"`
}

// CapabilityStatus is what the controller observed of a Capability and the
// bundle it publishes for it.
type CapabilityStatus struct {
	// The generation of the Capability this status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// Ready (the document is valid and the bundle for it is published, even
	// with no packs) and Accepted (the document is valid).
	// +optional
	// +listType=map
	// +listMapKey=type
	// +patchStrategy=merge
	// +patchMergeKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty" patchStrategy:"merge" patchMergeKey:"type"`

	// Why the capability document is invalid, one entry per problem, each
	// naming the clause and the field.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=100
	LoadErrors []LoadError `json:"loadErrors,omitempty"`

	// The bundle ConfigMap published for this Capability and its digest.
	// +optional
	Bundle *BundleReference `json:"bundle,omitempty"`

	// The RulePacks in the published bundle, by name.
	// +optional
	// +listType=atomic
	Packs []string `json:"packs,omitempty"`

	// The OperatorConfigs in the published bundle, by name, in the order they
	// apply.
	// +optional
	// +listType=atomic
	Configs []string `json:"configs,omitempty"`

	// The number of rules in the published bundle.
	// +optional
	RuleCount int32 `json:"ruleCount,omitempty"`
}

// Capability is one agent host's OAR capability document (OAR 1.0 section
// 8.2). The controller publishes one bundle ConfigMap per Capability,
// holding every accepted RulePack and OperatorConfig that names it.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Namespaced,shortName=oarcap,categories=oar
// +kubebuilder:validation:XValidation:rule="size(self.metadata.name) <= 63",message="a Capability name must be at most 63 characters: its bundle ConfigMap carries the name as a label value"
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Host",type=string,JSONPath=`.spec.host`
// +kubebuilder:printcolumn:name="Rules",type=integer,JSONPath=`.status.ruleCount`
// +kubebuilder:printcolumn:name="Digest",type=string,JSONPath=`.status.bundle.digest`,priority=1
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].reason`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type Capability struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// The OAR capability document, with its own member names.
	// +optional
	Spec CapabilitySpec `json:"spec,omitempty"`

	// What the controller observed and published.
	// +optional
	Status CapabilityStatus `json:"status,omitempty"`
}

// CapabilityList is a list of Capabilities.
//
// +kubebuilder:object:root=true
type CapabilityList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Capability `json:"items"`
}
