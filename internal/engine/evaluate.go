package engine

import (
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/oar-operator/oar-operator/internal/engine/codepoint"
	"github.com/oar-operator/oar-operator/internal/engine/diag"
	"github.com/oar-operator/oar-operator/internal/engine/toolobs"
	"github.com/oar-operator/oar-operator/internal/engine/transform"
	"github.com/oar-operator/oar-operator/internal/engine/types"
)

// ToolCall is the call a tool occurrence carries ([OAR-CONF-40]).
type ToolCall struct {
	Name      string         `json:"name"`
	Arguments map[string]any `json:"arguments"`
}

// Occurrence is one anchor occurrence as the host sees it.
type Occurrence struct {
	// Anchor is the host-local anchor identifier ([OAR-CONF-29]).
	Anchor    string
	SessionID string
	// Facts are what the host observed before evaluation began; numbers as json.Number.
	Facts map[string]any
	// DetectorFacts are what detector://fixture reports when invoked ([OAR-CONF-25]).
	DetectorFacts map[string]any
	// RecentActivity, when HasRecentActivity, replaces the session's window for this
	// occurrence only ([OAR-CONF-40]).
	RecentActivity    []string
	HasRecentActivity bool
	// Content is the content at the occurrence ([OAR-CONF-34]).
	Content    string
	HasContent bool
	ToolCall   *ToolCall
}

// Runtime is the mutable world a program evaluates in: per-session counters and
// activity, the event stream, and the detectors the host registered.
type Runtime struct {
	Counters  CounterStore
	Events    EventSink
	Activity  ActivityStore
	Detectors map[string]Detector
}

// NewMemoryRuntime returns a runtime with in-memory stores and the reserved detectors.
func NewMemoryRuntime() *Runtime {
	return &Runtime{
		Counters:  NewMemoryCounters(),
		Events:    &EventLog{},
		Activity:  NewMemoryActivity(),
		Detectors: ReservedDetectors(),
	}
}

// Decision is what an occurrence resolved to, in the shapes of section 10.2. OnFire
// names the applied side-effects by action, in application order ([OAR-CONF-21]).
type Decision struct {
	Decision          string            `json:"decision"`
	Code              string            `json:"code,omitempty"`
	Rule              string            `json:"rule,omitempty"`
	Copy              Copy              `json:"copy,omitempty"`
	Advisories        []Advisory        `json:"advisories"`
	Transforms        []TransformRecord `json:"transforms"`
	Content           *string           `json:"content,omitempty"`
	Applied           []string          `json:"applied"`
	OnFire            []string          `json:"on_fire"`
	Events            []Event           `json:"events"`
	SkippedTransforms []SkippedSpan     `json:"skipped_transforms"`
	// Counters holds every counter this occurrence changed, with its value after it
	// ([OAR-CONF-21], [OAR-CONF-33]).
	Counters Counters `json:"counters,omitempty"`
	// Failures records every rule that could not be evaluated ([OAR-OPS-4]).
	Failures []Failure `json:"failures,omitempty"`
}

// Advisory is one item of advisories ([OAR-EVAL-20]).
type Advisory struct {
	Code string `json:"code"`
	Rule string `json:"rule"`
	Copy Copy   `json:"copy,omitempty"`
}

// TransformRecord is one accumulated transform ([OAR-OPS-15]).
type TransformRecord struct {
	Rule        string `json:"rule"`
	Action      string `json:"action"`
	Target      string `json:"target"`
	Replacement string `json:"replacement"`
}

// SkippedSpan is one entry of skipped_transforms ([OAR-OPS-23]).
type SkippedSpan struct {
	Rule   string `json:"rule"`
	Start  int    `json:"start"`
	End    int    `json:"end"`
	Reason string `json:"reason"`
}

// Failure records a rule that could not be evaluated and why.
type Failure struct {
	Rule   string `json:"rule"`
	Clause string `json:"clause,omitempty"`
	Error  string `json:"error"`
}

// ProviderError is a fact provider, detector or side-effect failure: the rule cannot be
// evaluated ([OAR-OPS-3]).
type ProviderError struct {
	Clause string
	Fact   string
	Err    error
}

func (e *ProviderError) Error() string {
	if e.Fact == "" {
		return fmt.Sprintf("[%s] %v", e.Clause, e.Err)
	}
	return fmt.Sprintf("[%s] %s: %v", e.Clause, e.Fact, e.Err)
}

func (e *ProviderError) Unwrap() error { return e.Err }

// slot caches one fact's value for the occurrence, or for a function whether the host
// supplied its result (supplied) and which; gen tells a fresh value from a stale one.
type slot struct {
	gen      uint64
	v        types.Value
	err      error
	supplied bool
}

// evalState is the per-occurrence working state; it implements expr.Env and
// copytext.FactEnv. Pooled so an evaluation allocates little.
type evalState struct {
	p       *Program
	rt      *Runtime
	occ     *Occurrence
	buf     *DecisionBuffer
	gen     uint64
	slots   []slot
	anchor  string
	window  []string
	cur     *Rule
	finding *Findings
	// findings holds what the detector of the rule being evaluated reported; finding
	// points here while that rule is evaluated.
	findings Findings
	// unobserved is in force (s.finding points at it) while the copy of a detector rule
	// whose detector produced nothing is rendered for its on_error block: its detector's
	// observations are unavailable, failing with unobservedErr rather than reading as
	// their zero values ([OAR-COPY-11]).
	unobserved    Findings
	unobservedErr error
	// ctrs holds every counter read or written at this occurrence: its value before any
	// side-effect of the occurrence (the snapshot of [OAR-FIRE-6]) and its value after.
	// ruleCtrs finds a rule's counters in it; the session is the occurrence's, so a rule's
	// counters differ only by scope value.
	ctrs     []counterSlot
	ruleCtrs []ruleCounters
	nChanged int
	order    []int
	orderSc  orderScratch
	sel      []int
	selErr   map[int]error
	content  int // code-point length, or -1 before first use
	// copyBuf holds the copy of every rule rendered at this occurrence, one member
	// after the other; copyMembers locates each member in it. copyText is copyBuf as
	// one string, made once when a decision carries copy, so every rendered member is
	// a substring of it.
	copyBuf     []byte
	copyMembers []renderedMember
	copyText    string
	fpBuf       []byte
	// keyBuf holds the report keys of the scoped counters a decision reports, one
	// after the other; keyEnds locates each, and its place in the report.
	keyBuf  []byte
	keyEnds []scopedKey
	// calls keeps, by the slot the rule set gave it, the result of an observation
	// function applied to a literal argument, for every rule calling it so (Call).
	calls []slot
	// outcomes keeps, by the slot the program gave it, the outcome of a condition
	// rules share (Program.outcomeSlots).
	outcomes []outcome
	// lists holds the list facts converted at this occurrence.
	lists listStore
	// contrib holds the transform, nudge and warn contributions to a decision.
	contrib [3][]contribution
	// trList holds the transforms a decision applies.
	trList []transform.Transform
	// suppressed marks, by rule index, the rules a fired rule suppressed at this
	// occurrence ([OAR-EVAL-18]); suppressedList names them, to unmark them after.
	suppressed     []bool
	suppressedList []int

	// windowErr is why the session's window could not be read (FallibleActivity).
	windowErr error
}

