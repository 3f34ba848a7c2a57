// Package inject adds the OAR engine sidecar to a pod that opts in with the label
// rules.oar.dev/capability. It is the one mutation both the
// mutating admission webhook (internal/admission) and `oarctl inject` apply, so a
// manifest rendered in CI is the pod the API server stores. It is pure: it reads no
// cluster, and a pod that already has the engine serving its Capability's bundle comes
// back unchanged.
package inject

import (
	"errors"
	"fmt"
	"math"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/oar-operator/oar-operator/internal/decisionlog"
	oarresource "github.com/oar-operator/oar-operator/internal/resource"
	"github.com/oar-operator/oar-operator/internal/sidecar/redisstore"
)

// The switch and the names the injector adds.
const (
	// CapabilityLabel on a pod (or its namespace) names the Capability whose bundle the
	// engine serves; a pod's own label wins over its namespace's.
	CapabilityLabel = oarresource.CapabilityLabel
	// ContainerName is the sidecar's name, among the pod's init containers.
	ContainerName = "oar-engine"
	// VolumeName is the bundle ConfigMap's volume.
	VolumeName = "oar-bundle"
	// BundleDir is where the sidecar mounts the bundle, as a directory.
	BundleDir = "/etc/oar/bundle"
	// EngineURLEnv tells an application container where the engine answers.
	EngineURLEnv = "OAR_ENGINE_URL"
	// ProbePortName names the sidecar's probe and metrics port.
	ProbePortName = "oar-probes"
	// StoreVolumeName is the volume of the shared session store's password Secret.
	StoreVolumeName = "oar-session-store"
	// StoreSecretDir is where the sidecar mounts it; the password is the key "password".
	StoreSecretDir = "/etc/oar/session-store"
	// engineCommand is the engine's path in the operator's image.
	engineCommand = "/oar-engine"
	// EngineUser is the user and group the sidecar runs as: the image's USER (Dockerfile).
	// It is set on the container, not left to the image, because the kubelet takes the
	// pod's runAsUser over the image's: in a pod running as root, a sidecar with
	// runAsNonRoot and no user of its own would never start; and elsewhere it keeps the
	// engine apart from the agent's user, which could otherwise signal or read it in a
	// pod sharing its process namespace.
	EngineUser = 65532
	// SCCAnnotation is where OpenShift's SCC admission, which runs before mutating
	// webhooks, writes the SCC that admitted the pod; it has then also set the
	// containers' runAsUser (MustRunAsRange: the first UID of the namespace's range;
	// MustRunAs: the fixed UID), and will validate the sidecar's against the same SCC.
	SCCAnnotation = "openshift.io/scc"
)

// The annotations that tune the sidecar of one pod.
const (
	annotationPrefix         = "rules.oar.dev/engine-"
	AnnotationImage          = annotationPrefix + "image"
	AnnotationPort           = annotationPrefix + "port"
	AnnotationProbePort      = annotationPrefix + "probe-port"
	AnnotationMaxSessions    = annotationPrefix + "max-sessions"
	AnnotationSessionIdleTTL = annotationPrefix + "session-idle-ttl"
	AnnotationCPURequest     = annotationPrefix + "cpu-request"
	AnnotationMemoryRequest  = annotationPrefix + "memory-request"
	AnnotationMemoryLimit    = annotationPrefix + "memory-limit"
	// AnnotationSessionStore shares sessions across replicas: memory (the default) or a
	// redis:// or rediss:// URL without a password (README "Several replicas").
	AnnotationSessionStore = annotationPrefix + "session-store"
	// AnnotationSessionStoreSecret names a Secret in the pod's namespace whose key
	// "password" is the store's password, mounted as a file (never a flag).
	AnnotationSessionStoreSecret = annotationPrefix + "session-store-secret"
	// AnnotationDecisionLog turns the engine's decision log on (stdout, where the
	// cluster's log pipeline collects it with the publish_event records) or off
	// (README "Changing rules safely").
	AnnotationDecisionLog = annotationPrefix + "decision-log"
	// AnnotationDecisionLogContent is how much of each occurrence's content the log
	// keeps: omit (the default), hash or full.
	AnnotationDecisionLogContent = annotationPrefix + "decision-log-content"
	// AnnotationDecisionLogSample is the fraction of sessions logged, 0 to 1.
	AnnotationDecisionLogSample = annotationPrefix + "decision-log-sample"
	// AnnotationRunAsUser is the sidecar's securityContext.runAsUser: auto (the
	// default), none, or a UID (RunAsUser).
	AnnotationRunAsUser = annotationPrefix + "run-as-user"
)

// RunAsUser is the sidecar's securityContext.runAsUser. The zero value is auto: the
// UID OpenShift's SCC gave the pod's containers where it did (the pod carries
// SCCAnnotation and a container a runAsUser), else the image's user and group,
// EngineUser.
type RunAsUser struct {
	// UID, when above zero, is set on every sidecar (with runAsGroup EngineUser only
	// when the UID is EngineUser and the pod runs as root).
	UID int64
	// Never leaves runAsUser and runAsGroup unset on every sidecar, for a cluster whose
	// policy assigns them (a pod running as root is then refused: its sidecar could not
	// start).
	Never bool
	// From names where the setting was made, for a refusal: the flag or the annotation.
	From string
}

