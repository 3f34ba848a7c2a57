package bundle

import (
	"cmp"
	"crypto/sha256"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/oar-operator/oar-operator/internal/engine"
	"github.com/oar-operator/oar-operator/internal/engine/diag"
)

// Reasons an Outcome gives when a resource's current generation is not published: the
// reasons of the resource's Ready=False condition.
const (
	ReasonLoadFailed        = "LoadFailed"
	ReasonConflict          = "Conflict"
	ReasonCapabilityMissing = "CapabilityMissing"
	ReasonCapabilityInvalid = "CapabilityInvalid"
	ReasonBundleTooLarge    = "BundleTooLarge"
)

// PackInput is a RulePack as assembly sees it.
type PackInput struct {
	Name         string
	Generation   int64
	CreationTime time.Time
	// Rules are the current generation's rule documents (decoded JSON, json.Number numbers).
	Rules []any
	// Refused, when not empty, says the current generation could not be read at all (a
	// rule that is not JSON, which only a spec admission never checked can hold). It is
	// then a generation that does not load, with these diagnostics: the last published
	// one keeps serving, as after any bad edit.
	Refused diag.List
	// NewIdentity says the pack Current publishes under this name was another object,
	// deleted since and this one created under its name: this one is a newcomer and
	// inherits nothing of it (incumbency goes by identity, not name).
	NewIdentity bool
}

// ConfigInput is an OperatorConfig as assembly sees it.
type ConfigInput struct {
	Name         string
	Generation   int64
	Order        int64
	CreationTime time.Time
	// Document is the current generation's configuration document.
	Document map[string]any
	// Refused, when not empty, says the current generation could not be read (not a JSON
	// object); it is then a generation that does not apply, as PackInput.Refused.
	Refused diag.List
	// NewIdentity is PackInput.NewIdentity for a configuration.
	NewIdentity bool
}

// Input is the cluster state for one Capability and the bundle currently published.
type Input struct {
	// Capability is the capability document; nil when the Capability resource does not exist.
	Capability map[string]any
	Packs      []PackInput
	Configs    []ConfigInput
	// Current is the bundle currently published, nil if none.
	Current *Bundle
	// LeftOut names what an earlier result left out (its Dropped) and that is still
	// given, the same objects: Current, published since, no longer holds them, but what
	// they enforced is still not in force. Each stays in Dropped until a generation of
	// it is published again; the caller forgets one that is deleted.
	LeftOut []Ref
}

// Outcome says what assembly did with one pack or configuration.
type Outcome struct {
	// Published says the resource's current generation is in the result.
	Published bool
	// PublishedGeneration is the generation serving in the result (the current one, or
	// the last published one kept), 0 if none.
	PublishedGeneration int64
	// Reason is "" when Published, else one of the Reason constants.
	Reason string
	// Message is one sentence naming what failed; for a Conflict it names the
	// conflicting resource and rule.
	Message string
	// Errors are the engine diagnostics that explain it. Index is relative to the
	// pack's rules for its own rules and -1 for a rule of another pack (Rule names it)
	// and for a configuration document.
	Errors diag.List
	// ConflictsWith names the other pack for a Conflict.
	ConflictsWith string
}

