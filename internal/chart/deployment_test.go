package chart

import (
	"flag"
	"io"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
)

// TestDeploymentIsHardened checks, for every value set, what no value can loosen: the
// restricted Pod Security Standard's settings, probes on the manager's probe port,
// requests and limits, leader election, the manager's command.
func TestDeploymentIsHardened(t *testing.T) {
	for _, vs := range valueSets {
		t.Run(vs.name, func(t *testing.T) {
			dep := deployment(t, mustRender(t, "oar-system", vs))
			pod := dep.Spec.Template.Spec
			if psc := pod.SecurityContext; psc == nil || psc.RunAsNonRoot == nil || !*psc.RunAsNonRoot ||
				psc.SeccompProfile == nil || psc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
				t.Errorf("pod security context %+v; want runAsNonRoot and seccomp RuntimeDefault", psc)
			}
			if pod.HostNetwork || pod.HostPID || pod.HostIPC {
				t.Errorf("pod shares a host namespace")
			}
			if len(pod.Containers) != 1 || len(pod.InitContainers) > 0 {
				t.Fatalf("pod has %d containers and %d init containers; want the manager alone", len(pod.Containers), len(pod.InitContainers))
			}
			c := pod.Containers[0]
			sc := c.SecurityContext
			switch {
			case sc == nil:
				t.Fatal("manager container has no security context")
			case sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot:
				t.Error("manager container may run as root")
			case sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem:
				t.Error("manager container's root filesystem is writable")
			case sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation:
				t.Error("manager container allows privilege escalation")
			case sc.Privileged != nil && *sc.Privileged:
				t.Error("manager container is privileged")
			case sc.Capabilities == nil || !slices.Equal(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) || len(sc.Capabilities.Add) > 0:
				t.Errorf("manager container capabilities %+v; want drop [ALL] and no add", sc.Capabilities)
			}

			if !slices.Equal(c.Command, []string{"/manager"}) || !slices.Contains(c.Args, "--leader-elect") {
				t.Errorf("command %v args %v; want /manager with --leader-elect", c.Command, c.Args)
			}
			probePort := containerPort(dep, "probes")
			if !slices.Contains(c.Args, "--health-probe-bind-address=:"+strconv.Itoa(int(probePort))) {
				t.Errorf("container port probes %d is not --health-probe-bind-address in %v", probePort, c.Args)
			}
			for name, p := range map[string]*corev1.Probe{"/healthz": c.LivenessProbe, "/readyz": c.ReadinessProbe} {
				if p == nil || p.HTTPGet == nil || p.HTTPGet.Path != name || p.HTTPGet.Port != intstr.FromString("probes") {
					t.Errorf("probe %s is %+v; want an HTTP GET on the probes port", name, p)
				}
			}
			for _, list := range []corev1.ResourceList{c.Resources.Requests, c.Resources.Limits} {
				if list.Cpu().IsZero() || list.Memory().IsZero() {
					t.Errorf("resources %+v; want CPU and memory requests and limits", c.Resources)
				}
			}
			if !hasMount(c, "/tmp") {
				t.Error("no writable /tmp beside the read-only root filesystem")
			}
		})
	}
}

