package admission

import (
	"fmt"

	"github.com/open-policy-agent/cert-controller/pkg/rotator"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
)

// What cert-controller needs: the Secret holding the serving certificate, in the
// manager's namespace only, and the webhook configuration it injects the CA bundle into.
// It reads through informers, which list and watch every object of the kind, but it
// writes only those two, so update is granted on them by name: a manager that could
// update any webhook configuration could switch off every other admission control of
// the cluster. The names are config/default's (prefix "oar-"); the chart grants its own.
//
// +kubebuilder:rbac:groups="",namespace=system,resources=secrets,verbs=get;list;watch
// +kubebuilder:rbac:groups="",namespace=system,resources=secrets,resourceNames=oar-webhook-server-cert,verbs=update
// +kubebuilder:rbac:groups=admissionregistration.k8s.io,resources=validatingwebhookconfigurations,verbs=get;list;watch
// +kubebuilder:rbac:groups=admissionregistration.k8s.io,resources=validatingwebhookconfigurations,resourceNames=oar-validating-webhook-configuration,verbs=update
// +kubebuilder:rbac:groups=admissionregistration.k8s.io,resources=mutatingwebhookconfigurations,verbs=get;list;watch
// +kubebuilder:rbac:groups=admissionregistration.k8s.io,resources=mutatingwebhookconfigurations,resourceNames=oar-mutating-webhook-configuration,verbs=update

// CertOptions say where the webhooks' serving certificate lives.
type CertOptions struct {
	// Namespace holds the Secret and the webhook Service: the manager's namespace.
	Namespace string
	// SecretName is the Secret cert-controller keeps the CA and the certificate in; it
	// must exist (config/webhook creates it empty) and be mounted at CertDir.
	SecretName string
	// ServiceName is the webhook Service; the certificate is issued for
	// <ServiceName>.<Namespace>.svc.
	ServiceName string
	// WebhookConfigurationName is the ValidatingWebhookConfiguration whose CA bundle is
	// kept in step with the certificate.
	WebhookConfigurationName string
	// MutatingWebhookConfigurationName is the engine injector's webhook configuration,
	// whose CA bundle is kept in step too; empty when the injector is off.
	MutatingWebhookConfigurationName string
	// CertDir is where the webhook server reads tls.crt and tls.key.
	CertDir string
}

// AddCertRotator has github.com/open-policy-agent/cert-controller generate the CA and the
// serving certificate into the Secret, rotate them before they expire and inject the CA
// bundle into the webhook configuration — on every replica, since every replica serves
// the webhooks (only the reconcilers are leader-elected). The returned channel is closed
// once the certificate is mounted in CertDir and the CA bundle injected: pass it to
// Install.
func AddCertRotator(mgr ctrl.Manager, o CertOptions) (<-chan struct{}, error) {
	ready := make(chan struct{})
	webhooks := []rotator.WebhookInfo{{Name: o.WebhookConfigurationName, Type: rotator.Validating}}
	if o.MutatingWebhookConfigurationName != "" {
		webhooks = append(webhooks, rotator.WebhookInfo{Name: o.MutatingWebhookConfigurationName, Type: rotator.Mutating})
	}
	err := rotator.AddRotator(mgr, &rotator.CertRotator{
		SecretKey:             types.NamespacedName{Namespace: o.Namespace, Name: o.SecretName},
		CertDir:               o.CertDir,
		CAName:                "oar-operator-webhook-ca",
		CAOrganization:        "oar-operator",
		DNSName:               fmt.Sprintf("%s.%s.svc", o.ServiceName, o.Namespace),
		ExtraDNSNames:         []string{fmt.Sprintf("%s.%s.svc.cluster.local", o.ServiceName, o.Namespace)},
		IsReady:               ready,
		Webhooks:              webhooks,
		RequireLeaderElection: false,
		EnableReadinessCheck:  true,
	})
	if err != nil {
		return nil, fmt.Errorf("add the webhook certificate rotator: %w", err)
	}
	return ready, nil
}
