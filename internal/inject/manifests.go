package inject

import (
	"encoding/json"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// templatePaths are where each workload kind keeps its pod template's metadata and spec.
var templatePaths = map[string][]string{
	"Pod":         nil,
	"Deployment":  {"spec", "template"},
	"StatefulSet": {"spec", "template"},
	"DaemonSet":   {"spec", "template"},
	"ReplicaSet":  {"spec", "template"},
	"Job":         {"spec", "template"},
	"CronJob":     {"spec", "jobTemplate", "spec", "template"},
}

// Manifests injects, in place, the pod template of every workload among docs (Pod,
// Deployment, StatefulSet, DaemonSet, ReplicaSet, Job, CronJob) that opts in, as the
// webhook injects each pod they create: `oarctl inject` for GitOps pipelines. The items
// of a list document count as documents. A Namespace among docs opts in its pods as the
// cluster's would; namespace is that of documents naming none. Warnings name their
// document (and item).
func Manifests(docs []map[string]any, namespace string, o Options) ([]string, error) {
	var objects []object
	for i, d := range docs {
		objects = appendObjects(objects, d, "", fmt.Sprintf("document %d", i+1))
	}
	labelled := map[string]string{}
	for _, obj := range objects {
		if d := obj.doc; obj.kind == "Namespace" && d["apiVersion"] == "v1" {
			meta, _ := d["metadata"].(map[string]any)
			labels, _ := meta["labels"].(map[string]any)
			name, _ := meta["name"].(string)
			if c, ok := labels[CapabilityLabel].(string); ok {
				labelled[name] = c
			}
		}
	}
	var warnings []string
	for _, obj := range objects {
		d, kind := obj.doc, obj.kind
		path, ok := templatePaths[kind]
		if !ok {
			continue
		}
		meta, _ := d["metadata"].(map[string]any)
		name, _ := meta["name"].(string)
		what := fmt.Sprintf("%s %s (%s)", kind, name, obj.at)
		ns, _ := meta["namespace"].(string)
		if ns == "" {
			ns = namespace
		}
		w, err := injectTemplate(d, path, ns, labelled[ns], o)
		for _, s := range w {
			warnings = append(warnings, what+": "+s)
		}
		if err != nil {
			return warnings, fmt.Errorf("%s: %w", what, err)
		}
	}
	return warnings, nil
}

// object is a document, or an item of a list document, its kind and where it is.
type object struct {
	doc  map[string]any
	kind string
	at   string
}

// appendObjects appends d to out, or, when d is a list (a kind ending in List with
// items, as kubectl get -o yaml prints one), each of its items, an item with no kind
// taking the list's (a DeploymentList's items are Deployments). kind is d's kind when
// d does not say it.
func appendObjects(out []object, d map[string]any, kind, at string) []object {
	if k, ok := d["kind"].(string); ok {
		kind = k
	}
	items, isList := d["items"].([]any)
	if !isList || !strings.HasSuffix(kind, "List") {
		return append(out, object{d, kind, at})
	}
	for j, it := range items {
		if m, ok := it.(map[string]any); ok {
			out = appendObjects(out, m, strings.TrimSuffix(kind, "List"), fmt.Sprintf("%s, item %d", at, j+1))
		}
	}
	return out
}

// injectTemplate injects the pod template at path in doc, in place.
func injectTemplate(doc map[string]any, path []string, namespace, namespaceCapability string, o Options) ([]string, error) {
	tmpl := doc
	for _, k := range path {
		next, _ := tmpl[k].(map[string]any)
		if next == nil {
			return nil, nil
		}
		tmpl = next
	}
	var meta struct {
		Labels      map[string]string `json:"labels"`
		Annotations map[string]string `json:"annotations"`
	}
	var spec corev1.PodSpec
	if err := convert(tmpl["metadata"], &meta); err != nil {
		return nil, fmt.Errorf("metadata: %w", err)
	}
	if err := convert(tmpl["spec"], &spec); err != nil {
		return nil, fmt.Errorf("spec: %w", err)
	}
	r, err := Inject(Pod{Namespace: namespace, Labels: meta.Labels, Annotations: meta.Annotations, Spec: &spec, NamespaceCapability: namespaceCapability}, o)
	if err != nil || !r.Changed {
		return r.Warnings, err
	}
	var injected map[string]any
	if err := convert(r.Spec, &injected); err != nil {
		return r.Warnings, err
	}
	tmpl["spec"] = injected
	return r.Warnings, nil
}

// convert re-decodes v into dst through JSON.
func convert(v, dst any) error {
	raw, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return json.Unmarshal(raw, dst)
}
