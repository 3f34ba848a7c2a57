package inject

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"sigs.k8s.io/yaml"
)

var update = flag.Bool("update", false, "rewrite the golden files")

// samplePod is the pod template of config/samples/<file>.
func samplePod(t testing.TB, file string) Pod {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("..", "..", "config", "samples", file))
	if err != nil {
		t.Fatal(err)
	}
	var d appsv1.Deployment
	if err := yaml.UnmarshalStrict(raw, &d); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	return Pod{Namespace: "acme", Labels: d.Spec.Template.Labels, Annotations: d.Spec.Template.Annotations, Spec: &d.Spec.Template.Spec}
}

func mustInject(t testing.TB, p Pod) Result {
	t.Helper()
	r, err := Inject(p, Defaults())
	if err != nil {
		t.Fatalf("inject: %v", err)
	}
	return r
}

// The injected pod of config/samples/agent_injected.yaml, reviewed as YAML in
// testdata/agent_injected.golden.yaml (go test -update rewrites it).
func TestGoldenSample(t *testing.T) {
	r := mustInject(t, samplePod(t, "agent_injected.yaml"))
	if !r.Changed || r.Capability != "acme-gateway" || len(r.Warnings) > 0 {
		t.Fatalf("changed %v, capability %q, warnings %q", r.Changed, r.Capability, r.Warnings)
	}
	got, err := yaml.Marshal(r.Spec)
	if err != nil {
		t.Fatal(err)
	}
	golden := filepath.Join("testdata", "agent_injected.golden.yaml")
	if *update {
		if err := os.WriteFile(golden, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != string(want) {
		t.Fatalf("the injected sample differs from %s (go test -update rewrites it):\n%s", golden, got)
	}
}

// The injected sidecar is the hand-written one of config/samples/agent_deployment.yaml,
// plus what the injector adds because it does not own the pod's securityContext
// (runAsNonRoot, the image's user and group, and the seccomp profile on the container
// itself) and an optional volume
// (a pod created before its Capability waits on the startup probe, not on a mount error).
func TestSidecarIsTheHandWrittenSample(t *testing.T) {
	hand := samplePod(t, "agent_deployment.yaml").Spec
	injected := mustInject(t, samplePod(t, "agent_injected.yaml")).Spec

	want := hand.InitContainers[0].DeepCopy()
	yes := true
	want.SecurityContext.RunAsNonRoot = &yes
	user := int64(EngineUser)
	want.SecurityContext.RunAsUser, want.SecurityContext.RunAsGroup = &user, &user
	want.SecurityContext.SeccompProfile = &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}
	if got := injected.InitContainers[0]; !reflect.DeepEqual(&got, want) {
		a, _ := yaml.Marshal(got)
		b, _ := yaml.Marshal(want)
		t.Errorf("injected sidecar:\n%s\nhand-written sample (with the injector's additions):\n%s", a, b)
	}
	wantVolume := hand.Volumes[0]
	wantVolume.ConfigMap.Optional = &yes
	if got := injected.Volumes[0]; !reflect.DeepEqual(got, wantVolume) {
		t.Errorf("volume %+v, want %+v", got, wantVolume)
	}
	if got, want := injected.Volumes[1:], hand.Volumes[1:]; !reflect.DeepEqual(got, want) {
		t.Errorf("session store volumes %+v, want %+v", got, want)
	}
	if got, want := injected.Containers[0].Env, hand.Containers[0].Env; !reflect.DeepEqual(got, want) {
		t.Errorf("agent env %+v, want %+v", got, want)
	}
}

// TestSidecarStartsInAPodRunningAsRoot: the kubelet runs a container as its own
// runAsUser, else the pod's, and refuses to start one with runAsNonRoot whose effective
// user is 0 ("container's runAsUser breaks non-root policy", verifyRunAsNonRoot in
// pkg/kubelet/kuberuntime). An agent pod running as root at pod level still gets a
// sidecar that starts: it runs as the user and group of the image's USER (Dockerfile).
func TestSidecarStartsInAPodRunningAsRoot(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("..", "..", "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	var imageUser string
	for _, line := range strings.Split(string(raw), "\n") {
		if v, ok := strings.CutPrefix(line, "USER "); ok {
			imageUser = strings.TrimSpace(v)
		}
	}
	root := int64(0)
	p := samplePod(t, "agent_injected.yaml")
	p.Spec.SecurityContext = &corev1.PodSecurityContext{RunAsUser: &root, RunAsGroup: &root}
	sc := mustInject(t, p).Spec.InitContainers[0].SecurityContext
	user, group := sc.RunAsUser, sc.RunAsGroup
	if user == nil {
		user = p.Spec.SecurityContext.RunAsUser
	}
	if group == nil {
		group = p.Spec.SecurityContext.RunAsGroup
	}
	if sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot || *user == 0 {
		t.Fatalf("runAsNonRoot %v, effective user %d: the kubelet refuses to start the sidecar", sc.RunAsNonRoot != nil && *sc.RunAsNonRoot, *user)
	}
	if got := fmt.Sprintf("%d:%d", *user, *group); got != imageUser {
		t.Fatalf("the sidecar runs as %s, the image's USER is %q", got, imageUser)
	}
}

// TestRunAsUser: in auto, the sidecar gets the UID OpenShift's SCC admission wrote on the
// pod's containers before the webhook (the pod carries openshift.io/scc), the only one
// the SCC's validation accepts without knowing its range; everywhere else the image's
// user and group, 65532. A fixed UID or none, from the manager or the pod's annotation,
// override that; none in a pod running as root is refused, naming where it was said.
func TestRunAsUser(t *testing.T) {
	const unset = "unset"
	cases := []struct {
		name              string
		podUser           *int64
		scc               bool
		appUser, initUser *int64
		manager           string
		annotation        string
		user, group       string
		refusal           string
	}{
		{name: "SCC-admitted pod: its containers' UID", scc: true, appUser: ptr(1000680000), user: "1000680000", group: unset},
		{name: "SCC-admitted pod, the UID on an init container only", scc: true, initUser: ptr(1000680003), user: "1000680003", group: unset},
		{name: "SCC-admitted pod with a pod-level user too: the container's", scc: true, podUser: ptr(1000680000), appUser: ptr(1000680007), user: "1000680007", group: unset},
		{name: "SCC annotation, a pod-level user only: inherited", scc: true, podUser: ptr(1000680000), user: unset, group: unset},
		{name: "SCC annotation, no user at all (anyuid): the image's", scc: true, user: "65532", group: "65532"},
		{name: "SCC annotation, a pod running as root (anyuid): the image's", scc: true, podUser: ptr(0), user: "65532", group: "65532"},
		{name: "container users without the SCC annotation: the image's", appUser: ptr(1001), initUser: ptr(1002), user: "65532", group: "65532"},
		{name: "a pod running as root: the image's", podUser: ptr(0), user: "65532", group: "65532"},
		{name: "a pod running as a user: the image's", podUser: ptr(1001), user: "65532", group: "65532"},
		{name: "a pod setting no user: the image's", user: "65532", group: "65532"},
		{name: "the manager's fixed UID", manager: "5000", scc: true, appUser: ptr(1000680000), user: "5000", group: unset},
		{name: "the manager's fixed UID in a pod running as root", manager: "5000", podUser: ptr(0), user: "5000", group: unset},
		{name: "the image's UID, fixed, in a pod running as root: its group too", manager: "65532", podUser: ptr(0), user: "65532", group: "65532"},
		{name: "the image's UID, fixed, in a pod running as a user: no group", manager: "65532", podUser: ptr(1001), user: "65532", group: unset},
		{name: "the manager's none", manager: "none", podUser: ptr(1001), user: unset, group: unset},
		{name: "the manager's none on an SCC-admitted pod", manager: "none", scc: true, appUser: ptr(1000680000), user: unset, group: unset},
		{name: "the manager's none in a pod running as root", manager: "none", podUser: ptr(0), refusal: "(none, from --injector-run-as-user)"},
		{name: "the pod's none in a pod running as root", annotation: "none", podUser: ptr(0), refusal: "(none, from the pod's annotation rules.oar.dev/engine-run-as-user)"},
		{name: "the pod's UID over the manager's none", manager: "none", annotation: "1000680005", podUser: ptr(0), user: "1000680005", group: unset},
		{name: "the pod's auto over the manager's none", manager: "none", annotation: "auto", podUser: ptr(0), user: "65532", group: "65532"},
		{name: "the pod's auto over the manager's UID", manager: "5000", annotation: "auto", scc: true, appUser: ptr(1000680000), user: "1000680000", group: unset},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			o := Defaults()
			if c.manager != "" {
				fs := flag.NewFlagSet("manager", flag.ContinueOnError)
				o.RegisterFlags(fs, "injector-")
				if err := fs.Parse([]string{"--injector-run-as-user=" + c.manager}); err != nil {
					t.Fatal(err)
				}
			}
			p := samplePod(t, "agent_injected.yaml")
			p.Spec.SecurityContext.RunAsUser = c.podUser
			if c.scc {
				p.Annotations[SCCAnnotation] = "restricted-v2"
			}
			if c.annotation != "" {
				p.Annotations[AnnotationRunAsUser] = c.annotation
			}
			p.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{RunAsUser: c.appUser}
			if c.initUser != nil {
				p.Spec.InitContainers = append(p.Spec.InitContainers, corev1.Container{Name: "setup", Image: "busybox", SecurityContext: &corev1.SecurityContext{RunAsUser: c.initUser}})
			}
			r, err := Inject(p, o)
			if c.refusal != "" {
				refused(t, err, "spec.securityContext.runAsUser", "the pod runs as root", c.refusal, "the kubelet would never start it")
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			sc := r.Spec.InitContainers[0].SecurityContext
			if showID(sc.RunAsUser) != c.user || showID(sc.RunAsGroup) != c.group {
				t.Errorf("runAsUser %s runAsGroup %s, want %s %s", showID(sc.RunAsUser), showID(sc.RunAsGroup), c.user, c.group)
			}
			if sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot || sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation || sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem {
				t.Errorf("the hardened context is lost: %+v", sc)
			}
		})
	}
}

func ptr(n int64) *int64 { return &n }

// showID writes an optional user or group ID as the test tables do.
func showID(p *int64) string {
	if p == nil {
		return "unset"
	}
	return strconv.FormatInt(*p, 10)
}

// TestEngineVolumesAreReadableByAnyUser: whatever user the sidecar runs as (the pod's,
// the image's, one the cluster assigns), it reads its bundle and the session store's
// password: both volumes keep the default mode 0644 (no defaultMode or item mode), which
// the kubelet applies whatever the pod's fsGroup.
func TestEngineVolumesAreReadableByAnyUser(t *testing.T) {
	r := mustInject(t, samplePod(t, "agent_injected.yaml"))
	if len(r.Spec.Volumes) != 2 {
		t.Fatalf("volumes %+v", r.Spec.Volumes)
	}
	cm, secret := r.Spec.Volumes[0].ConfigMap, r.Spec.Volumes[1].Secret
	if cm == nil || secret == nil || cm.DefaultMode != nil || secret.DefaultMode != nil {
		t.Fatalf("volumes %+v", r.Spec.Volumes)
	}
	for _, item := range slices.Concat(cm.Items, secret.Items) {
		if item.Mode != nil {
			t.Fatalf("item %+v has a mode of its own", item)
		}
	}
}

// Injecting an injected pod (re-invocation, a re-applied manifest, a copied pod) changes
// nothing, and so does a pod written by hand after agent_deployment.yaml.
func TestIdempotent(t *testing.T) {
	first := mustInject(t, samplePod(t, "agent_injected.yaml"))
	p := samplePod(t, "agent_injected.yaml")
	p.Spec = first.Spec
	again := mustInject(t, p)
	if again.Changed || !reflect.DeepEqual(again.Spec, first.Spec) {
		t.Fatalf("a second injection changed the pod")
	}
	hand := samplePod(t, "agent_deployment.yaml")
	hand.Labels = map[string]string{CapabilityLabel: "acme-gateway"}
	if r := mustInject(t, hand); r.Changed {
		t.Fatalf("the hand-written sidecar of agent_deployment.yaml was injected again")
	}
}

// On re-invocation after another webhook added a container, that container gets
// OAR_ENGINE_URL, at the port the existing sidecar serves on.
func TestReinvocationReachesNewContainers(t *testing.T) {
	p := samplePod(t, "agent_injected.yaml")
	p.Annotations = map[string]string{AnnotationPort: "9000", AnnotationProbePort: "9001"}
	first := mustInject(t, p)
	first.Spec.Containers = append(first.Spec.Containers, corev1.Container{Name: "late", Image: "late"})
	p.Spec, p.Annotations = first.Spec, nil
	r := mustInject(t, p)
	if !r.Changed || len(r.Spec.InitContainers) != 1 || len(r.Spec.Volumes) != 1 {
		t.Fatalf("changed %v, init containers %d, volumes %d", r.Changed, len(r.Spec.InitContainers), len(r.Spec.Volumes))
	}
	if env := r.Spec.Containers[1].Env; len(env) != 1 || env[0].Value != "http://127.0.0.1:9000" {
		t.Fatalf("late container env %+v", env)
	}
}

func TestWhoIsInjected(t *testing.T) {
	spec := &corev1.PodSpec{Containers: []corev1.Container{{Name: "agent", Image: "agent"}}}
	cases := []struct {
		name       string
		pod        Pod
		capability string
	}{
		{"no label", Pod{Namespace: "acme", Spec: spec}, ""},
		{"an annotation is no switch", Pod{Namespace: "acme", Annotations: map[string]string{CapabilityLabel: "a"}, Spec: spec}, ""},
		{"pod label", Pod{Namespace: "acme", Labels: map[string]string{CapabilityLabel: "a"}, Spec: spec}, "a"},
		{"namespace label", Pod{Namespace: "acme", NamespaceCapability: "b", Spec: spec}, "b"},
		{"the pod's label wins", Pod{Namespace: "acme", Labels: map[string]string{CapabilityLabel: "a"}, NamespaceCapability: "b", Spec: spec}, "a"},
		{"kube-system never", Pod{Namespace: "kube-system", Labels: map[string]string{CapabilityLabel: "a"}, Spec: spec}, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := mustInject(t, c.pod)
			if r.Capability != c.capability || r.Changed != (c.capability != "") {
				t.Fatalf("capability %q changed %v, want %q", r.Capability, r.Changed, c.capability)
			}
			if c.capability == "" && r.Spec != spec {
				t.Fatal("a pod that did not opt in got a new spec")
			}
			if c.capability != "" && r.Spec.Volumes[0].ConfigMap.Name != c.capability+"-oar-bundle" {
				t.Fatalf("volume %+v", r.Spec.Volumes[0])
			}
		})
	}
	if len(spec.InitContainers)+len(spec.Volumes)+len(spec.Containers[0].Env) != 0 {
		t.Fatal("Inject modified its input")
	}
}

