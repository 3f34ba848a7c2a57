package admission

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	jsonpatch "github.com/evanphx/json-patch/v5"
	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apiresource "k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
	"sigs.k8s.io/yaml"

	"github.com/oar-operator/oar-operator/internal/inject"
)

// injectorHome stands for the operator's own namespace in the suite: the injector
// never mutates a pod there.
const injectorHome = "oar-injector-home"

// injectorOptions are the sidecar defaults the suite's manager serves.
func injectorOptions() inject.Options {
	o := inject.Defaults()
	o.Image = "registry.example/oar-operator:v0.0.0-test"
	o.SkipNamespaces = append(o.SkipNamespaces, injectorHome)
	return o
}

// podNamespace is a namespace of a test's own, labelled with labels.
func podNamespace(t *testing.T, labels map[string]string) string {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "inject-", Labels: labels}}
	mustCreate(t, ns)
	return ns.Name
}

// agentPod is a pod of two application containers, labelled with labels.
func agentPod(namespace, name string, labels map[string]string) *corev1.Pod {
	no := false
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name, Labels: labels},
		Spec: corev1.PodSpec{
			AutomountServiceAccountToken: &no,
			Containers: []corev1.Container{
				{Name: "agent", Image: "registry.example/acme-agent:1.0", Env: []corev1.EnvVar{{Name: "MODE", Value: "strict"}}},
				{Name: "tools", Image: "registry.example/acme-tools:1.0"},
			},
		},
	}
}

func capabilityLabel(name string) map[string]string {
	return map[string]string{inject.CapabilityLabel: name}
}

func get(t *testing.T, pod *corev1.Pod) *corev1.Pod {
	t.Helper()
	stored := &corev1.Pod{}
	if err := k8s.Get(context.Background(), client.ObjectKeyFromObject(pod), stored); err != nil {
		t.Fatal(err)
	}
	return stored
}

// assertInjected checks the sidecar, the volume and the env of a stored pod.
func assertInjected(t *testing.T, pod *corev1.Pod, capability string, port int) {
	t.Helper()
	init := pod.Spec.InitContainers
	if len(init) == 0 || init[0].Name != inject.ContainerName || init[0].RestartPolicy == nil || *init[0].RestartPolicy != corev1.ContainerRestartPolicyAlways {
		t.Fatalf("no native oar-engine sidecar first among the init containers: %+v", init)
	}
	if init[0].Image != injectorOptions().Image {
		t.Errorf("sidecar image %s", init[0].Image)
	}
	if init[0].StartupProbe == nil || init[0].ReadinessProbe == nil || init[0].LivenessProbe == nil {
		t.Errorf("sidecar probes missing")
	}
	if m := init[0].VolumeMounts; len(m) != 1 || m[0].SubPath != "" || m[0].MountPath != inject.BundleDir {
		t.Errorf("sidecar mounts %+v", m)
	}
	i := slices.IndexFunc(pod.Spec.Volumes, func(v corev1.Volume) bool { return v.Name == inject.VolumeName })
	if i < 0 || pod.Spec.Volumes[i].ConfigMap == nil || pod.Spec.Volumes[i].ConfigMap.Name != capability+"-oar-bundle" {
		t.Fatalf("no bundle volume of %s-oar-bundle: %+v", capability, pod.Spec.Volumes)
	}
	for _, c := range pod.Spec.Containers {
		j := slices.IndexFunc(c.Env, func(e corev1.EnvVar) bool { return e.Name == inject.EngineURLEnv })
		if j < 0 || c.Env[j].Value != "http://127.0.0.1:"+strconv.Itoa(port) {
			t.Errorf("container %s env %+v", c.Name, c.Env)
		}
	}
}

// A labelled pod is stored with the sidecar, the volume and the env; an unlabelled one
// exactly as sent.
func TestInjectorLabelledPod(t *testing.T) {
	needEnv(t)
	ns := podNamespace(t, nil)
	mustCreate(t, capabilityObject(ns, "acme-gateway", gatewaySpec()))
	pod := agentPod(ns, "agent", capabilityLabel("acme-gateway"))
	mustCreate(t, pod)
	assertInjected(t, get(t, pod), "acme-gateway", 8181)

	plain := agentPod(ns, "plain", nil)
	mustCreate(t, plain)
	first := get(t, plain)
	// The API server defaults what it stores; a pod sent already defaulted must come back
	// byte for byte.
	again := agentPod(ns, "plain-again", nil)
	again.Spec = *first.Spec.DeepCopy()
	sent, _ := json.Marshal(again.Spec)
	mustCreate(t, again)
	stored, _ := json.Marshal(get(t, again).Spec)
	if string(stored) != string(sent) || len(first.Spec.InitContainers)+len(first.Spec.Volumes) != 0 {
		t.Fatalf("an unlabelled pod was changed:\nsent   %s\nstored %s", sent, stored)
	}
}

