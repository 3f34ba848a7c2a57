package chart

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	"helm.sh/helm/v4/pkg/action"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	release "helm.sh/helm/v4/pkg/release/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"

	"github.com/oar-operator/oar-operator/internal/testenv"
)

// releaseName is the release every rendering uses; with the chart's name it makes the
// resource prefix "oar-operator".
const releaseName = "oar-operator"

// valueSet is one way of installing the chart, and the kinds it must render.
type valueSet struct {
	name   string
	values string // YAML, as a user's -f file
	kinds  []string
}

// The kinds every installation renders.
var baseKinds = []string{"ClusterRole/oar-operator-manager", "ClusterRoleBinding/oar-operator-manager",
	"Deployment/oar-operator", "Role/oar-operator-leader-election", "RoleBinding/oar-operator-leader-election",
	"ServiceAccount/oar-operator"}

// The kinds of the webhooks and of metrics.
var (
	webhookKinds = []string{"Service/oar-operator-webhook", "ValidatingWebhookConfiguration/oar-operator-validating-webhook",
		"MutatingWebhookConfiguration/oar-operator-engine-injector"}
	selfManaged  = []string{"Secret/oar-operator-webhook-cert", "Role/oar-operator-webhook-cert", "RoleBinding/oar-operator-webhook-cert"}
	metricsKinds = []string{"Service/oar-operator-metrics", "ClusterRole/oar-operator-metrics-reader"}
	pdbKinds     = []string{"PodDisruptionBudget/oar-operator"}
	// cert-manager issues the metrics endpoint's certificate too.
	metricsCertKinds    = []string{"Certificate/oar-operator-metrics-cert"}
	serviceMonitorKinds = []string{"ServiceMonitor/oar-operator-metrics"}
	prometheusRuleKinds = []string{"PrometheusRule/oar-operator"}
)