// ParseRunAsUser reads a RunAsUser (the annotation, or the manager's default): auto,
// none, or a UID from 1. The error says what is accepted.
func ParseRunAsUser(value string) (RunAsUser, error) {
	switch value {
	case "auto":
		return RunAsUser{}, nil
	case "none":
		return RunAsUser{Never: true}, nil
	}
	uid, err := strconv.ParseInt(value, 10, 64)
	if err != nil || uid < 1 || uid > math.MaxInt32 {
		return RunAsUser{}, fmt.Errorf("auto (the UID OpenShift's SCC gave the pod's containers, else the image's user 65532), none (never set) or a UID from 1 to %d (always that user; 0 is root, which the sidecar's runAsNonRoot refuses)", math.MaxInt32)
	}
	return RunAsUser{UID: uid}, nil
}

// Options are the sidecar a pod gets when its annotations say nothing else.
type Options struct {
	// Image is the engine's image: by default the operator's own image and version.
	Image          string
	Port           int
	ProbePort      int
	MaxSessions    int
	SessionIdleTTL time.Duration
	CPURequest     resource.Quantity
	MemoryRequest  resource.Quantity
	MemoryLimit    resource.Quantity
	// SessionStore is the engine's --session-store, empty for sessions in memory.
	SessionStore string
	// SessionStoreSecret names the Secret holding SessionStore's password, if any. The
	// two are a pair: a pod's AnnotationSessionStore replaces both, so a pod that says
	// memory, or names its own store, never gets (nor sends its password to) the default.
	SessionStoreSecret string
	// SessionStorePendingTTL is the engine's --session-store-pending-ttl when it shares
	// sessions (zero: the engine's default). It tunes the engine, not the store, so it
	// applies to a pod that names its own store too.
	SessionStorePendingTTL time.Duration
	// DecisionLog writes the engine's decision log to its stdout (--decision-log);
	// DecisionLogContent and DecisionLogSample are its --decision-log-content (empty:
	// the engine's default, omit) and --decision-log-sample (empty: every session).
	DecisionLog        bool
	DecisionLogContent string
	DecisionLogSample  string
	// RunAsUser is the sidecar's runAsUser; auto by default.
	RunAsUser RunAsUser
	// SkipNamespaces are never mutated: the operator's own and kube-system.
	SkipNamespaces []string
}

// Defaults are the sidecar of config/samples/agent_deployment.yaml.
func Defaults() Options {
	return Options{
		Image:          "oar-operator:latest",
		Port:           8181,
		ProbePort:      8182,
		MaxSessions:    100000,
		SessionIdleTTL: 30 * time.Minute,
		CPURequest:     resource.MustParse("50m"),
		MemoryRequest:  resource.MustParse("64Mi"),
		MemoryLimit:    resource.MustParse("128Mi"),
		SkipNamespaces: []string{metav1.NamespaceSystem},
	}
}

// Pod is what the injector reads of a pod or a pod template.
type Pod struct {
	// Namespace is the pod's (or the workload's) namespace.
	Namespace   string
	Labels      map[string]string
	Annotations map[string]string
	Spec        *corev1.PodSpec
	// NamespaceCapability is the value of CapabilityLabel on the namespace, if any.
	NamespaceCapability string
}

// Result says what the injector did.
type Result struct {
	// Spec is the pod spec to store: a copy, Pod.Spec is never modified.
	Spec *corev1.PodSpec
	// Capability is the Capability the engine serves; empty when the pod did not opt in.
	Capability string
	// Changed is false when the pod did not opt in or already had everything.
	Changed bool
	// Warnings are for the user, as kubectl prints admission warnings.
	Warnings []string
}

// Refusal is why a pod that opted in cannot be injected.
type Refusal struct {
	// Field is where the cause is, e.g. metadata.annotations[rules.oar.dev/engine-port].
	Field string
	// Cause says what is wrong and what is accepted.
	Cause string
}

func (r *Refusal) Error() string { return r.Field + ": " + r.Cause }

// Inject returns the pod's spec with the engine sidecar, its bundle volume and
// OAR_ENGINE_URL in every application container (and the sidecar's share added to the
// pod-level resources it sets), or a Refusal. A pod that did not opt in
// (or lives in a skipped namespace) comes back unchanged; so does one that already has
// the engine, except that an application container added since (another webhook, on
// re-invocation) gets OAR_ENGINE_URL and a bundle volume naming another Capability's
// ConfigMap is repointed to the one the pod opted in to; a session store or decision log
// other than the injector's is only warned about.
func Inject(p Pod, o Options) (Result, error) {
	spec := p.Spec
	if spec == nil {
		spec = &corev1.PodSpec{}
	}
	res := Result{Spec: spec}
	capability, field, ok := capabilityOf(p)
	if !ok || slices.Contains(o.SkipNamespaces, p.Namespace) {
		return res, nil
	}
	if errs := validation.IsDNS1123Subdomain(oarresource.BundleName(capability)); capability == "" || len(errs) > 0 {
		return res, &Refusal{Field: field, Cause: fmt.Sprintf("%q is not a Capability name: it must be a lowercase DNS subdomain (a-z, 0-9, '-', '.') of at most %d characters", capability, validation.DNS1123SubdomainMaxLength-len(oarresource.BundleSuffix))}
	}
	res.Capability = capability
	o, warnings, err := tune(p.Annotations, o)
	if err != nil {
		return res, err
	}
	res.Warnings = warnings
	out := spec.DeepCopy()
	port := o.Port
	if i := slices.IndexFunc(out.InitContainers, isEngine); i >= 0 {
		port = enginePort(&out.InitContainers[i], port)
		warning, err := serveCapability(out, i, capability, field)
		if err != nil {
			return res, err
		}
		if warning != "" {
			res.Warnings = append(res.Warnings, warning)
			res.Changed = true
		}
		if warning := settingsDiffer(out, i, p.Annotations[SCCAnnotation] != "", o); warning != "" {
			res.Warnings = append(res.Warnings, warning)
		}
	} else {
		if err := clashes(out, o); err != nil {
			return res, err
		}
		sidecar := container(o)
		user, group, err := engineUser(out, p.Annotations[SCCAnnotation] != "", o.RunAsUser)
		if err != nil {
			return res, err
		}
		sidecar.SecurityContext.RunAsUser, sidecar.SecurityContext.RunAsGroup = user, group
		if w := growPodResources(out, sidecar.Resources); w != "" {
			res.Warnings = append(res.Warnings, w)
		}
		out.InitContainers = slices.Insert(out.InitContainers, 0, sidecar)
		out.Volumes = append(out.Volumes, volume(capability))
		if o.SessionStoreSecret != "" {
			out.Volumes = append(out.Volumes, storeVolume(o.SessionStoreSecret))
		}
		res.Changed = true
	}
	url := "http://127.0.0.1:" + strconv.Itoa(port)
	for i := range out.Containers {
		c := &out.Containers[i]
		j := slices.IndexFunc(c.Env, func(e corev1.EnvVar) bool { return e.Name == EngineURLEnv })
		switch {
		case j < 0:
			c.Env = append(c.Env, corev1.EnvVar{Name: EngineURLEnv, Value: url})
			res.Changed = true
		case c.Env[j].Value != url || c.Env[j].ValueFrom != nil:
			res.Warnings = append(res.Warnings, fmt.Sprintf("container %q sets %s itself; left as it is (the engine answers at %s)", c.Name, EngineURLEnv, url))
		}
	}
	if res.Changed {
		res.Spec = out
	}
	return res, nil
}

