// Command manager is the oar-operator: it reconciles RulePacks, OperatorConfigs and
// Capabilities into one OAR bundle ConfigMap per Capability (see DESIGN.md). Replicas
// elect a leader for the reconcilers; health and readiness probes and a secured
// Prometheus metrics endpoint run on every replica.
package main

import (
	"crypto/tls"
	"flag"
	"fmt"
	"os"

	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	"sigs.k8s.io/controller-runtime/pkg/metrics/filters"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	rulesv1alpha1 "github.com/oar-operator/oar-operator/api/v1alpha1"
	"github.com/oar-operator/oar-operator/internal/controller"
)

func main() {
	if err := run(); err != nil {
		ctrl.Log.WithName("setup").Error(err, "manager stopped")
		os.Exit(1)
	}
}

// options are the manager's flags.
type options struct {
	metricsAddr   string
	metricsSecure bool
	probeAddr     string
	leaderElect   bool
	leaderElectID string
	leaderElectNS string
	enableHTTP2   bool
	zap           zap.Options
}

func parseFlags(args []string) (options, error) {
	var o options
	fs := flag.NewFlagSet("manager", flag.ContinueOnError)
	fs.StringVar(&o.metricsAddr, "metrics-bind-address", ":8443", "Address the metrics endpoint binds to; \"0\" disables it.")
	fs.BoolVar(&o.metricsSecure, "metrics-secure", true, "Serve metrics over HTTPS, authenticated and authorized through the API server.")
	fs.StringVar(&o.probeAddr, "health-probe-bind-address", ":8081", "Address the /healthz and /readyz probes bind to.")
	fs.BoolVar(&o.leaderElect, "leader-elect", false, "Elect a leader so only one replica reconciles at a time.")
	fs.StringVar(&o.leaderElectID, "leader-election-id", "oar-operator.rules.oar.dev", "Name of the leader-election Lease.")
	fs.StringVar(&o.leaderElectNS, "leader-election-namespace", "", "Namespace of the leader-election Lease (default: the pod's namespace).")
	fs.BoolVar(&o.enableHTTP2, "enable-http2", false, "Allow HTTP/2 on the metrics server (off by default: CVE-2023-44487, CVE-2023-39325).")
	o.zap.BindFlags(fs)
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	return o, nil
}

func run() error {
	o, err := parseFlags(os.Args[1:])
	if err != nil {
		return err
	}
	ctrl.SetLogger(zap.New(zap.UseFlagOptions(&o.zap)))

	scheme := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(scheme))
	utilruntime.Must(rulesv1alpha1.AddToScheme(scheme))

	var tlsOpts []func(*tls.Config)
	if !o.enableHTTP2 {
		tlsOpts = append(tlsOpts, func(c *tls.Config) { c.NextProtos = []string{"http/1.1"} })
	}
	metrics := metricsserver.Options{BindAddress: o.metricsAddr, SecureServing: o.metricsSecure, TLSOpts: tlsOpts}
	if o.metricsSecure {
		metrics.FilterProvider = filters.WithAuthenticationAndAuthorization
	}
	mgr, err := ctrl.NewManager(ctrl.GetConfigOrDie(), ctrl.Options{
		Scheme:                  scheme,
		Metrics:                 metrics,
		HealthProbeBindAddress:  o.probeAddr,
		LeaderElection:          o.leaderElect,
		LeaderElectionID:        o.leaderElectID,
		LeaderElectionNamespace: o.leaderElectNS,
		// The process exits right after it stops leading, so releasing the lease on the
		// way out lets the next leader start at once.
		LeaderElectionReleaseOnCancel: true,
	})
	if err != nil {
		return fmt.Errorf("create manager: %w", err)
	}
	if err := (&controller.BundleReconciler{
		Client:   mgr.GetClient(),
		Scheme:   mgr.GetScheme(),
		Recorder: mgr.GetEventRecorder("oar-operator"),
	}).SetupWithManager(mgr); err != nil {
		return fmt.Errorf("set up the bundle controller: %w", err)
	}
	if err := mgr.AddHealthzCheck("healthz", healthz.Ping); err != nil {
		return fmt.Errorf("add health check: %w", err)
	}
	if err := mgr.AddReadyzCheck("readyz", healthz.Ping); err != nil {
		return fmt.Errorf("add readiness check: %w", err)
	}
	ctrl.Log.WithName("setup").Info("starting manager")
	return mgr.Start(ctrl.SetupSignalHandler())
}
