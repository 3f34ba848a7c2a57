// Command manager is the oar-operator: it reconciles RulePacks, OperatorConfigs and
// Capabilities into one OAR bundle ConfigMap per Capability and serves the validating
// admission webhooks that refuse what the OAR engine would refuse.
// Replicas elect a leader for the reconcilers; the webhooks with their certificate
// rotation, health and readiness probes and a secured Prometheus metrics endpoint run on
// every replica.
package main

import (
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
	"sigs.k8s.io/controller-runtime/pkg/metrics/filters"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	rulesv1alpha1 "github.com/oar-operator/oar-operator/api/v1alpha1"
	"github.com/oar-operator/oar-operator/controllers"
	"github.com/oar-operator/oar-operator/internal/admission"
	"github.com/oar-operator/oar-operator/internal/inject"
	"github.com/oar-operator/oar-operator/internal/resource"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stderr))
}

// Exit codes, as oar-engine's.
const (
	exitOK    = 0
	exitFail  = 1
	exitUsage = 2
)

// errFlagsReported wraps an error of the flag package, which has written it and the
// usage to stderr already.
var errFlagsReported = errors.New("flags refused")

// run is the whole command: parse the flags, then serve until a signal or an error. A
// flag it refuses is written to stderr here, since no logger exists yet to report it:
// the manager must never exit without saying why.
func run(args []string, stderr io.Writer) int {
	o, err := parseFlags(args, stderr)
	switch {
	case errors.Is(err, flag.ErrHelp):
		return exitOK
	case errors.Is(err, errFlagsReported):
		return exitUsage
	case err != nil:
		fmt.Fprintf(stderr, "manager: %v\n", err)
		return exitUsage
	}
	if err := serve(o); err != nil {
		ctrl.Log.WithName("setup").Error(err, "manager stopped")
		return exitFail
	}
	return exitOK
}

// options are the manager's flags.
type options struct {
	metricsAddr    string
	metricsSecure  bool
	metricsCertDir string
	probeAddr      string
	leaderElect    bool
	leaderElectID  string
	leaderElectNS  string
	enableHTTP2    bool
	// concurrency is how many Capabilities the bundle controller reconciles at once.
	concurrency int
	// shutdownTimeout bounds how long a stopping manager waits for its reconciles and
	// webhook reviews in flight before it releases its lease and exits.
	shutdownTimeout time.Duration
	webhooks        webhookOptions
	zap             zap.Options
}

// webhookOptions are the flags of the admission webhooks.
type webhookOptions struct {
	enabled  bool
	port     int
	certMode string
	certs    admission.CertOptions
	injector injectorOptions
}

// injectorOptions are the flags of the engine injector (the mutating webhook for Pods).
type injectorOptions struct {
	enabled       bool
	configuration string
	sidecar       inject.Options
}

// defaultShutdownTimeout is --graceful-shutdown-timeout's default: below the 30 s grace
// period config/manager gives the pod, with room to release the lease afterwards.
// controller-runtime's own default (30 s) is as long as that grace period.
const defaultShutdownTimeout = 15 * time.Second

// The ways the webhooks' serving certificate is provided.
const (
	certSelfManaged = "self-managed"
	certExternal    = "external"
)

