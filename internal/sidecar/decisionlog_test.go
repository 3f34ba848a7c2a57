package sidecar

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/oar-operator/oar-operator/internal/bundle"
	"github.com/oar-operator/oar-operator/internal/decisionlog"
	"github.com/oar-operator/oar-operator/internal/replay"
	"github.com/oar-operator/oar-operator/internal/sidecar/redisstore"
	"github.com/oar-operator/oar-operator/internal/sidecar/redistest"
	"github.com/oar-operator/oar-operator/internal/testpoll"
)

// TestDecisionLog posts occurrences with the decision log on and reads its lines back:
// one per answered occurrence (none for a refused request), each with the occurrence
// as posted, the answer's decision and rule, the traced rules and the digest, and the
// content as the content mode says; the lines share the event writer with the
// publish_event records and are told apart by their kind.
func TestDecisionLog(t *testing.T) {
	for _, mode := range []decisionlog.ContentMode{decisionlog.ContentOmit, decisionlog.ContentFull} {
		out := &syncBuffer{}
		dl := decisionlog.NewWriter(out, decisionlog.Options{Content: mode, Sample: 1})
		b := sealed(t, testCapability, testRules)
		ts := serve(t, b, Options{Events: out, DecisionLog: dl})
		shell := occ("tool.pre_invoke", "s1", `"tool_call": {"name": "shell", "arguments": {"cmd": "ls"}}`)
		var answers []Answer
		for range 3 {
			answers = append(answers, ts.evaluate(t, shell))
		}
		answers = append(answers, ts.evaluate(t, occ("model.output", "s1", `"facts": {"acme.gateway.tenant_tier": "free"}, "content": "hello world"`)))
		ts.problem(t, 400, "POST", "/v1/evaluate", `{"anchor": 1}`)
		if err := dl.Close(context.Background()); err != nil {
			t.Fatal(err)
		}

		log, err := decisionlog.Read(strings.NewReader(out.String()))
		if err != nil {
			t.Fatal(err)
		}
		if len(log.Entries) != len(answers) || log.Skipped != 3 {
			t.Fatalf("mode %s: %d decision lines and %d other lines; want %d and 3 publish_event records:\n%s", mode, len(log.Entries), log.Skipped, len(answers), out.String())
		}
		for i, e := range log.Entries {
			a, r := answers[i], e.Record
			if r.Bundle != b.Digest || r.Session != "s1" || r.Decision != a.Decision.Decision || r.Rule != a.Rule ||
				strings.Join(r.Applied, " ") != strings.Join(a.Applied, " ") {
				t.Errorf("mode %s: line %d %+v; the answer was %+v", mode, e.Line, r, a.Decision)
			}
		}
		if got := log.Entries[2].Record; got.Decision != "block" || got.Rule != "acme.ops/SHELL_LIMIT" || strings.Join(got.Fired, " ") != "acme.ops/COUNT_SHELL acme.ops/SHELL_LIMIT" {
			t.Errorf("the third shell call's line: %+v", got)
		}
		if e := log.Entries[0]; e.Occ.ToolCall.Name != "shell" || e.Occ.ToolCall.Arguments["cmd"] != "ls" {
			t.Errorf("the tool call is not the one posted: %+v", e.Occ.ToolCall)
		}
		content := log.Entries[3]
		if content.Record.Content == nil || content.Record.Content.Length != len("hello world") || content.Record.Content.Mode != mode ||
			content.Occ.Facts["acme.gateway.tenant_tier"] != "free" {
			t.Errorf("mode %s: the content line %+v", mode, content.Record)
		}
		if leaked := strings.Contains(out.String(), "hello world"); leaked != (mode == decisionlog.ContentFull) {
			t.Errorf("mode %s: the content is in the log: %v", mode, leaked)
		}
		if got := ts.metric(t, "oar_engine_decision_log_lines_total", nil); got != float64(len(answers)) {
			t.Errorf("oar_engine_decision_log_lines_total %v; want %d", got, len(answers))
		}
		families, err := ts.Metrics().Registry().Gather()
		if err != nil {
			t.Fatal(err)
		}
		if !slices.ContainsFunc(families, func(f *dto.MetricFamily) bool { return f.GetName() == "oar_engine_decision_log_too_long_total" }) ||
			ts.metric(t, "oar_engine_decision_log_too_long_total", nil) != 0 {
			t.Error("oar_engine_decision_log_too_long_total is not exposed as 0")
		}
	}
}

