package sidecar

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/oar-operator/oar-operator/internal/bundle"
	"github.com/oar-operator/oar-operator/internal/decisionlog"
	"github.com/oar-operator/oar-operator/internal/replay"
	"github.com/oar-operator/oar-operator/internal/sidecar/redisstore"
	"github.com/oar-operator/oar-operator/internal/sidecar/redistest"
	"github.com/oar-operator/oar-operator/internal/sidecar/session"
)

// readLog closes a decision log writer and reads back what it wrote to out, naming
// the entries' source.
func readLog(t *testing.T, dl *decisionlog.Writer, out *syncBuffer, source string) []decisionlog.Entry {
	t.Helper()
	if err := dl.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if dl.Dropped() != 0 || dl.WriteFailures() != 0 {
		t.Fatalf("%s: %d lines dropped, %d refused", source, dl.Dropped(), dl.WriteFailures())
	}
	log, err := decisionlog.Read(strings.NewReader(out.String()))
	if err != nil {
		t.Fatal(err)
	}
	for i := range log.Entries {
		log.Entries[i].Source = source
	}
	return log.Entries
}

// replayed replays entries with b on both sides.
func replayed(t *testing.T, b *bundle.Bundle, entries []decisionlog.Entry) *replay.Report {
	t.Helper()
	l, err := bundle.Load(b)
	if err != nil {
		t.Fatal(err)
	}
	s := replay.Side{Program: l.Program, Digest: b.Digest}
	return replay.Run(entries, replay.Options{Before: s, After: s})
}

// TestLogInEvaluationOrder: one sidecar without a shared store answers 8 sessions'
// calls, 120 each and in flight together from 64 clients; a session's calls take
// effect one after the other under its lock, and its lines are logged in that order,
// so replaying the log reproduces every decision. The calls mix tools whose decisions
// depend on what came before (the third shell call is blocked; a deploy after a fetch
// within the activity window is nudged), so a log out of evaluation order mismatches.
// The log's clock is slow to read half the time (a goroutine descheduled between its
// evaluation and its line, as on a busy machine), which lets a later call of the
// session be logged first unless the line is taken under the session's lock.
func TestLogInEvaluationOrder(t *testing.T) {
	const sessions, calls, clients = 8, 120, 64
	tools := []string{"web_fetch", "deploy", "read", "shell", "deploy", "read"}
	var bodies []string
	for i := range sessions * calls {
		session := fmt.Sprintf("s%d", i/calls)
		bodies = append(bodies, occ("tool.pre_invoke", session, fmt.Sprintf(`"tool_call": {"name": %q, "arguments": {}}`, tools[(i*7+i/calls)%len(tools)])))
	}
	slowClock := func() time.Time {
		if rand.IntN(2) == 0 {
			time.Sleep(200 * time.Microsecond)
		}
		return time.Now()
	}
	out := &syncBuffer{}
	dl := decisionlog.NewWriter(out, decisionlog.Options{Sample: 1, Buffer: len(bodies), Now: slowClock})
	b := sealed(t, testCapability, testRules)
	ts := serve(t, b, Options{DecisionLog: dl})
	sendConcurrently(t, []*testSidecar{ts}, bodies, clients)
	entries := readLog(t, dl, out, "sidecar")
	if len(entries) != len(bodies) {
		t.Fatalf("%d lines for %d calls", len(entries), len(bodies))
	}
	for _, e := range entries {
		if e.Record.SessionState != nil {
			t.Fatalf("line %d has session_state %+v without a shared store", e.Line, e.Record.SessionState)
		}
	}
	rep := replayed(t, b, entries)
	if rep.Reproduced != len(bodies) || rep.Mismatched != 0 {
		t.Fatalf("%d of %d reproduced, %d mismatched: %+v", rep.Reproduced, len(bodies), rep.Mismatched, rep.Mismatches[:min(3, len(rep.Mismatches))])
	}
	for _, effect := range []string{"nudge", "block", "none"} {
		if n := rep.Before.Of(effect); n == 0 {
			t.Errorf("no %s decision: the workload does not depend on order", effect)
		}
	}
}

