package main

import (
	"context"
	"fmt"
	"net/http"
	"time"

	ctrl "sigs.k8s.io/controller-runtime"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	"github.com/oar-operator/oar-operator/internal/admission"
	"github.com/oar-operator/oar-operator/internal/controller"
	"github.com/oar-operator/oar-operator/internal/testenv"
)

// startManager runs the operator's manager in this process: the bundle controller and
// the validating webhooks, served where the local API server was told to call them.
func startManager(ctx context.Context, env *testenv.Env) error {
	wio := &env.Environment.WebhookInstallOptions
	mgr, err := ctrl.NewManager(env.Config, ctrl.Options{
		Scheme:                 env.Scheme,
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		WebhookServer: webhook.NewServer(webhook.Options{
			Host: wio.LocalServingHost, Port: wio.LocalServingPort, CertDir: wio.LocalServingCertDir,
		}),
	})
	if err != nil {
		return fmt.Errorf("create the manager: %w", err)
	}
	if err := (&controller.BundleReconciler{
		Client: mgr.GetClient(), Scheme: mgr.GetScheme(), Recorder: mgr.GetEventRecorder("oar-operator"),
	}).SetupWithManager(mgr); err != nil {
		return fmt.Errorf("set up the bundle controller: %w", err)
	}
	if err := admission.Install(mgr, nil); err != nil {
		return err
	}
	go func() {
		if err := mgr.Start(ctx); err != nil {
			fmt.Println("demo: manager:", err)
		}
	}()
	// Objects applied before the webhook serves would be refused by the API server.
	deadline := time.Now().Add(time.Minute)
	for {
		req, _ := http.NewRequest(http.MethodGet, "/", nil)
		if mgr.GetWebhookServer().StartedChecker()(req) == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the webhook server did not start")
		}
		time.Sleep(100 * time.Millisecond)
	}
}