// An injected pod sent again (a copy, a re-applied manifest) is stored as sent, and the
// webhook answers it with an empty patch.
func TestInjectorIdempotent(t *testing.T) {
	needEnv(t)
	ns := podNamespace(t, nil)
	mustCreate(t, capabilityObject(ns, "acme-gateway", gatewaySpec()))
	pod := agentPod(ns, "agent", capabilityLabel("acme-gateway"))
	mustCreate(t, pod)
	injected := get(t, pod)

	copied := agentPod(ns, "copy", capabilityLabel("acme-gateway"))
	copied.Spec = *injected.Spec.DeepCopy()
	sent, _ := json.Marshal(copied.Spec)
	mustCreate(t, copied)
	if stored, _ := json.Marshal(get(t, copied).Spec); string(stored) != string(sent) {
		t.Fatalf("re-sending an injected pod changed it:\nsent   %s\nstored %s", sent, stored)
	}

	resp := handle(t, injected)
	if !resp.Allowed || len(resp.Patches) != 0 || resp.Patch != nil {
		t.Fatalf("allowed %v, patch %v", resp.Allowed, resp.Patches)
	}
	if resp := handle(t, agentPod(ns, "agent", capabilityLabel("acme-gateway"))); !resp.Allowed || len(resp.Patches) == 0 {
		t.Fatalf("the pod as first sent: allowed %v, patch %v", resp.Allowed, resp.Patches)
	}
}

// handle calls the suite's injector as the API server would, on a CREATE of pod.
func handle(t *testing.T, pod *corev1.Pod) admission.Response {
	t.Helper()
	return handleWith(t, pod, injectorOptions())
}

// handleWith calls an injector serving o as the API server would, on a CREATE of pod.
func handleWith(t *testing.T, pod *corev1.Pod, o inject.Options) admission.Response {
	t.Helper()
	raw, err := json.Marshal(pod)
	if err != nil {
		t.Fatal(err)
	}
	h := &Injector{Reader: k8s, APIReader: k8s, Options: o, decoder: admission.NewDecoder(env.Scheme)}
	return h.Handle(context.Background(), admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{
		Operation: admissionv1.Create, Namespace: pod.Namespace, Name: pod.Name, Object: runtime.RawExtension{Raw: raw},
	}})
}

// Each refusal is a 4xx naming the cause: the annotation and what it accepts, the clash
// and its name.
func TestInjectorRefusals(t *testing.T) {
	needEnv(t)
	ns := podNamespace(t, nil)
	cases := []struct {
		name   string
		change func(*corev1.Pod)
		want   []string
	}{
		{"bad port", func(p *corev1.Pod) { p.Annotations = map[string]string{inject.AnnotationPort: "http"} },
			[]string{"rules.oar.dev/engine-port", `"http" is not accepted`, "a port number from 1 to 65535"}},
		{"bad ttl", func(p *corev1.Pod) { p.Annotations = map[string]string{inject.AnnotationSessionIdleTTL: "ever"} },
			[]string{"rules.oar.dev/engine-session-idle-ttl", "a positive Go duration"}},
		{"bad memory limit", func(p *corev1.Pod) { p.Annotations = map[string]string{inject.AnnotationMemoryLimit: "lots"} },
			[]string{"rules.oar.dev/engine-memory-limit", "a positive Kubernetes quantity"}},
		{"bad run-as-user", func(p *corev1.Pod) { p.Annotations = map[string]string{inject.AnnotationRunAsUser: "-1"} },
			[]string{"metadata.annotations[rules.oar.dev/engine-run-as-user]", `"-1" is not accepted`, "a UID from 1"}},
		{"no user for a sidecar in a pod running as root", func(p *corev1.Pod) {
			root := int64(0)
			p.Annotations = map[string]string{inject.AnnotationRunAsUser: "none"}
			p.Spec.SecurityContext = &corev1.PodSecurityContext{RunAsUser: &root}
		}, []string{"spec.securityContext.runAsUser", "the pod runs as root (0)", "the kubelet would never start it"}},
		{"container name", func(p *corev1.Pod) { p.Spec.Containers[1].Name = "oar-engine" },
			[]string{"spec.containers[1].name", `already called "oar-engine"`}},
		{"volume name", func(p *corev1.Pod) {
			p.Spec.Volumes = []corev1.Volume{{Name: "oar-bundle", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}
		}, []string{"spec.volumes[0].name", `already called "oar-bundle"`}},
		{"port", func(p *corev1.Pod) { p.Spec.Containers[0].Ports = []corev1.ContainerPort{{ContainerPort: 8181}} },
			[]string{"spec.containers[0].ports[0].containerPort", `container "agent" already uses port 8181`}},
		{"bad capability name", func(p *corev1.Pod) { p.Labels[inject.CapabilityLabel] = "Acme" },
			[]string{"metadata.labels[rules.oar.dev/capability]", `"Acme" is not a Capability name`}},
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			pod := agentPod(ns, "refused-"+strconv.Itoa(i), capabilityLabel("acme-gateway"))
			c.change(pod)
			err := k8s.Create(context.Background(), pod)
			var status apierrors.APIStatus
			if err == nil || !errors.As(err, &status) {
				t.Fatalf("want a refusal, got %v", err)
			}
			if code := status.Status().Code; code < 400 || code >= 500 {
				t.Fatalf("status %d: %v", code, err)
			}
			for _, w := range append(c.want, `admission webhook "inject.rules.oar.dev" denied the request`) {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("refusal %q does not say %q", err, w)
				}
			}
		})
	}
}

