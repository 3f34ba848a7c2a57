package replay

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/oar-operator/oar-operator/internal/decisionlog"
	"github.com/oar-operator/oar-operator/internal/engine"
	"github.com/oar-operator/oar-operator/internal/occurrence"
)

// FuzzReadAndReplay: whatever the log, what Read takes replays without panicking, under
// the same rules on both sides and under other rules. Its input is a plan, whose bytes
// choose the lines of a log a sidecar could have written (planLog: sessions, anchors,
// content modes, times out of order, and every way a line says what it found of its
// session, with versions from a small set so that they chain, collide and settle or
// leave unknown the commits whose outcome the sidecar did not know), and raw bytes
// appended to that log, for what no sidecar writes. Every planned line reads; every
// line that does not read is an error naming it; every entry is replayed once and
// either reproduces the logged decision or is a mismatch; the changes confirmed and
// unconfirmed add up to those listed and not listed, by tool too; and the same rules on
// both sides change nothing.
func FuzzReadAndReplay(f *testing.F) {
	b := sealedBundle(f, rules)
	same := side(f, b)
	other := side(f, sealedBundle(f, strings.Replace(rules, ">= 3", ">= 1", 1)+annotate))
	f.Add(logThroughSidecar(f, b, generate(6, 2).bodies, decisionlog.ContentFull), []byte{})
	f.Add(logThroughSidecar(f, b, generate(6, 2).bodies, decisionlog.ContentOmit), []byte{})
	// Each way a line says what it found of its session, over a few lines of two
	// sessions, and a commit whose outcome is unknown followed by lines that settle it
	// or not.
	for marker := range byte(planMarkers) {
		var plan []byte
		for i := range byte(8) {
			plan = append(plan, i, marker, i%3, i%3+1, i, 1)
		}
		f.Add([]byte{}, plan)
	}
	f.Add([]byte{}, []byte{0, 2, 0, 1, 0, 1, 0, 5, 1, 2, 0, 1, 0, 2, 3, 4, 0, 1, 0, 2, 4, 5, 0, 1, 0, 1, 0, 0, 0, 1, 0, 2, 0, 1, 0, 1})
	f.Fuzz(func(t *testing.T, raw, plan []byte) {
		planned, lines := planLog(t, same.Program, b.Digest, plan)
		data := append(planned, raw...)
		log, err := decisionlog.Read(bytes.NewReader(data))
		last := bytes.Count(data, []byte("\n")) + 1
		for _, e := range decisionlog.Errors(err) {
			var le *decisionlog.LineError
			if !errors.As(e, &le) || le.Line < 1 || le.Line > last || !strings.HasPrefix(e.Error(), fmt.Sprintf("line %d: ", le.Line)) {
				t.Fatalf("an error that names no line of the %d: %v", last, e)
			}
			if le.Line <= lines {
				t.Fatalf("planned line %d does not read: %v\n%s", le.Line, e, planned)
			}
		}
		// A placeholder of a long content logged without its text costs time in
		// proportion (a second for some 25 million code points) and exercises nothing
		// a short one does not; the fuzzer would spend its time there.
		placeholders := 0
		for _, e := range log.Entries {
			if !e.Record.Reproducible() {
				placeholders += e.Record.Content.Length
			}
		}
		if placeholders > 1<<16 {
			t.Skip("placeholders too long to replay quickly")
		}
		for _, after := range []Side{same, other} {
			rep := Run(log.Entries, Options{Before: same, After: after})
			checkTotals(t, rep, len(log.Entries))
			if after.Program == same.Program && rep.Changed != 0 {
				t.Fatalf("the same rules on both sides changed %d decisions, %d unconfirmed: %+v", rep.Changed, rep.Unconfirmed, rep.Changes)
			}
		}
	})
}

// checkTotals fails t when the report's totals do not add up for a log of n entries.
func checkTotals(t *testing.T, rep *Report, n int) {
	t.Helper()
	if rep.Occurrences != n || rep.Reproduced+rep.Mismatched != rep.Occurrences || rep.Sessions > rep.Occurrences {
		t.Fatalf("%d entries: %d occurrences in %d sessions, %d reproduced, %d mismatched",
			n, rep.Occurrences, rep.Sessions, rep.Reproduced, rep.Mismatched)
	}
	if rep.Changed > rep.Occurrences || rep.Confirmed+rep.Unconfirmed != rep.Changed || rep.ChangesNotListed < 0 || len(rep.Changes)+rep.ChangesNotListed != rep.Changed ||
		rep.MismatchesNotListed < 0 || len(rep.Mismatches)+rep.MismatchesNotListed != rep.Mismatched {
		t.Fatalf("%d changed (%d confirmed, %d not) of %d: %d listed and %d not; %d mismatched: %d listed and %d not",
			rep.Changed, rep.Confirmed, rep.Unconfirmed, rep.Occurrences, len(rep.Changes), rep.ChangesNotListed, rep.Mismatched, len(rep.Mismatches), rep.MismatchesNotListed)
	}
	total := func(cs []Count) int {
		n := 0
		for _, c := range cs {
			n += c.Count
		}
		return n
	}
	if total(rep.ByTool) != rep.Changed || total(rep.UnconfirmedByTool) != rep.Unconfirmed {
		t.Fatalf("by tool %v of %d changed, %v of %d unconfirmed", rep.ByTool, rep.Changed, rep.UnconfirmedByTool, rep.Unconfirmed)
	}
	if rep.ChangesNotListed == 0 {
		unconfirmed := 0
		for _, c := range rep.Changes {
			if c.UncertainSince != nil {
				unconfirmed++
			}
		}
		if unconfirmed != rep.Unconfirmed {
			t.Fatalf("%d changes listed as unconfirmed, %d counted", unconfirmed, rep.Unconfirmed)
		}
	}
}