func TestAnnotations(t *testing.T) {
	p := samplePod(t, "agent_injected.yaml")
	p.Annotations = map[string]string{
		AnnotationImage: "registry.example/oar:v9", AnnotationPort: "9000", AnnotationProbePort: "9001",
		AnnotationMaxSessions: "5", AnnotationSessionIdleTTL: "1h", AnnotationCPURequest: "10m",
		AnnotationMemoryRequest: "32Mi", AnnotationMemoryLimit: "1Gi",
	}
	r := mustInject(t, p)
	c := r.Spec.InitContainers[0]
	want := []string{"--bundle-dir=/etc/oar/bundle", "--address=127.0.0.1", "--port=9000", "--probe-address=:9001", "--max-sessions=5", "--session-idle-ttl=1h", "--max-session-bytes=268435456", "--max-request-bytes=134217728"}
	if !reflect.DeepEqual(c.Args, want) || c.Image != "registry.example/oar:v9" || c.Ports[0].ContainerPort != 9001 {
		t.Fatalf("image %s args %q ports %+v", c.Image, c.Args, c.Ports)
	}
	if c.Env[0].Value != "819MiB" || c.Env[1].Value != "2" || c.Resources.Requests.Cpu().String() != "10m" || c.Resources.Requests.Memory().String() != "32Mi" || c.Resources.Limits.Memory().String() != "1Gi" {
		t.Fatalf("env %+v resources %+v", c.Env, c.Resources)
	}
	if _, ok := c.Resources.Limits[corev1.ResourceCPU]; ok {
		t.Fatal("a CPU limit")
	}
	if got := r.Spec.Containers[0].Env[0].Value; got != "http://127.0.0.1:9000" {
		t.Fatalf("OAR_ENGINE_URL %s", got)
	}

	p.Annotations = map[string]string{AnnotationSessionStore: "memory"}
	if c := mustInject(t, p).Spec.InitContainers[0]; slices.ContainsFunc(c.Args, func(a string) bool { return strings.HasPrefix(a, "--session-store") }) || len(c.VolumeMounts) != 1 {
		t.Fatalf("sessions in memory: args %q mounts %+v", c.Args, c.VolumeMounts)
	}

	p.Annotations = map[string]string{"rules.oar.dev/engine-prot": "9000"}
	if r := mustInject(t, p); len(r.Warnings) != 1 || !strings.Contains(r.Warnings[0], "rules.oar.dev/engine-prot") {
		t.Fatalf("unknown annotation: warnings %q", r.Warnings)
	}
}

