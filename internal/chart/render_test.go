package chart

import (
	"bytes"
	"fmt"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"helm.sh/helm/v4/pkg/action"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	release "helm.sh/helm/v4/pkg/release/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
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
	webhookKinds = []string{"Service/oar-operator-webhook", "ValidatingWebhookConfiguration/oar-operator-validating-webhook"}
	selfManaged  = []string{"Secret/oar-operator-webhook-cert", "Role/oar-operator-webhook-cert", "RoleBinding/oar-operator-webhook-cert"}
	metricsKinds = []string{"Service/oar-operator-metrics", "ClusterRole/oar-operator-metrics-reader"}
	pdbKinds     = []string{"PodDisruptionBudget/oar-operator"}
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
		kinds: concat(baseKinds, webhookKinds, metricsKinds, pdbKinds,
			[]string{"Issuer/oar-operator-selfsigned", "Certificate/oar-operator-webhook-cert"}),
	},
	{
		name: "cert-manager with the user's ClusterIssuer",
		values: `
webhook:
  certManagement: cert-manager
  certManager: {issuerRef: {name: corp-ca, kind: ClusterIssuer}, duration: 2160h, renewBefore: 360h}`,
		kinds: concat(baseKinds, webhookKinds, metricsKinds, pdbKinds, []string{"Certificate/oar-operator-webhook-cert"}),
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
		// Every optional pass-through value, so that the dry run checks what they become.
		name: "every option",
		values: `
replicaCount: 3
image: {repository: registry.example/oar/oar-operator, digest: "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef", pullPolicy: Always}
imagePullSecrets: [{name: regcred}]
serviceAccount: {name: oar-manager, annotations: {iam.example/role: oar}}
manager: {logLevel: 3, logEncoder: console, probePort: 9081, extraArgs: [--enable-http2], extraEnv: [{name: GOMEMLIMIT, value: 200MiB}]}
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
metrics: {port: 9443}`,
		kinds: concat(baseKinds[:5], []string{"ServiceAccount/oar-manager"}, webhookKinds, selfManaged, metricsKinds, pdbKinds),
	},
}

func concat(lists ...[]string) []string { return slices.Concat(lists...) }

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
			if got := r.kinds(); !slices.Equal(got, want) {
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
				clusterScoped := strings.HasPrefix(o.GetKind(), "Cluster") || o.GetKind() == "ValidatingWebhookConfiguration"
				if ns := o.GetNamespace(); clusterScoped != (ns == "") || (!clusterScoped && ns != "ns-under-test") {
					t.Errorf("%s %s in namespace %q", o.GetKind(), o.GetName(), ns)
				}
			}
			if !strings.Contains(r.notes, "kubectl get oar -A") || !strings.Contains(r.notes, "namespace ns-under-test") {
				t.Errorf("NOTES.txt does not say how to check the installation:\n%s", r.notes)
			}
		})
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
