// Package sidecartest serves an engine sidecar's whole server (Run) on a loopback port
// for tests, so each test that needs a running sidecar does not start and stop one its
// own way. It names the sidecar by its Run method rather than importing package
// sidecar, so the sidecar's own tests can use it without an import cycle.
package sidecartest

import (
	"context"
	"net"
	"sync"
	"sync/atomic"
	"testing"
)

// Runner is what Serve runs: a *sidecar.Sidecar.
type Runner interface {
	Run(ctx context.Context, api, probes net.Listener) error
}

// Serve runs r on a loopback port, with no probe listener, and returns its base URL
// (http://127.0.0.1:port) and stop, which ends Run's context and returns Run's error.
// stop may be called more than once, from any goroutine, and before the test ends (a
// replica stopped mid-test); each call returns the same error. When the test ends, the
// sidecar is stopped and waited for, and Run's error fails the test if it never called
// stop.
func Serve(t testing.TB, r Runner) (base string, stop func() error) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx, ln, nil) }()
	var once sync.Once
	var runErr error
	end := func() error {
		once.Do(func() { cancel(); runErr = <-done })
		return runErr
	}
	var stopped atomic.Bool
	t.Cleanup(func() {
		// Run has returned when the test ends, even where a stop it began has not;
		// its error is the test's to check when it called stop.
		if err := end(); err != nil && !stopped.Load() {
			t.Errorf("sidecar Run on %s: %v", ln.Addr(), err)
		}
	})
	return "http://" + ln.Addr().String(), func() error {
		stopped.Store(true)
		return end()
	}
}