// valueSets are the main ways the chart is installed.
var valueSets = []valueSet{
	{
		name:  "default",
		kinds: concat(baseKinds, webhookKinds, selfManaged, metricsKinds, pdbKinds),
	},
	{
		name:   "cert-manager with a self-signed issuer",
		values: "webhook: {certManagement: cert-manager}",
		kinds: concat(baseKinds, webhookKinds, metricsKinds, pdbKinds, metricsCertKinds,
			[]string{"Issuer/oar-operator-selfsigned", "Certificate/oar-operator-webhook-cert"}),
	},
	{
		name: "cert-manager with the user's ClusterIssuer",
		values: `
webhook:
  certManagement: cert-manager
  certManager: {issuerRef: {name: corp-ca, kind: ClusterIssuer}, duration: 2160h, renewBefore: 360h}`,
		kinds: concat(baseKinds, webhookKinds, metricsKinds, pdbKinds, metricsCertKinds, []string{"Certificate/oar-operator-webhook-cert"}),
	},
	{
		name:   "one replica",
		values: "replicaCount: 1",
		kinds:  concat(baseKinds, webhookKinds, selfManaged, metricsKinds),
	},
	{
		name:   "no webhooks, no metrics",
		values: "{webhook: {enabled: false}, metrics: {enabled: false}}",
		kinds:  concat(baseKinds, pdbKinds),
	},
	{
		name:   "no engine injector",
		values: "injector: {enabled: false}",
		kinds:  concat(baseKinds, webhookKinds[:2], selfManaged, metricsKinds, pdbKinds),
	},
	{
		// What a Prometheus Operator user installs: the certificate verified, the
		// metrics-reader role bound to Prometheus.
		name: "ServiceMonitor, cert-manager",
		values: `
webhook: {certManagement: cert-manager}
metrics:
  serviceMonitor:
    enabled: true
    interval: 30s
    scrapeTimeout: 10s
    labels: {release: kube-prometheus-stack, team: platform}
    prometheusServiceAccount: {namespace: monitoring, name: prometheus-k8s}`,
		kinds: concat(baseKinds, webhookKinds, metricsKinds, pdbKinds, metricsCertKinds, serviceMonitorKinds,
			[]string{"Issuer/oar-operator-selfsigned", "Certificate/oar-operator-webhook-cert", "ClusterRoleBinding/oar-operator-metrics-reader"}),
	},
	{
		name:   "ServiceMonitor, self-managed certificates, not verified",
		values: "metrics: {serviceMonitor: {enabled: true, insecureSkipVerify: true, tokenSecret: {name: prometheus-token}}}",
		kinds:  concat(baseKinds, webhookKinds, selfManaged, metricsKinds, pdbKinds, serviceMonitorKinds),
	},
	{
		name:   "PrometheusRule",
		values: "metrics: {prometheusRule: {enabled: true, labels: {release: kube-prometheus-stack}, for: 10m, severity: page}}",
		kinds:  concat(baseKinds, webhookKinds, selfManaged, metricsKinds, pdbKinds, prometheusRuleKinds),
	},
	{
		name:   "ServiceMonitor, cert-manager without webhooks",
		values: "{webhook: {enabled: false, certManagement: cert-manager, certManager: {issuerRef: {name: corp-ca, kind: ClusterIssuer}}}, metrics: {serviceMonitor: {enabled: true}}}",
		kinds:  concat(baseKinds, metricsKinds, pdbKinds, metricsCertKinds, serviceMonitorKinds),
	},
	{
		// Every optional pass-through value, so that the dry run checks what they become.
		name: "every option",
		values: `
replicaCount: 3
image: {repository: registry.example/oar/oar-operator, digest: "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef", pullPolicy: Always}
imagePullSecrets: [{name: regcred}]
serviceAccount: {name: oar-manager, annotations: {iam.example/role: oar}}
manager: {logLevel: 3, logEncoder: console, probePort: 9081, maxConcurrentReconciles: 4, extraArgs: [--enable-http2], extraEnv: [{name: GOMEMLIMIT, value: 200MiB}]}
resources: {requests: {cpu: 50m, memory: 128Mi}, limits: {cpu: "1", memory: 512Mi}}
podAnnotations: {prometheus.io/scrape: "false"}
podLabels: {team: platform}
nodeSelector: {kubernetes.io/os: linux}
tolerations: [{key: dedicated, operator: Equal, value: platform, effect: NoSchedule}]
affinity:
  podAntiAffinity:
    preferredDuringSchedulingIgnoredDuringExecution:
    - weight: 100
      podAffinityTerm: {topologyKey: topology.kubernetes.io/zone, labelSelector: {matchLabels: {app.kubernetes.io/name: oar-operator}}}
topologySpreadConstraints:
- {maxSkew: 1, topologyKey: topology.kubernetes.io/zone, whenUnsatisfiable: DoNotSchedule, labelSelector: {matchLabels: {team: platform}}}
- {maxSkew: 1, topologyKey: kubernetes.io/hostname, whenUnsatisfiable: ScheduleAnyway}
priorityClassName: platform-high
terminationGracePeriodSeconds: 30
podDisruptionBudget: {minAvailable: "50%"}
webhook: {port: 10443}
injector:
  image: registry.example/oar/oar-operator:v9
  resources: {requests: {cpu: 20m, memory: 32Mi}, limits: {memory: 256Mi}}
  timeoutSeconds: 3
  sessionStore: {url: "rediss://oar@redis.redis.svc:6380/1", passwordSecret: shared-redis, pendingTTL: 20ms}
  decisionLog: {enabled: true, content: hash, sample: 0.25}
  runAsUser: 1000680000
metrics: {port: 9443}`,
		kinds: concat(baseKinds[:5], []string{"ServiceAccount/oar-manager"}, webhookKinds, selfManaged, metricsKinds, pdbKinds),
	},
}

func concat(lists ...[]string) []string { return slices.Concat(lists...) }

// valueSetNamed is the value set of that name.
func valueSetNamed(tb testing.TB, name string) valueSet {
	tb.Helper()
	for _, vs := range valueSets {
		if vs.name == name {
			return vs
		}
	}
	tb.Fatalf("no value set %q", name)
	return valueSet{}
}

// rendered is one rendering of the chart.
type rendered struct {
	objects []*unstructured.Unstructured
	notes   string
}

// find returns the rendered object of that kind and name, failing the test when there
// is none.
func (r rendered) find(tb testing.TB, kind, name string) *unstructured.Unstructured {
	tb.Helper()
	for _, o := range r.objects {
		if o.GetKind() == kind && o.GetName() == name {
			return o
		}
	}
	tb.Fatalf("no %s %s rendered; have %v", kind, name, r.kinds())
	return nil
}

