// Package chart installs, upgrades and uninstalls the oar-operator Helm chart
// (charts/oar-operator) with the Helm library, for `make deploy` and `make undeploy`
// (hack/deploy), so that no helm or kubectl binary is needed. Its tests render the chart
// for the main value sets, check it against the generated config/ manifests and apply
// every object to a real API server.
package chart

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"time"

	"helm.sh/helm/v4/pkg/action"
	helmchart "helm.sh/helm/v4/pkg/chart/v2"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	"helm.sh/helm/v4/pkg/kube"
	rcommon "helm.sh/helm/v4/pkg/release/common"
	release "helm.sh/helm/v4/pkg/release/v1"
	"helm.sh/helm/v4/pkg/storage/driver"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"
)

// crdFieldManager owns the fields of the CRDs Deploy applies.
const crdFieldManager = "oar-deploy"

// Options say which release Deploy and Undeploy act on, and where.
type Options struct {
	// ChartDir is the chart's directory, charts/oar-operator.
	ChartDir string
	// Getter reaches the cluster: a kubeconfig, never a default one (see hack/deploy).
	Getter genericclioptions.RESTClientGetter
	// Namespace is the release's namespace, created when missing.
	Namespace string
	// Release is the Helm release name.
	Release string
	// Values override the chart's values.yaml.
	Values map[string]any
	// Wait, when positive, waits that long for every object to be ready (the Deployment
	// rolled out, a cert-manager Certificate issued); zero returns once they are applied.
	Wait time.Duration
	// Logger receives Helm's log; nil discards it.
	Logger *slog.Logger
}

// Deploy applies the chart's CRDs, then installs the release or, when it exists,
// upgrades it, and returns it (its Version is the revision, its Info.Notes NOTES.txt).
//
// The CRDs are applied here, server-side, rather than by Helm, because Helm installs a
// chart's crds/ on the first install only and never upgrades them: an upgraded manager
// would otherwise run against the previous release's CRDs.
func Deploy(ctx context.Context, o Options) (*release.Release, error) {
	ch, err := loader.Load(o.ChartDir)
	if err != nil {
		return nil, fmt.Errorf("load chart %s: %w", o.ChartDir, err)
	}
	cfg, err := o.actionConfig()
	if err != nil {
		return nil, err
	}
	if err := applyCRDs(ctx, o.Getter, ch); err != nil {
		return nil, err
	}

	strategy, timeout := kube.HookOnlyStrategy, 5*time.Minute
	if o.Wait > 0 {
		strategy, timeout = kube.StatusWatcherStrategy, o.Wait
	}
	installed, err := releaseInstalled(cfg, o.Release)
	if err != nil {
		return nil, err
	}
	var rel any
	if !installed {
		in := action.NewInstall(cfg)
		in.ReleaseName, in.Namespace, in.CreateNamespace = o.Release, o.Namespace, true
		in.SkipCRDs, in.WaitStrategy, in.Timeout = true, strategy, timeout
		// A release uninstalled with its history kept is installed again under its name.
		in.Replace = true
		rel, err = in.RunWithContext(ctx, ch, o.Values)
	} else {
		up := action.NewUpgrade(cfg)
		up.Namespace, up.SkipCRDs, up.WaitStrategy, up.Timeout = o.Namespace, true, strategy, timeout
		rel, err = up.RunWithContext(ctx, o.Release, ch, o.Values)
	}
	if err != nil {
		return nil, err
	}
	r, ok := rel.(*release.Release)
	if !ok {
		return nil, fmt.Errorf("helm returned a release of type %T", rel)
	}
	return r, nil
}

// Undeploy uninstalls the release and waits up to Wait for its objects to be gone. It
// leaves the CRDs, and with them every RulePack, Capability and OperatorConfig. It
// reports whether there was a release to uninstall.
func Undeploy(ctx context.Context, o Options) (bool, error) {
	cfg, err := o.actionConfig()
	if err != nil {
		return false, err
	}
	installed, err := releaseInstalled(cfg, o.Release)
	if err != nil || !installed {
		return false, err
	}
	un := action.NewUninstall(cfg)
	un.WaitStrategy, un.Timeout = kube.HookOnlyStrategy, 5*time.Minute
	if o.Wait > 0 {
		un.WaitStrategy, un.Timeout = kube.StatusWatcherStrategy, o.Wait
	}
	_, err = un.Run(o.Release)
	return err == nil, err
}