// Result is the outcome of Assemble.
type Result struct {
	// Bundle is the bundle to publish (sealed); Current itself when nothing may change
	// (missing or invalid capability), possibly nil.
	Bundle *Bundle
	// Encoded is Bundle laid out for the ConfigMap (zero when Bundle is nil).
	Encoded Encoded
	// Loaded is Bundle as the engine loaded it; nil when Bundle is Current kept as is.
	Loaded *Loaded
	// CapabilityErrors is non-empty when the capability document is invalid.
	CapabilityErrors diag.List
	Packs            map[string]Outcome
	Configs          map[string]Outcome
	// Changed says Bundle's digest differs from Current's (or Current is nil and a
	// bundle is published).
	Changed bool
	// Narrowing is non-empty when a valid capability document is held back because it
	// would make what Current publishes stop loading: why, in the Capability webhook's
	// words (Breakage). Held names the packs and configurations it would leave out
	// ("RulePack \"x\""); Bundle is then Current.
	Narrowing diag.List
	Held      []string
	// Dropped names the packs and configurations Current publishes, still given (the
	// same objects), of which Bundle publishes no generation, when no change could be
	// held back for them (a pack a configuration names was deleted, say), and those of
	// Input.LeftOut still left out. What they enforced no longer holds, and that may be
	// looser: a configuration may have raised a rule to enforce ([OAR-CFG-3]). Packs
	// come first, each kind by name.
	Dropped []Ref
}

// Assemble decides the bundle for one Capability, deterministically from the cluster
// state and the bundle currently published, by these rules:
//
//  1. A missing or invalid capability publishes nothing new: Current stays. So does a
//     valid one that would leave out something Current publishes which Current's
//     capability document keeps (ReasonCapabilityNarrowed, holdNarrowing).
//  2. Packs are taken in order, incumbents (packs in Current) first, each group by
//     (creation time, name). A pack's current generation is taken when it loads with
//     the packs taken before it, with the unchanged incumbents still to come, and with
//     the rules of the packs still to come standing in for references to them; else
//     an incumbent keeps its last published generation if that loads, and anything
//     else is left out. A pack whose addition would push the encoded bundle over
//     ConfigMapLimit is held back the same way (BundleTooLarge). A pack whose
//     reference names a rule of a pack left out is left out.
//  3. Configurations are taken by (order, name) against the packs taken: the current
//     generation if it applies, else the last published one, else left out; one
//     whose addition would push the bundle over ConfigMapLimit is left out the same
//     way (BundleTooLarge), but when every configuration's first generation that
//     applies fits with the others, they are all taken. A
//     published configuration is an incumbent: a newcomer or an incumbent's edit that
//     would leave it out is refused instead (Conflict naming it), and the packs are
//     decided again. One left out all the same is named in Dropped, and so is one
//     Input.LeftOut names until it is published again.
//  4. The result is loaded as a whole with Load before it is returned; a bundle that
//     does not load is never returned.
//
// When every current generation loads together and fits, that is the result after
// one load. Otherwise each pack is first loaded on its own, and the order above is
// followed with a binary search for the first pack that does not fit with the ones
// before it, so a conflict costs a few loads rather than one per pack.
func Assemble(in Input) (*Result, error) {
	if err := checkNames(in); err != nil {
		return nil, err
	}
	res, err := assemble(in)
	if err != nil {
		return nil, err
	}
	res.Dropped = dropped(in, res)
	return res, nil
}

// assemble is Assemble but for Dropped.
func assemble(in Input) (*Result, error) {
	res := &Result{Packs: map[string]Outcome{}, Configs: map[string]Outcome{}}
	if in.Capability == nil {
		return keepCurrent(in, res, ReasonCapabilityMissing,
			"the Capability it names does not exist, so no bundle is published for it")
	}
	c, errs := engine.LoadCapability(in.Capability)
	if len(errs) > 0 {
		res.CapabilityErrors = errs
		return keepCurrent(in, res, ReasonCapabilityInvalid,
			fmt.Sprintf("the capability document is invalid (%s), so the current bundle stays", countOf(errs)))
	}
	res, err := newAssembler(in, c).run(res)
	if err != nil {
		return nil, err
	}
	return holdNarrowing(in, c, res)
}