// counterSlot is one counter at an occurrence. next is the position in evalState.ctrs
// of the same rule's counter under another scope value, or -1.
type counterSlot struct {
	key           CounterKey
	before, after Counts
	// err is the store's failure to read the counter: every later read or write of it
	// at the occurrence fails the same way rather than asking the store again.
	err     error
	changed bool
	next    int
}

// ruleCounters locates a rule's counters at the occurrence: first is the position in
// evalState.ctrs of the last one added, valid only when gen is the occurrence's.
type ruleCounters struct {
	gen   uint64
	first int
}

// renderedMember is one rendered member of a rule's copy: its name and its bytes in
// evalState.copyBuf.
type renderedMember struct {
	name       string
	start, end int
}

// copySpan is a rule's rendered copy: members [from, to) of evalState.copyMembers,
// empty when the rule has no copy or its copy was omitted.
type copySpan struct {
	from, to int
	// late marks a copy not rendered yet, which checkCopy found will render: decide
	// and advisories render it when the decision carries it (renderLate).
	late bool
}

var statePool = sync.Pool{New: func() any { return &evalState{} }}

// Evaluate resolves one occurrence (sections 4, 6, 7 and the runner algorithm of 10.1).
// An occurrence at an anchor no rule resolves to, declared or not, selects nothing
// ([OAR-SEL-7]): the occurrence's anchor is the host's own word, never resolved.
// Whatever the runtime's stores and detectors report, the result is a decision: a rule
// that cannot be evaluated is recorded in its failures and handled by its on_error
// ([OAR-OPS-3]).
func (p *Program) Evaluate(rt *Runtime, occ *Occurrence) *Decision {
	return p.EvaluateInto(rt, occ, &DecisionBuffer{})
}

// EvaluateInto is Evaluate building the decision in buf, for a caller that evaluates
// one occurrence after another: the decision it returns, and every list, copy and
// counter report it holds, live in buf and are valid until buf's next evaluation. Once
// buf has grown to what the occurrences need, an evaluation into it allocates only the
// text it makes: the rendered copy, a tool-argument fingerprint, a scoped counter's
// report key and transformed content. A buffer serves one evaluation at a time.
func (p *Program) EvaluateInto(rt *Runtime, occ *Occurrence, buf *DecisionBuffer) *Decision {
	core, isCore := p.cap.CoreAnchorOf(occ.Anchor)
	s := statePool.Get().(*evalState)
	defer s.release()
	s.reset(p, rt, occ, buf)
	if isCore {
		s.anchor = core
	} else {
		s.anchor = occ.Anchor
	}
	switch {
	case occ.HasRecentActivity:
		// An explicit window is the session's for this occurrence only
		// ([OAR-CONF-40]); flow matches its newest activity_window steps, as many as
		// the engine would have kept ([OAR-PROF-3], [OAR-PROF-9]).
		s.window = occ.RecentActivity
		if w := p.cap.ActivityWindow; len(s.window) > w {
			s.window = s.window[len(s.window)-w:]
		}
	case rt.Activity != nil:
		if fa, ok := rt.Activity.(FallibleActivity); ok {
			s.window, s.windowErr = fa.WindowErr(occ.SessionID)
		} else {
			s.window = rt.Activity.Window(occ.SessionID)
		}
	}
	d := s.run()
	if isCore && core == AnchorToolPreInvoke && d.Decision != EffectBlock.String() && rt.Activity != nil {
		if step := s.toolName(); step != "" {
			rt.Activity.Append(occ.SessionID, step, p.cap.ActivityWindow)
		}
	}
	return d
}

func (s *evalState) reset(p *Program, rt *Runtime, occ *Occurrence, buf *DecisionBuffer) {
	s.p, s.rt, s.occ, s.buf = p, rt, occ, buf
	s.gen++
	if n := len(p.cap.symbols); cap(s.slots) < n {
		s.slots = make([]slot, n)
	} else {
		s.slots = s.slots[:n]
	}
	if n := p.rs.calls; cap(s.calls) < n {
		s.calls = make([]slot, n)
	} else {
		s.calls = s.calls[:n]
	}
	if n := p.outcomes; cap(s.outcomes) < n {
		s.outcomes = make([]outcome, n)
	} else {
		s.outcomes = s.outcomes[:n]
	}
	if n := len(p.rs.Rules); len(s.suppressed) < n {
		s.suppressed = make([]bool, n)
		s.ruleCtrs = make([]ruleCounters, n)
	}
	s.content = -1
}

func (s *evalState) release() {
	s.p, s.rt, s.occ, s.buf, s.cur, s.finding, s.window, s.windowErr = nil, nil, nil, nil, nil, nil, nil, nil
	s.unobservedErr = nil
	s.findings = Findings{}
	clear(s.ctrs)
	s.ctrs, s.nChanged = reuseSlice(s.ctrs, 1<<10), 0
	s.selErr = nil
	s.order, s.sel = s.order[:0], s.sel[:0]
	s.copyText = ""
	s.copyBuf, s.copyMembers = reuseSlice(s.copyBuf, 1<<16), reuseSlice(s.copyMembers, 1<<11)
	s.fpBuf = reuseSlice(s.fpBuf, 1<<16)
	s.lists.reset()
	s.keyBuf, s.keyEnds = reuseSlice(s.keyBuf, 1<<12), reuseSlice(s.keyEnds, 1<<10)
	for i, c := range s.contrib {
		clear(c)
		s.contrib[i] = reuseSlice(c, 1<<10)
	}
	clear(s.trList)
	s.trList = reuseSlice(s.trList, 64)
	for _, i := range s.suppressedList {
		s.suppressed[i] = false
	}
	s.suppressedList = reuseSlice(s.suppressedList, 1<<10)
	statePool.Put(s)
}

