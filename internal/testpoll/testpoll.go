// Package testpoll waits, in tests, for what another goroutine or process makes true:
// suites poll a condition rather than sleep a fixed time, since how long the thing
// takes (an API server's first write of a new kind, a reload, a stream's end) varies
// with the machine.
package testpoll

import (
	"testing"
	"time"
)

// Eventually polls cond every poll until it holds, and fails tb once timeout has
// passed, saying what it waited for and the state cond last described.
func Eventually(tb testing.TB, timeout, poll time.Duration, what string, cond func() (bool, string)) {
	tb.Helper()
	deadline := time.Now().Add(timeout)
	last := ""
	for {
		ok, state := cond()
		if ok {
			return
		}
		last = state
		if !time.Now().Before(deadline) {
			tb.Fatalf("timed out after %v waiting for %s; last seen: %s", timeout, what, last)
			return
		}
		time.Sleep(poll)
	}
}

// Until is Eventually for a condition with no state to describe.
func Until(tb testing.TB, timeout, poll time.Duration, what string, cond func() bool) {
	tb.Helper()
	Eventually(tb, timeout, poll, what, func() (bool, string) { return cond(), "not yet" })
}
