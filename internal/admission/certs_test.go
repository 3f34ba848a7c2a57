package admission

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/webhook"
)

// TestCertRotation runs a second manager with self-managed certificates, as cmd/manager
// does: cert-controller fills the empty Secret, injects its CA into the webhook
// configuration, and the webhooks are registered and served once the certificate is
// mounted — which the test does in the kubelet's stead.
func TestCertRotation(t *testing.T) {
	needEnv(t)
	ns := namespace(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	secret := &corev1.Secret{ObjectMeta: metaIn(ns, "webhook-server-cert")}
	mustCreate(t, secret)
	// A configuration of its own, which matches nothing, so the suite's webhooks keep
	// the CA envtest gave them.
	vwc := &admissionregistrationv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: ns + "-webhooks"},
		Webhooks: []admissionregistrationv1.ValidatingWebhook{{
			Name:                    "vnothing.rules.oar.dev",
			ClientConfig:            admissionregistrationv1.WebhookClientConfig{URL: ptr.To("https://127.0.0.1:1/never")},
			Rules:                   []admissionregistrationv1.RuleWithOperations{{Operations: []admissionregistrationv1.OperationType{"CREATE"}, Rule: admissionregistrationv1.Rule{APIGroups: []string{"example.com"}, APIVersions: []string{"v1"}, Resources: []string{"nothing"}}}},
			FailurePolicy:           ptr.To(admissionregistrationv1.Ignore),
			SideEffects:             ptr.To(admissionregistrationv1.SideEffectClassNone),
			AdmissionReviewVersions: []string{"v1"},
		}},
	}
	mustCreate(t, vwc)
	t.Cleanup(func() { _ = k8s.Delete(context.Background(), vwc) })

	certDir := t.TempDir()
	mgr, err := ctrl.NewManager(env.Config, ctrl.Options{
		Scheme:                 env.Scheme,
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		WebhookServer:          webhook.NewServer(webhook.Options{Host: "127.0.0.1", Port: freePort(t), CertDir: certDir}),
		Controller:             config.Controller{SkipNameValidation: ptr.To(true)},
	})
	if err != nil {
		t.Fatal(err)
	}
	ready, err := AddCertRotator(mgr, CertOptions{Namespace: ns, SecretName: secret.Name, ServiceName: "webhook-service",
		WebhookConfigurationName: vwc.Name, CertDir: certDir})
	if err != nil {
		t.Fatal(err)
	}
	if err := Install(mgr, ready); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := mgr.Start(ctx); err != nil {
			t.Errorf("manager: %v", err)
		}
	}()
	defer func() { cancel(); <-done }()

	eventually(t, "the certificate in the Secret, mounted", func() (bool, string) {
		if err := k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: secret.Name}, secret); err != nil {
			return false, err.Error()
		}
		if len(secret.Data["tls.crt"]) == 0 {
			return false, "the Secret is empty"
		}
		for _, f := range []string{"tls.crt", "tls.key"} {
			if err := os.WriteFile(filepath.Join(certDir, f), secret.Data[f], 0o600); err != nil {
				return false, err.Error()
			}
		}
		return true, ""
	})
	eventually(t, "the CA bundle injected", func() (bool, string) {
		if err := k8s.Get(ctx, types.NamespacedName{Name: vwc.Name}, vwc); err != nil {
			return false, err.Error()
		}
		got := vwc.Webhooks[0].ClientConfig.CABundle
		return bytes.Equal(got, secret.Data["ca.crt"]), fmt.Sprintf("caBundle of %d bytes", len(got))
	})
	eventually(t, "the webhooks served", func() (bool, string) {
		select {
		case <-ready:
		default:
			return false, "the rotator is not ready"
		}
		err := mgr.GetWebhookServer().StartedChecker()(nil)
		return err == nil, fmt.Sprint(err)
	})
}

// freePort returns a TCP port nothing listens on.
func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}
