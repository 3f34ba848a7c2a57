package inject

import (
	"encoding/json"
	"fmt"

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
// webhook injects each pod they create: `oarctl inject` for GitOps pipelines. A
// Namespace among docs opts in its pods as the cluster's would; namespace is that of
// documents naming none. Warnings name their document.
func Manifests(docs []map[string]any, namespace string, o Options) ([]string, error) {
	labelled := map[string]string{}
	for _, d := range docs {
		if d["kind"] == "Namespace" && d["apiVersion"] == "v1" {
			meta, _ := d["metadata"].(map[string]any)
			labels, _ := meta["labels"].(map[string]any)
			name, _ := meta["name"].(string)
			if c, ok := labels[CapabilityLabel].(string); ok {
				labelled[name] = c
			}
		}
	}
	var warnings []string
	for i, d := range docs {
		kind, _ := d["kind"].(string)
		path, ok := templatePaths[kind]
		if !ok {
			continue
		}
		meta, _ := d["metadata"].(map[string]any)
		name, _ := meta["name"].(string)
		what := fmt.Sprintf("%s %s (document %d)", kind, name, i+1)
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
