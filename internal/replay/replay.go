// Package replay evaluates the occurrences of a decision log (internal/decisionlog)
// again under two rule sets, "before" and "after", and reports what a rule change
// would have changed (issue 17, `oarctl replay`). Each side gets a fresh runtime and
// sees every session's occurrences in the order they took effect in the sidecars (by
// the session versions the lines carry when sessions are shared in Redis, else by
// time; see inOrder), so counters, breakers and activity windows evolve as they did,
// starting again where the sidecar's store had forgotten a session (session_began).
// An occurrence the sidecar answered without its session (session_unavailable) is
// evaluated as it was, against a session that cannot be read or written, and leaves
// the session's state alone. One answered so after a commit whose outcome the sidecar
// did not know (session_outcome_unknown) is evaluated the same way, and its changes
// reach the session's state when the session's other lines prove the commit applied
// (see commitFates); when they tell neither way, the session's later lines are replayed
// as if it had not, and every difference they show is reported as one the log cannot
// confirm (Change.UncertainSince, ReasonUncertain), counted apart from the changes the
// log confirms (Report.Confirmed, Report.Unconfirmed), never as the rule change's
// alone.
//
// The before side is also checked against the log: replaying the rules that produced
// it must reproduce every logged decision. Where it cannot, the report says which
// occurrences and why: their content was not logged (omit and hash modes: the
// decision replays, with a placeholder of the content's length, but the transformed
// text cannot), they were logged by another bundle than the before side's, or the
// before rules decide otherwise (a line dropped, a session the sidecar evicted, a counter it refused past
// its bounds, a session shared with a replica whose log is missing, or simply other
// rules). The replay's own sessions are unbounded.
package replay

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"

	"github.com/oar-operator/oar-operator/internal/decisionlog"
	"github.com/oar-operator/oar-operator/internal/engine"
	"github.com/oar-operator/oar-operator/internal/sidecar/redisstore"
)

// Side is one rule set a log is replayed under.
type Side struct {
	Program *engine.Program
	// Digest is the digest of the bundle these rules make, when known: the log's
	// lines carry the digest that answered them. Empty: not compared.
	Digest string
}

// Options configure Run.
type Options struct {
	Before, After Side
	// MaxListed bounds the changes and mismatches listed one by one, and the lines
	// listed per reason an occurrence cannot be reproduced (DefaultMaxListed when
	// not positive); the report counts the rest.
	MaxListed int
}

// DefaultMaxListed is Options.MaxListed's default.
const DefaultMaxListed = 20

// The reasons a logged decision is not reproduced, the values of Mismatch.Reason and
// Unreproducible.Reason.
const (
	// ReasonContent: the content was not logged (omit or hash mode). The occurrence
	// is replayed with a placeholder of the logged length, which reproduces the
	// decision and the transform spans (the engine reads content only to transform
	// it) but not the transformed text.
	ReasonContent = "content not logged"
	// ReasonBundle: another bundle than the before side's answered the occurrence.
	ReasonBundle = "logged by another bundle"
	// ReasonDiffers: nothing in the line explains it; the before rules decide
	// otherwise.
	ReasonDiffers = "the before rules decide otherwise"
	// ReasonUncertain: the session's state is unknown since an earlier line whose
	// commit may or may not have been applied, and no line of the session says which
	// (session_outcome_unknown); the replay went on as if it had not been. The reason
	// goes on to name that line.
	ReasonUncertain = "the session's state is unknown"
)

// Outcome is what one side decided for an occurrence. A logged outcome has the
// members a line keeps: decision, rule, code, fired and the trace.
type Outcome struct {
	Decision string   `json:"decision"`
	Rule     string   `json:"rule,omitempty"`
	Code     string   `json:"code,omitempty"`
	Fired    []string `json:"fired"`
	// Applied is the engine's trace; compared, not reported.
	Applied           []string                 `json:"-"`
	OnFire            []string                 `json:"on_fire,omitempty"`
	Transforms        []engine.TransformRecord `json:"transforms,omitempty"`
	SkippedTransforms []engine.SkippedSpan     `json:"skipped_transforms,omitempty"`
	Advisories        []engine.Advisory        `json:"advisories,omitempty"`
	Copy              engine.Copy              `json:"copy,omitempty"`
	// Content is the content the decision delivers, transformed; compared, then
	// dropped, never reported (it can be sensitive, as long as a request, and without
	// the logged text it is the placeholder's).
	Content *string `json:"-"`
}