// TestDeploymentValues checks that the pass-through values reach the pod as written,
// with the chart's own labels and defaults kept.
func TestDeploymentValues(t *testing.T) {
	t.Run("default", func(t *testing.T) {
		dep := deployment(t, mustRender(t, "oar-system", valueSets[0]))
		c := dep.Spec.Template.Spec.Containers[0]
		if *dep.Spec.Replicas != 2 || c.Image != "oar-operator:0.1.0" || c.ImagePullPolicy != corev1.PullIfNotPresent {
			t.Errorf("replicas %d image %s %s; want 2, oar-operator:<appVersion> IfNotPresent", *dep.Spec.Replicas, c.Image, c.ImagePullPolicy)
		}
		tsc := dep.Spec.Template.Spec.TopologySpreadConstraints
		if len(tsc) != 1 || tsc[0].LabelSelector == nil || !reflect.DeepEqual(tsc[0].LabelSelector.MatchLabels, dep.Spec.Selector.MatchLabels) {
			t.Errorf("default topology spread %+v does not select the manager's pods", tsc)
		}
		checkZapFlags(t, c.Args)
		if !slices.Contains(c.Args, "--max-concurrent-reconciles=2") {
			t.Errorf("args %v lack --max-concurrent-reconciles=2", c.Args)
		}
	})
	t.Run("every option", func(t *testing.T) {
		vs := valueSets[len(valueSets)-1]
		r := mustRender(t, "oar-system", vs)
		dep := deployment(t, r)
		pod := dep.Spec.Template.Spec
		c := pod.Containers[0]
		if *dep.Spec.Replicas != 3 || c.Image != "registry.example/oar/oar-operator@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef" ||
			c.ImagePullPolicy != corev1.PullAlways {
			t.Errorf("replicas %d image %s %s", *dep.Spec.Replicas, c.Image, c.ImagePullPolicy)
		}
		for _, want := range []string{"--zap-log-level=3", "--zap-encoder=console", "--enable-http2", "--health-probe-bind-address=:9081",
			"--webhook-port=10443", "--metrics-bind-address=:9443", "--max-concurrent-reconciles=4"} {
			if !slices.Contains(c.Args, want) {
				t.Errorf("args %v lack %s", c.Args, want)
			}
		}
		checkZapFlags(t, c.Args)
		if c.Resources.Limits.Memory().String() != "512Mi" || c.Resources.Requests.Cpu().String() != "50m" {
			t.Errorf("resources %+v", c.Resources)
		}
		if pod.ServiceAccountName != "oar-manager" || pod.PriorityClassName != "platform-high" ||
			*pod.TerminationGracePeriodSeconds != 30 || pod.NodeSelector["kubernetes.io/os"] != "linux" ||
			len(pod.Tolerations) != 1 || pod.Affinity == nil || pod.Affinity.PodAntiAffinity == nil ||
			len(pod.ImagePullSecrets) != 1 || pod.ImagePullSecrets[0].Name != "regcred" {
			t.Errorf("pod spec does not carry the values: %+v", pod)
		}
		if pod.TopologySpreadConstraints[0].LabelSelector.MatchLabels["team"] != "platform" ||
			!reflect.DeepEqual(pod.TopologySpreadConstraints[1].LabelSelector.MatchLabels, dep.Spec.Selector.MatchLabels) {
			t.Errorf("a given labelSelector must be kept and a missing one filled: %+v", pod.TopologySpreadConstraints)
		}
		if l := dep.Spec.Template.Labels; l["team"] != "platform" || l["app.kubernetes.io/instance"] != releaseName {
			t.Errorf("pod labels %v; want podLabels and the selector labels", l)
		}
		if a := dep.Spec.Template.Annotations; a["prometheus.io/scrape"] != "false" || a["kubectl.kubernetes.io/default-container"] != "manager" {
			t.Errorf("pod annotations %v", a)
		}
		if env := c.Env; len(env) != 2 || env[1].Name != "GOMEMLIMIT" {
			t.Errorf("env %+v; want POD_NAMESPACE then extraEnv", env)
		}
		var pdb policyv1.PodDisruptionBudget
		r.into(t, "PodDisruptionBudget", "oar-operator", &pdb)
		if pdb.Spec.MinAvailable == nil || *pdb.Spec.MinAvailable != intstr.FromString("50%") {
			t.Errorf("PDB minAvailable %v; want 50%%", pdb.Spec.MinAvailable)
		}
	})
	t.Run("no webhooks, no metrics", func(t *testing.T) {
		c := deployment(t, mustRender(t, "oar-system", valueSets[4])).Spec.Template.Spec.Containers[0]
		for _, want := range []string{"--enable-webhooks=false", "--metrics-bind-address=0"} {
			if !slices.Contains(c.Args, want) {
				t.Errorf("args %v lack %s", c.Args, want)
			}
		}
		if hasMount(c, "/tmp/k8s-webhook-server/serving-certs") || len(c.Ports) != 1 {
			t.Errorf("without webhooks and metrics the pod still has ports %v or the certificate mount", c.Ports)
		}
	})
}