// incumbents are the packs and configurations Current publishes, by name, but for those
// whose name a new object took (NewIdentity).
func (in Input) incumbents() (map[string]Pack, map[string]Config) {
	packs, configs := map[string]Pack{}, map[string]Config{}
	if in.Current == nil {
		return packs, configs
	}
	for _, p := range in.Current.Packs {
		packs[p.Name] = p
	}
	for _, c := range in.Current.Configs {
		configs[c.Name] = c
	}
	for _, p := range in.Packs {
		if p.NewIdentity {
			delete(packs, p.Name)
		}
	}
	for _, c := range in.Configs {
		if c.NewIdentity {
			delete(configs, c.Name)
		}
	}
	return packs, configs
}

func checkNames(in Input) error {
	seen := map[string]bool{}
	for _, p := range in.Packs {
		if seen[p.Name] {
			return fmt.Errorf("bundle: pack %q is given twice", p.Name)
		}
		seen[p.Name] = true
	}
	clear(seen)
	for _, c := range in.Configs {
		if seen[c.Name] {
			return fmt.Errorf("bundle: configuration %q is given twice", c.Name)
		}
		seen[c.Name] = true
	}
	return nil
}

func countOf(l diag.List) string {
	s := l[0].Error()
	if len(l) > 1 {
		s += fmt.Sprintf(", and %d more", len(l)-1)
	}
	return s
}

// keepCurrent is rule 1: nothing new is published, and every resource says why.
func keepCurrent(in Input, res *Result, reason, message string) (*Result, error) {
	res.Bundle = in.Current
	published := map[string]int64{}
	cfgPublished := map[string]int64{}
	if in.Current != nil {
		enc, err := Encode(in.Current)
		if err != nil {
			return nil, err
		}
		res.Encoded = enc
	}
	packs, configs := in.incumbents()
	for name, p := range packs {
		published[name] = p.Generation
	}
	for name, c := range configs {
		cfgPublished[name] = c.Generation
	}
	for _, p := range in.Packs {
		res.Packs[p.Name] = Outcome{PublishedGeneration: published[p.Name], Reason: reason, Message: message}
	}
	for _, c := range in.Configs {
		res.Configs[c.Name] = Outcome{PublishedGeneration: cfgPublished[c.Name], Reason: reason, Message: message}
	}
	return res, nil
}

// failure is why one generation of a resource was not taken.
type failure struct {
	reason, message string
	errs            diag.List
	with            string
	// sticky failures hold for the whole assembly: the generation does not load on its
	// own, or names a rule of a pack left out. Others are decided anew by each pass.
	sticky bool
	// dangling says the generation named a rule of a pack left out when it was refused;
	// the pack may be published in the end (explainDangling).
	dangling bool
}

// option is one generation of a pack that assembly may take.
type option struct {
	gen   int64
	rules []any
	// qids are the rules' qualified identifiers, "" where a rule has none.
	qids []string
	// part is the pack's canonical JSON inside the bundle.
	part []byte
	fail *failure
	// alone says whether the rules were loaded on their own yet (alone()), and
	// failsAlone whether they were refused then: the answer never changes, and rule 3
	// decides the packs again after each pack it refuses.
	alone, failsAlone bool
}

// slot is one pack and the generations it may contribute, current first.
type slot struct {
	name      string
	created   time.Time
	incumbent bool
	// unchanged is an incumbent whose current generation is the published one.
	unchanged bool
	opts      []*option
	chosen    *option
}

// usable returns the options not refused, in preference order.
func (s *slot) usable() []*option {
	var out []*option
	for _, o := range s.opts {
		if o.fail == nil {
			out = append(out, o)
		}
	}
	return out
}

type pick struct {
	s *slot
	o *option
}

// cfgOption is one generation of a configuration.
type cfgOption struct {
	gen, order int64
	doc        map[string]any
	part       []byte
	fail       *failure
}

type cfgSlot struct {
	name   string
	opts   []*cfgOption
	chosen *cfgOption
}

type assembler struct {
	in      Input
	cap     *engine.Capability
	capPart []byte
	slots   []*slot
	cfgs    []*cfgSlot
	z       *compressor
	// stubAnchor is an anchor every rule may use under this capability, for stubs.
	stubAnchor string
	stubs      map[string]map[string]any
}

