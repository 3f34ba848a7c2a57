package inject

import (
	"strconv"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// tenContainers is a labelled pod of ten application containers, each with a port, env
// and a mount.
func tenContainers() Pod {
	spec := &corev1.PodSpec{Volumes: []corev1.Volume{{Name: "data"}}}
	for i := range 10 {
		spec.Containers = append(spec.Containers, corev1.Container{
			Name:         "c" + strconv.Itoa(i),
			Image:        "registry.example/agent:1.0",
			Ports:        []corev1.ContainerPort{{ContainerPort: int32(9000 + i)}},
			Env:          []corev1.EnvVar{{Name: "A", Value: "1"}, {Name: "B", Value: "2"}},
			VolumeMounts: []corev1.VolumeMount{{Name: "data", MountPath: "/data"}},
		})
	}
	return Pod{Namespace: "acme", Labels: map[string]string{CapabilityLabel: "acme-gateway"}, Annotations: map[string]string{AnnotationPort: "8500"}, Spec: spec}
}

// BenchmarkInject10Containers: the mutation of a pod of ten application containers (the
// budget is 200 µs).
func BenchmarkInject10Containers(b *testing.B) {
	p, o := tenContainers(), Defaults()
	b.ReportAllocs()
	for b.Loop() {
		if r, err := Inject(p, o); err != nil || !r.Changed {
			b.Fatal(err)
		}
	}
}

// BenchmarkInjectAndPatch10Containers: the mutation and the JSON patch the webhook sends
// for it (encoding the pod twice and diffing).
func BenchmarkInjectAndPatch10Containers(b *testing.B) {
	p, o := tenContainers(), Defaults()
	pod := &corev1.Pod{Spec: *p.Spec}
	pod.Namespace, pod.Labels, pod.Annotations = p.Namespace, p.Labels, p.Annotations
	b.ReportAllocs()
	for b.Loop() {
		r, err := Inject(p, o)
		if err != nil {
			b.Fatal(err)
		}
		if _, patch, err := patchOf(pod, r.Spec); err != nil || len(patch) < 100 {
			b.Fatal(err)
		}
	}
}
