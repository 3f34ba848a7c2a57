package chart

import (
	"cmp"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"

	"github.com/oar-operator/oar-operator/internal/testenv"
)

// generatedWebhooks reads the webhooks controller-gen derives from the
// +kubebuilder:webhook markers, config/webhook/manifests.yaml.
func generatedWebhooks(tb testing.TB) []admissionregistrationv1.ValidatingWebhook {
	var vwc admissionregistrationv1.ValidatingWebhookConfiguration
	generated(tb, "ValidatingWebhookConfiguration", &vwc)
	return vwc.Webhooks
}

// generated decodes the one object of kind in config/webhook/manifests.yaml into into.
func generated(tb testing.TB, kind string, into any) {
	tb.Helper()
	root, err := testenv.RepoRoot()
	if err != nil {
		tb.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(root, "config", "webhook", "manifests.yaml"))
	if err != nil {
		tb.Fatal(err)
	}
	objs, err := decodeDocuments(data)
	if err != nil {
		tb.Fatalf("config/webhook/manifests.yaml: %v", err)
	}
	for _, o := range objs {
		if o.GetKind() == kind {
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, into); err != nil {
				tb.Fatal(err)
			}
			return
		}
	}
	tb.Fatalf("config/webhook/manifests.yaml has no %s", kind)
}