// reuseSlice empties a pooled buffer for the next evaluation, or drops one grown past
// limit so the pool does not pin its memory.
func reuseSlice[T any](b []T, limit int) []T {
	if cap(b) > limit {
		return nil
	}
	return b[:0]
}

// contribution is an enforced, fired, unsuppressed rule's part in the decision.
type contribution struct {
	rule *Rule
	copy copySpan
	tr   *transform.Transform
}

// DecisionBuffer holds a decision and the storage it is built in: room for the lists a
// typical occurrence fills, so that a fresh buffer is the one allocation of an
// evaluation whose lists fit, and the lists and copy members of earlier evaluations,
// which EvaluateInto reuses. A longer list grows out of its room like any slice. The
// zero value is ready to use.
type DecisionBuffer struct {
	d          Decision
	applied    [16]string
	onFire     [4]string
	events     [2]Event
	advisories [2]Advisory
	content    string
	// members holds the members of every copy object of the decision, each copy a
	// part of it; memberRoom is its room for the members of one full copy.
	members    []CopyMember
	memberRoom [len(copyMemberNames)]CopyMember
	// counters holds the counter report of the last decision that had one;
	// counterRoom is its room for the counters of a typical occurrence.
	counters    Counters
	counterRoom [4]ReportedCounter
}

// reset starts a decision in b, keeping the storage of the previous one.
func (b *DecisionBuffer) reset() *Decision {
	d := &b.d
	if d.Applied == nil {
		d.Applied, d.OnFire, d.Events, d.Advisories = b.applied[:0], b.onFire[:0], b.events[:0], b.advisories[:0]
		b.members = b.memberRoom[:0]
	}
	*d = Decision{
		Decision:          EffectNone.String(),
		Advisories:        d.Advisories[:0],
		Transforms:        d.Transforms[:0],
		Applied:           d.Applied[:0],
		OnFire:            d.OnFire[:0],
		Events:            d.Events[:0],
		SkippedTransforms: d.SkippedTransforms[:0],
		Failures:          d.Failures[:0],
	}
	b.members = b.members[:0]
	return d
}

// copyOf returns a copy object of n members for the decision, to be filled in, in
// storage of an earlier decision when it has room. Its capacity ends at its last
// member, so an append to it cannot reach the next copy's. Growing the storage leaves
// the copies made before in the storage they were made in.
func (b *DecisionBuffer) copyOf(n int) Copy {
	from := len(b.members)
	b.members = slices.Grow(b.members, n)[:from+n]
	return Copy(b.members[from : from+n : from+n])
}

func (s *evalState) run() *Decision {
	p := s.p
	rules := p.rs.Rules
	d := s.buf.reset()
	// Selection ([OAR-SEL-7], [OAR-CONF-8]).
	var order []int
	if sel := p.byAnchor[s.occ.Anchor]; sel != nil {
		selected, reorder := s.selectRules(sel)
		order = selected
		if reorder && len(selected) > 1 {
			s.order = p.order(selected, s.order[:0], &s.orderSc)
			order = s.order
		}
	}
	if len(order) > cap(d.Applied) {
		d.Applied = make([]string, 0, len(order))
	}
	suppressed := s.suppressed
	var (
		blocking   contribution
		block      *contribution
		transforms = s.contrib[0][:0]
		nudges     = s.contrib[1][:0]
		warns      = s.contrib[2][:0]
	)
	stop := len(order)
	for pos, i := range order {
		r := rules[i]
		if suppressed[i] {
			d.Applied = append(d.Applied, r.trace[Suppressed])
			continue
		}
		monitor := p.enforcement[i] == EnforceMonitor
		fired, copyOut, tr, err := s.evalRule(r, s.selectionErr(i))
		if err == nil && fired && !monitor {
			err = s.applyOnFire(r, d)
		}
		if err != nil {
			if monitor {
				d.Applied = append(d.Applied, r.trace[MonitoredErrored])
				d.Failures = append(d.Failures, failure(r, err))
				continue
			}
			d.Applied = append(d.Applied, r.trace[Errored])
			d.Failures = append(d.Failures, failure(r, err))
			if r.OnError == FailOpen {
				continue
			}
			// [OAR-OPS-3], [OAR-OPS-5]: block with this rule's or the substituted rule's
			// identifiers; no later rule is evaluated.
			by := r
			if r.OnError == Substitute {
				by = rules[r.OnErrorRule]
				s.cur, s.finding = by, nil
				if by.Detector != "" {
					// The substituted rule's detector did not run at this occurrence.
					_ = s.detectorFailed(by, errors.New("the detector did not run: its rule stands in for another's on_error"))
				}
			}
			blocking = contribution{rule: by, copy: s.renderCopyOrOmit(by)}
			block = &blocking
			stop = pos + 1
			break
		}
		switch {
		case !fired && monitor:
			d.Applied = append(d.Applied, r.trace[MonitoredPassed])
			continue
		case !fired:
			d.Applied = append(d.Applied, r.trace[Passed])
			continue
		case monitor:
			d.Applied = append(d.Applied, r.trace[MonitoredFired])
			s.dropCopy(copyOut)
			continue
		}
		d.Applied = append(d.Applied, r.trace[Fired])
		for _, t := range r.Overrides {
			if !suppressed[t] {
				suppressed[t] = true
				s.suppressedList = append(s.suppressedList, t)
			}
		}
		c := contribution{rule: r, copy: copyOut, tr: tr}
		switch r.Effect {
		case EffectBlock:
			blocking = c
			block = &blocking
		case EffectTransform:
			transforms = append(transforms, c)
		case EffectNudge:
			nudges = append(nudges, c)
		case EffectWarn:
			warns = append(warns, c)
		}
		if block != nil {
			stop = pos + 1
			break
		}
	}
	// [OAR-OPS-10]: after a short-circuit, rules never reached are omitted, except
	// those a fired suppressor suppressed.
	for _, i := range order[stop:] {
		if suppressed[i] {
			d.Applied = append(d.Applied, rules[i].trace[Suppressed])
		}
	}
	s.decide(d, block, transforms, nudges, warns)
	s.contrib = [3][]contribution{transforms, nudges, warns}
	if s.nChanged > 0 {
		d.Counters = s.counterReport()
	}
	return d
}