// TestGoMaxProcsFollowsTheCPURequest: with no CPU limit, the Go runtime would run a
// thread per CPU of the node; the sidecar gets its CPU request rounded up instead, and
// at least two (README "Injecting the engine").
func TestGoMaxProcsFollowsTheCPURequest(t *testing.T) {
	p := samplePod(t, "agent_injected.yaml")
	for request, want := range map[string]string{"10m": "2", "1": "2", "2": "2", "2001m": "3", "2500m": "3", "16": "16"} {
		p.Annotations = map[string]string{AnnotationCPURequest: request}
		c := mustInject(t, p).Spec.InitContainers[0]
		i := slices.IndexFunc(c.Env, func(e corev1.EnvVar) bool { return e.Name == "GOMAXPROCS" })
		if i < 0 || c.Env[i].Value != want {
			t.Errorf("CPU request %s: env %+v, want GOMAXPROCS=%s", request, c.Env, want)
		}
	}
}

// TestSessionStorePendingTTL: the manager's pending time reaches the engine of every pod
// that shares sessions, its own store's included, and no pod keeping them in memory;
// unset, the engine keeps its default.
func TestSessionStorePendingTTL(t *testing.T) {
	o := Defaults()
	o.SessionStore, o.SessionStorePendingTTL = "rediss://shared-redis.redis:6380", 20*time.Millisecond
	for _, c := range []struct {
		name        string
		annotations map[string]string
		ttl         time.Duration
		want        string
	}{
		{"the default store", nil, 20 * time.Millisecond, "20ms"},
		{"its own store", map[string]string{AnnotationSessionStore: "redis://acme-redis:6379"}, 20 * time.Millisecond, "20ms"},
		{"memory", map[string]string{AnnotationSessionStore: "memory"}, 20 * time.Millisecond, ""},
		{"unset", nil, 0, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := samplePod(t, "agent_injected.yaml")
			p.Annotations = c.annotations
			o.SessionStorePendingTTL = c.ttl
			r, err := Inject(p, o)
			if err != nil {
				t.Fatalf("inject: %v", err)
			}
			got, _ := flagValue(r.Spec.InitContainers[0].Args, "session-store-pending-ttl")
			if got != c.want {
				t.Errorf("--session-store-pending-ttl %q; want %q", got, c.want)
			}
		})
	}
}