// engineUser is the runAsUser and runAsGroup the sidecar of the pod s is given under r
// (nil: unset), or a refusal. scc tells whether OpenShift's SCC admitted the pod.
func engineUser(s *corev1.PodSpec, scc bool, r RunAsUser) (user, group *int64, err error) {
	root := s.SecurityContext != nil && s.SecurityContext.RunAsUser != nil && *s.SecurityContext.RunAsUser == 0
	image := func() *int64 { id := int64(EngineUser); return &id }
	switch {
	case r.UID > 0:
		uid := r.UID
		if root && uid == EngineUser {
			return &uid, image(), nil
		}
		return &uid, nil, nil
	case r.Never && root:
		from := r.From
		if from == "" {
			from = "run-as-user"
		}
		return nil, nil, &Refusal{Field: "spec.securityContext.runAsUser", Cause: fmt.Sprintf("the pod runs as root (0) and the %s sidecar's user is left unset (none, from %s), so it would run as root too, which its runAsNonRoot forbids: the kubelet would never start it; set %s to auto or to a UID from 1, or run the pod as a user other than root", ContainerName, from, from)}
	case r.Never:
		return nil, nil, nil
	}
	if scc {
		if user, ok := sccUser(s); ok {
			return user, nil, nil
		}
	}
	return image(), image(), nil
}

// sccUser is the user OpenShift's SCC admission gave the pod s, which carries
// SCCAnnotation: the runAsUser of its first container (app, then init) that has one,
// else nil, to inherit, when the SCC admitted the pod's own user other than root. ok is
// false when the SCC gave it none (anyuid and the like).
func sccUser(s *corev1.PodSpec) (user *int64, ok bool) {
	for _, c := range slices.Concat(s.Containers, s.InitContainers) {
		if c.SecurityContext != nil && c.SecurityContext.RunAsUser != nil {
			uid := *c.SecurityContext.RunAsUser
			return &uid, true
		}
	}
	// The SCC admitted the pod's own user and gave its containers none: the sidecar
	// inherits that user, the one the SCC's validation accepts.
	if s.SecurityContext != nil && s.SecurityContext.RunAsUser != nil && *s.SecurityContext.RunAsUser != 0 {
		return nil, true
	}
	return nil, false
}

// capabilityOf returns the Capability the pod asks for and where it says so.
func capabilityOf(p Pod) (name, field string, ok bool) {
	if v, ok := p.Labels[CapabilityLabel]; ok {
		return v, "metadata.labels[" + CapabilityLabel + "]", true
	}
	if p.NamespaceCapability != "" {
		return p.NamespaceCapability, "namespace " + p.Namespace + " label " + CapabilityLabel, true
	}
	return "", "", false
}

// isEngine tells the sidecar an injector (or a hand-written manifest following
// config/samples/agent_deployment.yaml) added from a container that merely has its name.
func isEngine(c corev1.Container) bool {
	return c.Name == ContainerName && c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways &&
		len(c.Command) == 1 && c.Command[0] == engineCommand
}

// enginePort is the --port an existing sidecar was given, or def.
func enginePort(c *corev1.Container, def int) int {
	for _, a := range c.Args {
		if v, ok := strings.CutPrefix(a, "--port="); ok {
			if n, err := strconv.Atoi(v); err == nil && n > 0 && n < 65536 {
				return n
			}
		}
	}
	return def
}