// The sidecar's user, as the API server stores it: the image's user and group, 65532,
// whatever the pod's own user, except in a pod OpenShift's SCC admission has annotated
// and given its containers a user before the webhook runs (as it would have written
// them here), whose sidecar gets that same UID; none leaves it unset, a UID sets it.
func TestInjectorRunAsUser(t *testing.T) {
	needEnv(t)
	ns := podNamespace(t, nil)
	u := func(n int64) *int64 { return &n }
	show := func(p *int64) string {
		if p == nil {
			return "unset"
		}
		return strconv.FormatInt(*p, 10)
	}
	cases := []struct {
		name              string
		podUser           *int64
		containerUser     *int64
		annotations       map[string]string
		wantUser, wantGrp string
	}{
		{"root", u(0), nil, nil, "65532", "65532"},
		{"a-user-of-its-own", u(1001), nil, nil, "65532", "65532"},
		{"no-user", nil, nil, nil, "65532", "65532"},
		{"scc-admitted", nil, u(1000680000), map[string]string{inject.SCCAnnotation: "restricted-v2"}, "1000680000", "unset"},
		{"scc-without-container-user", u(0), nil, map[string]string{inject.SCCAnnotation: "anyuid"}, "65532", "65532"},
		{"container-user-without-scc", nil, u(1001), nil, "65532", "65532"},
		{"none", u(1001), nil, map[string]string{inject.AnnotationRunAsUser: "none"}, "unset", "unset"},
		{"a-fixed-uid", u(1001), nil, map[string]string{inject.AnnotationRunAsUser: "5000"}, "5000", "unset"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			pod := agentPod(ns, c.name, capabilityLabel("acme-gateway"))
			pod.Annotations = c.annotations
			pod.Spec.SecurityContext = &corev1.PodSecurityContext{RunAsUser: c.podUser}
			pod.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{RunAsUser: c.containerUser}
			mustCreate(t, pod)
			stored := get(t, pod)
			assertInjected(t, stored, "acme-gateway", 8181)
			sc := stored.Spec.InitContainers[0].SecurityContext
			if show(sc.RunAsUser) != c.wantUser || show(sc.RunAsGroup) != c.wantGrp || sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot {
				t.Fatalf("stored sidecar runAsUser %s runAsGroup %s runAsNonRoot %v; want %s %s true", show(sc.RunAsUser), show(sc.RunAsGroup), sc.RunAsNonRoot, c.wantUser, c.wantGrp)
			}
		})
	}
}