// The ways a planned line says what it found of its session (planLog).
const (
	planLocal       = iota // nothing: a local store's session, or an anchor using none
	planBegan              // session_began alone: a local store's new session
	planCommitted          // session_state
	planRead               // session_state whose written is the version read
	planUnavailable        // session_unavailable
	planUnknown            // session_outcome_unknown
	planCorrection         // session_state and session_outcome_unknown from its written
	planMarkers
)

// planBodies are the occurrences a planned line may carry: calls that count, that
// pass a flow, that end one; model outputs of each tier, with content to redact.
var planBodies = []string{
	`{"anchor":"tool.pre_invoke","session_id":"%s","tool_call":{"name":"shell","arguments":{}}}`,
	`{"anchor":"tool.pre_invoke","session_id":"%s","tool_call":{"name":"deploy","arguments":{}},"recent_activity":["web_fetch"]}`,
	`{"anchor":"tool.pre_invoke","session_id":"%s","tool_call":{"name":"web_fetch","arguments":{}}}`,
	`{"anchor":"tool.post_invoke","session_id":"%s","tool_call":{"name":"shell","arguments":{}}}`,
	`{"anchor":"content.output","session_id":"%s","content":"mail bob@example.com now","facts":{"acme.gateway.tenant_tier":"free","acme.gateway.email_spans":[{"start":5,"end":20},{"start":40,"end":50}]}}`,
	`{"anchor":"content.output","session_id":"%s","facts":{"acme.gateway.tenant_tier":"pro","acme.gateway.email_spans":[]}}`,
}

// planVersions are the session versions planned lines read and leave: few, so their
// chains join, fork and repeat.
var planVersions = []string{"", "v1", "v2", "v3", "v4", "v5"}

// planLog is the log a plan's bytes choose, and its number of lines: each line takes
// six bytes (missing ones are 0), at most 64 lines. They choose its session and
// occurrence, how it says what it found of its session (the plan constants) with the
// versions read and written, its content mode, whether its decision is the one the
// rules make against the session as the earlier lines left it (as a sidecar's would
// be, so most lines reproduce) or another, whether another bundle answered it, whether
// an unknown outcome's commit reached the session, and its time, which may go back.
// Every line is one Read takes, made by decisionlog's own encoding.
func planLog(t *testing.T, prog *engine.Program, digest string, plan []byte) ([]byte, int) {
	t.Helper()
	next := func() int {
		if len(plan) == 0 {
			return 0
		}
		v := plan[0]
		plan = plan[1:]
		return int(v)
	}
	sessions := map[string]*engine.Runtime{}
	origin := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	var out []byte
	n, at := 0, 0
	for ; len(plan) > 0 && n < 64; n++ {
		what, how, read, written, flags, step := next(), next(), planVersions[next()%len(planVersions)], planVersions[next()%len(planVersions)], next(), next()
		session := fmt.Sprintf("s%d", what%3)
		occ, errs := occurrence.Decode(fmt.Appendf(nil, planBodies[what/3%len(planBodies)], session), occurrence.HostMembers)
		if errs != nil {
			t.Fatalf("a planned occurrence: %v", errs)
		}
		var s decisionlog.Session
		switch how % planMarkers {
		case planBegan:
			s.Began = true
		case planCommitted, planRead:
			if how%planMarkers == planRead || written == "" && read != "" {
				written = read
			}
			s.State = &decisionlog.SessionState{Read: read, Written: written}
		case planUnavailable:
			s.Unavailable = true
		case planUnknown:
			s.OutcomeUnknown = &decisionlog.SessionState{Read: read, Written: changed(read, written)}
		case planCorrection:
			left := changed(read, written)
			s.State = &decisionlog.SessionState{Read: read, Written: left}
			s.OutcomeUnknown = &decisionlog.SessionState{Read: left, Written: changed(left, planVersions[flags%len(planVersions)])}
		}
		// As the sidecar says: a session whose commit read no version held no state.
		if s.State != nil && s.State.Read == "" || s.OutcomeUnknown != nil && s.OutcomeUnknown.Read == "" {
			s.Began = true
		}
		rt := sessions[session]
		if rt == nil || s.Began {
			rt = newRuntime()
			sessions[session] = rt
		}
		var d *engine.Decision
		if s.Unavailable || s.OutcomeUnknown != nil && s.State == nil {
			d = prog.Evaluate(withoutSession(session), occ)
			if s.OutcomeUnknown != nil && how&0x80 != 0 { // the commit reached the session
				prog.Evaluate(rt, occ)
			}
		} else {
			d = prog.Evaluate(rt, occ)
		}
		if flags/3%8 == 0 {
			d = &engine.Decision{Decision: []string{"none", "warn", "nudge", "block"}[flags/24%4], Rule: "acme.ops/COUNT_SHELL", Applied: d.Applied}
		}
		bundle := digest
		if flags >= 240 {
			bundle = "sha256:another"
		}
		at += int(int8(step)) % 4
		rec := decisionlog.NewRecord(origin.Add(time.Duration(at)*time.Second), bundle, []decisionlog.ContentMode{decisionlog.ContentFull, decisionlog.ContentOmit, decisionlog.ContentHash}[flags%3], occ, d)
		rec.SessionBegan, rec.SessionState, rec.SessionUnavailable, rec.SessionOutcomeUnknown = s.Began, s.State, s.Unavailable, s.OutcomeUnknown
		line, err := decisionlog.MarshalLine(rec)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, line...)
	}
	return out, n
}

// changed is written, or another version when it is empty or read: a commit whose
// outcome is unknown changed the session, so it would have left a new version.
func changed(read, written string) string {
	if written == "" || written == read {
		return read + "x"
	}
	return written
}