// The parts of a decision a Change names as differing (Change.Differs), in this order.
const (
	PartDecision          = "decision"
	PartRule              = "rule"
	PartCode              = "code"
	PartTrace             = "trace"
	PartOnFire            = "on_fire"
	PartTransforms        = "transforms"
	PartContent           = "content"
	PartSkippedTransforms = "skipped_transforms"
	PartAdvisories        = "advisories"
	PartCopy              = "copy"
)

// Change is an occurrence the two sides decide differently, in any part of the
// decision (see differs).
type Change struct {
	Log     string  `json:"log,omitempty"`
	Line    int     `json:"line"`
	Session string  `json:"session_id"`
	Anchor  string  `json:"anchor"`
	Tool    string  `json:"tool,omitempty"`
	Before  Outcome `json:"before"`
	After   Outcome `json:"after"`
	// Differs names the parts of the decision that differ (the Part constants).
	Differs []string `json:"differs"`
	// Rules are the rules responsible (see responsible).
	Rules []string `json:"rules"`
	// WithoutContent: the occurrence's content was not logged, so the change is what
	// the rules decide without it.
	WithoutContent bool `json:"without_content,omitempty"`
	// UncertainSince, when set, is the line since which the session's state is unknown
	// (ReasonUncertain): the change is what the rules decide if that line's commit was
	// not applied, which the log cannot confirm.
	UncertainSince *Place `json:"uncertain_since,omitempty"`
}

// Mismatch is an occurrence whose logged decision the before side does not reproduce.
type Mismatch struct {
	Log     string  `json:"log,omitempty"`
	Line    int     `json:"line"`
	Session string  `json:"session_id"`
	Anchor  string  `json:"anchor"`
	Tool    string  `json:"tool,omitempty"`
	Logged  Outcome `json:"logged"`
	Before  Outcome `json:"before"`
	Reason  string  `json:"reason"`
}

// Unreproducible groups the occurrences that cannot be replayed exactly, for one reason.
type Unreproducible struct {
	Reason string `json:"reason"`
	Count  int    `json:"count"`
	// Lines are the first of them (MaxListed).
	Lines []Place `json:"lines"`
}

// Place is a line of a log.
type Place struct {
	Log  string `json:"log,omitempty"`
	Line int    `json:"line"`
}

// String is "line N", and " of LOG" when the log is named.
func (p Place) String() string {
	if p.Log != "" {
		return fmt.Sprintf("line %d of %s", p.Line, p.Log)
	}
	return fmt.Sprintf("line %d", p.Line)
}

// Count is a number of occurrences under a name.
type Count struct {
	Name  string `json:"name"`
	Count int    `json:"count"`
}

// Counts is a table of the report: numbers of occurrences by name.
type Counts []Count

// Of is the count of name, 0 when the table has no row of it.
func (cs Counts) Of(name string) int {
	for _, c := range cs {
		if c.Name == name {
			return c.Count
		}
	}
	return 0
}

// Report is what Run found.
type Report struct {
	// BeforeBundle and AfterBundle are the sides' digests, when known.
	BeforeBundle string `json:"before_bundle,omitempty"`
	AfterBundle  string `json:"after_bundle,omitempty"`
	Occurrences  int    `json:"occurrences"`
	Sessions     int    `json:"sessions"`
	// Bundles counts the occurrences each logged bundle digest answered.
	Bundles Counts `json:"bundles"`
	// Before and After count the decisions of each side by effect.
	Before Counts `json:"before"`
	After  Counts `json:"after"`
	// Changed counts the occurrences whose decision differs in any part: effect,
	// deciding rule, code, trace, on_fire, transforms, the content delivered, skipped
	// transforms, advisories or copy, whether the log confirms the change or not.
	// ByRule and ByTool count them by responsible rule and by tool.
	Changed int    `json:"changed"`
	ByRule  Counts `json:"by_rule"`
	ByTool  Counts `json:"by_tool"`
	// Confirmed counts the changes the log confirms, what the rule change does;
	// Unconfirmed those it cannot (Change.UncertainSince): replayed against a session
	// whose state is unknown, they may be the rule change's or the unknown state's.
	// UnconfirmedByRule and UnconfirmedByTool count the unconfirmed ones by responsible
	// rule and by tool.
	Confirmed         int    `json:"confirmed"`
	Unconfirmed       int    `json:"unconfirmed"`
	UnconfirmedByRule Counts `json:"unconfirmed_by_rule"`
	UnconfirmedByTool Counts `json:"unconfirmed_by_tool"`
	// Changes lists the changes, confirmed or not, in replay order (MaxListed).
	Changes []Change `json:"changes"`
	// ChangesNotListed is Changed minus the changes listed.
	ChangesNotListed int `json:"changes_not_listed"`
	// Reproduced counts the logged decisions the before side reproduced (decision,
	// deciding rule and trace); Mismatched those it did not, listed in Mismatches.
	Reproduced          int              `json:"reproduced"`
	Mismatched          int              `json:"mismatched"`
	Mismatches          []Mismatch       `json:"mismatches"`
	MismatchesNotListed int              `json:"mismatches_not_listed"`
	Unreproducible      []Unreproducible `json:"unreproducible"`
}

