package main

import (
	"context"
	"fmt"
	"net"
	"strconv"
)

// startManager runs the operator's manager, bin/manager, on the local control plane the
// way a cluster runs it, except for the certificate: the API server was told to call the
// webhooks on loopback with envtest's serving certificate, so the manager serves that
// one (--webhook-cert-mode=external, as with cert-manager). Leader election is on, as in
// the chart.
func (t *tour) startManager(ctx context.Context) (*process, error) {
	wio := &t.env.Environment.WebhookInstallOptions
	probePort, err := freePort()
	if err != nil {
		return nil, err
	}
	p, err := start(ctx, t.env.Root, t.dir, "manager", []string{"KUBECONFIG=" + t.kubeconfig},
		"--leader-elect",
		"--leader-election-namespace=default",
		"--metrics-bind-address=0",
		"--health-probe-bind-address=127.0.0.1:"+strconv.Itoa(probePort),
		"--webhook-cert-mode=external",
		"--webhook-port="+strconv.Itoa(wio.LocalServingPort),
		"--webhook-cert-dir="+wio.LocalServingCertDir,
		"--zap-encoder=console",
	)
	if err != nil {
		return nil, err
	}
	// Objects applied before the webhook serves would be refused by the API server.
	addr := net.JoinHostPort(wio.LocalServingHost, strconv.Itoa(wio.LocalServingPort))
	if err := p.waitFor(ctx, "serving the webhooks", func() bool { return tlsServes(addr, wio.LocalServingCAData) }); err != nil {
		p.stop()
		return nil, err
	}
	probes := fmt.Sprintf("http://127.0.0.1:%d/readyz", probePort)
	if err := p.waitFor(ctx, "ready", func() bool { return httpOK(probes) }); err != nil {
		p.stop()
		return nil, err
	}
	return p, nil
}