func newAssembler(in Input, c *engine.Capability) *assembler {
	a := &assembler{in: in, cap: c, z: newCompressor(), stubs: map[string]map[string]any{}}
	for _, anchor := range engine.CoreAnchors {
		if _, ok := c.LocalAnchor(anchor); ok {
			a.stubAnchor = anchor
			break
		}
	}
	if a.stubAnchor == "" && len(c.HostAnchors) > 0 {
		a.stubAnchor = c.HostAnchors[0]
	}
	published, cfgPublished := in.incumbents()
	for _, p := range in.Packs {
		cur := newOption(p.Generation, p.Rules)
		cur.fail = unreadable(p.Generation, p.Refused)
		s := &slot{name: p.Name, created: p.CreationTime, opts: []*option{cur}}
		if old, ok := published[p.Name]; ok {
			s.incumbent = true
			s.unchanged = old.Generation == p.Generation
			if !s.unchanged {
				s.opts = append(s.opts, newOption(old.Generation, old.Rules))
			}
		}
		a.slots = append(a.slots, s)
	}
	slices.SortFunc(a.slots, func(x, y *slot) int {
		if x.incumbent != y.incumbent {
			if x.incumbent {
				return -1
			}
			return 1
		}
		return cmp.Or(x.created.Compare(y.created), cmp.Compare(x.name, y.name))
	})
	inputs := slices.Clone(in.Configs)
	slices.SortFunc(inputs, func(x, y ConfigInput) int {
		return cmp.Or(cmp.Compare(x.Order, y.Order), cmp.Compare(x.Name, y.Name))
	})
	for _, cf := range inputs {
		s := &cfgSlot{name: cf.Name, opts: []*cfgOption{{gen: cf.Generation, order: cf.Order, doc: cf.Document, fail: unreadable(cf.Generation, cf.Refused)}}}
		if old, ok := cfgPublished[cf.Name]; ok && old.Generation != cf.Generation {
			s.opts = append(s.opts, &cfgOption{gen: old.Generation, order: old.Order, doc: old.Document})
		}
		a.cfgs = append(a.cfgs, s)
	}
	return a
}

// unreadable is the failure of a generation that could not be read (errs), nil when errs
// is empty.
func unreadable(gen int64, errs diag.List) *failure {
	if len(errs) == 0 {
		return nil
	}
	return &failure{reason: ReasonLoadFailed, errs: errs, sticky: true,
		message: fmt.Sprintf("generation %d cannot be read: %s", gen, describe(errs))}
}

func newOption(gen int64, rules []any) *option {
	if rules == nil {
		rules = []any{}
	}
	o := &option{gen: gen, rules: rules, qids: make([]string, len(rules))}
	for i, r := range rules {
		o.qids[i] = qidOf(r)
	}
	return o
}

// encodeParts encodes the capability and every generation once, for the bundle JSON
// and its size.
func (a *assembler) encodeParts() error {
	var err error
	if a.capPart, err = marshal(a.in.Capability); err != nil {
		return fmt.Errorf("bundle: encoding the capability: %w", err)
	}
	for _, s := range a.slots {
		for _, o := range s.opts {
			if o.part, err = marshal(Pack{Name: s.name, Generation: o.gen, Rules: o.rules}); err != nil {
				return fmt.Errorf("bundle: encoding pack %q generation %d: %w", s.name, o.gen, err)
			}
		}
	}
	for _, s := range a.cfgs {
		for _, o := range s.opts {
			if o.part, err = marshal(Config{Name: s.name, Generation: o.gen, Order: o.order, Document: o.doc}); err != nil {
				return fmt.Errorf("bundle: encoding configuration %q generation %d: %w", s.name, o.gen, err)
			}
		}
	}
	return nil
}