// scopedKey is a changed scoped counter's place in the report: at is its position,
// end where its report key ends in evalState.keyBuf.
type scopedKey struct {
	at, end int
}

// counterReport is the counters member of the decision: every changed counter by its
// report key ([OAR-CONF-33]), in key order, in the decision buffer's storage. The keys
// of scoped counters are substrings of one string. Keys are distinct: a rule's counters
// differ by scope value, and a rule identifier holds no '#' ([OAR-DOC-6]).
func (s *evalState) counterReport() Counters {
	b := s.buf
	out := b.counters[:0]
	if out == nil {
		out = b.counterRoom[:0]
	}
	keys, scoped := s.keyBuf[:0], s.keyEnds[:0]
	for i := range s.ctrs {
		c := &s.ctrs[i]
		switch {
		case !c.changed || c.after == c.before:
			// Applied actions that leave a counter where the occurrence found it (a
			// reset of zero, an increment taken back by a reset) change nothing to
			// report ([OAR-CONF-21]).
		case !c.key.Scoped:
			out = append(out, ReportedCounter{Key: c.key.Rule, Counts: c.after})
		default:
			keys = append(append(append(keys, c.key.Rule...), '#'), c.key.Scope...)
			scoped = append(scoped, scopedKey{at: len(out), end: len(keys)})
			out = append(out, ReportedCounter{Counts: c.after})
		}
	}
	if len(scoped) > 0 {
		all, start := string(keys), 0
		for _, k := range scoped {
			out[k.at].Key = all[start:k.end]
			start = k.end
		}
	}
	sortCounters(out)
	s.keyBuf, s.keyEnds = keys, scoped
	b.counters = out
	return out
}

// decide applies precedence ([OAR-EVAL-6], [OAR-EVAL-19], [OAR-EVAL-20]) and the
// transforms ([OAR-OPS-16], [OAR-OPS-17]).
func (s *evalState) decide(d *Decision, block *contribution, transforms, nudges, warns []contribution) {
	if s.occ.HasContent {
		s.buf.content = s.occ.Content
		d.Content = &s.buf.content
	}
	var win *contribution
	switch {
	case block != nil:
		d.Decision, win = EffectBlock.String(), block
	case len(transforms) > 0:
		d.Decision, win = EffectTransform.String(), &transforms[0]
		list := s.trList[:0]
		for _, c := range transforms {
			list = append(list, *c.tr)
			d.Transforms = append(d.Transforms, TransformRecord{
				Rule:        c.rule.QID,
				Action:      c.tr.Action.String(),
				Target:      c.rule.transform.targetName,
				Replacement: c.tr.Replacement,
			})
		}
		s.trList = list
		out, skips := transform.Apply(s.occ.Content, s.contentLen(), list)
		if s.occ.HasContent {
			s.buf.content = out
		}
		for _, sk := range skips {
			d.SkippedTransforms = append(d.SkippedTransforms, SkippedSpan{Rule: sk.Rule, Start: sk.Start, End: sk.End, Reason: sk.Reason})
		}
	case len(nudges) > 0:
		d.Decision, win = EffectNudge.String(), &nudges[0]
		d.Advisories = s.advisories(d.Advisories, nudges)
	case len(warns) > 0:
		d.Decision, win = EffectWarn.String(), &warns[0]
		d.Advisories = s.advisories(d.Advisories, warns)
	}
	if win != nil {
		d.Code, d.Rule = win.rule.ID, win.rule.QID
		if len(d.Advisories) > 0 {
			d.Copy = d.Advisories[0].Copy
		} else {
			s.renderLate(win)
			d.Copy = s.copyOf(win.copy)
		}
	}
	d.fillEmptyLists()
}

// copyOf builds the copy object of a rendered span, whose members renderCopy put in
// name order; nil for an empty span. Its texts are substrings of one string holding
// all the copy rendered at the occurrence.
func (s *evalState) copyOf(span copySpan) Copy {
	if span.from == span.to {
		return nil
	}
	if s.copyText == "" {
		s.copyText = string(s.copyBuf)
	}
	out := s.buf.copyOf(span.to - span.from)
	for i, m := range s.copyMembers[span.from:span.to] {
		out[i] = CopyMember{Name: m.name, Text: s.copyText[m.start:m.end]}
	}
	return out
}

// fillEmptyLists makes every list member marshal as [] rather than null, so a consumer
// reads one shape whatever the outcome. Zero-length literals do not allocate.
func (d *Decision) fillEmptyLists() {
	if d.Advisories == nil {
		d.Advisories = []Advisory{}
	}
	if d.Transforms == nil {
		d.Transforms = []TransformRecord{}
	}
	if d.Applied == nil {
		d.Applied = []string{}
	}
	if d.OnFire == nil {
		d.OnFire = []string{}
	}
	if d.Events == nil {
		d.Events = []Event{}
	}
	if d.SkippedTransforms == nil {
		d.SkippedTransforms = []SkippedSpan{}
	}
}

// advisories appends the advisory of each contribution to out, rendering every copy
// that waited before copyOf makes the copy buffer one string.
func (s *evalState) advisories(out []Advisory, cs []contribution) []Advisory {
	for i := range cs {
		s.renderLate(&cs[i])
	}
	for _, c := range cs {
		out = append(out, Advisory{Code: c.rule.ID, Rule: c.rule.QID, Copy: s.copyOf(c.copy)})
	}
	return out
}

func failure(r *Rule, err error) Failure {
	f := Failure{Rule: r.QID, Error: err.Error()}
	var pe *ProviderError
	if errors.As(err, &pe) {
		f.Clause = pe.Clause
	}
	return f
}

// selects reports whether every selector clause but those at skip and skip2 (which the
// indexes found matching) matches ([OAR-SEL-1], [OAR-SEL-2], [OAR-SEL-4]). Once a
// clause's fact cannot be read, selectsAll decides.
func (s *evalState) selects(r *Rule, skip, skip2 int) (bool, error) {
	s.cur, s.finding = r, nil
	for k := range r.selector {
		if k == skip || k == skip2 {
			continue
		}
		c := &r.selector[k]
		v, err := s.Fact(c.sym.ID)
		if err != nil {
			return s.selectsAll(r)
		}
		if !clauseMatches(c, v) {
			return false, nil
		}
	}
	return true, nil
}