// into converts the object of that kind and name to a typed object.
func (r rendered) into(tb testing.TB, kind, name string, typed any) {
	tb.Helper()
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(r.find(tb, kind, name).Object, typed); err != nil {
		tb.Fatalf("%s %s: %v", kind, name, err)
	}
}

// kinds lists the rendered objects as sorted Kind/name.
func (r rendered) kinds() []string {
	var ks []string
	for _, o := range r.objects {
		ks = append(ks, o.GetKind()+"/"+o.GetName())
	}
	sort.Strings(ks)
	return ks
}

// chartDir is charts/oar-operator of this checkout.
func chartDir(tb testing.TB) string {
	tb.Helper()
	root, err := testenv.RepoRoot()
	if err != nil {
		tb.Fatal(err)
	}
	return filepath.Join(root, "charts", "oar-operator")
}

// render renders the chart into namespace as `helm template` does (client side, the
// values checked against values.schema.json), with the YAML values given.
func render(tb testing.TB, namespace, values string) (rendered, error) {
	tb.Helper()
	var vals map[string]any
	if err := yaml.Unmarshal([]byte(values), &vals); err != nil {
		tb.Fatalf("values %q: %v", values, err)
	}
	ch, err := loader.Load(chartDir(tb))
	if err != nil {
		tb.Fatal(err)
	}
	in := action.NewInstall(action.NewConfiguration())
	in.DryRunStrategy = action.DryRunClient
	in.ReleaseName, in.Namespace, in.Replace, in.KubeVersion = releaseName, namespace, true, kubeVersion
	rel, err := in.Run(ch, vals)
	if err != nil {
		return rendered{}, err
	}
	r := rel.(*release.Release)
	objs, err := decodeDocuments([]byte(r.Manifest))
	if err != nil {
		tb.Fatalf("rendered manifest: %v\n%s", err, r.Manifest)
	}
	return rendered{objects: objs, notes: r.Info.Notes}, nil
}

// mustRender renders a value set that must render.
func mustRender(tb testing.TB, namespace string, vs valueSet) rendered {
	tb.Helper()
	r, err := render(tb, namespace, vs.values)
	if err != nil {
		tb.Fatalf("%s: %v", vs.name, err)
	}
	return r
}

// TestValueSetsRenderTheirObjects renders each value set and checks the objects it
// holds: the webhook's certificate objects only in their mode, the PDB only with more
// than one replica, every namespaced object in the release namespace.
func TestValueSetsRenderTheirObjects(t *testing.T) {
	for _, vs := range valueSets {
		t.Run(vs.name, func(t *testing.T) {
			r := mustRender(t, "ns-under-test", vs)
			want := slices.Clone(vs.kinds)
			sort.Strings(want)
			got := r.kinds()
			if !slices.Equal(got, want) {
				t.Errorf("rendered\n  %v\nwant\n  %v", got, want)
			}
			for _, o := range r.objects {
				labels := o.GetLabels()
				for _, l := range []string{"app.kubernetes.io/name", "app.kubernetes.io/instance", "app.kubernetes.io/version",
					"app.kubernetes.io/managed-by", "helm.sh/chart"} {
					if labels[l] == "" {
						t.Errorf("%s %s has no label %s", o.GetKind(), o.GetName(), l)
					}
				}
				clusterScoped := strings.HasPrefix(o.GetKind(), "Cluster") || o.GetKind() == "ValidatingWebhookConfiguration" || o.GetKind() == "MutatingWebhookConfiguration"
				if ns := o.GetNamespace(); clusterScoped != (ns == "") || (!clusterScoped && ns != "ns-under-test") {
					t.Errorf("%s %s in namespace %q", o.GetKind(), o.GetName(), ns)
				}
			}
			if !strings.Contains(r.notes, "kubectl get oar -A") || !strings.Contains(r.notes, "namespace ns-under-test") {
				t.Errorf("NOTES.txt does not say how to check the installation:\n%s", r.notes)
			}
			injector := slices.ContainsFunc(got, func(k string) bool { return strings.HasPrefix(k, "MutatingWebhookConfiguration/") })
			if strings.Contains(r.notes, "the engine injector adds the oar-engine sidecar") != injector {
				t.Errorf("NOTES.txt and the rendered MutatingWebhookConfiguration (%v) disagree about the engine injector:\n%s", injector, r.notes)
			}
			if injector {
				notesRenderTheInjectorFlags(t, r)
			}
			decisionLog := slices.ContainsFunc(r.objects, func(o *unstructured.Unstructured) bool {
				return o.GetKind() == "Deployment" && strings.Contains(fmt.Sprint(o.Object), "--injector-decision-log=stdout")
			})
			if strings.Contains(r.notes, "Decision log: on, on each sidecar's stdout") != decisionLog {
				t.Errorf("NOTES.txt and the manager's flags (decision log %v) disagree about the decision log:\n%s", decisionLog, r.notes)
			}
		})
	}
}

