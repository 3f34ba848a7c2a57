package inject

import (
	"encoding/json"
	"errors"
	"testing"

	jsonpatch "github.com/evanphx/json-patch/v5"
	createpatch "gomodules.xyz/jsonpatch/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// patchOf is the JSON patch from pod to pod with spec, as the webhook sends it.
func patchOf(pod *corev1.Pod, spec *corev1.PodSpec) (before []byte, patch []byte, err error) {
	before, err = json.Marshal(pod)
	if err != nil {
		return nil, nil, err
	}
	mutated := pod.DeepCopy()
	mutated.Spec = *spec
	after, err := json.Marshal(mutated)
	if err != nil {
		return nil, nil, err
	}
	ops, err := createpatch.CreatePatch(before, after)
	if err != nil {
		return nil, nil, err
	}
	patch, err = json.Marshal(ops)
	return before, patch, err
}

// FuzzInject: for any pod, Inject returns a spec or a Refusal and never panics; the
// patch to its spec, applied, gives that spec; and injecting the patched pod again
// yields an empty patch, so a second pass (re-invocation) equals the first.
func FuzzInject(f *testing.F) {
	sample := samplePod(f, "agent_injected.yaml")
	seeds := []*corev1.Pod{
		{Spec: *sample.Spec},
		{Spec: *sample.Spec},
		{Spec: *samplePod(f, "agent_deployment.yaml").Spec},
		{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: ContainerName}}, Volumes: []corev1.Volume{{Name: VolumeName}}}},
	}
	seeds = append(seeds, &corev1.Pod{Spec: *mustInject(f, sample).Spec}, &corev1.Pod{Spec: *sample.Spec.DeepCopy()})
	// An injected pod whose label names another Capability: its bundle volume is repointed.
	seeds[4].Labels = map[string]string{CapabilityLabel: "other-gateway"}
	// Pod-level resources: the sidecar's share is added to them.
	seeds[5].Labels = map[string]string{CapabilityLabel: "acme-gateway"}
	seeds[5].Spec.Resources = &corev1.ResourceRequirements{
		Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("500m")},
		Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("500m"), corev1.ResourceMemory: resource.MustParse("256Mi")},
	}
	seeds[0].Labels = map[string]string{CapabilityLabel: "acme-gateway"}
	seeds[1].Labels = map[string]string{CapabilityLabel: "acme-gateway"}
	seeds[1].Annotations = map[string]string{AnnotationPort: "9000", AnnotationMemoryLimit: "1Gi"}
	for _, s := range seeds {
		raw, err := json.Marshal(s)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(raw, "")
		f.Add(raw, "acme-gateway")
	}
	f.Fuzz(func(t *testing.T, raw []byte, namespaceCapability string) {
		var pod corev1.Pod
		if json.Unmarshal(raw, &pod) != nil {
			return
		}
		in := func(p *corev1.Pod) Pod {
			return Pod{Namespace: p.Namespace, Labels: p.Labels, Annotations: p.Annotations, Spec: &p.Spec, NamespaceCapability: namespaceCapability}
		}
		r, err := Inject(in(&pod), Defaults())
		if err != nil {
			var refusal *Refusal
			if !errors.As(err, &refusal) || refusal.Field == "" || refusal.Cause == "" {
				t.Fatalf("an error that is no refusal: %v", err)
			}
			return
		}
		before, patch, err := patchOf(&pod, r.Spec)
		if err != nil {
			t.Fatal(err)
		}
		decoded, err := jsonpatch.DecodePatch(patch)
		if err != nil {
			t.Fatal(err)
		}
		patched, err := decoded.Apply(before)
		if err != nil {
			t.Fatalf("apply %s: %v", patch, err)
		}
		var once corev1.Pod
		if err := json.Unmarshal(patched, &once); err != nil {
			t.Fatal(err)
		}
		again, err := Inject(in(&once), Defaults())
		if err != nil {
			t.Fatalf("the injected pod is refused: %v", err)
		}
		if _, second, err := patchOf(&once, again.Spec); err != nil || string(second) != "[]" || again.Changed {
			t.Fatalf("a second pass changed the pod (changed %v): %s %v", again.Changed, second, err)
		}
		if r.Changed != (string(patch) != "[]") {
			t.Fatalf("Changed %v with patch %s", r.Changed, patch)
		}
	})
}