// serveCapability makes the existing engine sidecar out.InitContainers[i] serve the
// bundle of capability, which field names: a copied injected pod, or an `oarctl inject`
// rendering, whose label now names another Capability still mounts the old one's bundle.
// A ConfigMap volume naming another bundle is repointed, and the warning says so; a
// bundle directory that is no ConfigMap volume cannot be repointed and is refused.
func serveCapability(out *corev1.PodSpec, i int, capability, field string) (string, error) {
	engine := &out.InitContainers[i]
	dir := BundleDir
	if v, ok := flagValue(engine.Args, "bundle-dir"); ok {
		dir = v
	}
	want := oarresource.BundleName(capability)
	m := slices.IndexFunc(engine.VolumeMounts, func(m corev1.VolumeMount) bool { return m.MountPath == dir })
	if m < 0 {
		return "", &Refusal{Field: fmt.Sprintf("spec.initContainers[%d].volumeMounts", i), Cause: fmt.Sprintf("the %s sidecar already in the pod mounts nothing at its bundle directory %s, so it cannot serve the bundle of Capability %q that %s names: mount the ConfigMap %s there as a volume, or remove the sidecar and let the injector add it", ContainerName, dir, capability, field, want)}
	}
	name := engine.VolumeMounts[m].Name
	v := slices.IndexFunc(out.Volumes, func(v corev1.Volume) bool { return v.Name == name })
	if v < 0 {
		return "", &Refusal{Field: fmt.Sprintf("spec.initContainers[%d].volumeMounts[%d].name", i, m), Cause: fmt.Sprintf("the %s sidecar's bundle directory %s mounts the volume %q, which the pod does not have: it must be the ConfigMap %s, the bundle of Capability %q that %s names", ContainerName, dir, name, want, capability, field)}
	}
	cm := out.Volumes[v].ConfigMap
	if cm == nil {
		return "", &Refusal{Field: fmt.Sprintf("spec.volumes[%d]", v), Cause: fmt.Sprintf("the volume %q the %s sidecar serves its bundle from is no ConfigMap volume, so it cannot serve the bundle of Capability %q that %s names: make it the ConfigMap %s, or remove the sidecar and its volume and let the injector add them", name, ContainerName, capability, field, want)}
	}
	if cm.Name == want {
		return "", nil
	}
	old := cm.Name
	cm.Name = want
	return fmt.Sprintf("the %s sidecar already in the pod served the ConfigMap %s (spec.volumes[%d], %q); it now serves %s, the bundle of Capability %s that %s names", ContainerName, old, v, name, want, capability, field), nil
}

// clusterSettings are the engine flags the manager's defaults set (--injector-session-store,
// --injector-decision-log...), each with the value the engine takes when it is absent.
var clusterSettings = []struct{ name, absent string }{
	{"session-store", "memory"},
	{"session-store-password-file", "none"},
	{"session-store-pending-ttl", redisstore.DefaultPendingTTL.String()},
	{"decision-log", "off"},
	{"decision-log-content", "omit"},
	{"decision-log-sample", "1"},
}

// settingsDiffer is the warning for the engine sidecar already in the pod s,
// s.InitContainers[i] (an `oarctl inject` rendering, a hand-written sidecar), whose
// session store, decision log, user or group is not what the injector would give it
// under o and the pod's annotations; scc tells whether OpenShift's SCC admitted the pod.
// It is left as it is, since its settings may be deliberate, but not silently: a
// rendering made without the cluster's settings would keep sessions per replica, log
// nothing or run as another user or group.
func settingsDiffer(s *corev1.PodSpec, i int, scc bool, o Options) string {
	engine := &s.InitContainers[i]
	want := container(o).Args
	value := func(args []string, name, absent string) string {
		if v, _ := flagValue(args, name); v != "" {
			return v
		}
		return absent
	}
	// A pending time does nothing in memory: the store's own difference is what counts.
	inMemory := value(want, "session-store", "memory") == "memory" || value(engine.Args, "session-store", "memory") == "memory"
	var differ []string
	for _, f := range clusterSettings {
		if strings.HasPrefix(f.name, "decision-log-") && !o.DecisionLog || f.name == "session-store-pending-ttl" && inMemory {
			continue
		}
		w, h := value(want, f.name, f.absent), value(engine.Args, f.name, f.absent)
		if w != h && !sameNumber(w, h) && !sameDuration(w, h) {
			differ = append(differ, fmt.Sprintf("--%s %s where the injector gives %s", f.name, h, w))
		}
	}
	user, from := sidecarUser(s, engine)
	if w, ok := decidedUser(s, i, scc, o.RunAsUser); ok && user != w {
		differ = append(differ, fmt.Sprintf("securityContext.runAsUser %d%s where the injector gives %d", user, from, w))
	}
	if w, ok := decidedGroup(s, i, scc, o.RunAsUser); ok {
		switch h, from, known := sidecarGroup(s, engine, user); {
		case !known:
			differ = append(differ, fmt.Sprintf("securityContext.runAsGroup unset (user %d's group in the image's /etc/passwd, else 0) where the injector gives %d", user, w))
		case h != w:
			differ = append(differ, fmt.Sprintf("securityContext.runAsGroup %d%s where the injector gives %d", h, from, w))
		}
	}
	if len(differ) == 0 {
		return ""
	}
	return fmt.Sprintf("the %s sidecar already in the pod is left as it is, but it does not run with this cluster's settings (given the pod's annotations): it has %s; render it with `oarctl inject` given the manager's --injector-* settings, set the %s* annotations, or remove it and let the injector add it", ContainerName, strings.Join(differ, "; "), annotationPrefix)
}

// decidedUser is the runAsUser the injector gives the sidecar s.InitContainers[i] under
// r when the settings decide it: a UID, or under auto the image's user where no SCC
// gave the pod's other containers or the pod a user. Under none the cluster's policy
// decides, and under auto on OpenShift the SCC, whose admission has already accepted
// the sidecar's user (a UID within the namespace's range need not be the app's).
func decidedUser(s *corev1.PodSpec, i int, scc bool, r RunAsUser) (int64, bool) {
	switch {
	case r.UID > 0:
		return r.UID, true
	case r.Never:
		return 0, false
	}
	if _, assigned := sccUser(withoutSidecar(s, i)); scc && assigned {
		return 0, false
	}
	return EngineUser, true
}