// run assembles: first everything current at once, then the procedures of rules 2 and 3.
func (a *assembler) run(res *Result) (*Result, error) {
	var all []pick
	unread := false
	for _, s := range a.slots {
		all = append(all, pick{s, s.opts[0]})
		unread = unread || s.opts[0].fail != nil
	}
	var cfgAll []*cfgOption
	for _, s := range a.cfgs {
		cfgAll = append(cfgAll, s.opts[0])
	}
	if unread {
		// Some current generation could not be read: there is no set of every current
		// generation to try first.
		if err := a.encodeParts(); err != nil {
			return nil, err
		}
		taken, rs, err := a.packs(nil)
		if err != nil {
			return nil, err
		}
		return a.publish(res, taken, rs)
	}
	// Encoding the bundle of every current generation and loading it are
	// independent: do both at once.
	type encoding struct {
		enc Encoded
		err error
	}
	encoded := make(chan encoding, 1)
	go func() {
		if err := a.encodeParts(); err != nil {
			encoded <- encoding{err: err}
			return
		}
		canon := a.canonical(opts(publication(all)), cfgAll)
		enc, err := encodeCanonical(canon, digestOf(canon), a.z)
		encoded <- encoding{enc, err}
	}()
	b0 := a.bundleOf(all, cfgAll)
	l, le := load(b0)
	e0 := <-encoded
	var tooLarge *TooLargeError
	if e0.err != nil && !errors.As(e0.err, &tooLarge) {
		return nil, e0.err
	}
	if le == nil {
		if tooLarge == nil {
			b0.Digest = e0.enc.Digest
			a.choose(all, cfgAll)
			return a.finish(res, b0, e0.enc, l)
		}
	} else if le.Stage == StageCapability {
		return nil, le
	}
	var taken []pick
	var rs *engine.RuleSet
	if le != nil && le.Stage == StageConfigs && a.tooLarge(all, nil) == nil {
		taken, rs = all, l.RuleSet
		a.choose(all, nil)
	} else {
		// The load above is the first step of rule 2 unless packs are refused on
		// their own.
		fast := &verdict{exact: true}
		if le != nil && le.Stage == StageRules {
			fast.errs = le.raw
		} else {
			fast.rs, fast.tooLarge = l.RuleSet, a.tooLarge(all, nil)
		}
		start := 0
		for _, p := range publication(all) {
			fast.segs = append(fast.segs, segment{start: start, s: p.s, o: p.o})
			start += len(p.o.rules)
		}
		var err error
		if taken, rs, err = a.packs(fast); err != nil {
			return nil, err
		}
	}
	return a.publish(res, taken, rs)
}

// publish runs rule 3 against the packs taken and loads the result once more as a
// whole (rule 4). A published configuration is an incumbent too: when a newcomer pack
// or an incumbent's edit is what leaves it out, that pack generation is refused instead
// (the incumbent keeps its last published one) and the packs decided again.
func (a *assembler) publish(res *Result, taken []pick, rs *engine.RuleSet) (*Result, error) {
	cfgs := a.configs(rs, taken)
	for evictor, cfg := a.configEvictor(taken, cfgs); evictor != nil; evictor, cfg = a.configEvictor(taken, cfgs) {
		o, why := evictor.o, cfg.opts[0].fail.message
		if evictor.s.incumbent {
			o.fail = &failure{reason: ReasonConflict, with: cfg.name, sticky: true, message: fmt.Sprintf(
				"generation %d would leave out configuration %q, which is published (%s): an edit never evicts what is published; "+
					"change the configuration first, or together with the pack", o.gen, cfg.name, why)}
		} else {
			o.fail = &failure{reason: ReasonConflict, with: cfg.name, sticky: true, message: fmt.Sprintf(
				"generation %d would leave out configuration %q, published before it (%s): a newcomer never evicts what is published; "+
					"change the pack or the configuration", o.gen, cfg.name, why)}
		}
		var err error
		if taken, rs, err = a.packs(nil); err != nil {
			return nil, err
		}
		cfgs = a.configs(rs, taken)
	}
	b := a.bundleOf(taken, cfgs)
	canon := a.canonical(opts(publication(taken)), sortConfigs(cfgs, a.cfgNames()))
	enc, err := encodeCanonical(canon, digestOf(canon), a.z)
	if err != nil {
		return nil, err
	}
	b.Digest = enc.Digest
	l, le := load(b)
	if le != nil {
		return nil, fmt.Errorf("bundle: the assembled bundle does not load, so it is not published: %w", le)
	}
	return a.finish(res, b, enc, l)
}