// TestDefaultSessionStore: the manager's default store and Secret reach a pod that says
// nothing; a pod's session-store annotation replaces both (memory drops the default
// Secret instead of being refused for a Secret without a store, and a store of its own
// never gets the default's password), while a Secret annotation alone keeps the store.
func TestDefaultSessionStore(t *testing.T) {
	o := Defaults()
	o.SessionStore, o.SessionStoreSecret = "rediss://shared-redis.redis:6380", "shared-redis"
	cases := []struct {
		name          string
		annotations   map[string]string
		store, secret string
	}{
		{"no annotation", nil, "rediss://shared-redis.redis:6380", "shared-redis"},
		{"memory", map[string]string{AnnotationSessionStore: "memory"}, "", ""},
		{"its own store", map[string]string{AnnotationSessionStore: "redis://acme-redis:6379"}, "redis://acme-redis:6379", ""},
		{"its own store and Secret", map[string]string{AnnotationSessionStore: "redis://acme-redis:6379", AnnotationSessionStoreSecret: "acme-redis"}, "redis://acme-redis:6379", "acme-redis"},
		{"its own Secret", map[string]string{AnnotationSessionStoreSecret: "acme-redis"}, "rediss://shared-redis.redis:6380", "acme-redis"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := samplePod(t, "agent_injected.yaml")
			p.Annotations = c.annotations
			r, err := Inject(p, o)
			if err != nil {
				t.Fatalf("inject: %v", err)
			}
			sidecar := r.Spec.InitContainers[0]
			var store, file string
			for _, a := range sidecar.Args {
				if v, ok := strings.CutPrefix(a, "--session-store="); ok {
					store = v
				}
				if v, ok := strings.CutPrefix(a, "--session-store-password-file="); ok {
					file = v
				}
			}
			var secret string
			for _, v := range r.Spec.Volumes {
				if v.Name == StoreVolumeName {
					secret = v.Secret.SecretName
				}
			}
			mounted := slices.ContainsFunc(sidecar.VolumeMounts, func(m corev1.VolumeMount) bool { return m.Name == StoreVolumeName })
			if store != c.store || secret != c.secret || mounted != (c.secret != "") || (file != "") != (c.secret != "") {
				t.Fatalf("store %q secret %q (mounted %v, file %q); want store %q secret %q", store, secret, mounted, file, c.store, c.secret)
			}
		})
	}
	p := samplePod(t, "agent_injected.yaml")
	p.Annotations = map[string]string{AnnotationSessionStore: "memory", AnnotationSessionStoreSecret: "acme-redis"}
	_, err := Inject(p, o)
	refused(t, err, "metadata.annotations["+AnnotationSessionStoreSecret+"]", "sessions stay in memory")
}

// refused asserts a Refusal at field whose cause contains every part.
func refused(t *testing.T, err error, field string, parts ...string) {
	t.Helper()
	var r *Refusal
	if !errors.As(err, &r) {
		t.Fatalf("want a refusal at %s, got %v", field, err)
	}
	if r.Field != field {
		t.Fatalf("refusal at %s, want %s: %v", r.Field, field, r)
	}
	for _, p := range parts {
		if !strings.Contains(r.Cause, p) {
			t.Fatalf("refusal %q does not say %q", r.Cause, p)
		}
	}
}

func TestBadAnnotationsAreRefused(t *testing.T) {
	cases := []struct{ key, value, accepts string }{
		{AnnotationPort, "http", "a port number from 1 to 65535"},
		{AnnotationPort, "0", "a port number from 1 to 65535"},
		{AnnotationProbePort, "70000", "a port number from 1 to 65535"},
		{AnnotationMaxSessions, "-1", "a positive integer"},
		{AnnotationSessionIdleTTL, "30", "a positive Go duration"},
		{AnnotationCPURequest, "lots", "a positive Kubernetes quantity"},
		{AnnotationMemoryRequest, "0", "a positive Kubernetes quantity"},
		{AnnotationMemoryLimit, "12 Mi", "a positive Kubernetes quantity"},
		{AnnotationImage, "a b", "an image reference"},
		{AnnotationSessionStore, "postgres://db:5432", "memory, or a redis:// or rediss:// URL"},
		{AnnotationSessionStore, "redis://", "memory, or a redis:// or rediss:// URL"},
		{AnnotationSessionStore, "redis://:hunter2@acme-redis:6379", "a URL without a password"},
		{AnnotationSessionStoreSecret, "Acme_Redis", "the name of a Secret"},
		{AnnotationDecisionLog, "/var/log/decisions.jsonl", "stdout (the engine writes its decision log there) or off"},
		{AnnotationDecisionLogContent, "secret", "omit (the content's length only), hash (its length and SHA-256) or full (the text)"},
		{AnnotationDecisionLogSample, "10%", "a number from 0 to 1"},
		{AnnotationDecisionLogSample, "1.5", "a number from 0 to 1"},
		{AnnotationRunAsUser, "-1", "auto (the UID OpenShift's SCC gave the pod's containers"},
		{AnnotationRunAsUser, "0", "a UID from 1 to 2147483647"},
		{AnnotationRunAsUser, "nobody", "none (never set)"},
		{AnnotationRunAsUser, "4294967296", "a UID from 1 to 2147483647"},
	}
	for _, c := range cases {
		t.Run(c.key+"="+c.value, func(t *testing.T) {
			p := samplePod(t, "agent_injected.yaml")
			p.Annotations = map[string]string{c.key: c.value}
			_, err := Inject(p, Defaults())
			refused(t, err, "metadata.annotations["+c.key+"]", c.accepts, `"`+c.value+`"`)
		})
	}
	p := samplePod(t, "agent_injected.yaml")
	p.Annotations = map[string]string{AnnotationProbePort: "8181"}
	_, err := Inject(p, Defaults())
	refused(t, err, "metadata.annotations["+AnnotationProbePort+"]", "must differ")
	p.Annotations = map[string]string{AnnotationMemoryLimit: "32Mi"}
	_, err = Inject(p, Defaults())
	refused(t, err, "metadata.annotations["+AnnotationMemoryLimit+"]", "below the memory request 64Mi")
	p.Annotations = map[string]string{AnnotationSessionStoreSecret: "acme-redis"}
	_, err = Inject(p, Defaults())
	refused(t, err, "metadata.annotations["+AnnotationSessionStoreSecret+"]", "sessions stay in memory")
	p.Annotations = map[string]string{AnnotationSessionStore: "memory", AnnotationSessionStoreSecret: "acme-redis"}
	_, err = Inject(p, Defaults())
	refused(t, err, "metadata.annotations["+AnnotationSessionStoreSecret+"]", "sessions stay in memory")
	p.Annotations, p.Labels = nil, map[string]string{CapabilityLabel: "Acme_Gateway"}
	_, err = Inject(p, Defaults())
	refused(t, err, "metadata.labels["+CapabilityLabel+"]", `"Acme_Gateway" is not a Capability name`)
}