// decidedGroup is the runAsGroup the injector gives the sidecar s.InitContainers[i]
// under r (engineUser's, on the pod without it) when it gives one: the image's group,
// under auto where decidedUser is the image's user and under the image's UID in a pod
// running as root. Elsewhere it writes none, so the pod's group or the image's applies
// to its sidecar as to the one in the pod: nothing for the settings to decide.
func decidedGroup(s *corev1.PodSpec, i int, scc bool, r RunAsUser) (int64, bool) {
	_, group, err := engineUser(withoutSidecar(s, i), scc, r)
	if err != nil || group == nil {
		return 0, false
	}
	return *group, true
}

// withoutSidecar is the pod s without its sidecar s.InitContainers[i]: the pod the
// injector would have added it to.
func withoutSidecar(s *corev1.PodSpec, i int) *corev1.PodSpec {
	others := *s
	others.InitContainers = slices.Delete(slices.Clone(s.InitContainers), i, i+1)
	return &others
}

// sidecarUser is the user the kubelet runs the sidecar engine of the pod s as, and
// where it comes from when not from the sidecar: the pod's runAsUser, else the image's
// USER, EngineUser.
func sidecarUser(s *corev1.PodSpec, engine *corev1.Container) (uid int64, from string) {
	if engine.SecurityContext != nil && engine.SecurityContext.RunAsUser != nil {
		return *engine.SecurityContext.RunAsUser, ""
	}
	if s.SecurityContext != nil && s.SecurityContext.RunAsUser != nil {
		return *s.SecurityContext.RunAsUser, " (the pod's)"
	}
	return EngineUser, " (the image's)"
}

// sidecarGroup is the group the sidecar engine of the pod s runs as, given its user
// (sidecarUser), and where it comes from when not from the sidecar: the pod's
// runAsGroup, else the image's. The runtime gives a user without a group the primary
// group the image's /etc/passwd lists for it, else 0; known is false for a user other
// than the image's own, EngineUser, whose group is EngineUser.
func sidecarGroup(s *corev1.PodSpec, engine *corev1.Container, user int64) (gid int64, from string, known bool) {
	if engine.SecurityContext != nil && engine.SecurityContext.RunAsGroup != nil {
		return *engine.SecurityContext.RunAsGroup, "", true
	}
	if s.SecurityContext != nil && s.SecurityContext.RunAsGroup != nil {
		return *s.SecurityContext.RunAsGroup, " (the pod's)", true
	}
	if user != EngineUser {
		return 0, "", false
	}
	return EngineUser, " (the image's)", true
}

// sameNumber tells 0.1 and 0.10 alike.
func sameNumber(a, b string) bool {
	x, errA := strconv.ParseFloat(a, 64)
	y, errB := strconv.ParseFloat(b, 64)
	return errA == nil && errB == nil && x == y
}

// sameDuration tells 5ms and 0.005s alike.
func sameDuration(a, b string) bool {
	x, errA := time.ParseDuration(a)
	y, errB := time.ParseDuration(b)
	return errA == nil && errB == nil && x == y
}

// flagValue is the value of the Go flag name among args (-name=v, --name=v, -name v or
// --name v); the last one wins, as the flag package has it.
func flagValue(args []string, name string) (string, bool) {
	var value string
	found := false
	for i, a := range args {
		a, ok := strings.CutPrefix(a, "-")
		if !ok {
			continue
		}
		a = strings.TrimPrefix(a, "-")
		if v, ok := strings.CutPrefix(a, name+"="); ok {
			value, found = v, true
		} else if a == name && i+1 < len(args) {
			value, found = args[i+1], true
		}
	}
	return value, found
}

// growPodResources adds the sidecar's share to the pod-level resources (spec.resources)
// a pod sets, before the sidecar joins it, and says what grew. The API server refuses
// pod-level requests below the containers' aggregate requests, and pod-level limits cap
// every container with the sidecar among them (KEP-2837), so the sidecar's share comes on
// top of the budget the pod gave its own containers: a request grows by the sidecar's
// request, a limit by the sidecar's limit (its request for CPU, which it does not
// limit). A resource whose request equals its limit, or whose request the API server
// would take from its limit (no container asks for it), keeps the two equal, so a
// Guaranteed pod stays Guaranteed.
func growPodResources(s *corev1.PodSpec, sidecar corev1.ResourceRequirements) string {
	r := s.Resources
	if r == nil {
		return ""
	}
	var grew []string
	grow := func(kind string, list corev1.ResourceList, name corev1.ResourceName, by resource.Quantity) {
		q := list[name]
		was := q.String()
		q.Add(by)
		list[name] = q
		grew = append(grew, fmt.Sprintf("%s.%s %s to %s", kind, name, was, q.String()))
	}
	for _, name := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
		request, hasRequest := r.Requests[name]
		limit, hasLimit := r.Limits[name]
		byRequest := sidecar.Requests[name]
		byLimit, limited := sidecar.Limits[name]
		if !limited {
			byLimit = byRequest
		}
		if hasLimit && !hasRequest && !containersAsk(s, name) {
			if r.Requests == nil {
				r.Requests = corev1.ResourceList{}
			}
			r.Requests[name] = limit.DeepCopy()
			request, hasRequest = limit, true
		}
		if hasRequest && hasLimit && request.Cmp(limit) == 0 {
			byRequest = byLimit
		}
		if hasRequest {
			grow("requests", r.Requests, name, byRequest)
		}
		if hasLimit {
			grow("limits", r.Limits, name, byLimit)
		}
	}
	if len(grew) == 0 {
		return ""
	}
	return fmt.Sprintf("spec.resources: the pod's own resources grow by the %s sidecar's share, so its containers keep theirs: %s", ContainerName, strings.Join(grew, ", "))
}