// actionConfig is Helm's configuration for the cluster of o.Getter, keeping releases in
// Secrets of o.Namespace as the helm CLI does, so `helm list` and `helm upgrade` see them.
func (o Options) actionConfig() (*action.Configuration, error) {
	if o.Getter == nil || o.Namespace == "" || o.Release == "" || o.ChartDir == "" {
		return nil, errors.New("chart: Options need Getter, Namespace, Release and ChartDir")
	}
	logger := o.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	cfg := action.NewConfiguration(action.ConfigurationSetLogger(logger.Handler()))
	if err := cfg.Init(o.Getter, o.Namespace, "secret"); err != nil {
		return nil, fmt.Errorf("helm configuration: %w", err)
	}
	return cfg, nil
}

// releaseInstalled reports whether the release exists and its last revision is not
// uninstalled (history kept): what `helm upgrade --install` checks.
func releaseInstalled(cfg *action.Configuration, name string) (bool, error) {
	h := action.NewHistory(cfg)
	h.Max = 1
	revs, err := h.Run(name)
	if errors.Is(err, driver.ErrReleaseNotFound) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("release %s history: %w", name, err)
	}
	last, ok := revs[len(revs)-1].(*release.Release)
	if !ok {
		return false, fmt.Errorf("helm returned a release of type %T", revs[len(revs)-1])
	}
	return last.Info.Status != rcommon.StatusUninstalled, nil
}

// applyCRDs applies every CRD of the chart's crds/ with server-side apply, taking over
// the fields it sets, and waits until the API server serves them.
func applyCRDs(ctx context.Context, getter genericclioptions.RESTClientGetter, ch *helmchart.Chart) error {
	rc, err := getter.ToRESTConfig()
	if err != nil {
		return err
	}
	scheme := runtime.NewScheme()
	if err := apiextensionsv1.AddToScheme(scheme); err != nil {
		return err
	}
	c, err := client.New(rc, client.Options{Scheme: scheme})
	if err != nil {
		return fmt.Errorf("client: %w", err)
	}
	var names []string
	for _, crd := range ch.CRDObjects() {
		objs, err := decodeDocuments(crd.File.Data)
		if err != nil {
			return fmt.Errorf("%s: %w", crd.Filename, err)
		}
		for _, u := range objs {
			if u.GetKind() != "CustomResourceDefinition" {
				return fmt.Errorf("%s: %s %s is not a CustomResourceDefinition", crd.Filename, u.GetKind(), u.GetName())
			}
			err := c.Apply(ctx, client.ApplyConfigurationFromUnstructured(u), client.FieldOwner(crdFieldManager), client.ForceOwnership)
			if err != nil {
				return fmt.Errorf("apply CRD %s: %w", u.GetName(), err)
			}
			names = append(names, u.GetName())
		}
	}
	for _, name := range names {
		err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
			var crd apiextensionsv1.CustomResourceDefinition
			if err := c.Get(ctx, client.ObjectKey{Name: name}, &crd); err != nil {
				return false, err
			}
			for _, cond := range crd.Status.Conditions {
				if cond.Type == apiextensionsv1.Established && cond.Status == apiextensionsv1.ConditionTrue {
					return true, nil
				}
			}
			return false, nil
		})
		if err != nil {
			return fmt.Errorf("CRD %s not established: %w", name, err)
		}
	}
	return nil
}

// decodeDocuments splits a multi-document YAML stream into objects, skipping empty
// documents.
func decodeDocuments(data []byte) ([]*unstructured.Unstructured, error) {
	var objs []*unstructured.Unstructured
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	for {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			return objs, nil
		}
		if err != nil {
			return nil, err
		}
		var m map[string]any
		if err := yaml.Unmarshal(doc, &m); err != nil {
			return nil, err
		}
		if len(m) > 0 {
			objs = append(objs, &unstructured.Unstructured{Object: m})
		}
	}
}