// A missing Capability is a warning, as kubectl prints it, and the pod is injected.
func TestInjectorCapabilityMissingWarns(t *testing.T) {
	needEnv(t)
	ns := podNamespace(t, nil)
	c, warnings := warningClient(t)
	pod := agentPod(ns, "early", capabilityLabel("not-yet"))
	if err := c.Create(context.Background(), pod); err != nil {
		t.Fatal(err)
	}
	hasWarning(t, warnings.take(), "Capability "+ns+"/not-yet does not exist (yet)", "startup probe holds", "not-yet-oar-bundle")
	assertInjected(t, get(t, pod), "not-yet", 8181)

	mustCreate(t, capabilityObject(ns, "acme-gateway", gatewaySpec()))
	seen(t, capabilityObject(ns, "acme-gateway", gatewaySpec()))
	if err := c.Create(context.Background(), agentPod(ns, "later", capabilityLabel("acme-gateway"))); err != nil {
		t.Fatal(err)
	}
	if w := warnings.take(); len(w) != 0 {
		t.Fatalf("warnings with the Capability in place: %q", w)
	}
}

// A namespace label opts in every pod of the namespace; a pod's own label wins; server-
// side dry runs are answered the same way; annotations tune the sidecar.
func TestInjectorNamespaceLabelAndDryRun(t *testing.T) {
	needEnv(t)
	ns := podNamespace(t, capabilityLabel("team-gateway"))
	plain := agentPod(ns, "plain", nil)
	mustCreate(t, plain)
	assertInjected(t, get(t, plain), "team-gateway", 8181)
	own := agentPod(ns, "own", capabilityLabel("acme-gateway"))
	mustCreate(t, own)
	assertInjected(t, get(t, own), "acme-gateway", 8181)

	dry := agentPod(ns, "dry", nil)
	dry.Annotations = map[string]string{inject.AnnotationPort: "9000", inject.AnnotationProbePort: "9001"}
	if err := k8s.Create(context.Background(), dry, client.DryRunAll); err != nil {
		t.Fatal(err)
	}
	assertInjected(t, dry, "team-gateway", 9000)
	if err := k8s.Get(context.Background(), client.ObjectKeyFromObject(dry), &corev1.Pod{}); !apierrors.IsNotFound(err) {
		t.Fatalf("the dry run stored the pod: %v", err)
	}
}

// Pods in kube-system and in the operator's own namespace are never mutated, labelled or
// not.
func TestInjectorSkipsSystemNamespaces(t *testing.T) {
	needEnv(t)
	home := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: injectorHome, Labels: capabilityLabel("acme-gateway")}}
	if err := k8s.Create(context.Background(), home); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	for _, ns := range []string{metav1.NamespaceSystem, injectorHome} {
		pod := agentPod(ns, "skipped-"+strconv.FormatInt(time.Now().UnixNano(), 36), capabilityLabel("acme-gateway"))
		mustCreate(t, pod)
		t.Cleanup(func() { _ = k8s.Delete(context.Background(), pod) })
		if s := get(t, pod).Spec; len(s.InitContainers)+len(s.Volumes) != 0 || len(s.Containers[1].Env) != 0 {
			t.Fatalf("a pod in %s was injected: %+v", ns, s)
		}
	}
}

