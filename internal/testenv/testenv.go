// Package testenv starts a real control plane for the envtest suites: etcd and
// kube-apiserver built from Go modules into the checkout's bin/ by hack/tools (`make
// envtest-binaries`), run by controller-runtime's envtest, with the CustomResourceDefinitions
// of config/crd/bases installed.
//
// A suite starts one environment per package, in TestMain (start-up takes seconds and
// the processes hundreds of megabytes), and stops it when its tests are done:
//
//	var env *testenv.Env
//
//	func TestMain(m *testing.M) {
//		var err error
//		if env, err = testenv.Start(testenv.Options{}); err != nil {
//			fmt.Fprintln(os.Stderr, err)
//			os.Exit(1)
//		}
//		code := m.Run()
//		if err := env.Stop(); err != nil {
//			fmt.Fprintln(os.Stderr, err)
//		}
//		os.Exit(code)
//	}
//
// The binaries are looked up as envtest does: $TEST_ASSET_KUBE_APISERVER and
// $TEST_ASSET_ETCD, then $KUBEBUILDER_ASSETS, then the checkout's bin/.
package testenv

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	rulesv1alpha1 "github.com/oar-operator/oar-operator/api/v1alpha1"
)

// modulePath identifies the checkout's root go.mod.
const modulePath = "github.com/oar-operator/oar-operator"

// Options adjusts the environment. The zero value installs the CRDs and nothing else.
type Options struct {
	// Scheme for the client; default: client-go's built-in types, apiextensions/v1 and
	// rules.oar.dev/v1alpha1.
	Scheme *runtime.Scheme
	// Webhooks installs the webhook configurations of config/webhook; the suite then
	// serves them from Env.Environment.WebhookInstallOptions (LocalServingHost,
	// LocalServingPort, LocalServingCertDir).
	Webhooks bool
}

// Env is a running control plane.
type Env struct {
	// Config reaches the API server as a cluster admin.
	Config *rest.Config
	// Client is a client for Config and Scheme.
	Client client.Client
	// Scheme holds the types Client knows.
	Scheme *runtime.Scheme
	// Environment is the underlying envtest environment (webhook install options,
	// control plane handles).
	Environment *envtest.Environment
	// Root is the checkout's root directory.
	Root string
}

// Start starts etcd and kube-apiserver and installs the CRDs. When the binaries are
// missing it says to run `make envtest-binaries`. The caller stops the environment with
// Env.Stop, also after a failed test.
func Start(opts Options) (*Env, error) {
	root, err := RepoRoot()
	if err != nil {
		return nil, err
	}
	bin := filepath.Join(root, "bin")
	if err := checkBinaries(bin); err != nil {
		return nil, err
	}
	scheme := opts.Scheme
	if scheme == nil {
		if scheme, err = NewScheme(); err != nil {
			return nil, err
		}
	}

	te := &envtest.Environment{
		Scheme:                scheme,
		CRDDirectoryPaths:     []string{filepath.Join(root, "config", "crd", "bases")},
		ErrorIfCRDPathMissing: true,
		BinaryAssetsDirectory: bin, // $KUBEBUILDER_ASSETS and $TEST_ASSET_* override it
	}
	if opts.Webhooks {
		te.WebhookInstallOptions = envtest.WebhookInstallOptions{
			Paths: []string{filepath.Join(root, "config", "webhook")},
		}
	}
	// A shared two-core machine can be slow to start an API server; the environment
	// variables still win when set.
	if os.Getenv("KUBEBUILDER_CONTROLPLANE_START_TIMEOUT") == "" {
		te.ControlPlaneStartTimeout = 90 * time.Second
	}
	if os.Getenv("KUBEBUILDER_CONTROLPLANE_STOP_TIMEOUT") == "" {
		te.ControlPlaneStopTimeout = 30 * time.Second
	}
	api := te.ControlPlane.GetAPIServer().Configure()
	api.Set("advertise-address", "127.0.0.1") // works without a default route too
	api.Set("endpoint-reconciler-type", "none")

	cfg, err := te.Start()
	if err != nil {
		// Start may have left etcd or the API server running.
		return nil, errors.Join(fmt.Errorf("testenv: starting the control plane: %w", err), te.Stop())
	}
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return nil, errors.Join(fmt.Errorf("testenv: client: %w", err), te.Stop())
	}
	return &Env{Config: cfg, Client: c, Scheme: scheme, Environment: te, Root: root}, nil
}

// Stop stops the API server and etcd.
func (e *Env) Stop() error {
	if e == nil || e.Environment == nil {
		return nil
	}
	return e.Environment.Stop()
}

// NewScheme returns a scheme with client-go's built-in types, apiextensions/v1 (to read
// CRDs) and rules.oar.dev/v1alpha1.
func NewScheme() (*runtime.Scheme, error) {
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{
		clientgoscheme.AddToScheme, apiextensionsv1.AddToScheme, rulesv1alpha1.AddToScheme,
	} {
		if err := add(s); err != nil {
			return nil, fmt.Errorf("testenv: scheme: %w", err)
		}
	}
	return s, nil
}

// RepoRoot returns the checkout's root: the nearest directory, from the working
// directory up, whose go.mod declares this module.
func RepoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for d := dir; ; d = filepath.Dir(d) {
		if mod, err := os.ReadFile(filepath.Join(d, "go.mod")); err == nil &&
			bytes.HasPrefix(mod, []byte("module "+modulePath+"\n")) {
			return d, nil
		}
		if filepath.Dir(d) == d {
			return "", fmt.Errorf("testenv: no go.mod of %s above %s", modulePath, dir)
		}
	}
}

// checkBinaries reports missing control-plane binaries, resolved as envtest resolves
// them, with the command that builds them.
func checkBinaries(bin string) error {
	var missing []string
	for _, b := range []struct{ name, env string }{
		{"kube-apiserver", "TEST_ASSET_KUBE_APISERVER"},
		{"etcd", "TEST_ASSET_ETCD"},
	} {
		path := filepath.Join(bin, b.name)
		if p, ok := os.LookupEnv(b.env); ok {
			path = p
		} else if dir, ok := os.LookupEnv("KUBEBUILDER_ASSETS"); ok {
			path = filepath.Join(dir, b.name)
		}
		if st, err := os.Stat(path); err != nil || st.IsDir() {
			missing = append(missing, path)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("testenv: control-plane binaries not found: %v; "+
			"run `make envtest-binaries` to build etcd and kube-apiserver into bin/ "+
			"(or point KUBEBUILDER_ASSETS at a directory holding them)", missing)
	}
	return nil
}