// effectOrder lists effects from least to most severe, the order of the tables.
var effectOrder = []string{"none", "warn", "nudge", "transform", "block"}

// Run replays the log's entries under both sides.
func Run(entries []decisionlog.Entry, opt Options) *Report {
	if opt.MaxListed <= 0 {
		opt.MaxListed = DefaultMaxListed
	}
	r := &runner{opt: opt,
		rep:    &Report{Changes: []Change{}, Mismatches: []Mismatch{}, Unreproducible: []Unreproducible{}},
		counts: map[string]map[string]int{}, unrepro: map[string]*Unreproducible{},
		modified: modifiedRules(opt.Before.Program, opt.After.Program)}
	sessions := bySession(entries)
	r.rep.Sessions = len(sessions)
	for _, s := range sessions {
		r.fates = commitFates(s)
		// A session's state is its own, so each session starts from none, and starts
		// again where a line found it holding none in the sidecar's store
		// (session_began: new, or forgotten: idle, evicted, expired), which also ends
		// any doubt about it.
		for i, e := range inOrder(s, r.fates) {
			if i == 0 || e.Record.SessionBegan {
				r.before, r.after, r.uncertain = newRuntime(), newRuntime(), nil
			}
			r.replay(e)
		}
	}
	r.finish()
	return r.rep
}

// bySession groups entries by session, sessions in the order they first appear and
// each session's entries in the order of the logs; logs of several replicas can be
// read together.
func bySession(entries []decisionlog.Entry) [][]decisionlog.Entry {
	index := map[string]int{}
	var out [][]decisionlog.Entry
	for _, e := range entries {
		i, ok := index[e.Occ.SessionID]
		if !ok {
			i = len(out)
			index[e.Occ.SessionID] = i
			out = append(out, nil)
		}
		out[i] = append(out[i], e)
	}
	return out
}

// fate is what a session's lines prove of a commit whose outcome the sidecar did not
// know (decisionlog.Record.SessionOutcomeUnknown).
type fate int

const (
	// fateUnknown: no line says whether the commit was applied.
	fateUnknown fate = iota
	// fateApplied: a line read the version the commit would have left.
	fateApplied
	// fateNotApplied: another commit changed the version it read.
	fateNotApplied
)

// commitFates tells what one session's lines prove of each of its commits whose
// outcome was unknown, by the version the commit would have left. A commit applies
// only at the version it read and leaves a new random version, so a line that read
// the version it would have left proves it applied, and another commit that changed
// the version it read proves it did not: the two could not both apply. That holds of
// every version but the empty one, which a session that expires has again.
func commitFates(s []decisionlog.Entry) map[string]fate {
	read := map[string]bool{}
	// changedTo maps a version to the versions commits left it for, each once: lines
	// whose commits left it for one version repeat it, and a list of the repeats made
	// the check below cost the square of the session's lines.
	changedTo := map[string]map[string]bool{}
	leftFor := func(read, written string) {
		if changedTo[read] == nil {
			changedTo[read] = map[string]bool{}
		}
		changedTo[read][written] = true
	}
	for _, e := range s {
		if st := e.Record.SessionState; st != nil {
			read[st.Read] = true
			if st.Written != st.Read {
				leftFor(st.Read, st.Written)
			}
		}
		if u := e.Record.SessionOutcomeUnknown; u != nil {
			read[u.Read] = true
		}
	}
	fates := map[string]fate{}
	for _, e := range s {
		if u := e.Record.SessionOutcomeUnknown; u != nil && read[u.Written] {
			fates[u.Written] = fateApplied
			leftFor(u.Read, u.Written)
		}
	}
	for _, e := range s {
		u := e.Record.SessionOutcomeUnknown
		if u == nil || fates[u.Written] == fateApplied || u.Read == "" {
			continue
		}
		// Another commit changed the version it read: one left it for another version.
		if to := changedTo[u.Read]; len(to) > 1 || len(to) == 1 && !to[u.Written] {
			fates[u.Written] = fateNotApplied
		}
	}
	return fates
}