// The webhook's latency: OAR_INJECT_CREATES sequential creates of labelled pods (default
// 20, a smoke run), each injected, interleaved with as many unlabelled ones that no
// webhook sees. Logged: the p50 and p99 of both round trips (their difference is what the
// webhook adds; the tail is mostly the API server's and the machine's) and the p99 of the
// handler itself, from controller-runtime's webhook latency histogram (buckets of 1 ms,
// 10 ms, 100 ms). With OAR_INJECT_CREATES set, the handler's p99 must be within the 10 ms
// bucket, well under the 20 ms budget.
func TestInjectorLatency(t *testing.T) {
	needEnv(t)
	n, budget := 20, false
	if v := os.Getenv("OAR_INJECT_CREATES"); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil || n < 1 {
			t.Fatalf("OAR_INJECT_CREATES=%q", v)
		}
		budget = true
	}
	ns := podNamespace(t, nil)
	mustCreate(t, capabilityObject(ns, "acme-gateway", gatewaySpec()))
	seen(t, capabilityObject(ns, "acme-gateway", gatewaySpec()))
	before := handlerLatency(t)
	var plain, injected []time.Duration
	for i := range n {
		for _, labels := range []map[string]string{nil, capabilityLabel("acme-gateway")} {
			pod := agentPod(ns, "pod-"+strconv.Itoa(i)+"-"+strconv.Itoa(len(labels)), labels)
			start := time.Now()
			mustCreate(t, pod)
			d := time.Since(start)
			if labels == nil {
				plain = append(plain, d)
			} else if injected = append(injected, d); len(pod.Spec.InitContainers) != 1 {
				t.Fatalf("pod %s not injected", pod.Name)
			}
		}
	}
	after := handlerLatency(t)
	if len(before) != len(after) { // no request had reached the injector before the run
		before = make([]bucket, len(after))
	}
	pct := func(d []time.Duration, p int) time.Duration {
		d = slices.Clone(d)
		slices.Sort(d)
		return d[(len(d)*p+99)/100-1]
	}
	// The p99 bucket of the handler's latency over the run: the least upper bound whose
	// cumulative count reaches 99% of the run's requests.
	total := after[len(after)-1].count - before[len(before)-1].count
	var p99 float64
	for i := range after {
		if float64(after[i].count-before[i].count) >= 0.99*float64(total) {
			p99 = after[i].le
			break
		}
	}
	t.Logf("%d sequential creates each: labelled (injected) p50 %v p99 %v; unlabelled (no webhook) p50 %v p99 %v; the handler's p99 ≤ %gs over %d requests",
		n, pct(injected, 50), pct(injected, 99), pct(plain, 50), pct(plain, 99), p99, total)
	if total < uint64(n) {
		t.Fatalf("the handler saw %d requests for %d labelled creates", total, n)
	}
	if budget && p99 > 0.010 {
		t.Fatalf("the handler's p99 is above 10 ms (≤ %gs); the budget is 20 ms", p99)
	}
}

// bucket is one cumulative bucket of a histogram.
type bucket struct {
	le    float64
	count uint64
}

// handlerLatency is controller-runtime's latency histogram of the injector's path, its
// last bucket +Inf.
func handlerLatency(t *testing.T) []bucket {
	t.Helper()
	families, err := ctrlmetrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != "controller_runtime_webhook_latency_seconds" {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "webhook" && l.GetValue() == InjectPath {
					var out []bucket
					for _, b := range m.GetHistogram().GetBucket() {
						out = append(out, bucket{b.GetUpperBound(), b.GetCumulativeCount()})
					}
					return append(out, bucket{math.Inf(1), m.GetHistogram().GetSampleCount()})
				}
			}
		}
	}
	return []bucket{{math.Inf(1), 0}}
}

// `oarctl inject` (inject.Manifests) gives exactly the pod spec the webhook stores: for
// each workload of internal/inject/testdata/workloads.yaml, a pod from its template as
// sent (injected by the webhook) and a pod from its rendered template with the label
// dropped (so no webhook sees it) are stored with the same spec, byte for byte.
func TestInjectorEqualsOarctlInject(t *testing.T) {
	needEnv(t)
	ns := podNamespace(t, nil)
	mustCreate(t, capabilityObject(ns, "acme-gateway", gatewaySpec()))
	sent := workloadDocs(t)
	rendered := workloadDocs(t)
	for _, docs := range [][]map[string]any{sent, rendered} {
		for _, d := range docs {
			if meta, _ := d["metadata"].(map[string]any); meta != nil && meta["namespace"] == "acme" {
				meta["namespace"] = ns
			}
		}
	}
	if _, err := inject.Manifests(rendered, ns, injectorOptions()); err != nil {
		t.Fatal(err)
	}
	paths := map[string][]string{
		"Deployment": {"spec", "template"}, "StatefulSet": {"spec", "template"},
		"CronJob": {"spec", "jobTemplate", "spec", "template"}, "Pod": nil,
	}
	checked := 0
	for i := range sent {
		kind, _ := sent[i]["kind"].(string)
		path, ok := paths[kind]
		name, _ := sent[i]["metadata"].(map[string]any)["name"].(string)
		if !ok || name == "by-namespace" || name == "untouched" {
			continue
		}
		t.Run(kind+"/"+name, func(t *testing.T) {
			viaWebhook := templatePod(t, sent[i], path, ns, strings.ToLower(kind)+"-"+name+"-webhook")
			mustCreate(t, viaWebhook)
			viaOarctl := templatePod(t, rendered[i], path, ns, strings.ToLower(kind)+"-"+name+"-oarctl")
			delete(viaOarctl.Labels, inject.CapabilityLabel)
			mustCreate(t, viaOarctl)
			a, _ := json.Marshal(get(t, viaWebhook).Spec)
			b, _ := json.Marshal(get(t, viaOarctl).Spec)
			if string(a) != string(b) || !strings.Contains(string(a), `"name":"oar-engine"`) {
				t.Fatalf("the webhook stored\n%s\noarctl inject renders\n%s", a, b)
			}
		})
		checked++
	}
	if checked != 6 {
		t.Fatalf("%d workloads compared, want 6", checked)
	}
}

