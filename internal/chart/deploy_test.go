package chart

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"

	rcommon "helm.sh/helm/v4/pkg/release/common"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// TestDeployInstallsUpgradesAndUninstalls runs `make deploy`'s code path against the
// envtest API server through a kubeconfig, as hack/deploy does: the first Deploy creates
// the namespace and installs revision 1, the second upgrades it in place, Undeploy
// removes the release and leaves the CRDs. No pod runs there (no scheduler or kubelet),
// so nothing is waited for.
func TestDeployInstallsUpgradesAndUninstalls(t *testing.T) {
	ctx := context.Background()
	const ns = "oar-system"
	o := deployOptions(t, ns, releaseName, map[string]any{"image": map[string]any{"repository": "registry.example/oar-operator", "tag": "v1"}})

	rel, err := Deploy(ctx, o)
	if err != nil {
		t.Fatalf("install: %v", err)
	}
	if rel.Version != 1 || rel.Info.Status != rcommon.StatusDeployed || rel.Info.Notes == "" {
		t.Errorf("install: revision %d, %s, notes %q", rel.Version, rel.Info.Status, rel.Info.Notes)
	}
	var dep appsv1.Deployment
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "oar-operator"}, &dep); err != nil {
		t.Fatal(err)
	}
	if img := dep.Spec.Template.Spec.Containers[0].Image; img != "registry.example/oar-operator:v1" || *dep.Spec.Replicas != 2 {
		t.Errorf("installed image %s, %d replicas", img, *dep.Spec.Replicas)
	}
	var secret corev1.Secret
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "oar-operator-webhook-cert"}, &secret); err != nil {
		t.Errorf("certificate Secret: %v", err)
	}
	var vwc admissionregistrationv1.ValidatingWebhookConfiguration
	if err := env.Client.Get(ctx, client.ObjectKey{Name: "oar-operator-validating-webhook"}, &vwc); err != nil {
		t.Errorf("webhook configuration: %v", err)
	}

	// What the manager's cert-controller does: fill the Secret. An upgrade must keep it.
	secret.Data = map[string][]byte{"tls.crt": []byte("issued")}
	if err := env.Client.Update(ctx, &secret); err != nil {
		t.Fatal(err)
	}
	o.Values["replicaCount"] = 3
	if rel, err = Deploy(ctx, o); err != nil {
		t.Fatalf("upgrade: %v", err)
	}
	if rel.Version != 2 || rel.Info.Status != rcommon.StatusDeployed {
		t.Errorf("upgrade: revision %d, %s", rel.Version, rel.Info.Status)
	}
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(&dep), &dep); err != nil || *dep.Spec.Replicas != 3 {
		t.Errorf("upgraded Deployment: %v, replicas %d", err, *dep.Spec.Replicas)
	}
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(&secret), &secret); err != nil || string(secret.Data["tls.crt"]) != "issued" {
		t.Errorf("the upgrade dropped the certificate the manager wrote: %v, %v", err, secret.Data)
	}

	removed, err := Undeploy(ctx, o)
	if err != nil || !removed {
		t.Fatalf("uninstall: removed %v, %v", removed, err)
	}
	for _, obj := range []client.Object{&dep, &vwc} {
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(obj), obj); !apierrors.IsNotFound(err) {
			t.Errorf("after uninstall %T %s: %v", obj, obj.GetName(), err)
		}
	}
	var crd apiextensionsv1.CustomResourceDefinition
	if err := env.Client.Get(ctx, client.ObjectKey{Name: "rulepacks.rules.oar.dev"}, &crd); err != nil {
		t.Errorf("uninstall removed the RulePack CRD: %v", err)
	}
	if removed, err := Undeploy(ctx, o); err != nil || removed {
		t.Errorf("second uninstall: removed %v, %v; want nothing to do", removed, err)
	}
}

// deployOptions are the Options hack/deploy would pass for release in namespace: env's
// cluster through a kubeconfig file, the chart of this checkout.
func deployOptions(t *testing.T, namespace, release string, values map[string]any) Options {
	t.Helper()
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(kubeconfig, env.Environment.KubeConfig, 0o600); err != nil {
		t.Fatal(err)
	}
	cache := t.TempDir() // not the user's ~/.kube/cache
	getter := genericclioptions.NewConfigFlags(false)
	getter.KubeConfig, getter.CacheDir = &kubeconfig, &cache
	return Options{ChartDir: chartDir(t), Getter: getter, Namespace: namespace, Release: release, Values: values}
}

// TestDeploySwitchesCertificateModes upgrades a release from cert-manager certificates to
// self-managed ones and back, as `helm upgrade --set webhook.certManagement=...` does. No
// cert-manager runs on env, so the test writes the Secret the webhook Certificate names,
// as cert-manager would. Helm must then neither refuse the upgrade to self-managed (a
// chart Secret of that name would be an object it does not own) nor, on the way back,
// have deleted what cert-manager wrote; the pods mount each mode's own Secret.
func TestDeploySwitchesCertificateModes(t *testing.T) {
	ctx := context.Background()
	ns := env.Namespace(t, "chart-switch-")
	const release, fullname = "oar-switch", "oar-switch-oar-operator"
	certManager := map[string]any{"webhook": map[string]any{"certManagement": "cert-manager"}}
	o := deployOptions(t, ns, release, certManager)
	t.Cleanup(func() {
		if _, err := Undeploy(ctx, o); err != nil {
			t.Errorf("uninstall: %v", err)
		}
	})
	if _, err := Deploy(ctx, o); err != nil {
		t.Fatalf("install with cert-manager: %v", err)
	}
	cert := &unstructured.Unstructured{}
	cert.SetAPIVersion("cert-manager.io/v1")
	cert.SetKind("Certificate")
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: fullname + "-webhook-cert"}, cert); err != nil {
		t.Fatal(err)
	}
	issued, _, _ := unstructured.NestedString(cert.Object, "spec", "secretName")
	create(t, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: issued, Annotations: map[string]string{"cert-manager.io/certificate-name": cert.GetName()}},
		Type:       corev1.SecretTypeTLS,
		Data:       map[string][]byte{"tls.crt": []byte("issued by cert-manager"), "tls.key": []byte("key")},
	})

	for _, step := range []struct {
		name   string
		values map[string]any
	}{
		// Explicit: an upgrade given no values at all reuses the previous release's.
		{"to self-managed", map[string]any{"webhook": map[string]any{"certManagement": "self-managed"}}},
		{"back to cert-manager", certManager},
	} {
		o.Values = step.values
		rel, err := Deploy(ctx, o)
		if err != nil {
			t.Fatalf("upgrade %s: %v", step.name, err)
		}
		objs, err := decodeDocuments([]byte(rel.Manifest))
		if err != nil {
			t.Fatal(err)
		}
		dep := find[appsv1.Deployment](t, objs, "Deployment")
		mounted := mountedSecret(dep)
		if step.name == "to self-managed" && (mounted == issued || !slices.ContainsFunc(objs, func(u *unstructured.Unstructured) bool {
			return u.GetKind() == "Secret" && u.GetName() == mounted
		})) {
			t.Errorf("%s: the pods mount Secret %q; want the chart's own, not cert-manager's %q", step.name, mounted, issued)
		}
		var secret corev1.Secret
		if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: issued}, &secret); err != nil || string(secret.Data["tls.crt"]) != "issued by cert-manager" {
			t.Errorf("%s: cert-manager's Secret %s: %v, %q; want it left alone", step.name, issued, err, secret.Data["tls.crt"])
		}
	}
}