// TestInjectorMatchesTheGenerated holds the chart's engine injector to config/webhook's
// MutatingWebhookConfiguration: the same webhooks but for the Service they call (the
// chart's), the release namespace among the namespaces neither sees (the operator's
// own), and the timeout of injector.timeoutSeconds. The manager is told its name, its
// image (the manager's own unless injector.image says otherwise), resources and, only
// when set, the shared session store, its password Secret and its pending time, and
// when the sidecar's runAsUser is set (auto unless injector.runAsUser says otherwise, a
// UID written whole).
func TestInjectorMatchesTheGenerated(t *testing.T) {
	var want admissionregistrationv1.MutatingWebhookConfiguration
	generated(t, "MutatingWebhookConfiguration", &want)
	for _, vs := range valueSets {
		injector := slices.Contains(vs.kinds, "MutatingWebhookConfiguration/oar-operator-engine-injector")
		t.Run(vs.name, func(t *testing.T) {
			r := mustRender(t, "oar-system", vs)
			args := deployment(t, r).Spec.Template.Spec.Containers[0].Args
			if !injector {
				if slices.Contains(args, "--enable-injector=true") || slices.ContainsFunc(args, func(a string) bool { return strings.HasPrefix(a, "--mutating-webhook-configuration=") }) {
					t.Errorf("no injector rendered, yet args %v", args)
				}
				return
			}
			var got admissionregistrationv1.MutatingWebhookConfiguration
			r.into(t, "MutatingWebhookConfiguration", "oar-operator-engine-injector", &got)
			var values struct {
				Injector struct {
					Image          string          `json:"image"`
					TimeoutSeconds *int32          `json:"timeoutSeconds"`
					RunAsUser      json.RawMessage `json:"runAsUser"`
					Resources      struct {
						Requests struct{ CPU, Memory string } `json:"requests"`
						Limits   struct{ Memory string }      `json:"limits"`
					} `json:"resources"`
					SessionStore struct {
						URL            string `json:"url"`
						PasswordSecret string `json:"passwordSecret"`
						PendingTTL     string `json:"pendingTTL"`
					} `json:"sessionStore"`
					DecisionLog struct {
						Enabled bool    `json:"enabled"`
						Content string  `json:"content"`
						Sample  *string `json:"sample"`
					} `json:"decisionLog"`
				} `json:"injector"`
			}
			if err := yaml.Unmarshal([]byte(vs.values), &values); err != nil {
				t.Fatal(err)
			}
			expected := want.DeepCopy()
			for i := range expected.Webhooks {
				w := &expected.Webhooks[i]
				w.ClientConfig.Service.Name, w.ClientConfig.Service.Namespace = "oar-operator-webhook", "oar-system"
				w.NamespaceSelector.MatchExpressions[0].Values = append(w.NamespaceSelector.MatchExpressions[0].Values, "oar-system")
				if values.Injector.TimeoutSeconds != nil {
					w.TimeoutSeconds = values.Injector.TimeoutSeconds
				}
			}
			byName := func(a, b admissionregistrationv1.MutatingWebhook) int { return strings.Compare(a.Name, b.Name) }
			slices.SortFunc(got.Webhooks, byName)
			slices.SortFunc(expected.Webhooks, byName)
			if !reflect.DeepEqual(got.Webhooks, expected.Webhooks) {
				gy, _ := yaml.Marshal(got.Webhooks)
				wy, _ := yaml.Marshal(expected.Webhooks)
				t.Errorf("chart injector\n%s\ndiffers from config/webhook/manifests.yaml's (with the chart's service, namespace and timeout)\n%s", gy, wy)
			}
			image := values.Injector.Image
			if image == "" {
				image = deployment(t, r).Spec.Template.Spec.Containers[0].Image
			}
			cpu, mem, limit := "50m", "64Mi", "128Mi"
			if values.Injector.Resources.Limits.Memory != "" {
				cpu, mem, limit = values.Injector.Resources.Requests.CPU, values.Injector.Resources.Requests.Memory, values.Injector.Resources.Limits.Memory
			}
			runAsUser := "auto"
			if values.Injector.RunAsUser != nil {
				runAsUser = strings.Trim(string(values.Injector.RunAsUser), `"`)
			}
			for _, a := range []string{"--enable-injector=true", "--mutating-webhook-configuration=oar-operator-engine-injector", "--injector-image=" + image,
				"--injector-cpu-request=" + cpu, "--injector-memory-request=" + mem, "--injector-memory-limit=" + limit, "--injector-run-as-user=" + runAsUser} {
				if !slices.Contains(args, a) {
					t.Errorf("args %v lack %s", args, a)
				}
			}
			for flag, value := range map[string]string{"--injector-session-store=": values.Injector.SessionStore.URL,
				"--injector-session-store-secret=":      values.Injector.SessionStore.PasswordSecret,
				"--injector-session-store-pending-ttl=": values.Injector.SessionStore.PendingTTL} {
				i := slices.IndexFunc(args, func(a string) bool { return strings.HasPrefix(a, flag) })
				switch {
				case value == "" && i >= 0:
					t.Errorf("args %v have %s without a value asking for it", args, args[i])
				case value != "" && !slices.Contains(args, flag+value):
					t.Errorf("args %v lack %s%s", args, flag, value)
				}
			}
			logArgs := []string{}
			for _, a := range args {
				if strings.HasPrefix(a, "--injector-decision-log") {
					logArgs = append(logArgs, a)
				}
			}
			wantLog := []string{}
			if dl := values.Injector.DecisionLog; dl.Enabled {
				content, sample := cmp.Or(dl.Content, "omit"), "1"
				if dl.Sample != nil {
					sample = *dl.Sample
				}
				wantLog = []string{"--injector-decision-log=stdout", "--injector-decision-log-content=" + content, "--injector-decision-log-sample=" + sample}
			}
			if !slices.Equal(logArgs, wantLog) {
				t.Errorf("decision log args %q; want %q", logArgs, wantLog)
			}
		})
	}
}

