package main

import (
	"strings"
	"testing"

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
	if len(docs) != 10 {
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
}