func TestClashesAreRefused(t *testing.T) {
	cases := []struct {
		name   string
		change func(*corev1.PodSpec)
		field  string
		cause  string
	}{
		{"container name", func(s *corev1.PodSpec) { s.Containers[0].Name = ContainerName }, "spec.containers[0].name", `already called "oar-engine"`},
		{"init container name", func(s *corev1.PodSpec) {
			s.InitContainers = []corev1.Container{{Name: ContainerName, Image: "x"}}
		}, "spec.initContainers[0].name", `already called "oar-engine"`},
		{"volume name", func(s *corev1.PodSpec) {
			s.Volumes = []corev1.Volume{{Name: VolumeName, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}
		}, "spec.volumes[0].name", `already called "oar-bundle"`},
		{"session store volume name", func(s *corev1.PodSpec) {
			s.Volumes = []corev1.Volume{{Name: StoreVolumeName, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}
		}, "spec.volumes[0].name", `already called "oar-session-store"`},
		{"API port", func(s *corev1.PodSpec) { s.Containers[0].Ports = []corev1.ContainerPort{{ContainerPort: 8181}} }, "spec.containers[0].ports[0].containerPort", `container "agent" already uses port 8181`},
		{"probe port", func(s *corev1.PodSpec) {
			s.InitContainers = []corev1.Container{{Name: "setup", Image: "x", Ports: []corev1.ContainerPort{{ContainerPort: 8182}}}}
		}, "spec.initContainers[0].ports[0].containerPort", `container "setup" already uses port 8182`},
		{"probe port name", func(s *corev1.PodSpec) {
			s.Containers[0].Ports = []corev1.ContainerPort{{Name: ProbePortName, ContainerPort: 9}}
		}, "spec.containers[0].ports[0].name", `port named "oar-probes"`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := samplePod(t, "agent_injected.yaml")
			c.change(p.Spec)
			_, err := Inject(p, Defaults())
			refused(t, err, c.field, c.cause)
		})
	}
}

func TestOwnEngineURLIsKept(t *testing.T) {
	p := samplePod(t, "agent_injected.yaml")
	p.Spec.Containers[0].Env = []corev1.EnvVar{{Name: EngineURLEnv, Value: "http://elsewhere"}}
	r := mustInject(t, p)
	if got := r.Spec.Containers[0].Env; len(got) != 1 || got[0].Value != "http://elsewhere" {
		t.Fatalf("env %+v", got)
	}
	if len(r.Warnings) != 1 || !strings.Contains(r.Warnings[0], `container "agent" sets OAR_ENGINE_URL itself`) {
		t.Fatalf("warnings %q", r.Warnings)
	}
}

// TestDecisionLog: the decision log annotations reach the engine's flags; without
// them the sidecar is the hand-written sample's; the manager's default is replaced by
// a pod's "off"; tuning a log that is off is warned about.
func TestDecisionLog(t *testing.T) {
	logArgs := func(c corev1.Container) []string {
		var out []string
		for _, a := range c.Args {
			if strings.HasPrefix(a, "--decision-log") {
				out = append(out, a)
			}
		}
		return out
	}
	p := samplePod(t, "agent_injected.yaml")
	if got := logArgs(mustInject(t, p).Spec.InitContainers[0]); got != nil {
		t.Fatalf("no annotation: %q", got)
	}
	p.Annotations = map[string]string{AnnotationDecisionLog: "stdout", AnnotationDecisionLogContent: "hash", AnnotationDecisionLogSample: "0.25"}
	if got := logArgs(mustInject(t, p).Spec.InitContainers[0]); strings.Join(got, " ") != "--decision-log=stdout --decision-log-content=hash --decision-log-sample=0.25" {
		t.Errorf("annotated: %q", got)
	}
	p.Annotations = map[string]string{AnnotationDecisionLog: "stdout"}
	if got := logArgs(mustInject(t, p).Spec.InitContainers[0]); strings.Join(got, " ") != "--decision-log=stdout" {
		t.Errorf("the log alone: %q", got)
	}

	o := Defaults()
	o.DecisionLog, o.DecisionLogSample = true, "0.5"
	p.Annotations = nil
	r, err := Inject(p, o)
	if err != nil || strings.Join(logArgs(r.Spec.InitContainers[0]), " ") != "--decision-log=stdout --decision-log-sample=0.5" {
		t.Errorf("the manager's default: %q %v", logArgs(r.Spec.InitContainers[0]), err)
	}
	p.Annotations = map[string]string{AnnotationDecisionLog: "off"}
	if r, err := Inject(p, o); err != nil || logArgs(r.Spec.InitContainers[0]) != nil {
		t.Errorf("a pod saying off: %q %v", logArgs(r.Spec.InitContainers[0]), err)
	}

	p.Annotations = map[string]string{AnnotationDecisionLogContent: "full"}
	if r := mustInject(t, p); len(r.Warnings) != 1 || !strings.Contains(r.Warnings[0], "the decision log, which is off") || logArgs(r.Spec.InitContainers[0]) != nil {
		t.Errorf("content without the log: warnings %q args %q", r.Warnings, logArgs(r.Spec.InitContainers[0]))
	}
}

// TestExistingSidecarServesTheLabelsCapability: the label names the Capability whose
// bundle the engine serves (README "Injecting the engine"). A pod that already has the
// sidecar (a copied injected pod, an edited `oarctl inject` rendering, a hand-written
// sidecar) but whose label, or namespace label, names another Capability gets its bundle
// volume repointed to that Capability's ConfigMap, with a warning naming both; a second
// pass changes nothing.
func TestExistingSidecarServesTheLabelsCapability(t *testing.T) {
	first := mustInject(t, samplePod(t, "agent_injected.yaml"))
	for _, c := range []struct {
		name, field string
		pod         Pod
	}{
		{"pod label", "metadata.labels[" + CapabilityLabel + "]", Pod{Namespace: "acme", Labels: map[string]string{CapabilityLabel: "new-gateway"}}},
		{"namespace label", "namespace acme label " + CapabilityLabel, Pod{Namespace: "acme", NamespaceCapability: "new-gateway"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := c.pod
			p.Spec, p.Annotations = first.Spec, samplePod(t, "agent_injected.yaml").Annotations
			r := mustInject(t, p)
			if got := r.Spec.Volumes[0].ConfigMap.Name; got != "new-gateway-oar-bundle" || !r.Changed {
				t.Fatalf("the sidecar serves %s (changed %v), want new-gateway-oar-bundle", got, r.Changed)
			}
			if len(r.Warnings) != 1 || !strings.Contains(r.Warnings[0], "served the ConfigMap acme-gateway-oar-bundle (spec.volumes[0], \"oar-bundle\"); it now serves new-gateway-oar-bundle, the bundle of Capability new-gateway that "+c.field+" names") {
				t.Fatalf("warnings %q", r.Warnings)
			}
			if first.Spec.Volumes[0].ConfigMap.Name != "acme-gateway-oar-bundle" {
				t.Fatal("Inject modified its input")
			}
			want := first.Spec.DeepCopy()
			want.Volumes[0].ConfigMap.Name = "new-gateway-oar-bundle"
			if !reflect.DeepEqual(r.Spec, want) {
				t.Fatal("more than the bundle's ConfigMap changed")
			}
			p.Spec = r.Spec
			if again := mustInject(t, p); again.Changed || len(again.Warnings) != 0 {
				t.Fatalf("a second pass: changed %v, warnings %q", again.Changed, again.Warnings)
			}
		})
	}

	// A hand-written sidecar reading its bundle from elsewhere, named in the "--flag value" form.
	hand := samplePod(t, "agent_deployment.yaml")
	hand.Labels = map[string]string{CapabilityLabel: "new-gateway"}
	engine := &hand.Spec.InitContainers[0]
	engine.Args = append(engine.Args, "--bundle-dir", "/bundle")
	engine.VolumeMounts = append(engine.VolumeMounts, corev1.VolumeMount{Name: "rules", MountPath: "/bundle"})
	hand.Spec.Volumes = append(hand.Spec.Volumes, corev1.Volume{Name: "rules", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "my-rules"}}}})
	r := mustInject(t, hand)
	if got := r.Spec.Volumes[2].ConfigMap.Name; got != "new-gateway-oar-bundle" || r.Spec.Volumes[0].ConfigMap.Name != "acme-gateway-oar-bundle" {
		t.Fatalf("the volume at --bundle-dir /bundle names %s; oar-bundle %s", got, r.Spec.Volumes[0].ConfigMap.Name)
	}
}

