package sidecar

import (
	"fmt"
	"math/rand/v2"
	"sync/atomic"
	"testing"
	"time"

	"github.com/oar-operator/oar-operator/internal/decisionlog"
	"github.com/oar-operator/oar-operator/internal/sidecar/session"
)

// TestReplayWhileSessionsAreEvicted: 6 busy sessions' calls (the third shell call is
// blocked, a deploy after a fetch nudged) interleaved with one-call sessions that fill
// a table of 8, and a store clock that moves a millisecond at every read and sometimes
// stalls, with a 22 ms idle TTL (an evaluation reads the store's clock about twice:
// when it pins its session and when it unpins it): while one session is evaluated,
// other sessions' calls evict the least recently used and expire the idle ones. A
// session being evaluated is never among them, so it reads and writes one state
// throughout and began exactly when its line says; replaying the log reproduces every
// decision. Unpinned, a session evicted or expired between the check for session_began
// and its reads, or between its read and its write of a counter, decides on a state the
// log does not describe.
func TestReplayWhileSessionsAreEvicted(t *testing.T) {
	const busy, calls, clients = 6, 80, 8
	tools := []string{"shell", "web_fetch", "deploy", "shell", "read", "shell", "deploy"}
	var bodies []string
	for i := range busy * calls {
		session := fmt.Sprintf("busy%d", i%busy)
		bodies = append(bodies, occ("tool.pre_invoke", session, fmt.Sprintf(`"tool_call": {"name": %q, "arguments": {}}`, tools[(i/busy+i%busy)%len(tools)])))
		if i%3 == 0 {
			bodies = append(bodies, shellCall(fmt.Sprintf("once%d", i)))
		}
	}
	var ticks atomic.Int64
	start := time.Now()
	clock := func() time.Time {
		if rand.IntN(4) == 0 {
			time.Sleep(100 * time.Microsecond)
		}
		return start.Add(time.Duration(ticks.Add(1)) * time.Millisecond)
	}
	out := &syncBuffer{}
	dl := decisionlog.NewWriter(out, decisionlog.Options{Sample: 1, Buffer: len(bodies)})
	b := sealed(t, testCapability, testRules)
	ts := serve(t, b, Options{DecisionLog: dl, Sessions: session.Options{MaxSessions: 8, IdleTTL: 22 * time.Millisecond, Now: clock}})
	sendConcurrently(t, []*testSidecar{ts}, bodies, clients)
	entries := readLog(t, dl, out, "sidecar")
	if len(entries) != len(bodies) {
		t.Fatalf("%d lines for %d calls", len(entries), len(bodies))
	}
	began := map[string]int{}
	for _, e := range entries {
		if e.Record.SessionBegan {
			began[e.Record.Session]++
		}
	}
	again := 0
	for i := range busy {
		again += began[fmt.Sprintf("busy%d", i)] - 1
	}
	lru, ttl := ts.sessions.Evictions()
	if lru == 0 || ttl == 0 || again == 0 {
		t.Errorf("%d sessions evicted, %d expired, busy sessions began again %d times: the test evicts nothing from under an evaluation", lru, ttl, again)
	}
	rep := replayed(t, b, entries)
	for _, effect := range []string{"nudge", "block"} {
		if rep.Before.Of(effect) == 0 {
			t.Errorf("no %s decision: no session keeps its state long enough to matter", effect)
		}
	}
	if rep.Reproduced != len(bodies) || rep.Mismatched != 0 {
		t.Fatalf("%d of %d reproduced, %d mismatched: %+v", rep.Reproduced, len(bodies), rep.Mismatched, rep.Mismatches[:min(3, len(rep.Mismatches))])
	}
	t.Logf("%d calls, %d sessions evicted, %d expired, busy sessions began again %d times", len(bodies), lru, ttl, again)
}
