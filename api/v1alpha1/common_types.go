package v1alpha1

// Condition types. Every resource carries both; each condition's
// observedGeneration says which generation it describes.
const (
	// ConditionReady is the summary condition that Argo CD, Flux and `kubectl
	// wait` read: True only once the resource's current generation is in the
	// published bundle (for a Capability: its document is valid and the bundle
	// for it is published).
	ConditionReady = "Ready"
	// ConditionAccepted says whether the document loads on its own terms
	// against the Capability it names (for a Capability: whether the
	// capability document is valid).
	ConditionAccepted = "Accepted"
)

// Condition reasons.
const (
	// ReasonPublished: the current generation is in the published bundle.
	ReasonPublished = "Published"
	// ReasonLoaded: Accepted=True — the document loads on its own terms.
	ReasonLoaded = "Loaded"
	// ReasonLoadFailed: the OAR engine refuses the document; status.loadErrors
	// says why.
	ReasonLoadFailed = "LoadFailed"
	// ReasonConflict: the document loads alone but not together with the
	// resources already taken (duplicate qualified id, unresolvable reference,
	// cycle); the message names the conflicting resource and rule.
	ReasonConflict = "Conflict"
	// ReasonCapabilityMissing: the Capability named by spec.capabilityRef does
	// not exist.
	ReasonCapabilityMissing = "CapabilityMissing"
	// ReasonCapabilityInvalid: the Capability named by spec.capabilityRef is
	// invalid, so nothing new is published for it.
	ReasonCapabilityInvalid = "CapabilityInvalid"
	// ReasonCapabilityNarrowed: the capability document no longer provides what
	// a pack or configuration naming it needs. When that pack or configuration
	// is published, the document's new generation is held back: the bundle of
	// the previous generation keeps serving until the document is restored or
	// the packs load against it. When nothing of it serves (nothing was
	// published before), what loads is published and the Capability is not
	// Ready while it is left out. The message names each pack and rule.
	ReasonCapabilityNarrowed = "CapabilityNarrowed"
	// ReasonBundleTooLarge: adding the resource would push the compressed
	// bundle past the ConfigMap size limit; it is held back.
	ReasonBundleTooLarge = "BundleTooLarge"
	// ReasonBundleNameTaken: a ConfigMap the operator did not write already has
	// the Capability's bundle name; it is left alone and nothing is published
	// until it is removed.
	ReasonBundleNameTaken = "BundleNameTaken"
	// ReasonLeftOut: on a Capability, the bundle is published without a pack or
	// configuration an earlier bundle published that still exists, and no change
	// could be held back for it (a pack a configuration names was deleted, say).
	// What it enforced no longer holds; the message names each one. It lasts,
	// across reconciles and restarts, until each is published again or deleted.
	ReasonLeftOut = "LeftOut"
	// ReasonDeleting: the resource is being deleted (finalizers hold it); it is
	// left out of the next bundle. While the Capability is held back, the bundle
	// serving may still hold it: its published generation says so.
	ReasonDeleting = "Deleting"
	// ReasonPending: the controller has not reached a verdict yet.
	ReasonPending = "Pending"
)

// Bounds on status lists and strings. The schema enforces them, so the
// controller must truncate to them (and may say how many were left out in
// a condition message).
const (
	// MaxLoadErrors bounds status.loadErrors.
	MaxLoadErrors = 100
	// MaxWarnings bounds status.warnings.
	MaxWarnings = 50
	// MaxPortabilityRules bounds status.portability.rules.
	MaxPortabilityRules = 50
	// MaxLoadErrorValueLength bounds loadErrors[].value, the offending value
	// as JSON text.
	MaxLoadErrorValueLength = 1024
)

// CapabilityReference names the Capability, in the same namespace, that a
// RulePack or OperatorConfig is written against.
type CapabilityReference struct {
	// Name of the Capability in this namespace. The document is loaded against
	// that capability: its anchors, profiles, host facts and detectors decide
	// what loads. At most 63 characters: the Capability's bundle ConfigMap carries
	// the name as a label value.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	Name string `json:"name"`
}

// LoadError is one machine-readable diagnostic from the OAR engine: the
// clause it breaks, the rule and the field it concerns, and the offending
// value. The webhook, the status and the CLI all print it from these
// fields.
type LoadError struct {
	// Rule is the qualified identifier (namespace/id) of the rule concerned,
	// when known.
	// +optional
	Rule string `json:"rule,omitempty"`
	// Index is the position (from 0) of the document concerned in its list
	// (the rule in spec.rules), or -1 when the error is not about one
	// document; field says where.
	Index int32 `json:"index"`
	// Clause is the OAR clause the document breaks, for example OAR-FACT-3.
	Clause string `json:"clause"`
	// Field is the path into this resource, spelled as the admission webhook
	// spells it, for example spec.rules[2].when.
	// +optional
	Field string `json:"field,omitempty"`
	// Value is the offending value as JSON text, truncated.
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	Value string `json:"value,omitempty"`
	// Offset is, for an error in a condition or a copy template, the offset
	// into value where the problem starts.
	// +optional
	Offset *int64 `json:"offset,omitempty"`
	// Message is the human explanation, naming the offending thing. When
	// suggestion is set it ends in: did you mean "<suggestion>"?
	Message string `json:"message"`
	// Suggestion is, for an error about an unknown name (an identifier in a
	// condition, an anchor, a profile, a rule reference, a detector or a
	// member name), the one name available at that place close enough to be
	// the name meant; empty when none is.
	// +optional
	Suggestion string `json:"suggestion,omitempty"`
}

// BundleReference names the bundle ConfigMap a Capability's rules are
// published in and the digest of its content.
type BundleReference struct {
	// ConfigMapName is the ConfigMap holding the bundle,
	// <capability>-oar-bundle, in this namespace.
	// +optional
	ConfigMapName string `json:"configMapName,omitempty"`
	// Digest is the sha256 of the bundle's canonical JSON (also the
	// ConfigMap's rules.oar.dev/bundle-digest annotation).
	// +optional
	Digest string `json:"digest,omitempty"`
}