// changesIn returns the versions a line read and left when its changes are in the
// session: a committed line's (session_state), or those of a line whose commit's
// outcome the sidecar did not know and the other lines prove applied. Else nil.
func changesIn(e decisionlog.Entry, fates map[string]fate) *decisionlog.SessionState {
	u, st := e.Record.SessionOutcomeUnknown, e.Record.SessionState
	switch {
	case u == nil || fates[u.Written] != fateApplied:
		return st
	case st != nil:
		// A correction replaced the committed changes: the line read st.Read and
		// left the correction's version.
		return &decisionlog.SessionState{Read: st.Read, Written: u.Written}
	}
	return u
}

// inOrder orders one session's entries as they took effect. The lines whose changes
// are in the session's versions in the shared store (changesIn: session_state, or a
// commit whose outcome was unknown and is proved applied) are in the order those
// versions fix across replicas, whose clocks differ (byVersions). A line without them
// read and changed no session state (no rule at its anchor uses any, or it was
// answered without its session and its changes, if any, are not known to be in it), so
// its place among the others changes nothing the logged rules decide; it is placed by
// time. When no line carries versions, or they do not make one order, the lines are in
// time order, stable so one log's order stands where times tie (a replica logs a
// session's lines in the order they took effect, under the session's lock).
func inOrder(s []decisionlog.Entry, fates map[string]fate) []decisionlog.Entry {
	slices.SortStableFunc(s, func(a, b decisionlog.Entry) int { return a.Record.Time.Compare(b.Record.Time) })
	var versioned, other []decisionlog.Entry
	var states []decisionlog.SessionState
	for _, e := range s {
		if st := changesIn(e, fates); st != nil {
			versioned, states = append(versioned, e), append(states, *st)
		} else {
			other = append(other, e)
		}
	}
	if len(versioned) == 0 {
		return s
	}
	ordered, ok := byVersions(versioned, states)
	if !ok {
		return s
	}
	return mergeByTime(ordered, other)
}

// mergeByTime places the entries of other, in time order, among those of ordered: each
// before the first entry of ordered that is later than it.
func mergeByTime(ordered, other []decisionlog.Entry) []decisionlog.Entry {
	out := make([]decisionlog.Entry, 0, len(ordered)+len(other))
	for len(ordered) > 0 && len(other) > 0 {
		if other[0].Record.Time.Before(ordered[0].Record.Time) {
			out, other = append(out, other[0]), other[1:]
		} else {
			out, ordered = append(out, ordered[0]), ordered[1:]
		}
	}
	return append(append(out, ordered...), other...)
}

