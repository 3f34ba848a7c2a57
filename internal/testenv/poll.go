package testenv

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Eventually polls cond every poll until it holds, and fails tb once timeout has passed,
// saying what it waited for and the state cond last described. Suites wait this way,
// never with fixed sleeps: the API server's first write of a new kind can take seconds.
func Eventually(tb testing.TB, timeout, poll time.Duration, what string, cond func() (bool, string)) {
	tb.Helper()
	deadline := time.Now().Add(timeout)
	last := ""
	for time.Now().Before(deadline) {
		ok, state := cond()
		if ok {
			return
		}
		last = state
		time.Sleep(poll)
	}
	tb.Fatalf("timed out waiting for %s; last seen: %s", what, last)
}

// Namespace creates a namespace of its own for one test, its name starting with prefix.
func (e *Env) Namespace(tb testing.TB, prefix string) string {
	tb.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: prefix}}
	if err := e.Client.Create(context.Background(), ns); err != nil {
		tb.Fatal(err)
	}
	return ns.Name
}