// notesRenderTheInjectorFlags: the `oarctl inject` command NOTES.txt prints gives the
// manager's --injector-* flags without the prefix, so it renders what the webhook injects
// (cmd/oarctl TestInjectRendersTheClusterSettings), and skips the release's namespace.
func notesRenderTheInjectorFlags(t *testing.T, r rendered) {
	t.Helper()
	var want []string
	for _, a := range managerArgs(t, r, "oar-operator") {
		if v, ok := strings.CutPrefix(a, "--injector-"); ok {
			want = append(want, "--"+v)
		}
	}
	_, line, ok := strings.Cut(r.notes, "    oarctl inject ")
	line, _, _ = strings.Cut(line, "\n")
	fields := strings.Fields(strings.TrimSuffix(line, " FILE..."))
	if !ok || len(fields) == 0 || fields[0] != "--operator-namespace=ns-under-test" {
		t.Fatalf("NOTES.txt has no oarctl inject command skipping the release's namespace:\n%s", r.notes)
	}
	var got []string
	for _, f := range fields[1:] {
		got = append(got, strings.Trim(f, `"`))
	}
	if !slices.Equal(got, want) {
		t.Errorf("NOTES.txt renders with\n  %q\nthe manager injects with\n  %q", got, want)
	}
}

// TestChartLints runs helm lint in strict mode (warnings fail) over every value set.
func TestChartLints(t *testing.T) {
	for _, vs := range valueSets {
		var vals map[string]any
		if err := yaml.Unmarshal([]byte(vs.values), &vals); err != nil {
			t.Fatal(err)
		}
		l := action.NewLint()
		l.Strict, l.Namespace, l.KubeVersion = true, "oar-system", kubeVersion
		res := l.Run([]string{chartDir(t)}, vals)
		var msgs bytes.Buffer
		for _, m := range res.Messages {
			fmt.Fprintf(&msgs, "\n  %s", m)
		}
		if len(res.Errors) > 0 {
			t.Errorf("%s: helm lint --strict: %v%s", vs.name, res.Errors, msgs.String())
		}
	}
}

// TestFullnameOverride renames every object and keeps the webhook flags pointing at the
// renamed ones.
func TestFullnameOverride(t *testing.T) {
	r := mustRender(t, "oar-system", valueSet{name: "override", values: "fullnameOverride: rules"})
	for _, o := range r.objects {
		if !strings.HasPrefix(o.GetName(), "rules") {
			t.Errorf("%s %s does not carry fullnameOverride", o.GetKind(), o.GetName())
		}
	}
	args := managerArgs(t, r, "rules")
	for _, want := range []string{"--webhook-service=rules-webhook", "--webhook-cert-secret=rules-webhook-cert",
		"--webhook-configuration=rules-validating-webhook"} {
		if !slices.Contains(args, want) {
			t.Errorf("args %v lack %s", args, want)
		}
	}
}

