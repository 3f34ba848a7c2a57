// Package controller holds the reconcilers of the oar-operator: they load every
// RulePack, OperatorConfig and Capability with the OAR engine, report the verdict in
// status (Ready, Accepted, loadErrors), and publish one bundle ConfigMap per Capability,
// assembled by internal/bundle.
//
// The RBAC markers below are the manager's whole ClusterRole: `make manifests` turns
// them into config/rbac/role.yaml. Add a marker here when a reconciler needs a new verb.
package controllers

// +kubebuilder:rbac:groups=rules.oar.dev,resources=rulepacks;operatorconfigs;capabilities,verbs=get;list;watch
// +kubebuilder:rbac:groups=rules.oar.dev,resources=rulepacks/status;operatorconfigs/status;capabilities/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=rules.oar.dev,resources=capabilities/finalizers,verbs=update
// +kubebuilder:rbac:groups="",resources=configmaps,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups="",resources=events,verbs=create;patch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch
// +kubebuilder:rbac:groups=authentication.k8s.io,resources=tokenreviews,verbs=create
// +kubebuilder:rbac:groups=authorization.k8s.io,resources=subjectaccessreviews,verbs=create
