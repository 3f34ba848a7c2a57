package chart

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"helm.sh/helm/v4/pkg/chart/common"
	"k8s.io/client-go/discovery"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/oar-operator/oar-operator/internal/testenv"
)

// certManagerVersion is the cert-manager release whose CRDs the dry runs install, so the
// chart's Issuer and Certificate are checked against their real schemas. They come from
// deploy/crds of the github.com/cert-manager/cert-manager module, fetched through the Go
// module proxy and verified against the Go checksum database like any dependency, and
// are never vendored here.
const certManagerVersion = "v1.21.2"

// prometheusOperatorVersion is the Prometheus Operator release whose ServiceMonitor,
// PodMonitor and PrometheusRule CRDs the dry runs install, so the chart's ServiceMonitor
// and PrometheusRule and config/samples/agent_podmonitor.yaml are checked against their
// real schemas. They come
// from example/prometheus-operator-crd of the
// github.com/prometheus-operator/prometheus-operator module, fetched and verified as
// cert-manager's are.
const prometheusOperatorVersion = "v0.85.0"

// crdModule is a Go module holding CRDs the chart's objects need: files in dir.
type crdModule struct {
	path, version, dir string
	files              []string
}

// crdModules are the third-party CRDs installed into env.
var crdModules = []crdModule{
	{"github.com/cert-manager/cert-manager", certManagerVersion, "deploy/crds",
		[]string{"cert-manager.io_issuers.yaml", "cert-manager.io_certificates.yaml"}},
	{"github.com/prometheus-operator/prometheus-operator", prometheusOperatorVersion, "example/prometheus-operator-crd",
		[]string{"monitoring.coreos.com_servicemonitors.yaml", "monitoring.coreos.com_podmonitors.yaml", "monitoring.coreos.com_prometheusrules.yaml"}},
}

// env is the package's control plane: the CRDs of config/crd/bases, cert-manager's and
// the Prometheus Operator's.
var env *testenv.Env

// kubeVersion is env's Kubernetes version, which renderings and lint check the chart's
// kubeVersion against as `helm install` would.
var kubeVersion *common.KubeVersion

func TestMain(m *testing.M) {
	code, err := runSuite(m)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		if code == 0 {
			code = 1
		}
	}
	os.Exit(code)
}

func runSuite(m *testing.M) (int, error) {
	var err error
	crds := make([][]string, len(crdModules))
	for i, mod := range crdModules {
		if crds[i], err = mod.crdPaths(); err != nil {
			return 1, err
		}
	}
	if env, err = testenv.Start(testenv.Options{}); err != nil {
		return 1, err
	}
	defer func() {
		if err := env.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, err)
		}
	}()
	dc, err := discovery.NewDiscoveryClientForConfig(env.Config)
	if err != nil {
		return 1, err
	}
	v, err := dc.ServerVersion()
	if err != nil {
		return 1, err
	}
	if kubeVersion, err = common.ParseKubeVersion(v.GitVersion); err != nil {
		return 1, err
	}
	for i, mod := range crdModules {
		if _, err := envtest.InstallCRDs(env.Config, envtest.CRDInstallOptions{Paths: crds[i], ErrorIfPathMissing: true}); err != nil {
			return 1, fmt.Errorf("install the CRDs of %s@%s: %w", mod.path, mod.version, err)
		}
	}
	return m.Run(), nil
}

// crdPaths downloads the module (once; the module cache keeps it) and returns the paths
// of its CRD files. It runs outside this module, so go.mod and go.sum are left alone.
func (m crdModule) crdPaths() ([]string, error) {
	gobin, err := exec.LookPath("go")
	if err != nil {
		return nil, fmt.Errorf("the go command is needed to fetch the CRDs of %s: %w", m.path, err)
	}
	dir, err := os.MkdirTemp("", "module-crds")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	mod := m.path + "@" + m.version
	cmd := exec.CommandContext(context.Background(), gobin, "mod", "download", "-json", mod)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=mod")
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("go mod download %s (fetches its CRDs through the Go module proxy): %w\n%s", mod, err, out)
	}
	var info struct{ Dir, Error string }
	if err := json.Unmarshal(out, &info); err != nil {
		return nil, fmt.Errorf("go mod download %s: %w", mod, err)
	}
	if info.Error != "" || info.Dir == "" {
		return nil, fmt.Errorf("go mod download %s: %s", mod, info.Error)
	}
	var paths []string
	for _, f := range m.files {
		paths = append(paths, filepath.Join(info.Dir, filepath.FromSlash(m.dir), f))
	}
	return paths, nil
}
