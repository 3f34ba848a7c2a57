package testpoll

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// recorder is a testing.TB that keeps its failure instead of ending the test.
type recorder struct {
	testing.TB
	failure string
}

func (r *recorder) Helper() {}

func (r *recorder) Fatalf(format string, args ...any) { r.failure = fmt.Sprintf(format, args...) }

func TestEventuallyReturnsOnceTheConditionHolds(t *testing.T) {
	r := &recorder{TB: t}
	calls := 0
	Eventually(r, time.Minute, time.Millisecond, "the third call", func() (bool, string) {
		calls++
		return calls == 3, fmt.Sprintf("call %d", calls)
	})
	if r.failure != "" || calls != 3 {
		t.Errorf("after %d calls: failure %q; want success at the third", calls, r.failure)
	}
}

func TestEventuallyFailsWithTheLastState(t *testing.T) {
	r := &recorder{TB: t}
	calls := 0
	start := time.Now()
	Eventually(r, 30*time.Millisecond, 5*time.Millisecond, "a condition that never holds", func() (bool, string) {
		calls++
		return false, fmt.Sprintf("call %d", calls)
	})
	if time.Since(start) < 30*time.Millisecond {
		t.Errorf("gave up after %v, before the timeout", time.Since(start))
	}
	want := fmt.Sprintf("waiting for a condition that never holds; last seen: call %d", calls)
	if !strings.Contains(r.failure, want) {
		t.Errorf("failure %q; want it to contain %q", r.failure, want)
	}
}

func TestUntilChecksOnceAfterTheTimeout(t *testing.T) {
	r := &recorder{TB: t}
	Until(r, 0, time.Millisecond, "a condition true at once", func() bool { return true })
	if r.failure != "" {
		t.Errorf("a condition that holds at the first call failed: %s", r.failure)
	}
}