// TestWebhooksMatchTheGenerated holds the chart's webhooks to config/webhook's: the same
// names, rules, matchConditions, failure policy, side effects, timeout, review versions
// and paths, differing only in the Service they call, which must be the chart's own
// webhook Service, whose port reaches the container's webhook port.
func TestWebhooksMatchTheGenerated(t *testing.T) {
	want := generatedWebhooks(t)
	for _, vs := range valueSets {
		if !slices.Contains(vs.kinds, "Service/oar-operator-webhook") {
			continue
		}
		t.Run(vs.name, func(t *testing.T) {
			r := mustRender(t, "oar-system", vs)
			var vwc admissionregistrationv1.ValidatingWebhookConfiguration
			r.into(t, "ValidatingWebhookConfiguration", "oar-operator-validating-webhook", &vwc)
			got := slices.Clone(vwc.Webhooks)
			for i := range got {
				svc := got[i].ClientConfig.Service
				if svc == nil || svc.Name != "oar-operator-webhook" || svc.Namespace != "oar-system" || svc.Port != nil {
					t.Errorf("webhook %s calls %+v; want Service oar-system/oar-operator-webhook on 443", got[i].Name, svc)
				}
				if len(got[i].ClientConfig.CABundle) > 0 {
					t.Errorf("webhook %s has a CA bundle from the chart; it must come from the manager or cert-manager", got[i].Name)
				}
			}
			normalise := func(whs []admissionregistrationv1.ValidatingWebhook) []admissionregistrationv1.ValidatingWebhook {
				out := slices.Clone(whs)
				for i := range out {
					cc := out[i].ClientConfig
					if cc.Service != nil {
						s := *cc.Service
						s.Name, s.Namespace = "", ""
						cc.Service = &s
					}
					out[i].ClientConfig = cc
				}
				slices.SortFunc(out, func(a, b admissionregistrationv1.ValidatingWebhook) int {
					return strings.Compare(a.Name, b.Name)
				})
				return out
			}
			if g, w := normalise(got), normalise(want); !reflect.DeepEqual(g, w) {
				gy, _ := yaml.Marshal(g)
				wy, _ := yaml.Marshal(w)
				t.Errorf("chart webhooks (service name and namespace left out)\n%s\ndiffer from config/webhook/manifests.yaml's\n%s", gy, wy)
			}

			var svc corev1.Service
			r.into(t, "Service", "oar-operator-webhook", &svc)
			var dep appsv1.Deployment
			r.into(t, "Deployment", "oar-operator", &dep)
			if len(svc.Spec.Ports) != 1 || svc.Spec.Ports[0].Port != 443 || svc.Spec.Ports[0].TargetPort.StrVal != "webhook" {
				t.Errorf("webhook Service ports %+v; want 443 to the named port webhook", svc.Spec.Ports)
			}
			if !reflect.DeepEqual(svc.Spec.Selector, dep.Spec.Selector.MatchLabels) {
				t.Errorf("webhook Service selects %v; the Deployment's pods are %v", svc.Spec.Selector, dep.Spec.Selector.MatchLabels)
			}
			if p := containerPort(dep, "webhook"); p == 0 || !slices.Contains(dep.Spec.Template.Spec.Containers[0].Args, "--webhook-port="+strconv.Itoa(int(p))) {
				t.Errorf("container port webhook %d is not --webhook-port in %v", p, dep.Spec.Template.Spec.Containers[0].Args)
			}
		})
	}
}