// TestExistingSidecarWhoseBundleCannotBeRepointed: a sidecar already in the pod whose
// bundle directory is no ConfigMap volume, or has no volume, cannot be made to serve the
// labelled Capability's bundle: it is refused at the field, naming the ConfigMap it needs.
func TestExistingSidecarWhoseBundleCannotBeRepointed(t *testing.T) {
	first := mustInject(t, samplePod(t, "agent_injected.yaml"))
	cases := []struct {
		name   string
		change func(*corev1.PodSpec)
		field  string
		cause  string
	}{
		{"not a ConfigMap", func(s *corev1.PodSpec) {
			s.Volumes[0].VolumeSource = corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}
		}, "spec.volumes[0]", `the volume "oar-bundle" the oar-engine sidecar serves its bundle from is no ConfigMap volume`},
		{"no mount", func(s *corev1.PodSpec) { s.InitContainers[0].VolumeMounts = s.InitContainers[0].VolumeMounts[1:] },
			"spec.initContainers[0].volumeMounts", "mounts nothing at its bundle directory /etc/oar/bundle"},
		{"no volume", func(s *corev1.PodSpec) { s.Volumes = s.Volumes[1:] },
			"spec.initContainers[0].volumeMounts[0].name", `mounts the volume "oar-bundle", which the pod does not have`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := samplePod(t, "agent_injected.yaml")
			p.Spec = first.Spec.DeepCopy()
			c.change(p.Spec)
			_, err := Inject(p, Defaults())
			refused(t, err, c.field, c.cause, `Capability "acme-gateway" that metadata.labels[rules.oar.dev/capability] names`, "acme-gateway-oar-bundle")
		})
	}
}

// TestPodLevelResourcesMakeRoomForTheSidecar: the API server refuses pod-level requests
// (spec.resources) below the containers' aggregate requests, the sidecar's included, and
// pod-level limits cap every container (KEP-2837, validatePodResourceConsistency), so a
// pod that sets them gets the sidecar's share on top: requests by its requests (50m,
// 64Mi), limits by its memory limit (128Mi) and, since it has no CPU limit, its CPU
// request. A resource whose request equals its limit, or is defaulted from it, stays so.
func TestPodLevelResourcesMakeRoomForTheSidecar(t *testing.T) {
	list := func(cpu, memory string) corev1.ResourceList {
		l := corev1.ResourceList{}
		if cpu != "" {
			l[corev1.ResourceCPU] = resource.MustParse(cpu)
		}
		if memory != "" {
			l[corev1.ResourceMemory] = resource.MustParse(memory)
		}
		return l
	}
	cases := []struct {
		name                 string
		pod, container, want corev1.ResourceRequirements
		warning              string
	}{
		{"requests equal to limits (Guaranteed)",
			corev1.ResourceRequirements{Requests: list("500m", "256Mi"), Limits: list("500m", "256Mi")},
			corev1.ResourceRequirements{Requests: list("500m", "256Mi")},
			corev1.ResourceRequirements{Requests: list("550m", "384Mi"), Limits: list("550m", "384Mi")},
			"requests.cpu 500m to 550m, limits.cpu 500m to 550m, requests.memory 256Mi to 384Mi, limits.memory 256Mi to 384Mi"},
		{"requests below limits",
			corev1.ResourceRequirements{Requests: list("500m", "256Mi"), Limits: list("1", "1Gi")},
			corev1.ResourceRequirements{Requests: list("400m", "200Mi")},
			corev1.ResourceRequirements{Requests: list("550m", "320Mi"), Limits: list("1050m", "1152Mi")},
			"requests.cpu 500m to 550m, limits.cpu 1 to 1050m, requests.memory 256Mi to 320Mi, limits.memory 1Gi to 1152Mi"},
		{"requests only",
			corev1.ResourceRequirements{Requests: list("", "256Mi")},
			corev1.ResourceRequirements{},
			corev1.ResourceRequirements{Requests: list("", "320Mi")},
			"requests.memory 256Mi to 320Mi"},
		{"limits only, no container asks: the request the API server would default",
			corev1.ResourceRequirements{Limits: list("500m", "256Mi")},
			corev1.ResourceRequirements{},
			corev1.ResourceRequirements{Requests: list("550m", "384Mi"), Limits: list("550m", "384Mi")},
			"requests.cpu 500m to 550m, limits.cpu 500m to 550m, requests.memory 256Mi to 384Mi, limits.memory 256Mi to 384Mi"},
		{"limits only, the containers ask: requests default to theirs and the sidecar's",
			corev1.ResourceRequirements{Limits: list("500m", "256Mi")},
			corev1.ResourceRequirements{Requests: list("100m", "100Mi")},
			corev1.ResourceRequirements{Limits: list("550m", "384Mi")},
			"limits.cpu 500m to 550m, limits.memory 256Mi to 384Mi"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := samplePod(t, "agent_injected.yaml")
			p.Annotations = nil
			p.Spec.Resources = c.pod.DeepCopy()
			p.Spec.Containers[0].Resources = c.container
			r := mustInject(t, p)
			got := r.Spec.Resources
			if !equalResources(got.Requests, c.want.Requests) || !equalResources(got.Limits, c.want.Limits) {
				t.Fatalf("spec.resources requests %s limits %s, want %s %s", show(got.Requests), show(got.Limits), show(c.want.Requests), show(c.want.Limits))
			}
			if len(r.Warnings) != 1 || !strings.HasPrefix(r.Warnings[0], "spec.resources: ") || !strings.HasSuffix(r.Warnings[0], ": "+c.warning) {
				t.Fatalf("warnings %q, want one ending %q", r.Warnings, c.warning)
			}
			if !reflect.DeepEqual(p.Spec.Resources, &c.pod) {
				t.Fatal("Inject modified its input")
			}
			p.Spec = r.Spec
			if again := mustInject(t, p); again.Changed || len(again.Warnings) != 0 {
				t.Fatalf("a second pass: changed %v, warnings %q", again.Changed, again.Warnings)
			}
		})
	}
	if r := mustInject(t, samplePod(t, "agent_injected.yaml")); r.Spec.Resources != nil {
		t.Fatalf("a pod without pod-level resources got %+v", r.Spec.Resources)
	}
}

// show writes a resource list as cpu=50m memory=64Mi.
func show(l corev1.ResourceList) string {
	var parts []string
	for _, name := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
		if q, ok := l[name]; ok {
			parts = append(parts, string(name)+"="+q.String())
		}
	}
	return "[" + strings.Join(parts, " ") + "]"
}

// equalResources compares resource lists by value (50m and 0.05 are equal).
func equalResources(a, b corev1.ResourceList) bool {
	if len(a) != len(b) {
		return false
	}
	for name, q := range a {
		if w, ok := b[name]; !ok || q.Cmp(w) != 0 {
			return false
		}
	}
	return true
}