// containersAsk tells whether a container of s requests or limits name: if none does,
// the API server defaults the pod-level request to the pod-level limit.
func containersAsk(s *corev1.PodSpec, name corev1.ResourceName) bool {
	for _, cs := range [][]corev1.Container{s.InitContainers, s.Containers} {
		for _, c := range cs {
			if _, ok := c.Resources.Requests[name]; ok {
				return true
			}
			if _, ok := c.Resources.Limits[name]; ok {
				return true
			}
		}
	}
	return false
}

// clashes refuses a pod that already uses a name or a port the injector would add.
func clashes(s *corev1.PodSpec, o Options) error {
	check := func(kind string, cs []corev1.Container) error {
		for i, c := range cs {
			if c.Name == ContainerName {
				return &Refusal{Field: fmt.Sprintf("spec.%s[%d].name", kind, i), Cause: fmt.Sprintf("a container is already called %q, the name of the engine sidecar the injector adds, and it is not that sidecar: rename it", ContainerName)}
			}
			for j, p := range c.Ports {
				if int(p.ContainerPort) == o.Port || int(p.ContainerPort) == o.ProbePort {
					return &Refusal{Field: fmt.Sprintf("spec.%s[%d].ports[%d].containerPort", kind, i, j), Cause: fmt.Sprintf("container %q already uses port %d, which the engine sidecar needs (API port %d, probe port %d): move it, or set %s / %s", c.Name, p.ContainerPort, o.Port, o.ProbePort, AnnotationPort, AnnotationProbePort)}
				}
				if p.Name == ProbePortName {
					return &Refusal{Field: fmt.Sprintf("spec.%s[%d].ports[%d].name", kind, i, j), Cause: fmt.Sprintf("container %q already has a port named %q, the name of the engine sidecar's probe port: rename it", c.Name, ProbePortName)}
				}
			}
		}
		return nil
	}
	if err := check("initContainers", s.InitContainers); err != nil {
		return err
	}
	if err := check("containers", s.Containers); err != nil {
		return err
	}
	for i, v := range s.Volumes {
		if v.Name == VolumeName {
			return &Refusal{Field: fmt.Sprintf("spec.volumes[%d].name", i), Cause: fmt.Sprintf("a volume is already called %q, the name of the bundle volume the injector adds: rename it", VolumeName)}
		}
		if v.Name == StoreVolumeName && o.SessionStoreSecret != "" {
			return &Refusal{Field: fmt.Sprintf("spec.volumes[%d].name", i), Cause: fmt.Sprintf("a volume is already called %q, the name of the session store's password volume the injector adds: rename it", StoreVolumeName)}
		}
	}
	return nil
}