// selectsAll decides r's selection when the fact of one of its clauses cannot be read,
// from all of its clauses whatever an index decided: a clause whose fact is read and
// does not match leaves r out ([OAR-SEL-4]); otherwise r is selected with the error of
// its first clause that cannot be read, for its on_error ([OAR-FACT-26]). The outcome is
// the rule's own: it does not depend on which facts the other rules make the indexes
// use, nor on the order the clauses are tested in.
func (s *evalState) selectsAll(r *Rule) (bool, error) {
	s.cur, s.finding = r, nil
	var first error
	for k := range r.selector {
		c := &r.selector[k]
		v, err := s.Fact(c.sym.ID)
		switch {
		case err != nil:
			if first == nil {
				first = err
			}
		case !clauseMatches(c, v):
			return false, nil
		}
	}
	return true, first
}

func clauseMatches(c *selectorClause, v types.Value) bool {
	if v.Kind == types.String {
		return c.has(v.Str())
	}
	for _, m := range v.List() {
		if c.has(m) {
			return true
		}
	}
	return false
}

// evalRule decides whether r fires: flow before when ([OAR-EVAL-3]), the detector for a
// detector rule, then when; a firing rule's transform target and copy are resolved in
// its own environment ([OAR-FACT-11]).
func (s *evalState) evalRule(r *Rule, selErr error) (bool, copySpan, *transform.Transform, error) {
	s.cur, s.finding = r, nil
	if selErr != nil {
		return false, copySpan{}, nil, selErr
	}
	if len(r.Flow) > 0 {
		if s.windowErr != nil {
			return false, copySpan{}, nil, &ProviderError{Clause: "OAR-OPS-3", Fact: "recent activity", Err: s.windowErr}
		}
		if !flowMatches(r.Flow, s.window) {
			return false, copySpan{}, nil, nil
		}
	}
	if r.Detector != "" {
		det := s.rt.Detectors[r.Detector]
		if det == nil {
			return false, copySpan{}, nil, s.detectorFailed(r, errors.New("detector is unreachable: no implementation is registered"))
		}
		f, err := det.Detect(s.occ)
		if err != nil {
			return false, copySpan{}, nil, s.detectorFailed(r, err)
		}
		s.findings = f
		s.finding = &s.findings
	}
	if r.when != nil {
		ok, err := s.when(r)
		if err != nil || !ok {
			return false, copySpan{}, nil, err
		}
	}
	var tr *transform.Transform
	if r.transform != nil {
		var err error
		if tr, err = s.resolveTransform(r); err != nil {
			return false, copySpan{}, nil, err
		}
	}
	if r.Effect == EffectAllow {
		// No decision carries an allow rule's copy (a decision of none carries none,
		// [OAR-COPY-1]): it is never rendered, so it cannot fail the rule ([OAR-COPY-6]).
		return true, copySpan{}, tr, nil
	}
	if s.finding == nil && s.checkCopy(r) {
		return true, copySpan{late: true}, tr, nil
	}
	out, err := s.renderCopy(r)
	if err != nil {
		return false, copySpan{}, nil, err
	}
	return true, out, tr, nil
}

// outcome is a condition's outcome at the occurrence gen.
type outcome struct {
	gen uint64
	ok  bool
	err error
}

// when evaluates r's condition, once per occurrence for every rule sharing it.
func (s *evalState) when(r *Rule) (bool, error) {
	i := s.p.outcomeSlot[r.Index]
	if i < 0 {
		return r.when.Eval(s)
	}
	o := &s.outcomes[i]
	if o.gen != s.gen {
		o.ok, o.err = r.when.Eval(s)
		o.gen = s.gen
	}
	return o.ok, o.err
}

// detectorFailed is the failure of r's detector (one that failed, or did not run),
// whose observations are then unavailable to r until the next rule is evaluated, so a
// copy of r's on_error block that binds one is omitted ([OAR-COPY-11]).
func (s *evalState) detectorFailed(r *Rule, err error) error {
	pe := &ProviderError{Clause: "OAR-OPS-3", Fact: r.Detector, Err: err}
	s.unobservedErr, s.finding = pe, &s.unobserved
	return pe
}

// checkCopy reports whether r's copy will render, reading every fact its templates
// bind or test. Rendering fails only when such a fact cannot be read or is of another
// type ([OAR-FACT-26]), and every later read at this occurrence returns what this one
// did (occurrenceFact keeps it; a counter reads its snapshot), so the copy can be
// rendered when, and only if, the decision carries it. A rule whose detector's findings
// are in force renders at once: those findings last only while it is evaluated.
func (s *evalState) checkCopy(r *Rule) bool {
	for _, sym := range r.copyFacts {
		// Most of them were read before at this occurrence: checked where they are
		// kept, as Fact would return them with no findings in force, they cost no call.
		if sl, ok := s.kept(sym.ID); ok {
			if sl.err != nil || sl.v.Kind != sym.Type {
				return false
			}
			continue
		}
		if v, err := s.Fact(sym.ID); err != nil || v.Kind != sym.Type {
			return false
		}
	}
	return true
}

// renderLate renders the copy of c when checkCopy let it wait, in its rule's
// environment.
func (s *evalState) renderLate(c *contribution) {
	if !c.copy.late {
		return
	}
	s.cur, s.finding = c.rule, nil
	// checkCopy read every fact the templates use without error, so this cannot fail.
	c.copy, _ = s.renderCopy(c.rule)
}

// flowMatches is [OAR-FACT-12]: the steps appear in order as a subsequence of the
// window, oldest first.
func flowMatches(flow, window []string) bool {
	i := 0
	for _, step := range window {
		if i < len(flow) && step == flow[i] {
			i++
		}
	}
	return i == len(flow)
}

func (s *evalState) resolveTransform(r *Rule) (*transform.Transform, error) {
	spec := r.transform
	tr := &transform.Transform{Rule: r.QID, Action: spec.action, Replacement: spec.replacement, Whole: spec.whole}
	if spec.whole {
		return tr, nil
	}
	v, err := s.Fact(spec.target.ID)
	if err != nil {
		return nil, err
	}
	spans, err := transform.SpansFromFact(v.Maps(), s.contentLen())
	if err != nil {
		return nil, &ProviderError{Clause: "OAR-OPS-19", Fact: spec.targetName, Err: err}
	}
	tr.Spans = spans
	return tr, nil
}

func (s *evalState) contentLen() int {
	if s.content < 0 {
		s.content = codepoint.Count(s.occ.Content)
	}
	return s.content
}