// serviceMonitor is what the tests read of a monitoring.coreos.com/v1 ServiceMonitor (the
// Prometheus Operator is not a dependency of this module; the dry runs check the whole
// object against its real CRD).
type serviceMonitor struct {
	metav1.ObjectMeta `json:"metadata"`
	Spec              struct {
		Selector          metav1.LabelSelector `json:"selector"`
		NamespaceSelector *struct {
			Any        bool     `json:"any"`
			MatchNames []string `json:"matchNames"`
		} `json:"namespaceSelector"`
		Endpoints []struct {
			Port            string `json:"port"`
			Scheme          string `json:"scheme"`
			Path            string `json:"path"`
			Interval        string `json:"interval"`
			ScrapeTimeout   string `json:"scrapeTimeout"`
			BearerTokenFile string `json:"bearerTokenFile"`
			Authorization   *struct {
				Type        string                   `json:"type"`
				Credentials corev1.SecretKeySelector `json:"credentials"`
			} `json:"authorization"`
			TLSConfig struct {
				ServerName         string `json:"serverName"`
				InsecureSkipVerify bool   `json:"insecureSkipVerify"`
				CA                 struct {
					Secret *corev1.SecretKeySelector `json:"secret"`
				} `json:"ca"`
			} `json:"tlsConfig"`
		} `json:"endpoints"`
	} `json:"spec"`
}

// serviceMonitorValues are the metrics.serviceMonitor values a value set installs with:
// values.yaml's, then the set's over them.
type serviceMonitorValues struct {
	Enabled, InsecureSkipVerify bool
	Interval, ScrapeTimeout     string
	Labels                      map[string]string
	TokenSecret                 struct{ Name, Key string }
	PrometheusServiceAccount    struct{ Name, Namespace string }
}

func smValues(tb testing.TB, vs valueSet) serviceMonitorValues {
	tb.Helper()
	var v struct {
		Metrics struct{ ServiceMonitor serviceMonitorValues }
	}
	defaults, err := os.ReadFile(filepath.Join(chartDir(tb), "values.yaml"))
	if err != nil {
		tb.Fatal(err)
	}
	for _, doc := range []string{string(defaults), vs.values} {
		if err := yaml.Unmarshal([]byte(doc), &v); err != nil {
			tb.Fatalf("%s: %v", vs.name, err)
		}
	}
	return v.Metrics.ServiceMonitor
}

// saTokenFile is where a pod's ServiceAccount token is mounted: Prometheus' own.
const saTokenFile = "/var/run/secrets/kubernetes.io/serviceaccount/token"