// tune applies the pod's annotations to o; a bad value is refused with the annotation
// and what it accepts, an unknown engine annotation is a warning.
func tune(annotations map[string]string, o Options) (Options, []string, error) {
	var warnings []string
	bad := func(key, value, accepts string) error {
		return &Refusal{Field: "metadata.annotations[" + key + "]", Cause: fmt.Sprintf("%q is not accepted: %s", value, accepts)}
	}
	port := func(key, value string, dst *int) error {
		n, err := strconv.Atoi(value)
		if err != nil || n < 1 || n > 65535 {
			return bad(key, value, "a port number from 1 to 65535")
		}
		*dst = n
		return nil
	}
	quantity := func(key, value string, dst *resource.Quantity) error {
		q, err := resource.ParseQuantity(value)
		if err != nil || q.Sign() <= 0 {
			return bad(key, value, "a positive Kubernetes quantity, e.g. 64Mi or 100m")
		}
		*dst = q
		return nil
	}
	keys := make([]string, 0, len(annotations))
	for k := range annotations {
		if strings.HasPrefix(k, annotationPrefix) {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	if _, ok := annotations[AnnotationSessionStore]; ok {
		o.SessionStoreSecret = ""
	}
	for _, key := range keys {
		value := annotations[key]
		var err error
		switch key {
		case AnnotationImage:
			if !validImage(value) {
				err = bad(key, value, "an image reference without spaces, e.g. registry.example/oar-operator:v1.2.3")
			}
			o.Image = value
		case AnnotationPort:
			err = port(key, value, &o.Port)
		case AnnotationProbePort:
			err = port(key, value, &o.ProbePort)
		case AnnotationMaxSessions:
			n, perr := strconv.Atoi(value)
			if perr != nil || n < 1 {
				err = bad(key, value, "a positive integer, the most sessions the engine keeps counters for")
			}
			o.MaxSessions = n
		case AnnotationSessionIdleTTL:
			d, perr := time.ParseDuration(value)
			if perr != nil || d <= 0 {
				err = bad(key, value, "a positive Go duration, e.g. 30m or 1h")
			}
			o.SessionIdleTTL = d
		case AnnotationCPURequest:
			err = quantity(key, value, &o.CPURequest)
		case AnnotationMemoryRequest:
			err = quantity(key, value, &o.MemoryRequest)
		case AnnotationMemoryLimit:
			err = quantity(key, value, &o.MemoryLimit)
		case AnnotationSessionStore:
			o.SessionStore, err = ParseSessionStore(value)
			if err != nil {
				err = bad(key, value, err.Error())
			}
		case AnnotationSessionStoreSecret:
			if err = CheckSessionStoreSecret(value); err != nil {
				err = bad(key, value, err.Error())
			}
			o.SessionStoreSecret = value
		case AnnotationDecisionLog:
			o.DecisionLog, err = ParseDecisionLog(value)
			if err != nil {
				err = bad(key, value, err.Error())
			}
		case AnnotationDecisionLogContent:
			if err = CheckDecisionLogContent(value); err != nil {
				err = bad(key, value, err.Error())
			}
			o.DecisionLogContent = value
		case AnnotationDecisionLogSample:
			if err = CheckDecisionLogSample(value); err != nil {
				err = bad(key, value, err.Error())
			}
			o.DecisionLogSample = value
		case AnnotationRunAsUser:
			o.RunAsUser, err = ParseRunAsUser(value)
			o.RunAsUser.From = "the pod's annotation " + key
			if err != nil {
				err = bad(key, value, err.Error())
			}
		default:
			warnings = append(warnings, fmt.Sprintf("annotation %s is not one the engine injector knows (%s); it is ignored", key, strings.Join(knownAnnotations, ", ")))
		}
		if err != nil {
			return o, nil, err
		}
	}
	if o.Port == o.ProbePort {
		return o, nil, &Refusal{Field: "metadata.annotations[" + AnnotationProbePort + "]", Cause: fmt.Sprintf("the probe port and the API port are both %d: they must differ", o.Port)}
	}
	if o.SessionStoreSecret != "" && o.SessionStore == "" {
		return o, nil, &Refusal{Field: "metadata.annotations[" + AnnotationSessionStoreSecret + "]", Cause: fmt.Sprintf("a password Secret is named but sessions stay in memory: set %s to the redis:// or rediss:// URL of the store", AnnotationSessionStore)}
	}
	if !o.DecisionLog && (annotations[AnnotationDecisionLogContent] != "" || annotations[AnnotationDecisionLogSample] != "") {
		warnings = append(warnings, fmt.Sprintf("annotations %s and %s tune the decision log, which is off: set %s to stdout", AnnotationDecisionLogContent, AnnotationDecisionLogSample, AnnotationDecisionLog))
	}
	if o.MemoryLimit.Cmp(o.MemoryRequest) < 0 {
		return o, nil, &Refusal{Field: "metadata.annotations[" + AnnotationMemoryLimit + "]", Cause: fmt.Sprintf("the memory limit %s is below the memory request %s: it must be at least the request", o.MemoryLimit.String(), o.MemoryRequest.String())}
	}
	return o, warnings, nil
}

var knownAnnotations = []string{AnnotationImage, AnnotationPort, AnnotationProbePort, AnnotationMaxSessions, AnnotationSessionIdleTTL, AnnotationCPURequest, AnnotationMemoryRequest, AnnotationMemoryLimit, AnnotationSessionStore, AnnotationSessionStoreSecret,
	AnnotationDecisionLog, AnnotationDecisionLogContent, AnnotationDecisionLogSample, AnnotationRunAsUser}

// ParseDecisionLog reads whether the decision log is on (the annotation, or the
// manager's default): stdout or off. A file is not offered: the sidecar's root file
// system is read-only, and stdout is where the cluster collects its records.
func ParseDecisionLog(value string) (bool, error) {
	switch value {
	case "stdout":
		return true, nil
	case "off":
		return false, nil
	}
	return false, errors.New("stdout (the engine writes its decision log there) or off")
}

// CheckDecisionLogContent refuses what is not a --decision-log-content mode.
func CheckDecisionLogContent(value string) error {
	if _, err := decisionlog.ParseContentMode(value); err != nil {
		return errors.New("omit (the content's length only), hash (its length and SHA-256) or full (the text)")
	}
	return nil
}

// CheckDecisionLogSample refuses what is not a fraction from 0 to 1.
func CheckDecisionLogSample(value string) error {
	f, err := strconv.ParseFloat(value, 64)
	if err != nil || !(f >= 0 && f <= 1) {
		return errors.New("the fraction of sessions logged, a number from 0 to 1, e.g. 0.1")
	}
	return nil
}

// ParseSessionStore reads a session store (the annotation, or the manager's default): ""
// for memory, else the URL the engine is given. The error says what is accepted.
func ParseSessionStore(value string) (string, error) {
	if value == "memory" {
		return "", nil
	}
	u, err := url.Parse(value)
	if err != nil || (u.Scheme != "redis" && u.Scheme != "rediss") || u.Host == "" {
		return "", fmt.Errorf("memory, or a redis:// or rediss:// URL with a host, e.g. redis://acme-redis:6379")
	}
	if _, set := u.User.Password(); set {
		return "", errors.New("a URL without a password: the password comes from the store's Secret, mounted as a file")
	}
	return value, nil
}

// CheckSessionStoreSecret refuses what cannot name the store's password Secret; the
// error says what is accepted.
func CheckSessionStoreSecret(name string) error {
	if errs := validation.IsDNS1123Subdomain(name); len(errs) > 0 {
		return errors.New("the name of a Secret in the pod's namespace (a lowercase DNS subdomain) whose key \"password\" is the session store's password")
	}
	return nil
}

// container is the engine sidecar of config/samples/agent_deployment.yaml, tuned by o.
// No CPU limit: CFS throttling would stall answers for milliseconds at a time.
func container(o Options) corev1.Container {
	always := corev1.ContainerRestartPolicyAlways
	probe := func(path string, period, failures int32) *corev1.Probe {
		return &corev1.Probe{
			ProbeHandler:     corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: path, Port: intstr.FromString(ProbePortName)}},
			PeriodSeconds:    period,
			FailureThreshold: failures,
		}
	}
	yes, no := true, false
	c := corev1.Container{
		Name:          ContainerName,
		Image:         o.Image,
		RestartPolicy: &always,
		Command:       []string{engineCommand},
		Args: []string{
			"--bundle-dir=" + BundleDir,
			"--address=127.0.0.1",
			"--port=" + strconv.Itoa(o.Port),
			"--probe-address=:" + strconv.Itoa(o.ProbePort),
			"--max-sessions=" + strconv.Itoa(o.MaxSessions),
			"--session-idle-ttl=" + shortDuration(o.SessionIdleTTL),
			"--max-session-bytes=" + strconv.FormatInt(sessionBytes(o.MemoryLimit), 10),
			"--max-request-bytes=" + strconv.FormatInt(requestBytes(o.MemoryLimit), 10),
		},
		Env: []corev1.EnvVar{
			{Name: "GOMEMLIMIT", Value: goMemLimit(o.MemoryLimit)},
			{Name: "GOMAXPROCS", Value: goMaxProcs(o.CPURequest)},
		},
		Ports: []corev1.ContainerPort{{Name: ProbePortName, ContainerPort: int32(o.ProbePort), Protocol: corev1.ProtocolTCP}},
		// The startup probe holds the application containers back until a bundle is
		// loaded, for up to two minutes before the kubelet restarts the sidecar.
		StartupProbe:   probe("/readyz", 1, 120),
		ReadinessProbe: probe("/readyz", 5, 0),
		LivenessProbe:  probe("/healthz", 10, 0),
		Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: o.CPURequest, corev1.ResourceMemory: o.MemoryRequest},
			Limits:   corev1.ResourceList{corev1.ResourceMemory: o.MemoryLimit},
		},
		SecurityContext: &corev1.SecurityContext{
			AllowPrivilegeEscalation: &no,
			ReadOnlyRootFilesystem:   &yes,
			RunAsNonRoot:             &yes,
			Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
			SeccompProfile:           &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
		},
		VolumeMounts: []corev1.VolumeMount{{Name: VolumeName, MountPath: BundleDir, ReadOnly: true}},
	}
	if o.SessionStore != "" {
		c.Args = append(c.Args, "--session-store="+o.SessionStore)
		if o.SessionStorePendingTTL > 0 {
			c.Args = append(c.Args, "--session-store-pending-ttl="+o.SessionStorePendingTTL.String())
		}
	}
	if o.DecisionLog {
		c.Args = append(c.Args, "--decision-log=stdout")
		if o.DecisionLogContent != "" {
			c.Args = append(c.Args, "--decision-log-content="+o.DecisionLogContent)
		}
		if o.DecisionLogSample != "" {
			c.Args = append(c.Args, "--decision-log-sample="+o.DecisionLogSample)
		}
	}
	if o.SessionStoreSecret != "" {
		c.Args = append(c.Args, "--session-store-password-file="+StoreSecretDir+"/password")
		c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{Name: StoreVolumeName, MountPath: StoreSecretDir, ReadOnly: true})
	}
	return c
}

