// Package v1alpha1 holds the custom resources of the oar-operator, API group
// rules.oar.dev: RulePack (a publisher's OAR rule set), Capability (one agent host's
// capability document, OAR 1.0 section 8.2) and OperatorConfig (an operator's
// configuration document, section 9).
//
// The OAR documents keep their own snake_case member names inside the resources, so a
// document pasted from a publisher needs no translation. The schema is deliberately
// lenient: rules and configurations are preserved verbatim, and the capability's fields
// carry no enums or patterns, so that the OAR engine (internal/engine) — through the
// admission webhook and the controller — is what refuses a document, naming the clause
// and the field, rather than the API server's schema.
//
// +kubebuilder:object:generate=true
// +groupName=rules.oar.dev
package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

var (
	// GroupVersion is the API group and version of these resources.
	GroupVersion = schema.GroupVersion{Group: "rules.oar.dev", Version: "v1alpha1"}

	// SchemeBuilder registers the types of this package with a runtime.Scheme. It is
	// apimachinery's, not controller-runtime's (deprecated there), so importing the API
	// needs nothing beyond apimachinery.
	SchemeBuilder = runtime.NewSchemeBuilder(addKnownTypes)

	// AddToScheme adds the types of this package to a runtime.Scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)

func addKnownTypes(s *runtime.Scheme) error {
	s.AddKnownTypes(GroupVersion,
		&Capability{}, &CapabilityList{},
		&RulePack{}, &RulePackList{},
		&OperatorConfig{}, &OperatorConfigList{})
	metav1.AddToGroupVersion(s, GroupVersion)
	return nil
}
