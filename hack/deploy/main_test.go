package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// TestRefusesWithoutKubeconfig: with $KUBECONFIG unset, nothing is deployed anywhere,
// whatever ~/.kube/config points at.
func TestRefusesWithoutKubeconfig(t *testing.T) {
	t.Setenv("KUBECONFIG", "")
	for _, args := range [][]string{nil, {"--uninstall"}} {
		var out bytes.Buffer
		err := run(context.Background(), args, &out, &out)
		if err == nil || !strings.Contains(err.Error(), "KUBECONFIG is not set") {
			t.Errorf("%v: error %v; want a refusal naming KUBECONFIG", args, err)
		}
	}
}

func TestImageValues(t *testing.T) {
	for _, tc := range []struct {
		ref  string
		want map[string]any
	}{
		{"oar-operator:latest", map[string]any{"repository": "oar-operator", "tag": "latest", "digest": ""}},
		{"oar-operator", map[string]any{"repository": "oar-operator", "tag": "latest", "digest": ""}},
		{"registry.example:5000/oar/oar-operator", map[string]any{"repository": "registry.example:5000/oar/oar-operator", "tag": "latest", "digest": ""}},
		{"registry.example:5000/oar-operator:v0.1.0", map[string]any{"repository": "registry.example:5000/oar-operator", "tag": "v0.1.0", "digest": ""}},
		{"ghcr.io/o/oar@sha256:abc", map[string]any{"repository": "ghcr.io/o/oar", "digest": "sha256:abc", "tag": ""}},
	} {
		got, err := imageValues(tc.ref)
		if err != nil || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("imageValues(%q) = %v, %v; want %v", tc.ref, got, err, tc.want)
		}
	}
	for _, bad := range []string{"oar:", "@sha256:abc", ":v1"} {
		if _, err := imageValues(bad); err == nil {
			t.Errorf("imageValues(%q) accepted", bad)
		}
	}
}

// TestValuesPrecedence: values files, then --image, then --set, as with helm -f and --set.
func TestValuesPrecedence(t *testing.T) {
	file := filepath.Join(t.TempDir(), "values.yaml")
	if err := os.WriteFile(file, []byte("replicaCount: 3\nimage: {repository: from-file, pullPolicy: Always}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	got, err := mergeValues(flags{valueFiles: []string{file}, image: "from-flag:v1", sets: []string{"image.tag=v2", "replicaCount=4"}})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"replicaCount": int64(4),
		"image": map[string]any{"repository": "from-flag", "tag": "v2", "digest": "", "pullPolicy": "Always"}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("merged values %v; want %v", got, want)
	}
}