func workloadDocs(t *testing.T) []map[string]any {
	t.Helper()
	raw, err := os.ReadFile("../inject/testdata/workloads.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var docs []map[string]any
	for _, part := range strings.Split(string(raw), "\n---\n") {
		var d map[string]any
		if err := yaml.Unmarshal([]byte(part), &d); err != nil {
			t.Fatal(err)
		}
		docs = append(docs, d)
	}
	return docs
}

// templatePod is a pod made from the template at path in doc, as a workload controller
// makes it.
func templatePod(t *testing.T, doc map[string]any, path []string, namespace, name string) *corev1.Pod {
	t.Helper()
	v := any(doc)
	for _, k := range path {
		v = v.(map[string]any)[k]
	}
	raw, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	pod := &corev1.Pod{}
	if err := json.Unmarshal(raw, pod); err != nil {
		t.Fatal(err)
	}
	pod.Namespace, pod.Name = namespace, name
	return pod
}

// A copied injected pod whose label now names another Capability is stored serving that
// Capability's bundle, and kubectl prints the warning; one whose bundle directory is no
// ConfigMap volume is refused with a 422 naming the volume.
func TestInjectorCopiedPodServesItsLabelsCapability(t *testing.T) {
	needEnv(t)
	ns := podNamespace(t, nil)
	mustCreate(t, capabilityObject(ns, "acme-gateway", gatewaySpec()))
	mustCreate(t, capabilityObject(ns, "other-gateway", gatewaySpec()))
	seen(t, capabilityObject(ns, "other-gateway", gatewaySpec()))
	pod := agentPod(ns, "agent", capabilityLabel("acme-gateway"))
	mustCreate(t, pod)
	injected := get(t, pod)

	c, warnings := warningClient(t)
	copied := agentPod(ns, "copy", capabilityLabel("other-gateway"))
	copied.Spec = *injected.Spec.DeepCopy()
	if err := c.Create(context.Background(), copied); err != nil {
		t.Fatal(err)
	}
	hasWarning(t, warnings.take(), "served the ConfigMap acme-gateway-oar-bundle", "it now serves other-gateway-oar-bundle, the bundle of Capability other-gateway that metadata.labels[rules.oar.dev/capability] names")
	assertInjected(t, get(t, copied), "other-gateway", 8181)

	broken := agentPod(ns, "broken", capabilityLabel("other-gateway"))
	broken.Spec = *injected.Spec.DeepCopy()
	i := slices.IndexFunc(broken.Spec.Volumes, func(v corev1.Volume) bool { return v.Name == inject.VolumeName })
	broken.Spec.Volumes[i].VolumeSource = corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}
	err := k8s.Create(context.Background(), broken)
	field := "spec.volumes[" + strconv.Itoa(i) + "]"
	if cs := causes(t, err); len(cs) != 1 || cs[0].Field != field || !strings.Contains(cs[0].Message, "no ConfigMap volume") || !strings.Contains(cs[0].Message, "other-gateway-oar-bundle") {
		t.Fatalf("causes %+v, want one at %s", cs, field)
	}
}

// TestInjectorWarningWithAControlCharacter: a warning whose text has a control character
// — here a sidecar already in the pod whose flag value ends in a newline, as a YAML
// block scalar leaves it — reaches kubectl with the character escaped; the API server
// drops a Warning header it cannot carry, so it would otherwise never be seen.
func TestInjectorWarningWithAControlCharacter(t *testing.T) {
	needEnv(t)
	ns := podNamespace(t, nil)
	mustCreate(t, capabilityObject(ns, "acme-gateway", gatewaySpec()))
	seen(t, capabilityObject(ns, "acme-gateway", gatewaySpec()))
	pod := agentPod(ns, "agent", capabilityLabel("acme-gateway"))
	mustCreate(t, pod)

	c, warnings := warningClient(t)
	logging := agentPod(ns, "logging", capabilityLabel("acme-gateway"))
	logging.Spec = *get(t, pod).Spec.DeepCopy()
	engine := &logging.Spec.InitContainers[0]
	engine.Args = append(engine.Args, "--decision-log=stdout\n")
	if err := c.Create(context.Background(), logging); err != nil {
		t.Fatal(err)
	}
	hasWarning(t, warnings.take(), "is left as it is, but it does not run with this cluster's settings", `--decision-log stdout\n where the injector gives off`)
}

