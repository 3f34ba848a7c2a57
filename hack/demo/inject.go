package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/yaml"

	"github.com/oar-operator/oar-operator/internal/resource"
)

// injectedSample is the agent Deployment whose pods carry only the label.
const injectedSample = "agent_injected.yaml"

// showInjection creates one pod of config/samples/agent_injected.yaml's template (there
// is no ReplicaSet controller on this control plane, so the tour plays it) and prints
// what the engine injector added to the stored pod, next to the bundle it mounts.
func (t *tour) showInjection(ctx context.Context) error {
	raw, err := os.ReadFile(filepath.Join(t.env.Root, "config", "samples", injectedSample))
	if err != nil {
		return err
	}
	var d appsv1.Deployment
	if err := yaml.UnmarshalStrict(raw, &d); err != nil {
		return fmt.Errorf("%s: %w", injectedSample, err)
	}
	pod := &corev1.Pod{ObjectMeta: d.Spec.Template.ObjectMeta, Spec: d.Spec.Template.Spec}
	pod.Namespace, pod.Name = namespace, d.Name+"-7d9f8"
	step(t.out, "A pod of config/samples/%s: no sidecar in its template, only the label %s=%s (and two annotations sharing sessions in Redis)", injectedSample, resource.CapabilityLabel, pod.Labels[resource.CapabilityLabel])
	if err := t.env.Client.Create(ctx, pod); err != nil {
		return fmt.Errorf("create pod %s: %w", pod.Name, err)
	}
	step(t.out, "kubectl get pod %s -o yaml (excerpt: what the engine injector added)", pod.Name)
	stored := &corev1.Pod{}
	if err := t.env.Client.Get(ctx, types.NamespacedName{Namespace: namespace, Name: pod.Name}, stored); err != nil {
		return err
	}
	out, err := yaml.Marshal(excerpt(stored))
	if err != nil {
		return err
	}
	fmt.Fprint(t.out, indent(string(out)))

	cm := &corev1.ConfigMap{}
	name := resource.BundleName(pod.Labels[resource.CapabilityLabel])
	if err := t.env.Client.Get(ctx, types.NamespacedName{Namespace: namespace, Name: name}, cm); err != nil {
		return fmt.Errorf("%w: %v", errNoBundle, err)
	}
	step(t.out, "kubectl get configmap %s: the bundle the oar-bundle volume mounts at /etc/oar/bundle", name)
	keys := slices.Sorted(func(yield func(string) bool) {
		for k := range cm.Data {
			if !yield(k) {
				return
			}
		}
		for k := range cm.BinaryData {
			if !yield(k) {
				return
			}
		}
	})
	fmt.Fprintf(t.out, "  %s: %s\n  keys: %s\n", resource.DigestAnnotation, cm.Annotations[resource.DigestAnnotation], strings.Join(keys, ", "))
	return nil
}

// excerpt is the part of a stored pod that shows the injection.
func excerpt(p *corev1.Pod) map[string]any {
	var apps []map[string]any
	for _, c := range p.Spec.Containers {
		apps = append(apps, map[string]any{"name": c.Name, "env": c.Env})
	}
	var init []map[string]any
	for _, c := range p.Spec.InitContainers {
		init = append(init, map[string]any{
			"name": c.Name, "image": c.Image, "restartPolicy": c.RestartPolicy, "args": c.Args, "env": c.Env,
			"ports": c.Ports, "resources": c.Resources, "volumeMounts": c.VolumeMounts,
			"startupProbe": c.StartupProbe,
		})
	}
	return map[string]any{"metadata": map[string]any{"name": p.Name, "labels": p.Labels, "annotations": p.Annotations},
		"spec": map[string]any{"initContainers": init, "containers": apps, "volumes": p.Spec.Volumes}}
}

func indent(s string) string {
	return "  " + strings.ReplaceAll(strings.TrimSuffix(s, "\n"), "\n", "\n  ") + "\n"
}