// parseFlags reads the manager's flags; usage and the flag package's own errors go to
// output.
func parseFlags(args []string, output io.Writer) (options, error) {
	var o options
	fs := flag.NewFlagSet("manager", flag.ContinueOnError)
	fs.SetOutput(output)
	fs.StringVar(&o.metricsAddr, "metrics-bind-address", ":8443", "Address the metrics endpoint binds to; \"0\" disables it.")
	fs.BoolVar(&o.metricsSecure, "metrics-secure", true, "Serve metrics over HTTPS, authenticated and authorized through the API server.")
	fs.StringVar(&o.metricsCertDir, "metrics-cert-dir", "", "Directory holding the metrics endpoint's serving certificate (tls.crt, tls.key), reloaded when it changes (cert-manager, or yours). Empty: a self-signed certificate generated at each start, which no scraper can verify.")
	fs.StringVar(&o.probeAddr, "health-probe-bind-address", ":8081", "Address the /healthz and /readyz probes bind to.")
	fs.BoolVar(&o.leaderElect, "leader-elect", false, "Elect a leader so only one replica reconciles at a time.")
	fs.StringVar(&o.leaderElectID, "leader-election-id", "oar-operator.rules.oar.dev", "Name of the leader-election Lease.")
	fs.StringVar(&o.leaderElectNS, "leader-election-namespace", "", "Namespace of the leader-election Lease (default: the pod's namespace).")
	fs.DurationVar(&o.shutdownTimeout, "graceful-shutdown-timeout", defaultShutdownTimeout, "How long the manager, once told to stop, waits for reconciles and webhook reviews in flight before it releases its leader lease and exits. Keep it below the pod's terminationGracePeriodSeconds less any preStop delay, or the kubelet kills the manager mid-shutdown.")
	fs.IntVar(&o.concurrency, "max-concurrent-reconciles", 2, "How many Capabilities' bundles are assembled at once, so that one slow to assemble (thousands of packs, or many refused at once) does not hold up the others. Each holds its Capability's packs in memory while it runs.")
	fs.BoolVar(&o.enableHTTP2, "enable-http2", false, "Allow HTTP/2 on the metrics and webhook servers (off by default: CVE-2023-44487, CVE-2023-39325).")
	w := &o.webhooks
	fs.BoolVar(&w.enabled, "enable-webhooks", true, "Serve the validating admission webhooks for RulePacks, Capabilities and OperatorConfigs.")
	fs.IntVar(&w.port, "webhook-port", 9443, "Port the admission webhooks serve on.")
	fs.StringVar(&w.certs.CertDir, "webhook-cert-dir", "/tmp/k8s-webhook-server/serving-certs", "Directory holding the webhooks' serving certificate (tls.crt, tls.key).")
	fs.StringVar(&w.certMode, "webhook-cert-mode", certSelfManaged, "How the serving certificate is provided: \""+certSelfManaged+"\" (generated, rotated and its CA injected into the webhook configuration by the manager, through the Secret mounted at --webhook-cert-dir) or \""+certExternal+"\" (mounted at --webhook-cert-dir by cert-manager or the user, who also injects the CA).")
	fs.StringVar(&w.certs.SecretName, "webhook-cert-secret", "oar-webhook-server-cert", "Self-managed certificates: the Secret holding them, mounted at --webhook-cert-dir.")
	fs.StringVar(&w.certs.ServiceName, "webhook-service", "oar-webhook-service", "Self-managed certificates: the webhook Service the certificate is issued for.")
	fs.StringVar(&w.certs.WebhookConfigurationName, "webhook-configuration", "oar-validating-webhook-configuration", "Self-managed certificates: the ValidatingWebhookConfiguration whose CA bundle is kept current.")
	fs.StringVar(&w.certs.Namespace, "webhook-namespace", os.Getenv("POD_NAMESPACE"), "Self-managed certificates: the namespace of the Secret and the Service (default: $POD_NAMESPACE).")
	in := &w.injector
	in.sidecar = inject.Defaults()
	fs.BoolVar(&in.enabled, "enable-injector", true, "Serve the mutating webhook that adds the oar-engine sidecar to pods labelled "+inject.CapabilityLabel+".")
	fs.StringVar(&in.configuration, "mutating-webhook-configuration", "oar-mutating-webhook-configuration", "Self-managed certificates: the injector's MutatingWebhookConfiguration whose CA bundle is kept current.")
	in.sidecar.RegisterFlags(fs, "injector-")
	o.zap.BindFlags(fs)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return o, err
		}
		return o, fmt.Errorf("%w: %w", errFlagsReported, err)
	}
	if o.concurrency < 1 {
		return o, fmt.Errorf("--max-concurrent-reconciles must be at least 1, not %d", o.concurrency)
	}
	if o.shutdownTimeout < 0 {
		return o, fmt.Errorf("--graceful-shutdown-timeout must not be negative (controller-runtime would wait forever, past any grace period), not %s", o.shutdownTimeout)
	}
	switch {
	case !w.enabled:
	case w.certMode != certSelfManaged && w.certMode != certExternal:
		return o, fmt.Errorf("--webhook-cert-mode must be %s or %s, not %q", certSelfManaged, certExternal, w.certMode)
	case w.certMode == certSelfManaged && w.certs.Namespace == "":
		return o, errors.New("self-managed webhook certificates need --webhook-namespace (or $POD_NAMESPACE)")
	}
	if err := in.sidecar.CheckFlags("injector-"); err != nil {
		return o, err
	}
	if in.enabled {
		if ns := w.certs.Namespace; ns != "" {
			in.sidecar.SkipNamespaces = append(in.sidecar.SkipNamespaces, ns)
		}
		w.certs.MutatingWebhookConfigurationName = in.configuration
	}
	return o, nil
}