// The API server refuses pod-level requests (spec.resources) below the containers'
// aggregate requests (KEP-2837). A pod whose containers exactly fill its pod-level
// resources is stored once injected, its budget grown by the sidecar's share (kubectl
// prints what grew); a pod with pod-level limits alone gets the requests the API server
// defaults: its limits when no container asks, else the containers' with the sidecar's.
func TestInjectorPodLevelResources(t *testing.T) {
	needEnv(t)
	ns := podNamespace(t, nil)
	mustCreate(t, capabilityObject(ns, "acme-gateway", gatewaySpec()))
	seen(t, capabilityObject(ns, "acme-gateway", gatewaySpec()))
	list := func(cpu, memory string) corev1.ResourceList {
		return corev1.ResourceList{corev1.ResourceCPU: apiresource.MustParse(cpu), corev1.ResourceMemory: apiresource.MustParse(memory)}
	}
	cases := []struct {
		name                 string
		pod, container, want corev1.ResourceRequirements
	}{
		{"filled", corev1.ResourceRequirements{Requests: list("500m", "256Mi"), Limits: list("500m", "256Mi")}, corev1.ResourceRequirements{Requests: list("500m", "256Mi")},
			corev1.ResourceRequirements{Requests: list("550m", "384Mi"), Limits: list("550m", "384Mi")}},
		{"limits", corev1.ResourceRequirements{Limits: list("500m", "256Mi")}, corev1.ResourceRequirements{},
			corev1.ResourceRequirements{Requests: list("550m", "384Mi"), Limits: list("550m", "384Mi")}},
		{"limits-and-container-requests", corev1.ResourceRequirements{Limits: list("500m", "256Mi")}, corev1.ResourceRequirements{Requests: list("100m", "100Mi")},
			corev1.ResourceRequirements{Requests: list("150m", "164Mi"), Limits: list("550m", "384Mi")}},
	}
	c, warnings := warningClient(t)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			mk := func(name string, labels map[string]string) *corev1.Pod {
				p := agentPod(ns, name, labels)
				p.Spec.Containers = p.Spec.Containers[:1]
				p.Spec.Resources = tc.pod.DeepCopy()
				p.Spec.Containers[0].Resources = tc.container
				return p
			}
			mustCreate(t, mk(tc.name+"-plain", nil))
			pod := mk(tc.name, capabilityLabel("acme-gateway"))
			if err := c.Create(context.Background(), pod); err != nil {
				t.Fatalf("the injected pod is refused: %v", err)
			}
			hasWarning(t, warnings.take(), "spec.resources: the pod's own resources grow by the oar-engine sidecar's share")
			stored := get(t, pod)
			assertInjected(t, stored, "acme-gateway", 8181)
			for _, l := range []struct{ got, want corev1.ResourceList }{{stored.Spec.Resources.Requests, tc.want.Requests}, {stored.Spec.Resources.Limits, tc.want.Limits}} {
				for name, want := range l.want {
					if got := l.got[name]; got.Cmp(want) != 0 || len(l.got) != len(l.want) {
						t.Fatalf("stored spec.resources %+v, want %+v", stored.Spec.Resources, tc.want)
					}
				}
			}
		})
	}
}