// TestDecisionLogFailureNeverFailsAnEvaluation: a destination that refuses every line
// leaves the answers as they are, and the refusals are counted.
func TestDecisionLogFailureNeverFailsAnEvaluation(t *testing.T) {
	dl := decisionlog.NewWriter(failingWriter{}, decisionlog.Options{Sample: 1})
	ts := serve(t, sealed(t, testCapability, testRules), Options{DecisionLog: dl})
	for i, want := range []string{"warn", "warn", "block"} {
		if a := ts.evaluate(t, occ("tool.pre_invoke", "s", `"tool_call": {"name": "shell"}`)); a.Decision.Decision != want || len(a.Failures) != 0 {
			t.Errorf("call %d: %+v; want %s and no failure", i+1, a.Decision, want)
		}
	}
	if err := dl.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := ts.metric(t, "oar_engine_decision_log_write_failures_total", nil); got != 3 {
		t.Errorf("oar_engine_decision_log_write_failures_total %v; want 3", got)
	}
}

// TestDecisionLogSessionState: with shared sessions, a committed occurrence's line
// carries the session's versions, the first read at the empty version and each next
// one at the version the previous left; an occurrence at an anchor needing no session
// state, and one answered without its session while the store is down, carry none,
// and only the latter says session_unavailable.
func TestDecisionLogSessionState(t *testing.T) {
	srv := redistest.StartT(t)
	out := &syncBuffer{}
	dl := decisionlog.NewWriter(out, decisionlog.Options{Sample: 1})
	ts := serve(t, sealed(t, testCapability, testRules), Options{DecisionLog: dl,
		SharedSessions: sharedStore(t, srv.URL, redisstore.Options{Timeout: 2 * time.Second})})
	ts.evaluate(t, shellCall("s1"))
	ts.evaluate(t, shellCall("s1"))
	ts.evaluate(t, occ("model.output", "s1", `"facts": {"acme.gateway.tenant_tier": "free"}, "content": "hi"`))
	srv.Stop()
	if a := ts.evaluate(t, shellCall("s1")); len(a.Failures) == 0 {
		t.Fatalf("the store is down, yet the answer reports no failure: %+v", a.Decision)
	}
	if err := dl.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	log, err := decisionlog.Read(strings.NewReader(out.String()))
	if err != nil || len(log.Entries) != 4 {
		t.Fatalf("%v, %d lines:\n%s", err, len(log.Entries), out.String())
	}
	first, second := log.Entries[0].Record.SessionState, log.Entries[1].Record.SessionState
	if first == nil || first.Read != "" || first.Written == "" || !log.Entries[0].Record.SessionBegan {
		t.Errorf("the call that created the session: session_state %+v, session_began %v", first, log.Entries[0].Record.SessionBegan)
	}
	if log.Entries[1].Record.SessionBegan {
		t.Error("the next call: session_began")
	}
	if second == nil || first == nil || second.Read != first.Written || second.Written == second.Read || second.Written == "" {
		t.Errorf("the next call: session_state %+v after %+v", second, first)
	}
	for _, e := range log.Entries[2:] {
		if e.Record.SessionState != nil {
			t.Errorf("line %d (%s): session_state %+v; it was not evaluated against the shared session", e.Line, e.Record.Anchor, e.Record.SessionState)
		}
	}
	for i, e := range log.Entries {
		if e.Record.SessionUnavailable != (i == 3) {
			t.Errorf("line %d (%s): session_unavailable %v; only the call answered while the store was down was answered without its session", e.Line, e.Record.Anchor, e.Record.SessionUnavailable)
		}
	}
}