// byVersions orders a session's entries, given in time order, as their versions chain:
// each commit replaces the session's version, and applies only at the version it read,
// so the line that wrote a version comes before the lines that read it and changed
// nothing (read == written), which come before the one line that changed it. A chain
// starts at a version no line wrote: the empty version (the session did not exist:
// new, or expired and recreated, so several lines may change from it, each starting
// its own chain, and a line that read it and changed nothing is a chain of its own),
// or one whose writer is not in the logs. Chains, and the readers of one version, are
// in time order. states[i] are the versions s[i] read and left. ok is false when they
// do not make one order: two lines changing one version, two writing one, a cycle, a
// line no chain reaches.
func byVersions(s []decisionlog.Entry, states []decisionlog.SessionState) (ordered []decisionlog.Entry, ok bool) {
	writer := map[string]int{}     // a version -> the line that wrote it
	changers := map[string][]int{} // a version -> the lines that changed it
	readers := map[string][]int{}  // a version -> the lines that read it and changed nothing
	for i, st := range states {
		if st.Read == st.Written {
			readers[st.Read] = append(readers[st.Read], i)
			continue
		}
		if _, dup := writer[st.Written]; dup || st.Written == "" {
			return nil, false
		}
		writer[st.Written] = i
		changers[st.Read] = append(changers[st.Read], i)
		if st.Read != "" && len(changers[st.Read]) > 1 {
			return nil, false
		}
	}
	// follow extends chain from version v: v's readers, then the line that changed v,
	// then the same from the version that line left, and so on (bounded, in case).
	follow := func(chain []int, v string) []int {
		for len(chain) <= len(s) {
			chain = append(chain, readers[v]...)
			next := changers[v]
			if len(next) == 0 {
				break
			}
			chain = append(chain, next[0])
			v = states[next[0]].Written
		}
		return chain
	}
	var chains [][]int
	for _, i := range readers[""] {
		chains = append(chains, []int{i})
	}
	for _, i := range changers[""] {
		chains = append(chains, follow([]int{i}, states[i].Written))
	}
	started := map[string]bool{}
	for _, st := range states {
		v := st.Read
		if _, written := writer[v]; v == "" || written || started[v] {
			continue
		}
		started[v] = true
		chains = append(chains, follow(nil, v))
	}
	// Chains in the time order of their first lines.
	slices.SortStableFunc(chains, func(a, b []int) int { return a[0] - b[0] })
	placed := make([]bool, len(s))
	ordered = make([]decisionlog.Entry, 0, len(s))
	for _, chain := range chains {
		for _, i := range chain {
			if placed[i] {
				return nil, false
			}
			placed[i] = true
			ordered = append(ordered, s[i])
		}
	}
	if len(ordered) != len(s) {
		return nil, false
	}
	return ordered, true
}

type runner struct {
	opt           Options
	before, after *engine.Runtime
	// fates are the current session's commitFates; uncertain, when set, the line since
	// which its state is unknown (ReasonUncertain).
	fates     map[string]fate
	uncertain *Place
	rep       *Report
	// counts holds the tables by name: "before", "after", "rule", "tool", "unconfirmed
	// rule", "unconfirmed tool", "bundle".
	counts  map[string]map[string]int
	unrepro map[string]*Unreproducible
	// modified names the rules the change touches (modifiedRules).
	modified map[string]bool
	// placeholder stands for content that was not logged: a line's is its first
	// content.length bytes, so lines share one string of the longest length seen
	// instead of each making its own (a length may be up to 64 Mi).
	placeholder string
}

func (r *runner) count(table, name string) {
	m := r.counts[table]
	if m == nil {
		m = map[string]int{}
		r.counts[table] = m
	}
	m[name]++
}

// discard is an event sink that keeps nothing: a replay publishes no events.
type discard struct{}

func (discard) Publish(engine.Event) error { return nil }

// newRuntime is a side's runtime: in-memory sessions, no events, and the detectors
// the sidecar registers.
func newRuntime() *engine.Runtime {
	return &engine.Runtime{Counters: engine.NewMemoryCounters(), Activity: engine.NewMemoryActivity(),
		Events: discard{}, Detectors: engine.ReservedDetectors()}
}

// errSessionUnavailable is what reading or writing the session fails with in the
// replay of an occurrence the sidecar answered without its session.
var errSessionUnavailable = errors.New("the session was unavailable when this occurrence was answered (session_unavailable)")

// withoutSession is the runtime of an occurrence the sidecar answered without its
// session (decisionlog.Record.SessionUnavailable): the sidecar's own stand-in for a
// store it could not use, on which every read and write of the session fails, so
// each rule needing it takes its on_error as it did, and nothing the occurrence does
// reaches the session's state the later lines replay against.
func withoutSession(session string) *engine.Runtime {
	snap := redisstore.Unavailable(session, errSessionUnavailable)
	return &engine.Runtime{Counters: snap, Activity: snap, Events: discard{}, Detectors: engine.ReservedDetectors()}
}

func evaluate(p *engine.Program, rt *engine.Runtime, occ *engine.Occurrence) Outcome {
	d := p.Evaluate(rt, occ)
	return Outcome{Decision: d.Decision, Rule: d.Rule, Code: d.Code, Fired: fired(d.Applied), Applied: d.Applied,
		OnFire: d.OnFire, Transforms: d.Transforms, SkippedTransforms: d.SkippedTransforms, Advisories: d.Advisories, Copy: d.Copy, Content: d.Content}
}

func fired(applied []string) []string {
	out := []string{}
	for _, a := range applied {
		if rule, ok := strings.CutSuffix(a, ":fired"); ok {
			out = append(out, rule)
		}
	}
	return out
}

