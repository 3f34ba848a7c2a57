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
// choose lines a sidecar could have written, in logs it could not (planLog: sessions of
// a local store and of a shared one, anchors, content modes, times out of order, every
// way a line says what it found of its session, commits whose outcome the sidecar did
// not know and the later lines that settle them or not, and versions that chain unless
// the plan makes them collide), and raw bytes appended to that log, for what no sidecar
// writes. Every planned line reads; every line that does not read is an error naming
// it; every entry is replayed once and either reproduces the logged decision or is a
// mismatch; the changes, confirmed and unconfirmed, add up to those listed and not
// listed, by rule and by tool too; the same rules on both sides change nothing; and a
// plan whose lines the sidecar could have written in that order, with the rules' own
// decisions, this bundle's, and every unknown outcome settled, replays with no
// mismatch.
func FuzzReadAndReplay(f *testing.F) {
	b := sealedBundle(f, rules)
	same := side(f, b)
	other := side(f, sealedBundle(f, strings.Replace(rules, ">= 3", ">= 1", 1)+annotate))
	f.Add(logThroughSidecar(f, b, generate(6, 2).bodies, decisionlog.ContentFull), []byte{})
	f.Add(logThroughSidecar(f, b, generate(6, 2).bodies, decisionlog.ContentOmit), []byte{})
	// Each way a line says what it found of its session, over a few lines of the three
	// sessions (s0 a local store's, s1 and s2 a shared store's).
	for marker := range byte(planMarkers) {
		var plan []byte
		for i := range byte(8) {
			plan = append(plan, i, marker, 0, 0, 0, 1)
		}
		f.Add([]byte{}, plan)
	}
	// In session s1, a fetch committed, then commits whose outcome is unknown: the
	// first settled as applied (the next line reads the version it would have left),
	// the second as not applied (the next line changes the version it read); the
	// counted shell calls make the difference.
	f.Add([]byte{}, []byte{
		7, planCommitted, 0, 0, 0, 1,
		1, planUnknown, 0, 0, 0, 1,
		1, planCommitted, planReached, 0, 0, 1,
		1, planUnknown, 0, 0, 0, 1,
		1, planCommitted, planNotReached, 0, 0, 1,
		1, planCommitted, 0, 0, 0, 1,
	})
	// The same, but the line after each unknown outcome read a version whose writer is
	// in no log, which settles nothing.
	f.Add([]byte{}, []byte{
		7, planCommitted, 0, 0, 0, 1,
		1, planUnknown, 0, 0, 0, 1,
		1, planCommitted, planUnlogged, 0, 0, 1,
		1, planUnknown, 0, 0, 0, 1,
		1, planCommitted, planUnlogged, 0, 0, 1,
		1, planCommitted, 0, 0, 0, 1,
	})
	f.Fuzz(func(t *testing.T, raw, plan []byte) {
		planned, lines, exact := planLog(t, same.Program, b.Digest, plan)
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
			if exact && len(log.Entries) == lines && rep.Mismatched != 0 {
				t.Fatalf("a log a sidecar could have written, every outcome settled, does not replay: %+v\n%s", rep.Mismatches, planned)
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
	total := func(cs Counts) int {
		n := 0
		for _, c := range cs {
			n += c.Count
		}
		return n
	}
	if total(rep.ByTool) != rep.Changed || total(rep.UnconfirmedByTool) != rep.Unconfirmed {
		t.Fatalf("by tool %v of %d changed, %v of %d unconfirmed", rep.ByTool, rep.Changed, rep.UnconfirmedByTool, rep.Unconfirmed)
	}
	// Every rule of every listed change is in the by-rule total of its side, as often
	// as the listed changes name it at least, and exactly when all are listed.
	listed, unconfirmedListed := map[string]int{}, map[string]int{}
	unconfirmed := 0
	for _, c := range rep.Changes {
		for _, rule := range c.Rules {
			listed[rule]++
			if c.UncertainSince != nil {
				unconfirmedListed[rule]++
			}
		}
		if c.UncertainSince != nil {
			unconfirmed++
		}
	}
	all := rep.ChangesNotListed == 0
	for _, side := range []struct {
		counts Counts
		listed map[string]int
	}{{rep.ByRule, listed}, {rep.UnconfirmedByRule, unconfirmedListed}} {
		for rule, n := range side.listed {
			if got := side.counts.Of(rule); got < n || all && got != n {
				t.Fatalf("by rule %v: %s counted %d times; %d listed changes name it", side.counts, rule, got, n)
			}
		}
		if all && total(side.counts) != sumOf(side.listed) {
			t.Fatalf("by rule %v; the listed changes name %v", side.counts, side.listed)
		}
	}
	if all && unconfirmed != rep.Unconfirmed {
		t.Fatalf("%d changes listed as unconfirmed, %d counted", unconfirmed, rep.Unconfirmed)
	}
}

// sumOf is the sum of the counts in m.
func sumOf(m map[string]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}

// The ways a planned line says what it found of its session (planLog). In a local
// store's session a line says nothing or session_began alone.
const (
	planLocal       = iota // nothing: a local store's session, or an anchor using none
	planBegan              // session_began: in a shared store's session, with session_state from no version
	planCommitted          // session_state
	planRead               // session_state whose written is the version read
	planUnavailable        // session_unavailable
	planUnknown            // session_outcome_unknown
	planCorrection         // session_state and session_outcome_unknown from its written
	planMarkers
)

// The version a planned line of a shared store's session reads, by its third byte,
// after a commit whose outcome is unknown: the version that commit would have left
// (it reached the session), the one it read (it did not: the line settles that only
// when it changes the version), or one whose writer is in no log (nothing settles
// it). Without such a commit the first two are the session's version, the third is
// still a version no line wrote, and any other byte a version written before.
const (
	planReached = iota
	planNotReached
	planUnlogged
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

// planSession is what planLog keeps of one session: its state as the sidecar's store
// held it, its version, and the commit whose outcome is unknown that no later line
// has read past yet.
type planSession struct {
	rt      *engine.Runtime
	version string
	pending *planCommit
}

// planCommit is a commit whose outcome the sidecar did not know: the version it read,
// the one it would have left, and the occurrence whose changes it carries (nil for a
// correction, whose line was committed and evaluated against the session already).
type planCommit struct {
	read, written string
	occ           *engine.Occurrence
}

// planLog is the log a plan's bytes choose, its number of lines, and whether a
// sidecar could have written its lines in that order with every outcome settled
// (exact: the before side must reproduce them all). Each line takes six bytes
// (missing ones are 0), at most 64 lines: its session (s0 a local store's, s1 and s2 a
// shared one's) and occurrence; how it says what it found of its session (the plan
// constants); the version it read (planReached...) and whether it left a fresh one (0)
// or one written before; flags: its content mode (bits 0-1), a decision other than the
// rules' (bit 2, the decision in bits 3-4), another bundle (bits 5 and 6); and how far
// its time moves on (bits 0-1), back when bit 7 is set. A zero byte is always the
// sidecar's choice, so versions chain, each unknown outcome is settled by the next
// line of its session that reads a version, and decisions are the rules' own. Every
// line is one Read takes, made by decisionlog's own encoding.
func planLog(t *testing.T, prog *engine.Program, digest string, plan []byte) (out []byte, n int, exact bool) {
	t.Helper()
	next := func() int {
		if len(plan) == 0 {
			return 0
		}
		v := plan[0]
		plan = plan[1:]
		return int(v)
	}
	var written []string // every version a line wrote, or a commit would have
	fresh := func() string {
		written = append(written, fmt.Sprintf("v%d", len(written)+1))
		return written[len(written)-1]
	}
	sessions := map[string]*planSession{}
	origin := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	exact = true
	at := 0
	for ; len(plan) > 0 && n < 64; n++ {
		what, how, readBy, writeBy, flags, step := next(), next(), next(), next(), next(), next()
		session := fmt.Sprintf("s%d", what%3)
		shared := what%3 != 0
		occ, errs := occurrence.Decode(fmt.Appendf(nil, planBodies[what/3%len(planBodies)], session), occurrence.HostMembers)
		if errs != nil {
			t.Fatalf("a planned occurrence: %v", errs)
		}
		ps := sessions[session]
		if ps == nil {
			ps = &planSession{rt: newRuntime()}
			sessions[session] = ps
		}
		marker := how % planMarkers
		if !shared {
			marker = how % 2
		}
		// read is the version the line reads, settling the pending commit if any.
		read := func() string {
			p := ps.pending
			switch {
			case readBy == planUnlogged:
				exact = false
				ps.pending = nil
				return "u" + fresh()
			case p != nil && readBy == planReached:
				ps.pending = nil
				if p.occ != nil {
					prog.Evaluate(ps.rt, p.occ)
				}
				ps.version = p.written
			case p != nil && readBy == planNotReached:
				ps.pending = nil
				// Only a commit that changes the version it read proves the other did
				// not apply, and never the empty version, which comes back.
				if marker != planCommitted && marker != planCorrection || p.read == "" {
					exact = false
				}
			case readBy > planUnlogged:
				exact = false
				if len(written) > 0 {
					return written[readBy%len(written)]
				}
			}
			return ps.version
		}
		write := func(read string) string {
			if writeBy != 0 && len(written) > 0 {
				exact = false
				return newVersion(read, written[writeBy%len(written)])
			}
			return fresh()
		}
		var s decisionlog.Session
		switch marker {
		case planBegan:
			s.Began = true
			if shared {
				if ps.pending != nil {
					exact = false // the session began again before any line settled it
				}
				ps.version, ps.pending = "", nil
				s.State = &decisionlog.SessionState{Written: write("")}
			}
		case planCommitted:
			r := read()
			s.State = &decisionlog.SessionState{Read: r, Written: write(r)}
		case planRead:
			r := read()
			s.State = &decisionlog.SessionState{Read: r, Written: r}
		case planUnavailable:
			s.Unavailable = true
		case planUnknown:
			r := read()
			s.OutcomeUnknown = &decisionlog.SessionState{Read: r, Written: write(r)}
		case planCorrection:
			r := read()
			left := write(r)
			s.State = &decisionlog.SessionState{Read: r, Written: left}
			s.OutcomeUnknown = &decisionlog.SessionState{Read: left, Written: fresh()}
		case planLocal:
			if shared {
				exact = false // a shared store's session whose line may use it
			}
		}
		// As the sidecar says: a session whose commit read no version held no state.
		if s.State != nil && s.State.Read == "" || s.OutcomeUnknown != nil && s.OutcomeUnknown.Read == "" {
			s.Began = true
		}
		if s.Began {
			if ps.pending != nil && s.State == nil && s.OutcomeUnknown == nil {
				exact = false
			}
			ps.rt, ps.pending = newRuntime(), nil
		}
		var d *engine.Decision
		switch {
		case s.Unavailable:
			d = prog.Evaluate(withoutSession(session), occ)
		case s.OutcomeUnknown != nil && s.State == nil:
			d = prog.Evaluate(withoutSession(session), occ)
			ps.pending = &planCommit{read: s.OutcomeUnknown.Read, written: s.OutcomeUnknown.Written, occ: occ}
		default:
			d = prog.Evaluate(ps.rt, occ)
			if s.State != nil {
				ps.version = s.State.Written
			}
			if s.OutcomeUnknown != nil {
				ps.pending = &planCommit{read: s.OutcomeUnknown.Read, written: s.OutcomeUnknown.Written}
			}
		}
		if flags&4 != 0 {
			exact = false
			d = &engine.Decision{Decision: []string{"none", "warn", "nudge", "block"}[flags>>3&3], Rule: "acme.ops/COUNT_SHELL", Applied: d.Applied}
		}
		bundle := digest
		if flags&0x60 == 0x60 {
			exact = false
			bundle = "sha256:another"
		}
		if step&0x80 != 0 && step&3 != 0 {
			exact = false
			at -= step & 3
		} else {
			at += step & 3
		}
		rec := decisionlog.NewRecord(origin.Add(time.Duration(at)*time.Second), bundle, []decisionlog.ContentMode{decisionlog.ContentFull, decisionlog.ContentOmit, decisionlog.ContentHash, decisionlog.ContentFull}[flags&3], occ, d)
		rec.SessionBegan, rec.SessionState, rec.SessionUnavailable, rec.SessionOutcomeUnknown = s.Began, s.State, s.Unavailable, s.OutcomeUnknown
		line, err := decisionlog.MarshalLine(rec)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, line...)
	}
	for _, ps := range sessions {
		if ps.pending != nil {
			exact = false // no line settles it
		}
	}
	return out, n, exact
}

// newVersion is written, or another version when it is empty or read: a commit
// changes the session, so it leaves a new version.
func newVersion(read, written string) string {
	if written == "" || written == read {
		return read + "x"
	}
	return written
}