// TestExistingSidecarWithOtherSettingsIsWarnedAbout: a pod that already has the engine is
// left as it is (its flags may be deliberate), so an `oarctl inject` rendering made
// without the cluster's session store and decision log would run without them. The
// webhook says so, naming each setting, unless the sidecar has what it would inject
// under the pod's annotations.
func TestExistingSidecarWithOtherSettingsIsWarnedAbout(t *testing.T) {
	cluster := Defaults()
	cluster.SessionStore, cluster.SessionStoreSecret = "rediss://shared-redis.redis:6380", "shared-redis"
	cluster.DecisionLog, cluster.DecisionLogSample = true, "0.1"
	pod := func(annotations map[string]string) Pod {
		return Pod{Namespace: "acme", Labels: map[string]string{CapabilityLabel: "acme-gateway"}, Annotations: annotations,
			Spec: &corev1.PodSpec{Containers: []corev1.Container{{Name: "agent", Image: "registry.example/acme-agent:1.0"}}}}
	}
	render := func(p Pod, o Options) Pod {
		r, err := Inject(p, o)
		if err != nil {
			t.Fatal(err)
		}
		p.Spec = r.Spec
		return p
	}

	rendered := render(pod(nil), Defaults())
	r, err := Inject(rendered, cluster)
	if err != nil {
		t.Fatal(err)
	}
	if r.Changed || !reflect.DeepEqual(r.Spec, rendered.Spec) {
		t.Fatal("the sidecar already in the pod was changed")
	}
	want := "it has --session-store memory where the injector gives rediss://shared-redis.redis:6380; --session-store-password-file none where the injector gives /etc/oar/session-store/password; --decision-log off where the injector gives stdout; --decision-log-sample 1 where the injector gives 0.1; render it with `oarctl inject`"
	if len(r.Warnings) != 1 || !strings.Contains(r.Warnings[0], want) {
		t.Fatalf("warnings %q, want one saying %q", r.Warnings, want)
	}

	for _, c := range []struct {
		name string
		pod  Pod
		o    Options
	}{
		{"rendered with the cluster's settings", render(pod(nil), cluster), cluster},
		{"the same sample fraction written otherwise", render(pod(nil), func() Options { o := cluster; o.DecisionLogSample = "0.10"; return o }()), cluster},
		{"annotations the rendering followed", render(pod(map[string]string{AnnotationSessionStore: "memory", AnnotationDecisionLog: "off"}), Defaults()), cluster},
		{"the hand-written sample, annotated as it is", func() Pod {
			p := samplePod(t, "agent_deployment.yaml")
			p.Labels, p.Annotations = map[string]string{CapabilityLabel: "acme-gateway"}, samplePod(t, "agent_injected.yaml").Annotations
			return p
		}(), Defaults()},
	} {
		t.Run(c.name, func(t *testing.T) {
			r, err := Inject(c.pod, c.o)
			if err != nil || r.Changed || len(r.Warnings) != 0 {
				t.Fatalf("changed %v, warnings %q, %v", r.Changed, r.Warnings, err)
			}
		})
	}
}

// TestExistingSidecarPendingTTL: a sidecar already in the pod is warned about when its
// pending time is not the injector's as a duration (0.02s is 20ms), and never when
// either keeps sessions in memory, where the pending time does nothing.
func TestExistingSidecarPendingTTL(t *testing.T) {
	cluster := Defaults()
	cluster.SessionStore, cluster.SessionStorePendingTTL = "redis://shared-redis.redis:6379", 20*time.Millisecond
	withArg := func(o Options, arg string) Pod {
		p := Pod{Namespace: "acme", Labels: map[string]string{CapabilityLabel: "acme-gateway"},
			Spec: &corev1.PodSpec{Containers: []corev1.Container{{Name: "agent", Image: "registry.example/acme-agent:1.0"}}}}
		r, err := Inject(p, o)
		if err != nil {
			t.Fatal(err)
		}
		p.Spec = r.Spec
		p.Spec.InitContainers[0].Args = append(p.Spec.InitContainers[0].Args, arg)
		return p
	}
	inMemory := cluster
	inMemory.SessionStore = ""
	for _, c := range []struct {
		name string
		pod  Pod
		o    Options
		want string
	}{
		{"the same time written otherwise", withArg(cluster, "--session-store-pending-ttl=0.02s"), cluster, ""},
		{"another time", withArg(cluster, "--session-store-pending-ttl=30ms"), cluster, "it has --session-store-pending-ttl 30ms where the injector gives 20ms; render"},
		{"a sidecar in memory", withArg(inMemory, "--session-store-pending-ttl=1ms"), inMemory, ""},
		{"an injector in memory", withArg(cluster, "--session-store-pending-ttl=30ms"), inMemory, "it has --session-store redis://shared-redis.redis:6379 where the injector gives memory; render"},
	} {
		t.Run(c.name, func(t *testing.T) {
			r, err := Inject(c.pod, c.o)
			if err != nil {
				t.Fatal(err)
			}
			if c.want == "" && len(r.Warnings) != 0 || c.want != "" && (len(r.Warnings) != 1 || !strings.Contains(r.Warnings[0], c.want)) {
				t.Errorf("warnings %q; want %q", r.Warnings, c.want)
			}
		})
	}
}