// TestLogOfAnOutageReplays: the log a sidecar with shared sessions writes across an
// outage of its store, replayed under the bundle that wrote it, reproduces every
// decision: the call answered without its session is replayed without it, and the
// session's counters go on from what the store kept, as the sidecar's did.
func TestLogOfAnOutageReplays(t *testing.T) {
	srv := redistest.StartT(t)
	out := &syncBuffer{}
	dl := decisionlog.NewWriter(out, decisionlog.Options{Sample: 1})
	b := sealed(t, testCapability, testRules)
	ts := serve(t, b, Options{DecisionLog: dl, SharedSessions: sharedStore(t, srv.URL, redisstore.Options{Timeout: 2 * time.Second})})
	var decisions []string
	decisions = append(decisions, ts.evaluate(t, shellCall("s1")).Decision.Decision)
	srv.Stop()
	decisions = append(decisions, ts.evaluate(t, shellCall("s1")).Decision.Decision)
	if err := srv.Restart(); err != nil {
		t.Fatal(err)
	}
	testpoll.Until(t, 10*time.Second, 20*time.Millisecond, "the session store reachable again", func() bool {
		var p Probe
		ts.do(t, http.MethodGet, "/readyz", "").decode(t, &p)
		return strings.HasSuffix(p.SessionStore, ": reachable")
	})
	for range 2 {
		decisions = append(decisions, ts.evaluate(t, shellCall("s1")).Decision.Decision)
	}
	if err := dl.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	log, err := decisionlog.Read(strings.NewReader(out.String()))
	if err != nil || len(log.Entries) != 4 || !log.Entries[1].Record.SessionUnavailable {
		t.Fatalf("%v, %d lines:\n%s", err, len(log.Entries), out.String())
	}
	l, err := bundle.Load(b)
	if err != nil {
		t.Fatal(err)
	}
	s := replay.Side{Program: l.Program, Digest: b.Digest}
	rep := replay.Run(log.Entries, replay.Options{Before: s, After: s})
	if rep.Reproduced != 4 || rep.Mismatched != 0 {
		t.Errorf("answered %v; the replay reproduces %d and not %d: %+v", decisions, rep.Reproduced, rep.Mismatched, rep.Mismatches)
	}
}

// TestLogOfAnUnknownCommitOutcomeReplays: a call whose commit was applied but neither
// it nor its resend was answered is answered without its session and logged with
// session_outcome_unknown — the version it read and the one its commit would have
// left — not session_unavailable, which would say it changed nothing. The next call
// read that version, so a replay of the log under the bundle that wrote it knows the
// commit was applied and reproduces every decision, the next call's block included.
func TestLogOfAnUnknownCommitOutcomeReplays(t *testing.T) {
	out := &syncBuffer{}
	dl := decisionlog.NewWriter(out, decisionlog.Options{Sample: 1})
	b := sealed(t, testCapability, testRules)
	r, p, held := lostReplyRun(t, b, Options{DecisionLog: dl})
	p.drop.Store(1 << 40)
	second := r.evaluate(t, shellCall("s1"))
	p.drop.Store(0)
	third := r.evaluate(t, shellCall("s1"))
	if len(second.Failures) != 1 || !strings.Contains(second.Failures[0].Error, "may or may not have been applied") || third.Decision.Decision != "block" || third.Rule != "acme.ops/SHELL_LIMIT" {
		t.Fatalf("the call whose commit's outcome is unknown %+v; the next %+v", second.Decision, third.Decision)
	}
	if got := held(); got != "3 0" {
		t.Fatalf("Redis holds COUNT_SHELL %q, want \"3 0\" (the unanswered commit ran)", got)
	}
	if err := dl.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	log, err := decisionlog.Read(strings.NewReader(out.String()))
	if err != nil || len(log.Entries) != 3 {
		t.Fatalf("%v, %d lines:\n%s", err, len(log.Entries), out.String())
	}
	first, unknown, next := log.Entries[0].Record, log.Entries[1].Record, log.Entries[2].Record
	if u := unknown.SessionOutcomeUnknown; u == nil || unknown.SessionUnavailable || unknown.SessionState != nil || unknown.SessionBegan ||
		first.SessionState == nil || u.Read != first.SessionState.Written || next.SessionState == nil || u.Written != next.SessionState.Read {
		t.Fatalf("line 2 says of its session %s", out.String())
	}
	l, err := bundle.Load(b)
	if err != nil {
		t.Fatal(err)
	}
	s := replay.Side{Program: l.Program, Digest: b.Digest}
	if rep := replay.Run(log.Entries, replay.Options{Before: s, After: s}); rep.Reproduced != 3 || rep.Mismatched != 0 {
		t.Errorf("the replay reproduces %d and not %d: %+v", rep.Reproduced, rep.Mismatched, rep.Mismatches)
	}
}