func (a *assembler) choose(packs []pick, cfgs []*cfgOption) {
	for _, p := range packs {
		p.s.chosen = p.o
	}
	for i, c := range cfgs {
		a.cfgs[i].chosen = c
	}
}

func opts(picks []pick) []*option {
	out := make([]*option, len(picks))
	for i, p := range picks {
		out[i] = p.o
	}
	return out
}

// publication puts packs in the order a bundle lists them: by (creation time, name).
// Assembly's order, incumbents first, decides who wins a conflict; the bundle's order
// carries no meaning ([OAR-DOC-31]) and must not change when a newcomer becomes an
// incumbent, or publishing the same state twice would change the digest.
func publication(picks []pick) []pick {
	out := slices.Clone(picks)
	slices.SortFunc(out, func(x, y pick) int {
		return cmp.Or(x.s.created.Compare(y.s.created), cmp.Compare(x.s.name, y.s.name))
	})
	return out
}

// bundleOf builds the (unsealed) bundle publishing picks and cfgs.
func (a *assembler) bundleOf(picks []pick, cfgs []*cfgOption) *Bundle {
	picks = publication(picks)
	b := &Bundle{Capability: a.in.Capability, Packs: make([]Pack, len(picks)), Configs: make([]Config, 0, len(cfgs))}
	for i, p := range picks {
		b.Packs[i] = Pack{Name: p.s.name, Generation: p.o.gen, Rules: p.o.rules}
	}
	names := a.cfgNames()
	for _, c := range sortConfigs(cfgs, names) {
		b.Configs = append(b.Configs, Config{Name: names[c], Generation: c.gen, Order: c.order, Document: c.doc})
	}
	return b
}

func (a *assembler) cfgNames() map[*cfgOption]string {
	names := map[*cfgOption]string{}
	for _, s := range a.cfgs {
		for _, o := range s.opts {
			names[o] = s.name
		}
	}
	return names
}

// sortConfigs puts configurations in application order, (order, name) of the
// generation published ([OAR-CFG-7]).
func sortConfigs(cfgs []*cfgOption, names map[*cfgOption]string) []*cfgOption {
	out := slices.Clone(cfgs)
	slices.SortStableFunc(out, func(x, y *cfgOption) int {
		return cmp.Or(cmp.Compare(x.order, y.order), cmp.Compare(names[x], names[y]))
	})
	return out
}

// Fixed text of the canonical bundle JSON around its parts.
const (
	jsonHead    = `{"capability":`
	jsonPacks   = `,"packs":[`
	jsonConfigs = `],"configs":[`
	jsonTail    = `],"digest":""}`
)

// canonical joins pre-encoded parts into the bundle's canonical JSON: what encoding the
// Bundle produces, without encoding every rule again.
func (a *assembler) canonical(packs []*option, cfgs []*cfgOption) []byte {
	out := make([]byte, 0, a.canonicalLen(packs, cfgs))
	out = append(out, jsonHead...)
	out = append(out, a.capPart...)
	out = append(out, jsonPacks...)
	for i, o := range packs {
		if i > 0 {
			out = append(out, ',')
		}
		out = append(out, o.part...)
	}
	out = append(out, jsonConfigs...)
	for i, c := range cfgs {
		if i > 0 {
			out = append(out, ',')
		}
		out = append(out, c.part...)
	}
	return append(out, jsonTail...)
}