// TestServiceMonitor checks every rendered ServiceMonitor against the objects rendered
// with it: it selects the metrics Service and no other Service of the chart (the webhook
// Service selects the same pods), scrapes the Service's port, which reaches the
// manager's metrics port, over HTTPS with a bearer token, with the values' interval,
// timeout and labels; with cert-manager it verifies the certificate the manager serves
// (the Secret it mounts at --metrics-cert-dir, issued for the name it checks), and only
// when told to does it skip verification.
func TestServiceMonitor(t *testing.T) {
	tested := 0
	for _, vs := range valueSets {
		if !slices.Contains(vs.kinds, "ServiceMonitor/oar-operator-metrics") {
			continue
		}
		tested++
		t.Run(vs.name, func(t *testing.T) {
			want := smValues(t, vs)
			r := mustRender(t, "oar-system", vs)
			var sm serviceMonitor
			r.into(t, "ServiceMonitor", "oar-operator-metrics", &sm)
			var svc corev1.Service
			r.into(t, "Service", "oar-operator-metrics", &svc)

			sel, err := metav1.LabelSelectorAsSelector(&sm.Spec.Selector)
			if err != nil || sel.Empty() {
				t.Fatalf("selector %+v: %v", sm.Spec.Selector, err)
			}
			for _, o := range r.objects {
				if o.GetKind() != "Service" {
					continue
				}
				if matches := sel.Matches(labels.Set(o.GetLabels())); matches != (o.GetName() == svc.Name) {
					t.Errorf("selector %s matches Service %s: %v; want the metrics Service alone", sel, o.GetName(), matches)
				}
			}
			if sm.Namespace != svc.Namespace || (sm.Spec.NamespaceSelector != nil &&
				(sm.Spec.NamespaceSelector.Any || !slices.Equal(sm.Spec.NamespaceSelector.MatchNames, []string{svc.Namespace}))) {
				t.Errorf("ServiceMonitor in %s with namespaceSelector %+v; want the Service's namespace %s", sm.Namespace, sm.Spec.NamespaceSelector, svc.Namespace)
			}

			if len(sm.Spec.Endpoints) != 1 || len(svc.Spec.Ports) != 1 {
				t.Fatalf("%d endpoints for %d Service ports; want one", len(sm.Spec.Endpoints), len(svc.Spec.Ports))
			}
			ep, port := sm.Spec.Endpoints[0], svc.Spec.Ports[0]
			if ep.Port != port.Name || port.Name == "" {
				t.Errorf("endpoint port %q; the Service's port is named %q", ep.Port, port.Name)
			}
			dep := deployment(t, r)
			args := dep.Spec.Template.Spec.Containers[0].Args
			if p := containerPort(dep, port.TargetPort.String()); p == 0 || !slices.Contains(args, "--metrics-bind-address=:"+strconv.Itoa(int(p))) {
				t.Errorf("the Service's target port %s (container port %d) is not --metrics-bind-address in %v", port.TargetPort.String(), p, args)
			}
			if ep.Scheme != "https" || ep.Path != "/metrics" {
				t.Errorf("endpoint scrapes %s %s; want https /metrics", ep.Scheme, ep.Path)
			}
			if ep.Interval != want.Interval || ep.ScrapeTimeout != want.ScrapeTimeout {
				t.Errorf("interval %q timeout %q; want the values' %q %q", ep.Interval, ep.ScrapeTimeout, want.Interval, want.ScrapeTimeout)
			}
			for k, v := range want.Labels {
				if sm.Labels[k] != v {
					t.Errorf("ServiceMonitor labels %v lack %s=%s, which a serviceMonitorSelector picks it by", sm.Labels, k, v)
				}
			}

			switch {
			case want.TokenSecret.Name != "":
				a := ep.Authorization
				if a == nil || a.Type != "Bearer" || a.Credentials.Name != want.TokenSecret.Name || a.Credentials.Key != want.TokenSecret.Key || ep.BearerTokenFile != "" {
					t.Errorf("authorization %+v, bearerTokenFile %q; want the bearer token of Secret %+v alone", a, ep.BearerTokenFile, want.TokenSecret)
				}
			case ep.BearerTokenFile != saTokenFile || ep.Authorization != nil:
				t.Errorf("bearerTokenFile %q, authorization %+v; want Prometheus' ServiceAccount token %s", ep.BearerTokenFile, ep.Authorization, saTokenFile)
			}

			tls := ep.TLSConfig
			if !slices.Contains(vs.kinds, "Certificate/oar-operator-metrics-cert") || want.InsecureSkipVerify {
				if !want.InsecureSkipVerify || !tls.InsecureSkipVerify || tls.CA.Secret != nil {
					t.Errorf("tlsConfig %+v; verification may be skipped only when the values say so", tls)
				}
				return
			}
			cert := r.find(t, "Certificate", "oar-operator-metrics-cert")
			secretName, _, _ := unstructured.NestedString(cert.Object, "spec", "secretName")
			dns, _, _ := unstructured.NestedStringSlice(cert.Object, "spec", "dnsNames")
			if tls.InsecureSkipVerify || tls.CA.Secret == nil || tls.CA.Secret.Name != secretName || tls.CA.Secret.Key != "ca.crt" {
				t.Errorf("tlsConfig %+v; want the CA of the metrics certificate's Secret %s (ca.crt)", tls, secretName)
			}
			if want := svc.Name + "." + svc.Namespace + ".svc"; tls.ServerName != want || !slices.Contains(dns, want) {
				t.Errorf("serverName %q, certificate DNS names %v; want both to hold the Service's name %s", tls.ServerName, dns, want)
			}
			if got := metricsCertSecret(dep); got != secretName {
				t.Errorf("the manager serves metrics with Secret %q; the ServiceMonitor trusts %q", got, secretName)
			}
		})
	}
	if tested < 2 {
		t.Errorf("%d value sets render a ServiceMonitor; want at least one per certificate mode", tested)
	}
}

