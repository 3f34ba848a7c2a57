// Command demo is `make run`: the whole operator on a local control plane built from Go
// modules (no cluster needed). It starts etcd and kube-apiserver, installs the CRDs and
// the admission webhook, runs the manager (bin/manager), applies the samples of
// config/samples (a Capability, a RulePack, an OperatorConfig, and a broken RulePack the
// webhook refuses), shows their status the way `kubectl get oar` does, then serves the
// published bundle with the sidecar (bin/oar-engine) and prints the decisions of a few
// occurrences. It keeps running until interrupted and says how to point kubectl at it;
// the binaries' logs are in tmp/demo.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/go-logr/logr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/oar-operator/oar-operator/internal/testenv"
)

// verbose copies the manager's and oar-engine's logs to stderr.
var verbose bool

func main() {
	flag.BoolVar(&verbose, "v", false, "also show the manager's and oar-engine's logs on stderr")
	exitAfter := flag.Bool("exit", false, "exit after the tour instead of running until interrupted")
	flag.Parse()
	ctrl.SetLogger(logr.Discard())
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Stdout, !*exitAfter); err != nil && !errors.Is(err, context.Canceled) {
		fmt.Fprintln(os.Stderr, "demo:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, out io.Writer, wait bool) error {
	step(out, "Starting a local control plane (etcd and kube-apiserver from bin/)")
	env, err := testenv.Start(testenv.Options{Webhooks: true})
	if err != nil {
		return err
	}
	defer func() {
		step(out, "Stopping the control plane")
		if err := env.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "demo: stopping the control plane:", err)
		}
	}()
	dir := filepath.Join(env.Root, "tmp", "demo")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	kubeconfig, err := writeKubeconfig(env, dir)
	if err != nil {
		return err
	}
	// The manager and the sidecar stop before the control plane does.
	t := &tour{env: env, out: out, dir: dir, kubeconfig: kubeconfig}
	defer t.stop()
	if err := t.run(ctx); err != nil {
		return err
	}
	if !wait {
		return nil
	}
	fmt.Fprintf(out, "\nThe operator and oar-engine keep running. Point kubectl at them:\n\n  export KUBECONFIG=%s\n  kubectl get oar -A\n  kubectl explain rulepack.spec\n\n", kubeconfig)
	fmt.Fprintln(out, "Press Ctrl-C to stop.")
	<-ctx.Done()
	return nil
}

// writeKubeconfig writes an admin kubeconfig for the local control plane into dir.
func writeKubeconfig(env *testenv.Env, dir string) (string, error) {
	user, err := env.Environment.AddUser(envtest.User{Name: "demo-admin", Groups: []string{"system:masters"}}, nil)
	if err != nil {
		return "", fmt.Errorf("create a kubeconfig user: %w", err)
	}
	data, err := user.KubeConfig()
	if err != nil {
		return "", fmt.Errorf("render the kubeconfig: %w", err)
	}
	path := filepath.Join(dir, "kubeconfig")
	return path, os.WriteFile(path, data, 0o600)
}

func step(out io.Writer, format string, args ...any) {
	fmt.Fprintf(out, "\n==> %s %s\n", time.Now().Format("15:04:05"), fmt.Sprintf(format, args...))
}
