package testenv

import (
	"context"
	"fmt"
	"os"

	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	"github.com/oar-operator/oar-operator/internal/resource"
)

// Manager is a controller-runtime manager running in the test process on an Env.
type Manager struct {
	ctrl.Manager
	stop func()
}

// StartManager builds a manager the way the envtest suites run the operator: the
// operator's cache (resource.CacheOptions), no metrics or probe listeners, the webhook
// server where envtest told the API server to call it (when the environment installed
// webhooks), and controller names that may be registered again, so a test can stop the
// manager and start another. setup adds the controllers and webhooks; the manager then
// runs until Stop.
func (e *Env) StartManager(setup func(ctrl.Manager) error) (*Manager, error) {
	opts := ctrl.Options{
		Scheme:                 e.Scheme,
		Cache:                  resource.CacheOptions(),
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		Controller:             config.Controller{SkipNameValidation: ptr.To(true)},
	}
	if wio := &e.Environment.WebhookInstallOptions; len(wio.Paths) > 0 {
		opts.WebhookServer = webhook.NewServer(webhook.Options{
			Host: wio.LocalServingHost, Port: wio.LocalServingPort, CertDir: wio.LocalServingCertDir,
		})
	}
	mgr, err := ctrl.NewManager(e.Config, opts)
	if err != nil {
		return nil, fmt.Errorf("testenv: create the manager: %w", err)
	}
	if err := setup(mgr); err != nil {
		return nil, fmt.Errorf("testenv: set up the manager: %w", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := mgr.Start(ctx); err != nil {
			fmt.Fprintln(os.Stderr, "manager:", err)
		}
	}()
	return &Manager{Manager: mgr, stop: func() { cancel(); <-done }}, nil
}

// Stop stops the manager and waits until it has.
func (m *Manager) Stop() { m.stop() }
