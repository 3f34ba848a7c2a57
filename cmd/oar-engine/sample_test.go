package main

import (
	"io"
	"net"
	"os"
	"strconv"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"
)

// TestAgentSample keeps config/samples/agent_deployment.yaml true to the binary: its
// arguments parse, it mounts the bundle ConfigMap as a directory (never subPath) where
// --bundle-dir points, and its probes reach /readyz and /healthz on --probe-address.
func TestAgentSample(t *testing.T) {
	data, err := os.ReadFile("../../config/samples/agent_deployment.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var d appsv1.Deployment
	if err := yaml.UnmarshalStrict(data, &d); err != nil {
		t.Fatal(err)
	}
	spec := d.Spec.Template.Spec
	var sidecar *corev1.Container
	for i, c := range spec.InitContainers {
		if c.Name == "oar-engine" {
			sidecar = &spec.InitContainers[i]
		}
	}
	if sidecar == nil || sidecar.RestartPolicy == nil || *sidecar.RestartPolicy != corev1.ContainerRestartPolicyAlways {
		t.Fatal("no native sidecar named oar-engine (an init container with restartPolicy: Always)")
	}
	o, err := parseFlags(sidecar.Args, io.Discard)
	if err != nil {
		t.Fatalf("the sample's arguments: %v", err)
	}
	if o.address != "127.0.0.1" {
		t.Errorf("the API listens on %s, not loopback", o.address)
	}

	volumes := map[string]string{}
	for _, v := range spec.Volumes {
		if v.ConfigMap != nil {
			volumes[v.Name] = v.ConfigMap.Name
		}
	}
	mounted := false
	for _, m := range sidecar.VolumeMounts {
		if volumes[m.Name] == "acme-gateway-oar-bundle" {
			mounted = true
			if m.SubPath != "" || m.SubPathExpr != "" || m.MountPath != o.bundleDir {
				t.Errorf("bundle mount %+v: want the whole ConfigMap at --bundle-dir %s, without subPath", m, o.bundleDir)
			}
		}
	}
	if !mounted {
		t.Error("the sidecar does not mount acme-gateway-oar-bundle")
	}

	// Shared sessions: the password file is a key of a mounted Secret.
	if o.sessionStore == "memory" || o.storePassword == "" {
		t.Errorf("the sample keeps sessions in %q (password file %q); it shows a shared Redis with a password", o.sessionStore, o.storePassword)
	}
	secrets := map[string]corev1.SecretVolumeSource{}
	for _, v := range spec.Volumes {
		if v.Secret != nil {
			secrets[v.Name] = *v.Secret
		}
	}
	fromSecret := false
	for _, m := range sidecar.VolumeMounts {
		sec, ok := secrets[m.Name]
		if !ok {
			continue
		}
		for _, item := range sec.Items {
			if m.MountPath+"/"+item.Path == o.storePassword {
				fromSecret = true
			}
		}
	}
	if !fromSecret {
		t.Errorf("--session-store-password-file %s is no key of a mounted Secret", o.storePassword)
	}

	_, port, err := net.SplitHostPort(o.probeAddress)
	if err != nil {
		t.Fatal(err)
	}
	ports := map[string]string{}
	for _, p := range sidecar.Ports {
		ports[p.Name] = strconv.Itoa(int(p.ContainerPort))
	}
	for what, probe := range map[string]*corev1.Probe{"startupProbe": sidecar.StartupProbe, "readinessProbe": sidecar.ReadinessProbe, "livenessProbe": sidecar.LivenessProbe} {
		if probe == nil || probe.HTTPGet == nil {
			t.Errorf("%s: no HTTP probe", what)
			continue
		}
		want := "/readyz"
		if what == "livenessProbe" {
			want = "/healthz"
		}
		if probe.HTTPGet.Path != want || ports[probe.HTTPGet.Port.String()] != port {
			t.Errorf("%s: %s on port %s, want %s on the --probe-address port %s", what, probe.HTTPGet.Path, probe.HTTPGet.Port.String(), want, port)
		}
	}
}