// TestServiceMonitorOnlyWhenAsked: no ServiceMonitor (nor the binding that comes with
// it) unless enabled with metrics on, and none that cannot verify the endpoint unless
// the values accept it.
func TestServiceMonitorOnlyWhenAsked(t *testing.T) {
	const bind = "prometheusServiceAccount: {namespace: monitoring, name: prometheus}"
	for _, values := range []string{
		"",
		"metrics: {serviceMonitor: {enabled: false, " + bind + "}}",
		"metrics: {enabled: false, serviceMonitor: {enabled: true, " + bind + "}}",
		"{webhook: {certManagement: cert-manager}, metrics: {enabled: false, serviceMonitor: {enabled: true}}}",
	} {
		r, err := render(t, "oar-system", values)
		if err != nil {
			t.Fatalf("values %q: %v", values, err)
		}
		for _, o := range r.objects {
			if o.GetKind() == "ServiceMonitor" || o.GetName() == "oar-operator-metrics-reader" && o.GetKind() == "ClusterRoleBinding" {
				t.Errorf("values %q render %s %s", values, o.GetKind(), o.GetName())
			}
		}
	}
	_, err := render(t, "oar-system", "metrics: {serviceMonitor: {enabled: true}}")
	if err == nil || !strings.Contains(err.Error(), "insecureSkipVerify") || !strings.Contains(err.Error(), "self-managed") {
		t.Errorf("a ServiceMonitor that cannot verify the self-managed certificate: error %v; want one naming self-managed and insecureSkipVerify", err)
	}
}

// TestMetricsCertificate: with cert-manager and metrics, the manager serves a certificate
// issued for the metrics Service by the webhook certificate's issuer, from the Secret it
// mounts at --metrics-cert-dir; otherwise it is given no certificate directory (and
// generates one).
func TestMetricsCertificate(t *testing.T) {
	for _, vs := range valueSets {
		t.Run(vs.name, func(t *testing.T) {
			r := mustRender(t, "oar-system", vs)
			dep := deployment(t, r)
			if !slices.Contains(vs.kinds, "Certificate/oar-operator-metrics-cert") {
				if dir := metricsCertDir(dep); dir != "" {
					t.Errorf("--metrics-cert-dir=%s without a metrics certificate", dir)
				}
				return
			}
			cert := r.find(t, "Certificate", "oar-operator-metrics-cert")
			secretName, _, _ := unstructured.NestedString(cert.Object, "spec", "secretName")
			if got := metricsCertSecret(dep); secretName == "" || got != secretName {
				t.Errorf("Certificate writes Secret %q; the pods mount %q at --metrics-cert-dir %q", secretName, got, metricsCertDir(dep))
			}
			dns, _, _ := unstructured.NestedStringSlice(cert.Object, "spec", "dnsNames")
			if !slices.Contains(dns, "oar-operator-metrics.oar-system.svc") {
				t.Errorf("metrics Certificate DNS names %v lack the metrics Service's", dns)
			}
			issuer, _, _ := unstructured.NestedStringMap(cert.Object, "spec", "issuerRef")
			if slices.Contains(vs.kinds, "Certificate/oar-operator-webhook-cert") {
				webhookIssuer, _, _ := unstructured.NestedStringMap(r.find(t, "Certificate", "oar-operator-webhook-cert").Object, "spec", "issuerRef")
				if !reflect.DeepEqual(issuer, webhookIssuer) {
					t.Errorf("metrics certificate issuer %v, webhook certificate issuer %v; want one issuer", issuer, webhookIssuer)
				}
			}
			if slices.Contains(vs.kinds, "Issuer/oar-operator-selfsigned") != (issuer["name"] == "oar-operator-selfsigned") {
				t.Errorf("issuerRef %v; the chart's self-signed Issuer rendered: %v", issuer, slices.Contains(vs.kinds, "Issuer/oar-operator-selfsigned"))
			}
		})
	}
}

// metricsCertDir is the manager's --metrics-cert-dir, "" if none.
func metricsCertDir(dep appsv1.Deployment) string {
	for _, a := range dep.Spec.Template.Spec.Containers[0].Args {
		if dir, ok := strings.CutPrefix(a, "--metrics-cert-dir="); ok {
			return dir
		}
	}
	return ""
}

// metricsCertSecret is the Secret mounted at the manager's --metrics-cert-dir.
func metricsCertSecret(dep appsv1.Deployment) string {
	dir := metricsCertDir(dep)
	for _, m := range dep.Spec.Template.Spec.Containers[0].VolumeMounts {
		if dir == "" || m.MountPath != dir || m.SubPath != "" {
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