func (a *assembler) canonicalLen(packs []*option, cfgs []*cfgOption) int {
	n := len(jsonHead) + len(a.capPart) + len(jsonPacks) + len(jsonConfigs) + len(jsonTail)
	for _, o := range packs {
		n += len(o.part) + 1
	}
	for _, c := range cfgs {
		n += len(c.part) + 1
	}
	return n
}

// tooLarge reports whether a bundle of these packs and configurations would not fit, or
// would be more JSON than Decode reads (MaxDecodedSize). Sizes are only compressed when
// the JSON could exceed the limit even compressed.
func (a *assembler) tooLarge(picks []pick, cfgs []*cfgOption) *TooLargeError {
	packs := opts(publication(picks))
	plain := a.storedLen(packs, cfgs)
	if plain > MaxDecodedSize {
		return &TooLargeError{Plain: plain, Limit: MaxDecodedSize}
	}
	if plainSizeBound(plain) <= ConfigMapLimit {
		return nil
	}
	canon := a.canonical(packs, sortConfigs(cfgs, a.cfgNames()))
	full, err := withDigest(canon, digestOf(canon))
	if err != nil {
		return &TooLargeError{Plain: plain, Encoded: plain, Limit: ConfigMapLimit}
	}
	if n := len(a.z.compress(full)); n > ConfigMapLimit {
		return &TooLargeError{Plain: len(full), Encoded: n, Limit: ConfigMapLimit}
	}
	return nil
}

// storedLen is the exact length of the stored JSON of these parts: the canonical JSON
// with the digest filled in.
func (a *assembler) storedLen(packs []*option, cfgs []*cfgOption) int {
	n := a.canonicalLen(packs, cfgs) + len(digestPrefix) + 2*sha256.Size
	if len(packs) > 0 {
		n-- // canonicalLen counts a comma after every part; the last has none
	}
	if len(cfgs) > 0 {
		n--
	}
	return n
}

// finish seals the result and tells every resource what happened to it.
func (a *assembler) finish(res *Result, b *Bundle, enc Encoded, l *Loaded) (*Result, error) {
	res.Bundle, res.Encoded, res.Loaded = b, enc, l
	res.Changed = a.in.Current == nil || a.in.Current.Digest != b.Digest
	for _, s := range a.slots {
		res.Packs[s.name] = outcome(s.opts[0].fail, s.chosen, s.opts, "pack", func(o *option) (int64, *failure) { return o.gen, o.fail })
	}
	for _, s := range a.cfgs {
		res.Configs[s.name] = outcome(s.opts[0].fail, s.chosen, s.opts, "configuration", func(o *cfgOption) (int64, *failure) { return o.gen, o.fail })
	}
	return res, nil
}

// outcome describes one resource from its options: opts[0] is the current generation.
// Every generation not chosen was tried and refused, so curFail is set when the current
// one is not chosen, and so is the failure of the last published one when neither is.
func outcome[O comparable](curFail *failure, chosen O, opts []O, kind string, info func(O) (int64, *failure)) Outcome {
	var zero O
	var out Outcome
	if chosen != zero {
		out.PublishedGeneration, _ = info(chosen)
	}
	if chosen == opts[0] {
		out.Published = true
		return out
	}
	out.Reason, out.Message, out.Errors, out.ConflictsWith = curFail.reason, curFail.message, curFail.errs, curFail.with
	switch {
	case chosen != zero:
		out.Message += fmt.Sprintf("; generation %d stays published", out.PublishedGeneration)
	case len(opts) > 1:
		gen, f := info(opts[1])
		out.Message += fmt.Sprintf("; the last published generation %d is left out too (%s), so the %s is not published", gen, f.message, kind)
	}
	return out
}
