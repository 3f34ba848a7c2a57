package main

import (
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// TestLinksNoKubernetesClient: the engine runs next to agent hosts inside and outside
// Kubernetes, so it links no Kubernetes API types, client-go or controller-runtime
// (which would add tens of megabytes and a reason to talk to an API server).
func TestLinksNoKubernetesClient(t *testing.T) {
	goBin := filepath.Join(runtime.GOROOT(), "bin", "go")
	out, err := exec.Command(goBin, "list", "-deps", "github.com/oar-operator/oar-operator/cmd/oar-engine",
		"github.com/oar-operator/oar-operator/internal/sidecar/...").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	for _, pkg := range strings.Fields(string(out)) {
		if strings.HasPrefix(pkg, "k8s.io/api") || strings.HasPrefix(pkg, "k8s.io/client-go") || strings.HasPrefix(pkg, "sigs.k8s.io/controller-runtime") {
			t.Errorf("oar-engine links %s", pkg)
		}
	}
}
