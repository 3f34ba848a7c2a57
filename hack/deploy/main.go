// Command deploy is `make deploy` and `make undeploy`: it installs or upgrades the
// oar-operator chart (charts/oar-operator) in the cluster $KUBECONFIG names, or
// uninstalls it, with the Helm library (internal/chart), so neither helm nor kubectl
// needs to be installed. It refuses to run without $KUBECONFIG, so it never acts on
// whatever cluster a default configuration happens to point at.
//
//	KUBECONFIG=~/.kube/kind go run ./hack/deploy --image registry.example/oar-operator:v0.1.0
//	KUBECONFIG=~/.kube/kind go run ./hack/deploy --uninstall
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"time"

	"helm.sh/helm/v4/pkg/chart/v2/loader"
	"helm.sh/helm/v4/pkg/cli/values"
	"helm.sh/helm/v4/pkg/getter"
	"helm.sh/helm/v4/pkg/strvals"
	"k8s.io/cli-runtime/pkg/genericclioptions"

	"github.com/oar-operator/oar-operator/internal/chart"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	if errors.Is(err, flag.ErrHelp) {
		return
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "deploy:", err)
		os.Exit(1)
	}
}

// flags are the command line.
type flags struct {
	chartDir, namespace, release, image, kubeContext string
	valueFiles, sets                                 []string
	wait                                             time.Duration
	uninstall, debug                                 bool
}

// repeated is a flag that may be given several times.
type repeated []string

func (r *repeated) String() string     { return strings.Join(*r, ",") }
func (r *repeated) Set(v string) error { *r = append(*r, v); return nil }

func parse(args []string, stderr io.Writer) (flags, error) {
	var f flags
	fs := flag.NewFlagSet("deploy", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&f.chartDir, "chart", "charts/oar-operator", "The chart's directory.")
	fs.StringVar(&f.namespace, "namespace", "oar-system", "Namespace of the release (created when missing).")
	fs.StringVar(&f.release, "release", "oar-operator", "Helm release name.")
	fs.StringVar(&f.image, "image", "", "Manager image, REPOSITORY[:TAG] or REPOSITORY@sha256:DIGEST (sets image.repository and image.tag or image.digest); empty keeps the chart's.")
	fs.StringVar(&f.kubeContext, "context", "", "Kubeconfig context; empty for the current one.")
	fs.Var((*repeated)(&f.valueFiles), "values", "A values file (repeatable; later files win).")
	fs.Var((*repeated)(&f.sets), "set", "KEY=VALUE as with helm --set (repeatable; wins over --values and --image).")
	fs.DurationVar(&f.wait, "wait", 5*time.Minute, "How long to wait for the objects to be ready (or gone with --uninstall); 0 does not wait.")
	fs.BoolVar(&f.uninstall, "uninstall", false, "Uninstall the release instead (the CRDs and the custom resources stay).")
	fs.BoolVar(&f.debug, "debug", false, "Print Helm's debug log.")
	if err := fs.Parse(args); err != nil {
		return f, err
	}
	if fs.NArg() > 0 {
		return f, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	return f, nil
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	f, err := parse(args, stderr)
	if err != nil {
		return err
	}
	if os.Getenv("KUBECONFIG") == "" {
		return errors.New("KUBECONFIG is not set: point it at the kubeconfig of the cluster to deploy to " +
			"(this command never falls back to a default kubeconfig)")
	}
	cf := genericclioptions.NewConfigFlags(true)
	cf.Namespace, cf.Context = &f.namespace, &f.kubeContext
	raw, err := cf.ToRawKubeConfigLoader().RawConfig()
	if err != nil {
		return fmt.Errorf("kubeconfig %s: %w", os.Getenv("KUBECONFIG"), err)
	}
	rc, err := cf.ToRESTConfig()
	if err != nil {
		return fmt.Errorf("kubeconfig %s: %w", os.Getenv("KUBECONFIG"), err)
	}
	kubeContext := f.kubeContext
	if kubeContext == "" {
		kubeContext = raw.CurrentContext
	}

	level := slog.LevelWarn
	if f.debug {
		level = slog.LevelDebug
	}
	o := chart.Options{
		ChartDir: f.chartDir, Getter: cf, Namespace: f.namespace, Release: f.release, Wait: f.wait,
		Logger: slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level})),
	}

	if f.uninstall {
		fmt.Fprintf(stdout, "uninstalling release %s from namespace %s of %s (context %q)\n", f.release, f.namespace, rc.Host, kubeContext)
		removed, err := chart.Undeploy(ctx, o)
		if err != nil {
			return err
		}
		if !removed {
			fmt.Fprintf(stdout, "release %s is not installed in namespace %s; nothing to do\n", f.release, f.namespace)
			return nil
		}
		fmt.Fprintf(stdout, "release %s uninstalled; the CRDs and every RulePack, Capability and OperatorConfig remain "+
			"(deleting the CRDs of %s/crds deletes those too)\n", f.release, f.chartDir)
		return nil
	}

	if o.Values, err = mergeValues(f); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "deploying release %s to namespace %s of %s (context %q)\n", f.release, f.namespace, rc.Host, kubeContext)
	rel, err := chart.Deploy(ctx, o)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "release %s revision %d: %s\n\n%s", rel.Name, rel.Version, rel.Info.Status, rel.Info.Notes)
	return nil
}

// mergeValues merges the values files, then the image, then the --set flags, each
// winning over the one before, as helm's -f and --set do.
func mergeValues(f flags) (map[string]any, error) {
	vals, err := (&values.Options{ValueFiles: f.valueFiles}).MergeValues(getter.Getters())
	if err != nil {
		return nil, err
	}
	if f.image != "" {
		img, err := imageValues(f.image)
		if err != nil {
			return nil, err
		}
		vals = loader.MergeMaps(vals, map[string]any{"image": img})
	}
	for _, s := range f.sets {
		if err := strvals.ParseInto(s, vals); err != nil {
			return nil, fmt.Errorf("--set %s: %w", s, err)
		}
	}
	return vals, nil
}

// imageValues splits an image reference into the chart's image values: repository and
// tag, or repository and digest. A reference without either gets Docker's implicit
// "latest".
func imageValues(ref string) (map[string]any, error) {
	if repo, digest, ok := strings.Cut(ref, "@"); ok {
		if repo == "" || digest == "" {
			return nil, fmt.Errorf("--image %q: want REPOSITORY@sha256:DIGEST", ref)
		}
		return map[string]any{"repository": repo, "digest": digest, "tag": ""}, nil
	}
	repo, tag := ref, "latest"
	// A colon after the last slash separates the tag; one before it is a registry port.
	if i := strings.LastIndex(ref, ":"); i > strings.LastIndex(ref, "/") {
		repo, tag = ref[:i], ref[i+1:]
	}
	if repo == "" || tag == "" {
		return nil, fmt.Errorf("--image %q: want REPOSITORY[:TAG]", ref)
	}
	return map[string]any{"repository": repo, "tag": tag, "digest": ""}, nil
}