// TestPodDisruptionBudget keeps one manager up through drains when there are several,
// selecting exactly the manager's pods, lets an unready manager be evicted (a pair that
// crash-loops must not block a drain), and renders none for a single replica.
func TestPodDisruptionBudget(t *testing.T) {
	r := mustRender(t, "oar-system", valueSets[0])
	var pdb policyv1.PodDisruptionBudget
	r.into(t, "PodDisruptionBudget", "oar-operator", &pdb)
	dep := deployment(t, r)
	if pdb.Spec.MinAvailable == nil || *pdb.Spec.MinAvailable != intstr.FromInt32(1) ||
		!reflect.DeepEqual(pdb.Spec.Selector.MatchLabels, dep.Spec.Selector.MatchLabels) {
		t.Errorf("PDB %+v; want minAvailable 1 over the manager's pods", pdb.Spec)
	}
	if p := pdb.Spec.UnhealthyPodEvictionPolicy; p == nil || *p != policyv1.AlwaysAllow {
		t.Errorf("unhealthyPodEvictionPolicy %v; want AlwaysAllow", p)
	}
	for _, values := range []string{"replicaCount: 1", "podDisruptionBudget: {enabled: false}"} {
		r, err := render(t, "oar-system", values)
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range r.objects {
			if o.GetKind() == "PodDisruptionBudget" {
				t.Errorf("%s renders a PodDisruptionBudget", values)
			}
		}
	}
}

// leaseRelease is the time the grace period keeps for the manager after its graceful
// shutdown timeout: releasing the leader lease (one API call) and exiting.
const leaseRelease = 5 * time.Second

// TestShutdownFitsTheGracePeriod: for every value set the kubelet's grace period covers the
// preStop sleep that drains the webhooks, the shutdown timeout the manager is given
// (--graceful-shutdown-timeout; without it controller-runtime waits 30 s, as long as the
// grace period allows and longer than the chart's old 10 s) and the lease release after
// it, so the kubelet never kills a manager mid-shutdown; the drain is the kubelet's own
// sleep action (the distroless image has no sleep to exec), on whenever the webhooks are;
// values that break the sum are refused by name. config/default, whose manager serves
// the webhooks, stops as the chart's defaults do.
func TestShutdownFitsTheGracePeriod(t *testing.T) {
	for _, vs := range valueSets {
		t.Run(vs.name, func(t *testing.T) {
			pod := deployment(t, mustRender(t, "oar-system", vs)).Spec.Template.Spec
			checkShutdown(t, pod)
		})
	}
	t.Run("config/default", func(t *testing.T) {
		pod := find[appsv1.Deployment](t, buildKustomization(t), "Deployment").Spec.Template.Spec
		checkShutdown(t, pod)
		chart := deployment(t, mustRender(t, "oar-system", valueSets[0])).Spec.Template.Spec
		if !reflect.DeepEqual(pod.Containers[0].Lifecycle, chart.Containers[0].Lifecycle) ||
			*pod.TerminationGracePeriodSeconds != *chart.TerminationGracePeriodSeconds ||
			flagValue(pod.Containers[0].Args, "--graceful-shutdown-timeout", "") != flagValue(chart.Containers[0].Args, "--graceful-shutdown-timeout", "") {
			t.Errorf("config/default stops with lifecycle %+v, grace period %ds and --graceful-shutdown-timeout=%s; the chart with lifecycle %+v, %ds and %s",
				pod.Containers[0].Lifecycle, *pod.TerminationGracePeriodSeconds, flagValue(pod.Containers[0].Args, "--graceful-shutdown-timeout", ""),
				chart.Containers[0].Lifecycle, *chart.TerminationGracePeriodSeconds, flagValue(chart.Containers[0].Args, "--graceful-shutdown-timeout", ""))
		}
	})
	for _, values := range []string{
		"terminationGracePeriodSeconds: 10",
		"manager: {gracefulShutdownSeconds: 26}",
		"webhook: {drainSeconds: 11}",
	} {
		if _, err := render(t, "oar-system", values); err == nil || !strings.Contains(err.Error(), "terminationGracePeriodSeconds") {
			t.Errorf("values %s: error %v; want one naming terminationGracePeriodSeconds", values, err)
		}
	}
	for _, values := range []string{"{webhook: {enabled: false}, terminationGracePeriodSeconds: 20}", "webhook: {drainSeconds: 0}"} {
		pod := deployment(t, mustRender(t, "oar-system", valueSet{name: values, values: values})).Spec.Template.Spec
		if pod.Containers[0].Lifecycle != nil {
			t.Errorf("values %s: preStop %+v; want none", values, pod.Containers[0].Lifecycle.PreStop)
		}
	}
}

