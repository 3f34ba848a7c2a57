package main

import (
	"flag"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"github.com/oar-operator/oar-operator/internal/inject"
)

const workloads = "../../internal/inject/testdata/workloads.yaml"

// documents splits oarctl inject's output into its documents.
func documents(t *testing.T, out string) []map[string]any {
	t.Helper()
	var docs []map[string]any
	for _, part := range strings.Split(out, "---\n")[1:] {
		var d map[string]any
		if err := yaml.Unmarshal([]byte(part), &d); err != nil {
			t.Fatalf("%v in\n%s", err, part)
		}
		docs = append(docs, d)
	}
	return docs
}

// initContainers are the init container names of the pod template at path.
func initContainers(d map[string]any, path ...string) []string {
	v := any(d)
	for _, k := range append(path, "spec") {
		m, _ := v.(map[string]any)
		v = m[k]
	}
	spec, _ := v.(map[string]any)
	list, _ := spec["initContainers"].([]any)
	var names []string
	for _, c := range list {
		names = append(names, c.(map[string]any)["name"].(string))
	}
	return names
}

func TestInjectEveryKind(t *testing.T) {
	withStdin(t, workloads)
	stdout, stderr, code := oarctl(t, "inject", "--image", "registry.example/oar-operator:v1")
	if code != exitOK || stderr != "" {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	docs := documents(t, stdout)
	if len(docs) != 12 {
		t.Fatalf("%d documents out", len(docs))
	}
	template := []string{"spec", "template"}
	want := []struct {
		path []string
		init []string
	}{
		{nil, nil}, // Namespace
		{template, []string{inject.ContainerName}},
		{template, []string{inject.ContainerName, "migrate"}},
		{template, []string{inject.ContainerName}},
		{template, []string{inject.ContainerName}},
		{[]string{"spec", "jobTemplate", "spec", "template"}, []string{inject.ContainerName}},
		{nil, []string{inject.ContainerName}},
		{nil, nil},                            // unlabelled Pod
		{nil, []string{inject.ContainerName}}, // Pod of the labelled namespace
		{nil, nil},                            // ConfigMap
		{nil, []string{inject.ContainerName}}, // Pod running as root
		{nil, []string{inject.ContainerName}}, // Pod as OpenShift's SCC admitted it
	}
	for i, w := range want {
		if got := initContainers(docs[i], w.path...); strings.Join(got, ",") != strings.Join(w.init, ",") {
			t.Errorf("document %d (%s): init containers %q, want %q", i+1, docs[i]["kind"], got, w.init)
		}
	}
	if !strings.Contains(stdout, "image: registry.example/oar-operator:v1") || !strings.Contains(stdout, "name: team-gateway-oar-bundle") ||
		!strings.Contains(stdout, "value: http://127.0.0.1:9000") || !strings.Contains(stdout, "--probe-address=:9001") {
		t.Fatalf("output lacks the image, the namespace's bundle or the annotated ports:\n%s", stdout)
	}
	// Its own output is left as it is.
	withStdinText(t, stdout)
	again, _, code := oarctl(t, "inject", "--image", "registry.example/oar-operator:v1", "-")
	if code != exitOK || again != stdout {
		t.Fatalf("injecting the output again changed it (exit %d)", code)
	}
}

// TestInjectLists: the pod templates inside a List (as kubectl get -o yaml prints one),
// a typed list whose items leave out their kind, and a list nested in a list are
// injected as the same objects alone would be; a namespace opting in from inside a list
// opts in its pods.
func TestInjectLists(t *testing.T) {
	withStdinText(t, `apiVersion: v1
kind: List
items:
- apiVersion: v1
  kind: Namespace
  metadata: {name: team, labels: {rules.oar.dev/capability: acme-gateway}}
- apiVersion: v1
  kind: Pod
  metadata: {name: p, namespace: team}
  spec: {containers: [{name: a, image: a}]}
- apiVersion: apps/v1
  kind: DeploymentList
  items:
  - metadata: {name: d, namespace: other}
    spec: {template: {metadata: {labels: {rules.oar.dev/capability: acme-gateway}}, spec: {containers: [{name: a, image: a}]}}}
`)
	stdout, stderr, code := oarctl(t, "inject", "--image", "registry.example/oar-operator:v1")
	if code != exitOK || stderr != "" {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	list := documents(t, stdout)[0]
	items, _ := list["items"].([]any)
	if len(items) != 3 {
		t.Fatalf("%d items out:\n%s", len(items), stdout)
	}
	pod, _ := items[1].(map[string]any)
	deployments, _ := items[2].(map[string]any)["items"].([]any)
	if len(deployments) != 1 {
		t.Fatalf("the nested list lost its items:\n%s", stdout)
	}
	deployment, _ := deployments[0].(map[string]any)
	if got := initContainers(pod); strings.Join(got, ",") != inject.ContainerName {
		t.Errorf("the Pod of the opted-in namespace: init containers %q", got)
	}
	if got := initContainers(deployment, "spec", "template"); strings.Join(got, ",") != inject.ContainerName {
		t.Errorf("the Deployment of the nested list: init containers %q", got)
	}
}

func TestInjectRefusal(t *testing.T) {
	withStdinText(t, `apiVersion: v1
kind: Pod
metadata: {name: p, labels: {rules.oar.dev/capability: acme-gateway}, annotations: {rules.oar.dev/engine-port: http}}
spec: {containers: [{name: a, image: a}]}
`)
	stdout, stderr, code := oarctl(t, "inject")
	if code != exitFail || stdout != "" || !strings.Contains(stderr, `Pod p (document 1): metadata.annotations[rules.oar.dev/engine-port]: "http" is not accepted: a port number from 1 to 65535`) {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	_, stderr, code = oarctl(t, "inject", "--memory-limit", "lots")
	if code != exitUsage || !strings.Contains(stderr, "memory-limit") {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	// The image flag is refused as the annotation is: the pod could not be created.
	for _, image := range []string{"", "UPPER CASE!!"} {
		_, stderr, code = oarctl(t, "inject", "--image", image)
		if code != exitUsage || !strings.Contains(stderr, "is not an image reference") {
			t.Errorf("--image %q: exit %d: %s", image, code, stderr)
		}
	}
}

// clusterInjectorArgs are the manager's injector flags as the chart renders them with
// every injector value set (injector.image, .resources, .sessionStore, .decisionLog).
var clusterInjectorArgs = []string{
	"--injector-image=registry.example/oar-operator:v1", "--injector-cpu-request=20m", "--injector-memory-request=32Mi", "--injector-memory-limit=1Gi",
	"--injector-session-store=rediss://shared-redis.redis:6380", "--injector-session-store-secret=shared-redis", "--injector-session-store-pending-ttl=20ms",
	"--injector-decision-log=stdout", "--injector-decision-log-content=hash", "--injector-decision-log-sample=0.1",
	"--injector-run-as-user=1000680000",
}

// TestInjectRendersTheClusterSettings: README "Offline" promises that CI can render what
// the cluster will run, and the webhook leaves alone a pod that already has the engine.
// So every sidecar flag of the manager (--injector-X) is an `oarctl inject` flag (--X),
// and a rendering given the manager's values is the spec the webhook injects with them
// (inject.Inject under the manager's flags, which TestInjectorEqualsOarctlInject in
// internal/admission shows is what the API server stores): the shared session store, its
// password Secret and the decision log included.
func TestInjectRendersTheClusterSettings(t *testing.T) {
	manager := inject.Defaults()
	fs := flag.NewFlagSet("manager", flag.ContinueOnError)
	manager.RegisterFlags(fs, "injector-")
	if err := fs.Parse(clusterInjectorArgs); err != nil {
		t.Fatal(err)
	}
	if err := manager.CheckFlags("injector-"); err != nil {
		t.Fatal(err)
	}
	help, _, _ := oarctl(t, "inject", "-h")
	fs.VisitAll(func(f *flag.Flag) {
		if name := strings.TrimPrefix(f.Name, "injector-"); !strings.Contains(help, "  -"+name+" ") && !strings.Contains(help, "  -"+name+"\n") {
			t.Errorf("the manager's --%s has no oarctl inject --%s:\n%s", f.Name, name, help)
		}
	})

	const pod = `apiVersion: v1
kind: Pod
metadata: {name: agent, namespace: acme, labels: {rules.oar.dev/capability: acme-gateway}}
spec: {containers: [{name: agent, image: registry.example/acme-agent:1.0}]}
`
	args := []string{"inject"}
	for _, a := range clusterInjectorArgs {
		args = append(args, strings.Replace(a, "--injector-", "--", 1))
	}
	withStdinText(t, pod)
	stdout, stderr, code := oarctl(t, args...)
	if code != exitOK || stderr != "" {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var rendered, sent corev1.Pod
	if err := yaml.Unmarshal([]byte(strings.TrimPrefix(stdout, "---\n")), &rendered); err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal([]byte(pod), &sent); err != nil {
		t.Fatal(err)
	}
	webhook, err := inject.Inject(inject.Pod{Namespace: sent.Namespace, Labels: sent.Labels, Spec: &sent.Spec}, manager)
	if err != nil {
		t.Fatal(err)
	}
	got, _ := yaml.Marshal(rendered.Spec)
	want, _ := yaml.Marshal(webhook.Spec)
	if string(got) != string(want) {
		t.Fatalf("oarctl inject renders\n%s\nthe webhook injects\n%s", got, want)
	}
	for _, s := range []string{"--session-store=rediss://shared-redis.redis:6380", "--session-store-password-file=/etc/oar/session-store/password", "secretName: shared-redis",
		"--decision-log=stdout", "--decision-log-content=hash", "--decision-log-sample=0.1", "image: registry.example/oar-operator:v1", "memory: 1Gi", "cpu: 20m", "runAsUser: 1000680000"} {
		if !strings.Contains(string(got), s) {
			t.Errorf("the rendering lacks %s:\n%s", s, got)
		}
	}

	_, stderr, code = oarctl(t, "inject", "--session-store-secret=shared-redis")
	if code != exitUsage || !strings.Contains(stderr, "--session-store-secret names a password Secret but sessions stay in memory: set --session-store") {
		t.Fatalf("a Secret without a store: exit %d, %s", code, stderr)
	}
	_, stderr, code = oarctl(t, "inject", "--decision-log=/var/log/d.jsonl")
	if code != exitUsage || !strings.Contains(stderr, "decision-log") || !strings.Contains(stderr, "stdout") {
		t.Fatalf("a decision log file: exit %d, %s", code, stderr)
	}
	for _, v := range []string{"-1", "0", "root", "1e3"} {
		_, stderr, code = oarctl(t, "inject", "--run-as-user="+v)
		if code != exitUsage || !strings.Contains(stderr, `invalid value "`+v+`" for flag -run-as-user: auto (the UID OpenShift's SCC gave`) || !strings.Contains(stderr, "a UID from 1") {
			t.Fatalf("--run-as-user=%s: exit %d, %s", v, code, stderr)
		}
	}
}

// TestInjectWarningWithAControlCharacter: a warning is printed as the webhook sends it,
// each control character escaped (admission.HeaderText): a sidecar already in the pod
// whose flag value ends in a newline, as a YAML block scalar leaves it, is named with
// "\n" rather than breaking the line, or acting on a terminal.
func TestInjectWarningWithAControlCharacter(t *testing.T) {
	withStdinText(t, `apiVersion: v1
kind: Pod
metadata: {name: p, labels: {rules.oar.dev/capability: acme-gateway}}
spec: {containers: [{name: a, image: a}]}
`)
	rendered, stderr, code := oarctl(t, "inject")
	if code != exitOK || stderr != "" {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	// The block scalar goes before the first flag, indented as it is.
	at := strings.Index(rendered, "- --bundle-dir=")
	if at < 0 {
		t.Fatalf("no --bundle-dir flag to put a flag before in:\n%s", rendered)
	}
	indent := strings.Repeat(" ", at-strings.LastIndex(rendered[:at], "\n")-1)
	edited := rendered[:at] + "- |\n" + indent + "  --decision-log=stdout\n" + indent + rendered[at:]
	withStdinText(t, edited)
	_, stderr, code = oarctl(t, "inject")
	want := `Warning: Pod p (document 1): the oar-engine sidecar already in the pod is left as it is, but it does not run with this cluster's settings (given the pod's annotations): it has --decision-log stdout\n where the injector gives off;`
	if code != exitOK || !strings.HasPrefix(stderr, want) || strings.Count(stderr, "\n") != 1 {
		t.Fatalf("exit %d, stderr %q; want one line beginning %q", code, stderr, want)
	}
}