// serve runs the manager with the options o until it is told to stop.
func serve(o options) error {
	ctrl.SetLogger(zap.New(zap.UseFlagOptions(&o.zap)))

	scheme := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(scheme))
	utilruntime.Must(rulesv1alpha1.AddToScheme(scheme))

	var tlsOpts []func(*tls.Config)
	if !o.enableHTTP2 {
		tlsOpts = append(tlsOpts, func(c *tls.Config) { c.NextProtos = []string{"http/1.1"} })
	}
	metrics, err := metricsOptions(o, tlsOpts)
	if err != nil {
		return err
	}
	var webhookServer webhook.Server
	if o.webhooks.enabled {
		webhookServer = webhook.NewServer(webhook.Options{Port: o.webhooks.port, CertDir: o.webhooks.certs.CertDir, TLSOpts: tlsOpts})
	}
	mgr, err := ctrl.NewManager(ctrl.GetConfigOrDie(), managerOptions(o, scheme, metrics, webhookServer))
	if err != nil {
		return fmt.Errorf("create manager: %w", err)
	}
	if err := (&controllers.BundleReconciler{
		Client:      mgr.GetClient(),
		APIReader:   mgr.GetAPIReader(),
		Scheme:      mgr.GetScheme(),
		Recorder:    mgr.GetEventRecorder("oar-operator"),
		Concurrency: o.concurrency,
	}).SetupWithManager(mgr); err != nil {
		return fmt.Errorf("set up the bundle controller: %w", err)
	}
	if err := ctrlmetrics.Registry.Register(controllers.NewStateCollector(mgr.GetCache())); err != nil {
		return fmt.Errorf("register the state metrics: %w", err)
	}
	if o.webhooks.enabled {
		if err := setupWebhooks(mgr, o.webhooks); err != nil {
			return err
		}
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

// managerOptions are the manager's controller-runtime options.
func managerOptions(o options, scheme *runtime.Scheme, metrics metricsserver.Options, webhookServer webhook.Server) ctrl.Options {
	return ctrl.Options{
		Scheme:                  scheme,
		Cache:                   resource.CacheOptions(),
		Metrics:                 metrics,
		WebhookServer:           webhookServer,
		HealthProbeBindAddress:  o.probeAddr,
		LeaderElection:          o.leaderElect,
		LeaderElectionID:        o.leaderElectID,
		LeaderElectionNamespace: o.leaderElectNS,
		// The process exits right after it stops leading, so releasing the lease on the
		// way out lets the next leader start at once.
		LeaderElectionReleaseOnCancel: true,
		GracefulShutdownTimeout:       &o.shutdownTimeout,
	}
}

// metricsOptions configure the metrics endpoint. With --metrics-cert-dir the certificate
// must be there at start: controller-runtime would otherwise fall back silently to a
// self-signed one, and every verifying scrape would fail.
func metricsOptions(o options, tlsOpts []func(*tls.Config)) (metricsserver.Options, error) {
	m := metricsserver.Options{BindAddress: o.metricsAddr, SecureServing: o.metricsSecure, TLSOpts: tlsOpts}
	if o.metricsSecure {
		m.FilterProvider = filters.WithAuthenticationAndAuthorization
	}
	if o.metricsCertDir != "" && o.metricsAddr != "0" {
		for _, f := range []string{"tls.crt", "tls.key"} {
			if _, err := os.Stat(filepath.Join(o.metricsCertDir, f)); err != nil {
				return m, fmt.Errorf("--metrics-cert-dir: %w", err)
			}
		}
		m.CertDir = o.metricsCertDir
	}
	return m, nil
}

// setupWebhooks serves the admission webhooks: at once with external certificates,
// once cert-controller has issued and injected them otherwise.
func setupWebhooks(mgr ctrl.Manager, o webhookOptions) error {
	var ready <-chan struct{}
	if o.certMode == certSelfManaged {
		var err error
		if ready, err = admission.AddCertRotator(mgr, o.certs); err != nil {
			return err
		}
	}
	if err := admission.Install(mgr, ready); err != nil {
		return fmt.Errorf("set up the admission webhooks: %w", err)
	}
	if o.injector.enabled {
		if err := admission.InstallInjector(mgr, ready, o.injector.sidecar); err != nil {
			return fmt.Errorf("set up the engine injector: %w", err)
		}
	}
	return nil
}