// storeVolume mounts the key "password" of the named Secret, the session store's password.
func storeVolume(secret string) corev1.Volume {
	return corev1.Volume{Name: StoreVolumeName, VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{
		SecretName: secret,
		Items:      []corev1.KeyToPath{{Key: "password", Path: "password"}},
	}}}
}

// volume mounts the bundle ConfigMap as a directory (never subPath: the kubelet does not
// update a subPath mount). Optional, so a pod created before its Capability starts and
// its sidecar's startup probe, not a mount error, holds it back until the bundle exists.
func volume(capability string) corev1.Volume {
	yes := true
	return corev1.Volume{Name: VolumeName, VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
		LocalObjectReference: corev1.LocalObjectReference{Name: oarresource.BundleName(capability)},
		Optional:             &yes,
	}}}
}

// goMemLimit is a soft heap limit at 80% of the memory limit, in whole MiB when it is at
// least one: the collector works harder before the kernel would kill the sidecar.
func goMemLimit(limit resource.Quantity) string {
	b := limit.Value() / 5 * 4
	if b >= 1<<20 {
		return strconv.FormatInt(b>>20, 10) + "MiB"
	}
	return strconv.FormatInt(b, 10) + "B"
}

// goMaxProcs is the CPU request rounded up, and at least two, which is what the Go
// runtime would choose from a CPU limit of that size. With no CPU limit (see container)
// it would run as many threads as the node has CPUs, each caching memory of its own: on
// this repository's load run, 64 of them took the heap in use from about 31 to 47-51 MiB
// and resident memory from 60 to 77-82 MiB, with the same sessions held.
func goMaxProcs(request resource.Quantity) string {
	cpus := (request.MilliValue() + 999) / 1000
	return strconv.FormatInt(max(cpus, 2), 10)
}

// sessionBytes is the sidecar's --max-session-bytes, a quarter of the memory limit, and
// requestBytes its --max-request-bytes, an eighth. The sessions' heap stays within twice
// what they are charged, so within half the limit, and the requests' within what they
// are charged but for one served alone (up to 50 times --max-body-bytes): below
// GOMEMLIMIT (80%) with room for the bundle and the runtime.
func sessionBytes(limit resource.Quantity) int64 {
	return max(limit.Value()/4, 1)
}

func requestBytes(limit resource.Quantity) int64 {
	return max(limit.Value()/8, 1)
}

// shortDuration writes 30m, not 30m0s.
func shortDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}