func (r *runner) replay(e decisionlog.Entry) {
	rec := &e.Record
	r.rep.Occurrences++
	r.count("bundle", rec.Bundle)
	occ := e.Occ
	if !rec.Reproducible() {
		stand := *occ
		if len(r.placeholder) < rec.Content.Length {
			r.placeholder = strings.Repeat("x", rec.Content.Length)
		}
		stand.Content, stand.HasContent = r.placeholder[:rec.Content.Length], true
		occ = &stand
		r.unreproducible(fmt.Sprintf("%s (%s mode): replayed with a placeholder of its length, so decisions and transform spans reproduce but the transformed text does not", ReasonContent, rec.Content.Mode), Place{e.Source, e.Line})
	}
	rtBefore, rtAfter := r.before, r.after
	var uncertain *Place
	switch {
	case rec.SessionUnavailable:
		rtBefore, rtAfter = withoutSession(occ.SessionID), withoutSession(occ.SessionID)
	case rec.SessionOutcomeUnknown != nil && rec.SessionState == nil:
		rtBefore, rtAfter = withoutSession(occ.SessionID), withoutSession(occ.SessionID)
		r.commitOf(e, occ)
	default:
		uncertain = r.uncertainAt(occ.Anchor)
		defer r.correctionOf(e)
	}
	if uncertain != nil {
		r.unreproducible(fmt.Sprintf("%s since %s: its commit may or may not have been applied and no line of the session says which, so the later lines that use the session were replayed as if it had not been", ReasonUncertain, uncertain), Place{e.Source, e.Line})
	}
	before := evaluate(r.opt.Before.Program, rtBefore, occ)
	after := evaluate(r.opt.After.Program, rtAfter, occ)
	r.count("before", before.Decision)
	r.count("after", after.Decision)
	tool := ""
	if e.Occ.ToolCall != nil {
		tool = e.Occ.ToolCall.Name
	}

	parts := differs(before, after)
	// The content delivered is compared, never reported: the outcomes the report keeps
	// drop it, as it can be as long as a request or a logged content.length.
	before.Content, after.Content = nil, nil

	logged := Outcome{Decision: rec.Decision, Rule: rec.Rule, Code: rec.Code, Fired: rec.Fired, Applied: rec.Applied}
	if same(logged, before) {
		r.rep.Reproduced++
	} else {
		r.rep.Mismatched++
		if len(r.rep.Mismatches) < r.opt.MaxListed {
			r.rep.Mismatches = append(r.rep.Mismatches, Mismatch{Log: e.Source, Line: e.Line, Session: rec.Session, Anchor: rec.Anchor, Tool: tool,
				Logged: logged, Before: before, Reason: r.reason(rec, uncertain)})
		}
	}

	if len(parts) == 0 {
		return
	}
	c := Change{Log: e.Source, Line: e.Line, Session: rec.Session, Anchor: rec.Anchor, Tool: tool, Before: before, After: after,
		Differs: parts, Rules: responsible(before, after, r.modified), WithoutContent: !rec.Reproducible(), UncertainSince: uncertain}
	tables := []string{""}
	r.rep.Changed++
	if uncertain != nil {
		r.rep.Unconfirmed++
		tables = append(tables, "unconfirmed ")
	} else {
		r.rep.Confirmed++
	}
	for _, table := range tables {
		for _, rule := range c.Rules {
			r.count(table+"rule", rule)
		}
		r.count(table+"tool", cmp.Or(tool, "(no tool call)"))
	}
	if len(r.rep.Changes) < r.opt.MaxListed {
		r.rep.Changes = append(r.rep.Changes, c)
	}
}

// commitOf replays the commit of a line whose commit's outcome the sidecar did not
// know, as the session's other lines prove it (commitFates): applied, its changes
// reach the session's state, each side's evaluation against the session as the line
// read it; not applied, nothing does; unproved, nothing does either, and the session's
// state is unknown from here on.
func (r *runner) commitOf(e decisionlog.Entry, occ *engine.Occurrence) {
	switch r.fates[e.Record.SessionOutcomeUnknown.Written] {
	case fateApplied:
		r.opt.Before.Program.Evaluate(r.before, occ)
		r.opt.After.Program.Evaluate(r.after, occ)
	case fateUnknown:
		if r.uncertain == nil {
			r.uncertain = &Place{e.Source, e.Line}
		}
	}
}