// TestCertificateModes checks how each certificate mode reaches the webhook server:
// self-managed passes the manager the names of the Secret, Service and webhook
// configuration the chart renders; cert-manager issues a certificate for the webhook
// Service into the Secret the pods mount and injects its CA through the annotation.
func TestCertificateModes(t *testing.T) {
	t.Run("self-managed", func(t *testing.T) {
		r := mustRender(t, "oar-system", valueSets[0])
		dep := deployment(t, r)
		args := dep.Spec.Template.Spec.Containers[0].Args
		for _, want := range []string{"--webhook-cert-mode=self-managed", "--webhook-cert-secret=oar-operator-webhook-cert",
			"--webhook-service=oar-operator-webhook", "--webhook-configuration=oar-operator-validating-webhook"} {
			if !slices.Contains(args, want) {
				t.Errorf("args %v lack %s", args, want)
			}
		}
		var secret corev1.Secret
		r.into(t, "Secret", "oar-operator-webhook-cert", &secret)
		if len(secret.Data)+len(secret.StringData) > 0 {
			t.Errorf("the certificate Secret is rendered with data; the manager writes it")
		}
		if mountedSecret(dep) != "oar-operator-webhook-cert" {
			t.Errorf("pods mount Secret %q at the certificate directory", mountedSecret(dep))
		}
		if env := dep.Spec.Template.Spec.Containers[0].Env; len(env) == 0 || env[0].Name != "POD_NAMESPACE" ||
			env[0].ValueFrom == nil || env[0].ValueFrom.FieldRef == nil || env[0].ValueFrom.FieldRef.FieldPath != "metadata.namespace" {
			t.Errorf("POD_NAMESPACE (the namespace the certificate is issued in) is not the pod's: %+v", env)
		}
		vwc := r.find(t, "ValidatingWebhookConfiguration", "oar-operator-validating-webhook")
		if len(vwc.GetAnnotations()) > 0 {
			t.Errorf("self-managed webhook configuration annotated %v", vwc.GetAnnotations())
		}
	})

	for _, vs := range valueSets[1:3] {
		t.Run(vs.name, func(t *testing.T) {
			r := mustRender(t, "oar-system", vs)
			dep := deployment(t, r)
			args := dep.Spec.Template.Spec.Containers[0].Args
			if !slices.Contains(args, "--webhook-cert-mode=external") {
				t.Errorf("args %v lack --webhook-cert-mode=external", args)
			}
			for _, a := range args {
				if hasAnyPrefix(a, "--webhook-cert-secret", "--webhook-service", "--webhook-configuration") {
					t.Errorf("cert-manager mode passes self-managed flag %s", a)
				}
			}
			cert := r.find(t, "Certificate", "oar-operator-webhook-cert")
			secretName, _, _ := unstructured.NestedString(cert.Object, "spec", "secretName")
			if secretName == "" || secretName != mountedSecret(dep) {
				t.Errorf("Certificate writes Secret %q; pods mount %q", secretName, mountedSecret(dep))
			}
			dns, _, _ := unstructured.NestedStringSlice(cert.Object, "spec", "dnsNames")
			if !slices.Contains(dns, "oar-operator-webhook.oar-system.svc") {
				t.Errorf("Certificate DNS names %v lack the webhook Service's", dns)
			}
			vwc := r.find(t, "ValidatingWebhookConfiguration", "oar-operator-validating-webhook")
			if got := vwc.GetAnnotations()["cert-manager.io/inject-ca-from"]; got != "oar-system/oar-operator-webhook-cert" {
				t.Errorf("inject-ca-from %q; want oar-system/oar-operator-webhook-cert", got)
			}
			issuer, _, _ := unstructured.NestedStringMap(cert.Object, "spec", "issuerRef")
			want := map[string]string{"name": "oar-operator-selfsigned", "kind": "Issuer", "group": "cert-manager.io"}
			if slices.Contains(vs.kinds, "Issuer/oar-operator-selfsigned") {
				if r.find(t, "Issuer", "oar-operator-selfsigned").Object["spec"] == nil {
					t.Errorf("the self-signed Issuer has no spec")
				}
			} else {
				want = map[string]string{"name": "corp-ca", "kind": "ClusterIssuer", "group": "cert-manager.io"}
			}
			if !reflect.DeepEqual(issuer, want) {
				t.Errorf("issuerRef %v; want %v", issuer, want)
			}
		})
	}
}