// renderCopy renders every member of r's copy into the occurrence's copy buffer, in
// presentation order, so that of two members that fail the first one's error is the
// rule's, and locates each in the copy buffer in name order, the order of the copy
// object. On failure nothing of r's copy stays in the buffer.
func (s *evalState) renderCopy(r *Rule) (copySpan, error) {
	span := copySpan{from: len(s.copyMembers), to: len(s.copyMembers) + len(r.copy)}
	bufLen := len(s.copyBuf)
	s.copyMembers = slices.Grow(s.copyMembers, len(r.copy))[:span.to]
	for _, m := range r.copy {
		start := len(s.copyBuf)
		var err error
		if s.copyBuf, err = m.tmpl.AppendRender(s.copyBuf, s); err != nil {
			s.copyBuf, s.copyMembers = s.copyBuf[:bufLen], s.copyMembers[:span.from]
			return copySpan{}, err
		}
		s.copyMembers[span.from+m.pos] = renderedMember{name: m.name, start: start, end: len(s.copyBuf)}
	}
	return span, nil
}

// dropCopy takes span, the copy rendered last, back out of the occurrence's copy
// buffer. A fired allow rule and a monitored rule that fired render their copy when
// checkCopy cannot tell that it renders, since a render error makes them rules that
// cannot be evaluated (evalRule), but no decision carries it, so it need not be in
// the decision's copy text.
func (s *evalState) dropCopy(span copySpan) {
	if span.late || span.from == span.to {
		return
	}
	// The member rendered first, where the span's text begins, is not the first in
	// name order.
	text := s.copyMembers[span.from].start
	for _, m := range s.copyMembers[span.from+1 : span.to] {
		text = min(text, m.start)
	}
	s.copyBuf = s.copyBuf[:text]
	s.copyMembers = s.copyMembers[:span.from]
}

// renderCopyOrOmit renders the copy of an on_error block; when that fails the copy is
// omitted and nothing else happens ([OAR-COPY-11]).
func (s *evalState) renderCopyOrOmit(r *Rule) copySpan {
	out, err := s.renderCopy(r)
	if err != nil {
		return copySpan{}
	}
	return out
}

// applyOnFire applies a fired, enforced rule's side-effects in listed order
// ([OAR-FIRE-2], [OAR-FIRE-8]). One that cannot be applied makes the rule one that
// cannot be evaluated ([OAR-FIRE-9]), which then contributes no side-effect
// ([OAR-OPS-4]): what can fail before any change (the counter's scope fact, its
// snapshot) is checked before the first action, and the counter actions applied before
// a failure are taken back. Only an event published before it stays, reported as
// applied, since a stream cannot take a record back.
func (s *evalState) applyOnFire(r *Rule, d *Decision) error {
	slot := -1
	if i := slices.IndexFunc(r.OnFire, func(a Action) bool { return a != ActionPublishEvent }); i >= 0 {
		first := r.OnFire[i]
		if s.rt.Counters == nil {
			return &ProviderError{Clause: "OAR-FIRE-9", Fact: first.String(), Err: errors.New("no counter store is configured")}
		}
		key, err := s.counterKey(r, true)
		if err != nil {
			return err
		}
		slot = s.snapshotCounter(r, key)
		if err := s.ctrs[slot].err; err != nil {
			return &ProviderError{Clause: "OAR-FIRE-9", Fact: first.String(), Err: err}
		}
	}
	reported := len(d.OnFire)
	for _, a := range r.OnFire {
		var err error
		if a == ActionPublishEvent {
			err = s.publishEvent(r, d)
		} else {
			err = s.writeCounter(slot, a)
		}
		if err != nil {
			if slot >= 0 {
				err = s.takeBack(slot, d, reported, err)
			}
			return &ProviderError{Clause: "OAR-FIRE-9", Fact: a.String(), Err: err}
		}
		d.OnFire = append(d.OnFire, a.String())
	}
	return nil
}

// publishEvent emits r's publish_event record ([OAR-FIRE-7]).
func (s *evalState) publishEvent(r *Rule, d *Decision) error {
	e := Event{Rule: r.QID, Anchor: s.anchor, Effect: r.Effect.String(), Session: s.occ.SessionID}
	if s.rt.Events != nil {
		if err := s.rt.Events.Publish(e); err != nil {
			return err
		}
	}
	d.Events = append(d.Events, e)
	return nil
}

// takeBack restores the counter in slot to its value before the occurrence after a
// failed side-effect of its rule, and drops the rule's counter actions from the
// on_fire report from position reported on. When the store cannot restore it, the
// counter stays reported as the store holds it and the failure says so.
func (s *evalState) takeBack(slot int, d *Decision, reported int, failed error) error {
	c := &s.ctrs[slot]
	if c.changed {
		if err := s.rt.Counters.Restore(c.key, c.before); err != nil {
			return fmt.Errorf("%w; the counter actions applied before it could not be taken back: %v", failed, err)
		}
		c.changed, c.after = false, c.before
		s.nChanged--
	}
	kept := d.OnFire[:reported]
	for _, a := range d.OnFire[reported:] {
		if a == ActionPublishEvent.String() {
			kept = append(kept, a)
		}
	}
	d.OnFire = kept
	return failed
}

// counterKey keys r's counters by rule, session and scope value ([OAR-FIRE-5],
// [OAR-FIRE-10]). own says whether r is the rule being evaluated (its scope fact is
// read in its own environment) or another rule read through fire_count_of.
func (s *evalState) counterKey(r *Rule, own bool) (CounterKey, error) {
	k := CounterKey{Rule: r.QID, Session: s.occ.SessionID}
	if r.counterScope == nil {
		return k, nil
	}
	v, err := s.input(r.counterScope.ID, own)
	if err != nil {
		return k, err
	}
	k.Scope, k.Scoped = v.Str(), true
	return k, nil
}

// readCounter observes the snapshot of [OAR-FIRE-6]: values in force before any
// side-effect of this occurrence. The first read of a counter is kept in the snapshot,
// so every later read at this occurrence sees that value even if another occurrence of
// the session changes the store meanwhile.
func (s *evalState) readCounter(r *Rule, k CounterKey) (Counts, error) {
	if s.rt.Counters == nil {
		return Counts{}, nil
	}
	i := s.snapshotCounter(r, k)
	if err := s.ctrs[i].err; err != nil {
		return Counts{}, &ProviderError{Clause: "OAR-OPS-3", Fact: "counter " + diag.Truncate(k.ReportKey()), Err: err}
	}
	return s.ctrs[i].before, nil
}