// correctionOf follows a committed line whose correction's outcome the sidecar did
// not know (session_state with session_outcome_unknown): the stream refused one of its
// events, which the log does not record, so a correction proved applied cannot be
// replayed, and one unproved may have been applied. Either way the session's state is
// unknown from after the line on; only a correction proved not applied leaves the
// committed changes, which the line's replay made, in place.
func (r *runner) correctionOf(e decisionlog.Entry) {
	u := e.Record.SessionOutcomeUnknown
	if u == nil || r.fates[u.Written] == fateNotApplied || r.uncertain != nil {
		return
	}
	r.uncertain = &Place{e.Source, e.Line}
}

// uncertainAt is the line since which the session's state is unknown, when an
// occurrence at anchor replays against it: either side has rules there that read or
// change session state. Else nil.
func (r *runner) uncertainAt(anchor string) *Place {
	if r.uncertain != nil && (r.opt.Before.Program.UsesSession(anchor) || r.opt.After.Program.UsesSession(anchor)) {
		return r.uncertain
	}
	return nil
}

// reason explains a mismatch by what the line says of itself, or by the line since
// which its session's state is unknown (uncertain, when set).
func (r *runner) reason(rec *decisionlog.Record, uncertain *Place) string {
	switch {
	case !rec.Reproducible():
		return ReasonContent
	case r.opt.Before.Digest != "" && rec.Bundle != r.opt.Before.Digest:
		return fmt.Sprintf("%s (%s; the before side is %s)", ReasonBundle, rec.Bundle, r.opt.Before.Digest)
	case uncertain != nil:
		return fmt.Sprintf("%s since %s, whose commit may or may not have been applied", ReasonUncertain, uncertain)
	}
	return ReasonDiffers
}

func (r *runner) unreproducible(reason string, at Place) {
	u := r.unrepro[reason]
	if u == nil {
		u = &Unreproducible{Reason: reason, Lines: []Place{}}
		r.unrepro[reason] = u
	}
	u.Count++
	if len(u.Lines) < r.opt.MaxListed {
		u.Lines = append(u.Lines, at)
	}
}

// same reports whether two outcomes are one decision: effect, deciding rule and trace.
func same(a, b Outcome) bool {
	return a.Decision == b.Decision && a.Rule == b.Rule && a.Code == b.Code && slices.Equal(a.Applied, b.Applied)
}

// differs names the parts in which two outcomes differ; none when they are one
// decision.
func differs(a, b Outcome) []string {
	var out []string
	for _, p := range []struct {
		name string
		same bool
	}{
		{PartDecision, a.Decision == b.Decision},
		{PartRule, a.Rule == b.Rule},
		{PartCode, a.Code == b.Code},
		{PartTrace, slices.Equal(a.Applied, b.Applied)},
		{PartOnFire, slices.Equal(a.OnFire, b.OnFire)},
		{PartTransforms, slices.Equal(a.Transforms, b.Transforms)},
		{PartContent, (a.Content == nil) == (b.Content == nil) && (a.Content == nil || *a.Content == *b.Content)},
		{PartSkippedTransforms, slices.Equal(a.SkippedTransforms, b.SkippedTransforms)},
		{PartAdvisories, slices.EqualFunc(a.Advisories, b.Advisories, func(x, y engine.Advisory) bool {
			return x.Code == y.Code && x.Rule == y.Rule && slices.Equal(x.Copy, y.Copy)
		})},
		{PartCopy, slices.Equal(a.Copy, b.Copy)},
	} {
		if !p.same {
			out = append(out, p.name)
		}
	}
	return out
}