// TestWebhookCertSecretPerMode: the two certificate modes keep the webhooks' certificate
// in Secrets of different names, so switching modes with helm upgrade never makes Helm
// create a Secret cert-manager holds (the upgrade fails) nor delete one cert-manager
// writes into; and in each mode whatever writes, mounts or may update the certificate
// Secret names that mode's Secret.
func TestWebhookCertSecretPerMode(t *testing.T) {
	modes := []valueSet{valueSetNamed(t, "default"), valueSetNamed(t, "cert-manager with a self-signed issuer")}
	chartSecrets := map[string][]string{}       // mode → Secrets the chart renders (Helm owns them)
	certManagerSecrets := map[string][]string{} // mode → Secrets its Certificates have cert-manager write
	webhookSecret := map[string]string{}
	for _, vs := range modes {
		r := mustRender(t, "oar-system", vs)
		refs := webhookCertSecretRefs(t, r)
		webhookSecret[vs.name] = refs["the Secret mounted at --webhook-cert-dir"]
		for what, name := range refs {
			if name != webhookSecret[vs.name] {
				t.Errorf("%s: %s is %q; the pods mount %q", vs.name, what, name, webhookSecret[vs.name])
			}
		}
		if len(refs) < 2 {
			t.Errorf("%s: nothing writes the mounted Secret %q (references %v)", vs.name, webhookSecret[vs.name], refs)
		}
		for _, o := range r.objects {
			switch o.GetKind() {
			case "Secret":
				chartSecrets[vs.name] = append(chartSecrets[vs.name], o.GetName())
			case "Certificate":
				name, _, _ := unstructured.NestedString(o.Object, "spec", "secretName")
				certManagerSecrets[vs.name] = append(certManagerSecrets[vs.name], name)
			}
		}
	}
	if a, b := webhookSecret[modes[0].name], webhookSecret[modes[1].name]; a == "" || a == b {
		t.Errorf("both modes keep the webhook certificate in Secret %q", a)
	}
	for _, from := range modes {
		for _, to := range modes {
			for _, name := range chartSecrets[to.name] {
				if from.name != to.name && slices.Contains(certManagerSecrets[from.name], name) {
					t.Errorf("switching from %s to %s: the chart creates Secret %s, which cert-manager wrote before", from.name, to.name, name)
				}
			}
		}
	}
}

// webhookCertSecretRefs names, by what refers to it, every Secret a rendering uses for
// the webhooks' certificate: the one mounted where the manager reads it, the one the
// chart renders empty for the manager, the --webhook-cert-secret the manager fills, the
// Secrets its Roles let it update, and the one the webhook Service's Certificate writes.
func webhookCertSecretRefs(tb testing.TB, r rendered) map[string]string {
	tb.Helper()
	dep := deployment(tb, r)
	refs := map[string]string{"the Secret mounted at --webhook-cert-dir": mountedSecret(dep)}
	if v := flagValue(dep.Spec.Template.Spec.Containers[0].Args, "--webhook-cert-secret", ""); v != "" {
		refs["--webhook-cert-secret"] = v
	}
	for _, o := range r.objects {
		switch o.GetKind() {
		case "Secret":
			refs["the chart's Secret "+o.GetName()] = o.GetName()
		case "Role":
			var role rbacv1.Role
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, &role); err != nil {
				tb.Fatal(err)
			}
			for _, rule := range role.Rules {
				if slices.Contains(rule.Resources, "secrets") {
					for _, name := range rule.ResourceNames {
						refs["Role "+role.Name+" on "+name] = name
					}
				}
			}
		case "Certificate":
			dns, _, _ := unstructured.NestedStringSlice(o.Object, "spec", "dnsNames")
			if slices.ContainsFunc(dns, func(d string) bool { return strings.HasPrefix(d, "oar-operator-webhook.") }) {
				refs["Certificate "+o.GetName()], _, _ = unstructured.NestedString(o.Object, "spec", "secretName")
			}
		}
	}
	return refs
}

// deployment returns the manager's Deployment.
func deployment(tb testing.TB, r rendered) appsv1.Deployment {
	tb.Helper()
	var dep appsv1.Deployment
	r.into(tb, "Deployment", "oar-operator", &dep)
	return dep
}

// mountedSecret is the Secret mounted at the webhook certificate directory.
func mountedSecret(dep appsv1.Deployment) string {
	for _, m := range dep.Spec.Template.Spec.Containers[0].VolumeMounts {
		if m.MountPath != "/tmp/k8s-webhook-server/serving-certs" {
			continue
		}
		for _, v := range dep.Spec.Template.Spec.Volumes {
			if v.Name == m.Name && v.Secret != nil {
				return v.Secret.SecretName
			}
		}
	}
	return ""
}

// containerPort is the manager container's port of that name, 0 if none.
func containerPort(dep appsv1.Deployment, name string) int32 {
	for _, p := range dep.Spec.Template.Spec.Containers[0].Ports {
		if p.Name == name {
			return p.ContainerPort
		}
	}
	return 0
}