// writeCounter applies action a to the counter in slot, which applyOnFire read.
func (s *evalState) writeCounter(slot int, a Action) error {
	c := &s.ctrs[slot]
	after, err := s.rt.Counters.Apply(c.key, a)
	if err != nil {
		return err
	}
	if !c.changed {
		c.changed = true
		s.nChanged++
	}
	c.after = after
	return nil
}

// snapshotCounter is the position in s.ctrs of r's counter k, read from the store the
// first time the occurrence needs it; a failed read is kept there as the slot's err.
func (s *evalState) snapshotCounter(r *Rule, k CounterKey) int {
	if i := s.findCounter(r, k); i >= 0 {
		return i
	}
	c, err := s.rt.Counters.Get(k)
	i := s.addCounter(r, k, c)
	s.ctrs[i].err = err
	return i
}

// findCounter is the position in s.ctrs of r's counter k at this occurrence, or -1.
// A rule's counters at one occurrence share the session and differ only by scope value.
func (s *evalState) findCounter(r *Rule, k CounterKey) int {
	rc := s.ruleCtrs[r.Index]
	if rc.gen != s.gen {
		return -1
	}
	for i := rc.first; i >= 0; i = s.ctrs[i].next {
		if s.ctrs[i].key.Scope == k.Scope {
			return i
		}
	}
	return -1
}

// addCounter records r's counter k with its value before the occurrence and returns its
// position in s.ctrs.
func (s *evalState) addCounter(r *Rule, k CounterKey, before Counts) int {
	rc := &s.ruleCtrs[r.Index]
	next := -1
	if rc.gen == s.gen {
		next = rc.first
	}
	s.ctrs = append(s.ctrs, counterSlot{key: k, before: before, next: next})
	rc.gen, rc.first = s.gen, len(s.ctrs)-1
	return rc.first
}

// Fact implements expr.Env and copytext.FactEnv.
func (s *evalState) Fact(id int) (types.Value, error) {
	// A fact read before at this occurrence, with no detector's findings in force, is
	// the value occurrenceFact kept.
	if sl, ok := s.kept(id); ok && s.finding == nil {
		return sl.v, sl.err
	}
	info := s.p.cap.symbol(id)
	if f := s.finding; f != nil && !info.builtin.engineOwned() {
		if v, found, err := s.found(f, info); found {
			return v, err
		}
		if info.builtin == builtinToolFingerprint && (f.reports(factTool) || f.reports(factToolArgs)) {
			// Over what this rule's detector observed, and not kept as the
			// occurrence's: that observation is the rule's alone ([OAR-FACT-11]).
			return s.fingerprint(true)
		}
	}
	if b := info.builtin; b == builtinFireCount || b == builtinBreakerCount {
		key, err := s.counterKey(s.cur, true)
		if err != nil {
			return types.Value{}, err
		}
		c, err := s.readCounter(s.cur, key)
		if err != nil {
			return types.Value{}, err
		}
		if b == builtinFireCount {
			return types.IntValue(c.Fire), nil
		}
		return types.IntValue(c.Breaker), nil
	}
	return s.occurrenceFact(info)
}

// found is what the detector findings f in force say of the fact or function info, for
// Fact and Call alike: unavailable when the rule's detector produced none
// ([OAR-COPY-11]), the value the findings report, or the zero of a detector observation
// they report none of. found is false when they say nothing of it.
func (s *evalState) found(f *Findings, info *symbolInfo) (v types.Value, found bool, err error) {
	switch raw, ok := f.Facts[info.Name]; {
	case f == &s.unobserved && info.Detector:
		return types.Value{}, true, s.unobservedErr
	case ok:
		v, err = s.convert(info, raw)
		return v, true, err
	case f.NoFindings && info.Detector:
		return types.Zero(info.Type), true, nil
	}
	return types.Value{}, false, nil
}

// kept is the slot where occurrenceFact keeps fact id, and whether it holds the fact
// at this occurrence; counters are never kept there.
func (s *evalState) kept(id int) (*slot, bool) {
	sl := &s.slots[id]
	return sl, sl.gen == s.gen
}

// occurrenceFact produces a fact shared by every rule at the occurrence, once.
func (s *evalState) occurrenceFact(info *symbolInfo) (types.Value, error) {
	sl := &s.slots[info.ID]
	if sl.gen == s.gen {
		return sl.v, sl.err
	}
	v, err := s.produce(info)
	sl.gen, sl.v, sl.err = s.gen, v, err
	return v, err
}

func (s *evalState) produce(info *symbolInfo) (types.Value, error) {
	if info.builtin == builtinAnchor {
		return types.StringValue(s.anchor), nil
	}
	if raw, ok := s.occ.Facts[info.Name]; ok && info.Name != factAnchor {
		return s.convert(info, raw)
	}
	switch info.builtin {
	case builtinTool:
		if tc := s.occ.ToolCall; tc != nil {
			return types.StringValue(tc.Name), nil
		}
	case builtinToolArgs:
		if tc := s.occ.ToolCall; tc != nil && tc.Arguments != nil {
			return types.MapValue(tc.Arguments), nil
		}
		return types.MapValue(map[string]any{}), nil
	case builtinToolFingerprint:
		return s.fingerprint(false)
	}
	return types.Zero(info.Type), nil
}

// fingerprint is [OAR-FACT-28] over the effective tool name and arguments: the
// occurrence's, or with own those of the rule being evaluated, whose detector may have
// observed them.
func (s *evalState) fingerprint(own bool) (types.Value, error) {
	tool, err := s.input(s.p.cap.byName[factTool], own)
	if err != nil {
		return types.Value{}, err
	}
	args, err := s.input(s.p.cap.byName[factToolArgs], own)
	if err != nil {
		return types.Value{}, err
	}
	fp, buf, err := toolobs.FingerprintWith(s.fpBuf, tool.Str(), args.Map())
	s.fpBuf = buf
	if err != nil {
		return types.Value{}, &ProviderError{Clause: "OAR-FACT-28", Fact: factToolFingerprint, Err: err}
	}
	return types.StringValue(fp), nil
}

// input reads a fact another value is derived from (a fingerprint, a counter key): in
// the environment of the rule being evaluated with own, else the occurrence's.
func (s *evalState) input(id int, own bool) (types.Value, error) {
	if own {
		return s.Fact(id)
	}
	return s.occurrenceFact(s.p.cap.symbol(id))
}

