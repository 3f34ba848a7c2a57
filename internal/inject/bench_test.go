package inject

import (
	"strconv"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// BenchmarkInject10Containers: the mutation of a pod of ten application containers, each
// with ports, env and mounts (the budget is 200 µs).
func BenchmarkInject10Containers(b *testing.B) {
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
	p := Pod{Namespace: "acme", Labels: map[string]string{CapabilityLabel: "acme-gateway"}, Annotations: map[string]string{AnnotationPort: "8500"}, Spec: spec}
	o := Defaults()
	b.ReportAllocs()
	for b.Loop() {
		if r, err := Inject(p, o); err != nil || !r.Changed {
			b.Fatal(err)
		}
	}
}