// With the cluster's session store, its password Secret and the decision log as the
// manager's defaults, the webhook's injection is `oarctl inject`'s rendering with the same
// settings (cmd/oarctl TestInjectRendersTheClusterSettings shows its flags are the
// manager's): for each workload of internal/inject/testdata/workloads.yaml, a pod from
// its template patched by the injector and a pod from its rendered template, both sent
// without the label (so the suite's webhook leaves them), are stored with the same spec.
// Sent with its label to the suite's webhook, whose settings differ, a rendering is
// stored as sent, with a warning naming the settings it lacks.
func TestInjectorWithClusterSettingsEqualsOarctlInject(t *testing.T) {
	needEnv(t)
	ns := podNamespace(t, nil)
	mustCreate(t, capabilityObject(ns, "acme-gateway", gatewaySpec()))
	o := injectorOptions()
	o.SessionStore, o.SessionStoreSecret = "rediss://shared-redis.redis:6380", "shared-redis"
	o.DecisionLog, o.DecisionLogContent, o.DecisionLogSample = true, "hash", "0.1"
	sent := workloadDocs(t)
	rendered := workloadDocs(t)
	for _, docs := range [][]map[string]any{sent, rendered} {
		for _, d := range docs {
			if meta, _ := d["metadata"].(map[string]any); meta != nil && meta["namespace"] == "acme" {
				meta["namespace"] = ns
			}
		}
	}
	if _, err := inject.Manifests(rendered, ns, o); err != nil {
		t.Fatal(err)
	}
	paths := map[string][]string{
		"Deployment": {"spec", "template"}, "StatefulSet": {"spec", "template"},
		"CronJob": {"spec", "jobTemplate", "spec", "template"}, "Pod": nil,
	}
	checked := 0
	for i := range sent {
		kind, _ := sent[i]["kind"].(string)
		path, ok := paths[kind]
		name, _ := sent[i]["metadata"].(map[string]any)["name"].(string)
		if !ok || name == "by-namespace" || name == "untouched" {
			continue
		}
		t.Run(kind+"/"+name, func(t *testing.T) {
			pod := templatePod(t, sent[i], path, ns, strings.ToLower(kind)+"-"+name+"-webhook")
			resp := handleWith(t, pod, o)
			if !resp.Allowed || len(resp.Patches) == 0 {
				t.Fatalf("allowed %v, patches %v: %v", resp.Allowed, resp.Patches, resp.Result)
			}
			ops, err := json.Marshal(resp.Patches)
			if err != nil {
				t.Fatal(err)
			}
			patch, err := jsonpatch.DecodePatch(ops)
			if err != nil {
				t.Fatal(err)
			}
			raw, _ := json.Marshal(pod)
			if raw, err = patch.Apply(raw); err != nil {
				t.Fatal(err)
			}
			viaWebhook := &corev1.Pod{}
			if err := json.Unmarshal(raw, viaWebhook); err != nil {
				t.Fatal(err)
			}
			viaOarctl := templatePod(t, rendered[i], path, ns, strings.ToLower(kind)+"-"+name+"-oarctl")
			for _, p := range []*corev1.Pod{viaWebhook, viaOarctl} {
				delete(p.Labels, inject.CapabilityLabel)
				mustCreate(t, p)
			}
			a, _ := json.Marshal(get(t, viaWebhook).Spec)
			b, _ := json.Marshal(get(t, viaOarctl).Spec)
			if string(a) != string(b) {
				t.Fatalf("the webhook injects\n%s\noarctl inject renders\n%s", a, b)
			}
			for _, want := range []string{`"--session-store=rediss://shared-redis.redis:6380"`, `"secretName":"shared-redis"`, `"--decision-log=stdout"`, `"--decision-log-content=hash"`, `"--decision-log-sample=0.1"`} {
				if !strings.Contains(string(a), want) {
					t.Errorf("the stored pod lacks %s: %s", want, a)
				}
			}
		})
		checked++
	}
	if checked != 6 {
		t.Fatalf("%d workloads compared, want 6", checked)
	}

	// The rendering sent with its label to the suite's webhook, whose settings are the
	// defaults (memory, no decision log), is stored as sent, and kubectl prints why.
	solo := slices.IndexFunc(rendered, func(d map[string]any) bool {
		return d["kind"] == "Pod" && d["metadata"].(map[string]any)["name"] == "solo"
	})
	if solo < 0 {
		t.Fatal("no Pod solo in workloads.yaml")
	}
	c, warnings := warningClient(t)
	pod := templatePod(t, rendered[solo], nil, ns, "rendered-labelled")
	sentSpec, _ := json.Marshal(pod.Spec)
	if err := c.Create(context.Background(), pod); err != nil {
		t.Fatal(err)
	}
	hasWarning(t, warnings.take(), "is left as it is, but it does not run with this cluster's settings", "--session-store rediss://shared-redis.redis:6380 where the injector gives memory", "--decision-log stdout where the injector gives off")
	if stored, _ := json.Marshal(get(t, pod).Spec); !strings.Contains(string(stored), `"--session-store=rediss://shared-redis.redis:6380"`) || len(get(t, pod).Spec.InitContainers) != 1 {
		t.Fatalf("the rendering was changed:\nsent   %s\nstored %s", sentSpec, stored)
	}
}