// toolName is the step an admitted tool call appends ([OAR-PROF-9]).
func (s *evalState) toolName() string {
	if t, ok := s.occ.Facts[factTool].(string); ok {
		return t
	}
	if s.occ.ToolCall != nil {
		return s.occ.ToolCall.Name
	}
	return ""
}

// convert is the package convert, with a list of decoded JSON converted into the
// occurrence's list storage instead of memory of its own.
func (s *evalState) convert(info *symbolInfo, raw any) (types.Value, error) {
	if l, ok := raw.([]any); ok {
		switch info.Type {
		case types.ListString:
			if v, ok := s.lists.stringList(l); ok {
				return v, nil
			}
		case types.ListMap:
			if v, ok := s.lists.mapList(l); ok {
				return v, nil
			}
		}
	}
	return convert(info, raw)
}

// listStore holds the lists of decoded JSON converted at one occurrence: their
// members, one list after the other, and the slice header of each, which its value
// points to (types.ListStringAt). A new list never moves an earlier one, so values stay
// valid until the store is emptied for the next occurrence.
type listStore struct {
	strs     []string
	strLists [][]string
	maps     []map[string]any
	mapLists [][]map[string]any
}

// stringList converts l to a list<string> value, or reports false when a member is not
// a string.
func (ls *listStore) stringList(l []any) (types.Value, bool) {
	list, ok := appendList(&ls.strs, &ls.strLists, l)
	if !ok {
		return types.Value{}, false
	}
	return types.ListStringAt(list), true
}

// mapList converts l to a list<map> value, or reports false when a member is not an
// object.
func (ls *listStore) mapList(l []any) (types.Value, bool) {
	list, ok := appendList(&ls.maps, &ls.mapLists, l)
	if !ok {
		return types.Value{}, false
	}
	return types.ListMapAt(list), true
}

// appendList appends the members of l, each a T, to members, and their slice to lists,
// returning where lists holds it; it reports false, leaving members as they were, when a
// member is not a T.
func appendList[T any](members *[]T, lists *[][]T, l []any) (*[]T, bool) {
	start := len(*members)
	for _, m := range l {
		v, ok := m.(T)
		if !ok {
			*members = (*members)[:start]
			return nil, false
		}
		*members = append(*members, v)
	}
	all := *members
	*lists = append(*lists, all[start:len(all):len(all)])
	return &(*lists)[len(*lists)-1], true
}

// reset empties the store, dropping what referred to the occurrence, or drops storage
// grown past a few thousand entries so the pool does not pin its memory.
func (ls *listStore) reset() {
	clear(ls.strs)
	clear(ls.strLists)
	clear(ls.maps)
	clear(ls.mapLists)
	ls.strs, ls.strLists = reuseSlice(ls.strs, 1<<12), reuseSlice(ls.strLists, 1<<10)
	ls.maps, ls.mapLists = reuseSlice(ls.maps, 1<<12), reuseSlice(ls.mapLists, 1<<10)
}

// convert checks a provider value against its declared type ([OAR-FACT-26],
// [OAR-FACT-23]).
func convert(info *symbolInfo, raw any) (types.Value, error) {
	k := info.Type
	v, err := types.FromJSON(k, raw)
	if err != nil {
		clause := "OAR-FACT-26"
		if k == types.Double {
			if _, isNum := types.AsDouble(raw); isNum {
				clause = "OAR-FACT-23"
			}
		}
		return types.Value{}, &ProviderError{Clause: clause, Fact: info.Name, Err: err}
	}
	return v, nil
}

// Call implements expr.Env. The result of a function applied to a literal argument
// (slot not negative) is kept for the occurrence, by its slot, once a rule with no
// detector's findings in force computed it: it then depends on the occurrence alone,
// so every such rule reads it. A rule whose findings are in force neither reads nor
// keeps it, since its findings may report the function or the arguments it reads
// ([OAR-FACT-11]), or make them unavailable ([OAR-COPY-11]).
func (s *evalState) Call(id int, arg types.Value, slot int) (types.Value, error) {
	if slot < 0 || s.finding != nil {
		return s.call(id, arg)
	}
	c := &s.calls[slot]
	if c.gen != s.gen {
		c.v, c.err = s.call(id, arg)
		c.gen = s.gen
	}
	return c.v, c.err
}

// call is the result of function id applied to arg: a value supplied in facts under the
// function's name is its result for every argument ([OAR-CONF-26]); the tool accessors
// read the call's arguments; any other function has nothing to report and yields its
// zero value ([OAR-FACT-25]).
func (s *evalState) call(id int, arg types.Value) (types.Value, error) {
	info := s.p.cap.symbol(id)
	if f := s.finding; f != nil {
		if v, found, err := s.found(f, info); found {
			return v, err
		}
	}
	// Whether the host supplied the function's result is looked up once.
	sl := &s.slots[id]
	if sl.gen != s.gen {
		sl.gen, sl.supplied = s.gen, false
		if raw, ok := s.occ.Facts[info.Name]; ok {
			sl.v, sl.err = s.convert(info, raw)
			sl.supplied = true
		}
	}
	if sl.supplied {
		return sl.v, sl.err
	}
	switch b := info.builtin; b {
	case builtinToolArgString, builtinToolArgInt, builtinToolArgBool:
		args, err := s.Fact(s.p.cap.toolArgs)
		if err != nil {
			return types.Value{}, err
		}
		switch b {
		case builtinToolArgString:
			return types.StringValue(toolobs.ArgString(args.Map(), arg.Str())), nil
		case builtinToolArgInt:
			i, err := toolobs.ArgInt(args.Map(), arg.Str())
			if err != nil {
				return types.Value{}, &ProviderError{Clause: "OAR-FACT-23", Fact: funcToolArgInt, Err: err}
			}
			return types.IntValue(i), nil
		default:
			return types.BoolValue(toolobs.ArgBool(args.Map(), arg.Str())), nil
		}
	}
	return types.Zero(info.Type), nil
}

// RuleCounter implements expr.Env for fire_count_of and breaker_count_of
// ([OAR-FIRE-11]): the named rule's counter under its own scope, from the snapshot.
func (s *evalState) RuleCounter(id int, rule int) (int64, error) {
	target := s.p.rs.Rules[rule]
	key, err := s.counterKey(target, target == s.cur)
	if err != nil {
		return 0, err
	}
	c, err := s.readCounter(target, key)
	if err != nil {
		return 0, err
	}
	if s.p.cap.symbol(id).Name == funcFireCountOf {
		return c.Fire, nil
	}
	return c.Breaker, nil
}