// TestExistingSidecarUserAndGroup: a sidecar already in the pod is warned about when the
// user it runs as (its runAsUser, else the pod's, else the image's) is not the one the
// settings decide: a UID, or auto's image user off OpenShift and where no SCC gave a
// user. Under none the cluster's policy decides, and under auto on OpenShift the SCC,
// which has admitted the sidecar's user already: neither is warned about. Its group
// (its runAsGroup, else the pod's, else the one the image gives its user) likewise,
// where the settings decide one: the image's, under auto where they decide the user and
// under the image's UID in a pod running as root, whose runAsGroup 0 the sidecar
// would otherwise take.
func TestExistingSidecarUserAndGroup(t *testing.T) {
	const restricted = 1000680000
	options := func(runAsUser string) Options {
		o := Defaults()
		r, err := ParseRunAsUser(runAsUser)
		if err != nil {
			t.Fatal(err)
		}
		o.RunAsUser = r
		return o
	}
	// rendered is the pod `oarctl inject --run-as-user` renders, with the sidecar's user
	// then set to sidecar ("unset" removes it).
	rendered := func(runAsUser, sidecar string) Pod {
		p := Pod{Namespace: "acme", Labels: map[string]string{CapabilityLabel: "acme-gateway"}, Annotations: map[string]string{},
			Spec: &corev1.PodSpec{Containers: []corev1.Container{{Name: "agent", Image: "registry.example/acme-agent:1.0"}}}}
		r, err := Inject(p, options(runAsUser))
		if err != nil {
			t.Fatal(err)
		}
		p.Spec = r.Spec
		sc := p.Spec.InitContainers[0].SecurityContext
		switch sidecar {
		case "unset":
			sc.RunAsUser, sc.RunAsGroup = nil, nil
		case "":
		default:
			uid, err := strconv.ParseInt(sidecar, 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			sc.RunAsUser = &uid
		}
		return p
	}
	podUser := func(p Pod, uid int64) Pod {
		p.Spec.SecurityContext = &corev1.PodSecurityContext{RunAsUser: &uid}
		return p
	}
	podGroup := func(p Pod, gid int64) Pod {
		if p.Spec.SecurityContext == nil {
			p.Spec.SecurityContext = &corev1.PodSecurityContext{}
		}
		p.Spec.SecurityContext.RunAsGroup = &gid
		return p
	}
	sidecarGroup := func(p Pod, gid int64) Pod {
		p.Spec.InitContainers[0].SecurityContext.RunAsGroup = &gid
		return p
	}
	annotated := func(p Pod, value string) Pod {
		p.Annotations[AnnotationRunAsUser] = value
		return p
	}
	// admitted is p as OpenShift's SCC admission leaves it: annotated, and every container
	// without a user given uid (0: none, as anyuid).
	admitted := func(p Pod, uid int64) Pod {
		if uid == 0 {
			p.Annotations[SCCAnnotation] = "anyuid"
			return p
		}
		p.Annotations[SCCAnnotation] = "restricted-v2"
		for _, cs := range [][]corev1.Container{p.Spec.InitContainers, p.Spec.Containers} {
			for i := range cs {
				if cs[i].SecurityContext == nil {
					cs[i].SecurityContext = &corev1.SecurityContext{}
				}
				if cs[i].SecurityContext.RunAsUser == nil {
					u := uid
					cs[i].SecurityContext.RunAsUser = &u
				}
			}
		}
		return p
	}
	for _, c := range []struct {
		name    string
		pod     Pod
		cluster string
		want    string
	}{
		{"auto: rendered with auto", rendered("auto", ""), "auto", ""},
		{"auto: rendered with another UID", rendered("1001", ""), "auto", "it has securityContext.runAsUser 1001 where the injector gives 65532; securityContext.runAsGroup unset (user 1001's group in the image's /etc/passwd, else 0) where the injector gives 65532; render"},
		{"auto: no user, the image's", rendered("auto", "unset"), "auto", ""},
		{"auto: no user, the pod's", podUser(rendered("auto", "unset"), 1001), "auto", "it has securityContext.runAsUser 1001 (the pod's) where the injector gives 65532; securityContext.runAsGroup unset (user 1001's group in the image's /etc/passwd, else 0) where the injector gives 65532; render"},
		{"auto: no user in a pod running as root", podUser(rendered("auto", "unset"), 0), "auto", "it has securityContext.runAsUser 0 (the pod's) where the injector gives 65532; securityContext.runAsGroup unset (user 0's group in the image's /etc/passwd, else 0) where the injector gives 65532; render"},
		{"a UID: rendered with it", rendered("5000", ""), "5000", ""},
		{"a UID: rendered with auto", rendered("auto", ""), "5000", "it has securityContext.runAsUser 65532 where the injector gives 5000; render"},
		{"a UID: no user, the image's", rendered("auto", "unset"), "5000", "it has securityContext.runAsUser 65532 (the image's) where the injector gives 5000; render"},
		{"a UID: no user, the pod's, the same", podUser(rendered("none", ""), 5000), "5000", ""},
		{"a UID on OpenShift: the SCC's range", admitted(rendered("none", ""), restricted), "5000", "it has securityContext.runAsUser 1000680000 where the injector gives 5000; render"},
		{"none: any user", rendered("1001", ""), "none", ""},
		{"none: no user", podUser(rendered("none", ""), 1001), "none", ""},
		{"the pod's none over the manager's auto", annotated(rendered("1001", ""), "none"), "auto", ""},
		{"the pod's UID over the manager's auto", annotated(rendered("1000680005", ""), "1000680005"), "auto", ""},
		{"the pod's auto over the manager's UID", annotated(rendered("auto", ""), "auto"), "5000", ""},
		{"auto on OpenShift: rendered with none, the SCC's UID", admitted(rendered("none", ""), restricted), "auto", ""},
		{"auto on OpenShift: rendered with a UID in the range", admitted(rendered("1000680005", ""), restricted), "auto", ""},
		{"auto on OpenShift: the pod's own user admitted", admitted(podUser(rendered("none", ""), restricted+7), 0), "auto", ""},
		{"auto on OpenShift, anyuid: rendered with auto", admitted(rendered("auto", ""), 0), "auto", ""},
		{"auto on OpenShift, anyuid: another UID", admitted(rendered("1001", ""), 0), "auto", "it has securityContext.runAsUser 1001 where the injector gives 65532; securityContext.runAsGroup unset (user 1001's group in the image's /etc/passwd, else 0) where the injector gives 65532; render"},
		{"auto: the image's user, no group, in a pod running as root and group 0", podGroup(podUser(rendered("65532", ""), 0), 0), "auto", "it has securityContext.runAsGroup 0 (the pod's) where the injector gives 65532; render"},
		{"auto: the image's user, no group, in a pod running as root: the image's", podUser(rendered("65532", ""), 0), "auto", ""},
		{"auto: another group", sidecarGroup(rendered("auto", ""), 1000), "auto", "it has securityContext.runAsGroup 1000 where the injector gives 65532; render"},
		{"auto: no group, the pod's", podGroup(rendered("65532", ""), 1000), "auto", "it has securityContext.runAsGroup 1000 (the pod's) where the injector gives 65532; render"},
		{"auto: the sidecar's group over the pod's", podGroup(rendered("auto", ""), 0), "auto", ""},
		{"the image's UID in a pod running as root and group 0", podGroup(podUser(rendered("65532", ""), 0), 0), "65532", "it has securityContext.runAsGroup 0 (the pod's) where the injector gives 65532; render"},
		{"the image's UID in a pod running as a user: no group decided", podGroup(podUser(rendered("65532", ""), 1001), 1000), "65532", ""},
		{"another UID in a pod running as root: no group decided", podGroup(podUser(rendered("5000", ""), 0), 0), "5000", ""},
		{"none: any group", podGroup(podUser(rendered("1001", ""), 1001), 0), "none", ""},
		{"none in a pod running as root: no group decided", podGroup(podUser(rendered("1001", ""), 0), 0), "none", ""},
		{"auto on OpenShift: the SCC's UID, any group", podGroup(admitted(rendered("none", ""), restricted), 1000), "auto", ""},
		{"auto on OpenShift, anyuid: the image's user, no group, in a pod running as root and group 0", podGroup(podUser(admitted(rendered("65532", ""), 0), 0), 0), "auto", "it has securityContext.runAsGroup 0 (the pod's) where the injector gives 65532; render"},
	} {
		t.Run(c.name, func(t *testing.T) {
			r, err := Inject(c.pod, options(c.cluster))
			if err != nil {
				t.Fatal(err)
			}
			if r.Changed {
				t.Error("the sidecar already in the pod was changed")
			}
			if c.want == "" && len(r.Warnings) != 0 || c.want != "" && (len(r.Warnings) != 1 || !strings.Contains(r.Warnings[0], c.want)) {
				t.Errorf("warnings %q; want %q", r.Warnings, c.want)
			}
		})
	}
}