// failsOnce is an event writer that refuses its first record and takes the others.
type failsOnce struct{ refused bool }

func (w *failsOnce) Write(p []byte) (int, error) {
	if !w.refused {
		w.refused = true
		return 0, errors.New("disk full")
	}
	return len(p), nil
}

// TestLogOfAnUnknownCorrectionOutcome: a shell call is committed, its event is
// refused, and neither its correction nor the correction sent again is answered
// (Redis applied it). The line says the versions the commit read and left
// (session_state) and, from the version left, the one the correction would have left
// (session_outcome_unknown): the next call read the correction's version, so the log
// still orders the session's lines, and a replay, which cannot replay a refused
// event, says the session's state is unknown from that line on rather than blame the
// rules for the next line.
func TestLogOfAnUnknownCorrectionOutcome(t *testing.T) {
	out := &syncBuffer{}
	dl := decisionlog.NewWriter(out, decisionlog.Options{Sample: 1})
	b := sealed(t, testCapability, testRules)
	srv := redistest.Shared(t)
	p := newReplyDropper(t, srv.Addr)
	store := sharedStore(t, "redis://"+p.addr, redisstore.Options{PendingTTL: 999 * time.Millisecond, Timeout: time.Second})
	r := serve(t, b, Options{Events: &failsOnce{}, DecisionLog: dl, SharedSessions: store})
	store.SetObserver(&afterFirstCommit{Observer: r.Metrics(), do: func() { p.drop.Store(1 << 40) }})
	first := r.evaluate(t, shellCall("s1"))
	p.drop.Store(0)
	second := r.evaluate(t, shellCall("s1"))
	if len(first.Failures) != 1 || !strings.Contains(first.Failures[0].Error, "whether they were taken back is unknown") || second.Counters.Get("acme.ops/COUNT_SHELL").Fire != 1 {
		t.Fatalf("the call whose correction's outcome is unknown %+v; the next %+v", first.Decision, second.Decision)
	}
	if err := dl.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	log, err := decisionlog.Read(strings.NewReader(out.String()))
	if err != nil || len(log.Entries) != 2 {
		t.Fatalf("%v, %d lines:\n%s", err, len(log.Entries), out.String())
	}
	line, next := log.Entries[0].Record, log.Entries[1].Record
	if st, u := line.SessionState, line.SessionOutcomeUnknown; st == nil || u == nil || u.Read != st.Written || next.SessionState == nil || u.Written != next.SessionState.Read {
		t.Fatalf("line 1 says of its session %s", out.String())
	}
	l, err := bundle.Load(b)
	if err != nil {
		t.Fatal(err)
	}
	s := replay.Side{Program: l.Program, Digest: b.Digest}
	rep := replay.Run(log.Entries, replay.Options{Before: s, After: s})
	for _, m := range rep.Mismatches {
		if m.Line == 2 && !strings.HasPrefix(m.Reason, replay.ReasonUncertain) {
			t.Errorf("the replay blames line 2 on the rules: %+v", m)
		}
	}
	if len(rep.Unreproducible) != 1 || !strings.HasPrefix(rep.Unreproducible[0].Reason, replay.ReasonUncertain) {
		t.Errorf("the replay's unreproducible lines %+v; want line 2, the session's state unknown", rep.Unreproducible)
	}
}
