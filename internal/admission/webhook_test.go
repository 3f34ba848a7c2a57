package admission

import (
	"context"
	"testing"
	"time"
)

// TestAfterReady: the webhooks are registered once the certificate is ready, on every
// replica, and not at all when the manager stops first.
func TestAfterReady(t *testing.T) {
	ready, ran := make(chan struct{}), make(chan struct{})
	a := &afterReady{ready: ready, run: func(context.Context) error { close(ran); return nil }}
	if a.NeedLeaderElection() {
		t.Error("registration waits for leader election; every replica serves the webhooks")
	}
	done := make(chan error, 1)
	go func() { done <- a.Start(context.Background()) }()
	select {
	case <-ran:
		t.Fatal("registered before the certificate was ready")
	case <-time.After(50 * time.Millisecond):
	}
	close(ready)
	<-ran
	if err := <-done; err != nil {
		t.Fatal(err)
	}

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	never := &afterReady{ready: make(chan struct{}), run: func(context.Context) error {
		t.Error("registered after the manager stopped")
		return nil
	}}
	if err := never.Start(ctx); err != nil {
		t.Fatal(err)
	}
}

// TestServingCheckBeforeRegistration: the readiness check fails while the webhooks wait
// for their certificate (without asking the manager for its webhook server, which would
// start it).
func TestServingCheckBeforeRegistration(t *testing.T) {
	if err := servingCheck(nil, make(chan struct{}))(nil); err == nil {
		t.Fatal("ready before the webhooks are registered")
	}
}