// responsible lists, sorted, the rules a change is due to. The candidates are the
// deciding rule of either side, every rule whose trace entry differs between them
// (fired on one side and passed, errored, suppressed or not reached on the other),
// every rule whose transforms, skipped spans or advisories differ, and, when on_fire
// differs, every rule that fired; of those, the rules the change modified are
// responsible when there are any (a rule that merely lost the decision to a changed
// one is not), and all of them otherwise (the change came through session state: a
// counter or the activity window).
func responsible(before, after Outcome, modified map[string]bool) []string {
	set := map[string]bool{}
	for _, rule := range []string{before.Rule, after.Rule} {
		if rule != "" {
			set[rule] = true
		}
	}
	byRule(set, before.Transforms, after.Transforms, func(t engine.TransformRecord) string { return t.Rule })
	byRule(set, before.SkippedTransforms, after.SkippedTransforms, func(s engine.SkippedSpan) string { return s.Rule })
	byRule(set, before.Advisories, after.Advisories, func(a engine.Advisory) string { return a.Rule })
	if !slices.Equal(before.OnFire, after.OnFire) {
		for _, rule := range append(slices.Clone(before.Fired), after.Fired...) {
			set[rule] = true
		}
	}
	b, a := traceOf(before.Applied), traceOf(after.Applied)
	for rule, st := range b {
		if a[rule] != st {
			set[rule] = true
		}
	}
	for rule, st := range a {
		if b[rule] != st {
			set[rule] = true
		}
	}
	changed := map[string]bool{}
	for rule := range set {
		if modified[rule] {
			changed[rule] = true
		}
	}
	if len(changed) > 0 {
		set = changed
	}
	return slices.Sorted(maps.Keys(set))
}

// byRule adds to set the rules whose items differ between two lists: each rule's
// items, in order, on one side and the other.
func byRule[T any](set map[string]bool, before, after []T, rule func(T) string) {
	group := func(list []T) map[string][]T {
		m := map[string][]T{}
		for _, x := range list {
			m[rule(x)] = append(m[rule(x)], x)
		}
		return m
	}
	b, a := group(before), group(after)
	for _, m := range []map[string][]T{b, a} {
		for r := range m {
			if !reflect.DeepEqual(b[r], a[r]) {
				set[r] = true
			}
		}
	}
}

// traceOf maps each rule of a trace to its outcome.
func traceOf(applied []string) map[string]string {
	m := make(map[string]string, len(applied))
	for _, entry := range applied {
		if i := strings.LastIndexByte(entry, ':'); i > 0 {
			m[entry[:i]] = entry[i+1:]
		}
	}
	return m
}

// modifiedRules names the rules whose document or enforcement differs between the two
// programs, or that only one of them has.
func modifiedRules(before, after *engine.Program) map[string]bool {
	out := map[string]bool{}
	rules := func(p *engine.Program) map[string]*engine.Rule {
		m := map[string]*engine.Rule{}
		for _, r := range p.RuleSet().Rules {
			m[r.QID] = r
		}
		return m
	}
	b, a := rules(before), rules(after)
	for qid, rb := range b {
		ra, ok := a[qid]
		if !ok || !reflect.DeepEqual(rb.Document(), ra.Document()) || before.Enforcement(rb.Index) != after.Enforcement(ra.Index) {
			out[qid] = true
		}
	}
	for qid := range a {
		if _, ok := b[qid]; !ok {
			out[qid] = true
		}
	}
	return out
}

func (r *runner) finish() {
	rep := r.rep
	rep.BeforeBundle, rep.AfterBundle = r.opt.Before.Digest, r.opt.After.Digest
	rep.Before = effects(r.counts["before"])
	rep.After = effects(r.counts["after"])
	rep.ByRule = byCount(r.counts["rule"])
	rep.ByTool = byCount(r.counts["tool"])
	rep.UnconfirmedByRule = byCount(r.counts["unconfirmed rule"])
	rep.UnconfirmedByTool = byCount(r.counts["unconfirmed tool"])
	rep.Bundles = byCount(r.counts["bundle"])
	rep.ChangesNotListed = rep.Changed - len(rep.Changes)
	rep.MismatchesNotListed = rep.Mismatched - len(rep.Mismatches)
	for _, reason := range slices.Sorted(maps.Keys(r.unrepro)) {
		rep.Unreproducible = append(rep.Unreproducible, *r.unrepro[reason])
	}
}

// effects lists every effect, in severity order, then any other decision (an error).
func effects(m map[string]int) Counts {
	out := Counts{}
	for _, e := range effectOrder {
		out = append(out, Count{e, m[e]})
	}
	for _, k := range slices.Sorted(maps.Keys(m)) {
		if !slices.Contains(effectOrder, k) {
			out = append(out, Count{k, m[k]})
		}
	}
	return out
}

// byCount lists a table most first, ties by name.
func byCount(m map[string]int) Counts {
	out := Counts{}
	for k, n := range m {
		out = append(out, Count{k, n})
	}
	slices.SortFunc(out, func(a, b Count) int { return cmp.Or(b.Count-a.Count, strings.Compare(a.Name, b.Name)) })
	return out
}