// TestReplicasLogInCommitOrder: two replicas sharing sessions in Redis, each with its
// own decision log, replica B's clock 2 s behind A's. 8 concurrent clients send 200
// sessions' 4 shell calls alternately to both, so one session's calls conflict and are
// retried, and a model output between the second and third, at an anchor whose rules
// use no session state (its line carries no versions). Both logs replayed together
// reproduce every decision: the lines' session versions order each session as its
// calls took effect, and the model outputs are placed by time. The same lines without
// their versions replay in time order, which the skew gets wrong (B's lines first),
// and mismatch: the versions are what makes the replay right.
func TestReplicasLogInCommitOrder(t *testing.T) {
	const sessions, calls, clients = 200, 5, 8
	b := sealed(t, testCapability, testRules)
	url := redistest.Shared(t).URL
	opt := redisstore.Options{IdleTTL: time.Hour, Timeout: 10 * time.Second}
	skew := map[string]time.Duration{"a": 0, "b": -2 * time.Second}
	outs := map[string]*syncBuffer{}
	logs := map[string]*decisionlog.Writer{}
	var rs []*testSidecar
	for _, name := range []string{"a", "b"} {
		outs[name] = &syncBuffer{}
		logs[name] = decisionlog.NewWriter(outs[name], decisionlog.Options{Sample: 1, Buffer: sessions * calls,
			Now: func() time.Time { return time.Now().Add(skew[name]) }})
		rs = append(rs, serve(t, b, Options{SharedSessions: sharedStore(t, url, opt), DecisionLog: logs[name]}))
	}
	var bodies []string
	for i := range sessions * calls {
		session := fmt.Sprintf("s%d", i/calls)
		if i%calls == 2 {
			bodies = append(bodies, occ("model.output", session, `"facts": {"acme.gateway.tenant_tier": "free"}, "content": "hi"`))
		} else {
			bodies = append(bodies, shellCall(session))
		}
	}
	sendConcurrently(t, rs, bodies, clients)
	if conflicts := rs[0].metric(t, "oar_engine_session_store_conflicts_total", nil) + rs[1].metric(t, "oar_engine_session_store_conflicts_total", nil); conflicts == 0 {
		t.Error("no commit conflicted: the replicas never evaluated one session at the same time")
	}
	a, bl := readLog(t, logs["a"], outs["a"], "a"), readLog(t, logs["b"], outs["b"], "b")
	if len(a) == 0 || len(bl) == 0 || len(a)+len(bl) != len(bodies) {
		t.Fatalf("%d and %d lines for %d calls", len(a), len(bl), len(bodies))
	}
	entries := append(a, bl...)
	for _, e := range entries {
		if versioned := e.Record.SessionState != nil; versioned != (e.Record.Anchor == "tool.pre_invoke") {
			t.Fatalf("%s line %d (%s): session_state %+v", e.Source, e.Line, e.Record.Anchor, e.Record.SessionState)
		}
	}
	rep := replayed(t, b, entries)
	if rep.Reproduced != len(bodies) || rep.Mismatched != 0 {
		t.Fatalf("%d of %d reproduced, %d mismatched: %+v", rep.Reproduced, len(bodies), rep.Mismatched, rep.Mismatches[:min(3, len(rep.Mismatches))])
	}

	for i := range entries {
		entries[i].Record.SessionState = nil
	}
	if rep := replayed(t, b, entries); rep.Mismatched == 0 {
		t.Error("without session_state, in time order, every decision reproduced: the skew misordered nothing, so the test proves nothing")
	} else {
		t.Logf("without session_state: %d of %d mismatched", rep.Mismatched, len(bodies))
	}
}

// TestReplayAfterSessionExpired: a session idle past its store's TTL is forgotten and
// begins again (its next call's line says session_began); the replay starts the
// session's state again there, so the calls after it reproduce: two shell calls, the
// session expires, three more, the third of them blocked. A replay that kept the state
// would block all three. It holds with sessions in the sidecar's own store and in
// Redis (where the call also reads no version).
func TestReplayAfterSessionExpired(t *testing.T) {
	const ttl = 200 * time.Millisecond
	b := sealed(t, testCapability, testRules)
	var mu sync.Mutex
	now := time.Now()
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	for name, c := range map[string]struct {
		opt  Options
		wait func()
	}{
		"own store": {Options{Sessions: session.Options{IdleTTL: ttl, Now: clock}},
			func() { mu.Lock(); now = now.Add(2 * ttl); mu.Unlock() }},
		"redis": {Options{SharedSessions: sharedStore(t, redistest.Shared(t).URL, redisstore.Options{IdleTTL: ttl})},
			func() { time.Sleep(2 * ttl) }},
	} {
		t.Run(name, func(t *testing.T) {
			out := &syncBuffer{}
			c.opt.DecisionLog = decisionlog.NewWriter(out, decisionlog.Options{Sample: 1})
			r := serve(t, b, c.opt)
			var decisions []string
			for i := range 5 {
				if i == 2 {
					c.wait()
				}
				decisions = append(decisions, r.evaluate(t, shellCall("s1")).Decision.Decision)
			}
			if want := []string{"warn", "warn", "warn", "warn", "block"}; strings.Join(decisions, " ") != strings.Join(want, " ") {
				t.Fatalf("decisions %v, want %v: the session did not begin again after its TTL", decisions, want)
			}
			entries := readLog(t, c.opt.DecisionLog, out, "sidecar")
			for i, e := range entries {
				if want := i == 0 || i == 2; e.Record.SessionBegan != want {
					t.Errorf("call %d: session_began %v, want %v", i+1, e.Record.SessionBegan, want)
				}
			}
			if rep := replayed(t, b, entries); rep.Reproduced != len(entries) || rep.Mismatched != 0 {
				t.Fatalf("%d of %d reproduced, %d mismatched: %+v", rep.Reproduced, len(entries), rep.Mismatched, rep.Mismatches)
			}
		})
	}
}