// checkShutdown checks that the manager's pod drains the webhooks, with the kubelet's
// sleep action, exactly when it serves them (--enable-webhooks, on by default), and that
// its grace period covers the drain, the shutdown timeout and the lease release.
func checkShutdown(t *testing.T, pod corev1.PodSpec) {
	t.Helper()
	c := pod.Containers[0]
	raw := flagValue(c.Args, "--graceful-shutdown-timeout", "")
	if raw == "" {
		t.Fatal("no --graceful-shutdown-timeout: the manager would wait controller-runtime's default 30 s")
	}
	timeout, err := time.ParseDuration(raw)
	if err != nil || timeout <= 0 {
		t.Fatalf("--graceful-shutdown-timeout=%s: %v", raw, err)
	}
	var drain time.Duration
	if h := c.Lifecycle; h != nil && h.PreStop != nil {
		if h.PreStop.Sleep == nil || h.PreStop.Exec != nil || h.PreStop.HTTPGet != nil {
			t.Fatalf("preStop %+v; want the kubelet's sleep action alone", h.PreStop)
		}
		drain = time.Duration(h.PreStop.Sleep.Seconds) * time.Second
	}
	webhooks := flagValue(c.Args, "--enable-webhooks", "true") == "true"
	if webhooks != (drain > 0) {
		t.Errorf("webhooks served %v, preStop sleep %s; want a drain exactly when webhooks are served", webhooks, drain)
	}
	grace := time.Duration(*pod.TerminationGracePeriodSeconds) * time.Second
	if grace < drain+timeout+leaseRelease {
		t.Errorf("grace period %s < preStop %s + shutdown timeout %s + lease release %s", grace, drain, timeout, leaseRelease)
	}
}

// checkZapFlags parses the manager's --zap-* arguments with controller-runtime's own
// flag set, the one cmd/manager binds, so a log level or encoder it would refuse at
// start-up fails here.
func checkZapFlags(tb testing.TB, args []string) {
	tb.Helper()
	fs := flag.NewFlagSet("manager", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	var o zap.Options
	o.BindFlags(fs)
	var zapArgs []string
	for _, a := range args {
		if strings.HasPrefix(a, "--zap-") {
			zapArgs = append(zapArgs, a)
		}
	}
	if len(zapArgs) != 2 {
		tb.Errorf("zap arguments %v; want the log level and the encoder", zapArgs)
	}
	if err := fs.Parse(zapArgs); err != nil {
		tb.Errorf("the manager would refuse %v: %v", zapArgs, err)
	}
}

// hasMount reports whether the container mounts something at path.
func hasMount(c corev1.Container, path string) bool {
	return slices.ContainsFunc(c.VolumeMounts, func(m corev1.VolumeMount) bool { return m.MountPath == path })
}

// hasAnyPrefix reports whether s starts with one of the prefixes.
func hasAnyPrefix(s string, prefixes ...string) bool {
	return slices.ContainsFunc(prefixes, func(p string) bool { return strings.HasPrefix(s, p) })
}

// managerArgs returns the arguments of the manager Deployment named fullname.
func managerArgs(tb testing.TB, r rendered, fullname string) []string {
	tb.Helper()
	var dep appsv1.Deployment
	r.into(tb, "Deployment", fullname, &dep)
	return dep.Spec.Template.Spec.Containers[0].Args
}
