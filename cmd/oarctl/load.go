package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"slices"
	"strings"

	"github.com/oar-operator/oar-operator/internal/admission"
	"github.com/oar-operator/oar-operator/internal/engine"
	"github.com/oar-operator/oar-operator/internal/engine/diag"
	"github.com/oar-operator/oar-operator/internal/engine/types"
)

// docKind is what an OAR document is.
type docKind int

// The kinds. anyKind, as the kind a file is read for, accepts every kind.
const (
	anyKind docKind = iota
	ruleDoc
	capabilityDoc
	configDoc
)

func (k docKind) String() string {
	switch k {
	case ruleDoc:
		return "rule document"
	case capabilityDoc:
		return "capability document"
	case configDoc:
		return "configuration document"
	}
	return "OAR document"
}

// clause is the clause under which a member of a collection read for documents of kind
// k is refused when it is no such document: a rule set holds rule documents alone
// ([OAR-DOC-31]). Documents read for another kind, or for any kind, are refused by
// oarctl, under no clause.
func (k docKind) clause() string {
	if k == ruleDoc {
		return "OAR-DOC-31"
	}
	return ""
}

// versionMembers are the members that carry a document's version, each marking one kind:
// oar a rule (section 3), oar_capability_version a capability (section 8.2), oar_config
// a configuration (section 9). Only the member's presence classifies a document; its
// value is the engine's to check, so an unquoted `oar: 1.0` still reaches the loader and
// gets its diagnostic.
var versionMembers = []struct {
	member string
	kind   docKind
}{
	{"oar", ruleDoc},
	{"oar_capability_version", capabilityDoc},
	{"oar_config", configDoc},
}

// origin locates a document: the file it came from and the JSON path to it inside that
// file, which prefixes the field of every diagnostic about it.
type origin struct {
	file string
	path string
}

// document is one classified document of an input file.
type document struct {
	kind  docKind
	value any
	at    origin
}

// classify tells what one member of a file is: one OAR document, or a rules.oar.dev
// manifest, which yields the documents it wraps (a RulePack one per rule), each with the
// path to it inside the member, spelled as the admission webhook spells it. A member
// that is neither is refused, under want's clause.
func classify(v any, at origin, want docKind) ([]document, *diag.Error) {
	obj, ok := v.(map[string]any)
	if !ok {
		return nil, diag.New(want.clause(), "", "not an OAR document: a rule, capability or configuration document is a JSON object; got %s", types.DescribeJSON(v))
	}
	if api, isManifest := obj["apiVersion"].(string); isManifest {
		return classifyManifest(api, obj, at, want)
	}
	var found []string
	kind := anyKind
	for _, vm := range versionMembers {
		if _, present := obj[vm.member]; present {
			found = append(found, vm.member)
			kind = vm.kind
		}
	}
	switch len(found) {
	case 1:
		return []document{{kind: kind, value: v, at: at}}, nil
	case 0:
		return nil, unclassified(obj, want)
	}
	// A rule carries no member a rule does not define ([OAR-DOC-27]); a capability or a
	// configuration carries oar_config or oar_capability_version, which a configuration
	// does not define ([OAR-CFG-1]).
	clause := "OAR-CFG-1"
	if found[0] == "oar" {
		clause = "OAR-DOC-27"
	}
	return nil, diag.New(clause, found[1], "ambiguous document: it carries %s, and a document is exactly one of a rule (oar), a capability (oar_capability_version) or a configuration (oar_config)", strings.Join(found, " and "))
}

// unclassified refuses an object that carries no version member, naming the member that
// most likely misspells one, or apiVersion, when one does.
func unclassified(obj map[string]any, want docKind) *diag.Error {
	e := diag.New(want.clause(), "", "not an OAR document: it carries none of oar (a rule), oar_capability_version (a capability) or oar_config (a configuration), nor the apiVersion and kind of a manifest; its members are %s", memberNames(obj))
	markers := []string{"apiVersion"}
	for _, vm := range versionMembers {
		markers = append(markers, vm.member)
	}
	for _, m := range slices.Sorted(maps.Keys(obj)) {
		if _, near := diag.Closest(m, slices.Values(markers)); near {
			e.Field = m
			return e.Suggest(m, slices.Values(markers))
		}
	}
	return e
}

// manifestGroup is the API group of the operator's resources.
const manifestGroup = "rules.oar.dev/"

// classifyManifest unwraps a Capability, RulePack or OperatorConfig manifest. Any other
// Kubernetes object is refused by name rather than skipped, so a misspelled group never
// makes a pack silently go unchecked (validate skips other groups, and refuses what
// looks like a misspelling first: see sortMember). It is refused under want's clause.
func classifyManifest(api string, obj map[string]any, at origin, want docKind) ([]document, *diag.Error) {
	kind, _ := obj["kind"].(string)
	if !strings.HasPrefix(api, manifestGroup) {
		return nil, diag.New(want.clause(), "", "not an OAR document: %s %s is not a resource of %s (Capability, RulePack, OperatorConfig)", api, kind, strings.TrimSuffix(manifestGroup, "/"))
	}
	wraps, judged := manifestKinds[kind]
	if !judged {
		return nil, diag.New(want.clause(), "kind", "%q is not a kind of %s (Capability, RulePack, OperatorConfig)", kind, strings.TrimSuffix(api, "/v1alpha1")).Suggest(kind, maps.Keys(manifestKinds))
	}
	spec, ok := obj["spec"].(map[string]any)
	if !ok {
		return nil, diag.New("", "spec", "a %s manifest must carry a spec object", kind)
	}
	path := at.path + ".spec"
	switch wraps {
	case capabilityDoc:
		return []document{{kind: capabilityDoc, value: spec, at: origin{file: at.file, path: path}}}, nil
	case ruleDoc:
		rules, ok := spec["rules"].([]any)
		if !ok {
			return nil, diag.New("OAR-DOC-31", "spec.rules", "a RulePack's spec.rules must be a list of rule documents")
		}
		docs := make([]document, len(rules))
		for i, r := range rules {
			docs[i] = document{kind: ruleDoc, value: r, at: origin{file: at.file, path: fmt.Sprintf("%s.rules[%d]", path, i)}}
		}
		return docs, nil
	}
	cfg, present := spec["config"]
	if !present {
		return nil, diag.New("", "spec.config", "an OperatorConfig must carry spec.config, an OAR configuration document")
	}
	return []document{{kind: configDoc, value: cfg, at: origin{file: at.file, path: path + ".config"}}}, nil
}

func memberNames(obj map[string]any) string {
	if len(obj) == 0 {
		return "none"
	}
	return diag.Truncate(strings.Join(slices.Sorted(maps.Keys(obj)), ", "))
}

// loader reads documents from files and loads them with the engine, printing every
// problem on w as one line that starts with the file it concerns:
//
//	FILE: [N].field: [CLAUSE] message (rule R)
//
// where [N] is the document's index in FILE.
type loader struct {
	w      io.Writer
	failed bool
	// strict fails the run on a warning that says what was written will not be served
	// as written, and unserved counts those warnings.
	strict   bool
	unserved int
}

// errorf reports a problem with a file as a whole, on one line.
func (l *loader) errorf(file, format string, args ...any) {
	l.failed = true
	fmt.Fprintf(l.w, "%s: %s\n", file, oneLine(fmt.Sprintf(format, args...)))
}

// oneLine joins a multi-line message (a YAML parser lists its errors one per line) so
// every problem stays one line of output.
func oneLine(s string) string {
	lines := strings.Split(s, "\n")
	for i, line := range lines {
		lines[i] = strings.TrimSpace(line)
	}
	return strings.Join(lines, " ")
}

// fail reports a problem that concerns no single file.
func (l *loader) fail(format string, args ...any) {
	l.errorf("oarctl", format, args...)
}

// report prints one diagnostic about the document at.
func (l *loader) report(at origin, e *diag.Error) {
	l.failed = true
	fmt.Fprintf(l.w, "%s: %s\n", at.file, e.Format(at.path))
}

// warn prints one load warning about the document at: the loader's advice about a rule
// it loads as written.
func (l *loader) warn(at origin, e *diag.Error) {
	l.warning(at.file, admission.LoadAdvice, e.Format(at.path))
}

// warning prints one warning about file, of kind. A warning does not fail the run, but
// under strict one of a kind that is not served does, and says so.
func (l *loader) warning(file string, kind admission.WarningKind, text string) {
	label := "warning"
	if l.strict && kind.Unserved() {
		l.failed = true
		l.unserved++
		label = fmt.Sprintf("warning (not served: %s)", kind)
	}
	fmt.Fprintf(l.w, "%s: %s: %s\n", file, label, text)
}

// reportAll prints each diagnostic of a load against the document its Index names
// among docs; a list about one document (a capability) needs no index.
func (l *loader) reportAll(docs []document, errs diag.List, emit func(origin, *diag.Error)) {
	for _, e := range errs {
		d := docs[0]
		if e.Index >= 0 && e.Index < len(docs) {
			d = docs[e.Index]
			if q, ok := engine.QualifiedID(d.value); ok && e.Rule == "" && d.kind == ruleDoc {
				// The loader stopped before it read the id; name the rule as the webhook does.
				named := *e
				named.Rule = q
				e = &named
			}
		}
		emit(d.at, e)
	}
}

// readFile reads the members of file and classifies them. When want is not anyKind,
// every member must be of that kind. Problems are reported; the documents that
// classified are returned.
func (l *loader) readFile(file string, want docKind) []document {
	var docs []document
	members, _ := l.readMembers(file)
	for i, m := range members {
		for _, d := range l.classify(m, memberOrigin(file, i), want) {
			if want != anyKind && d.kind != want {
				l.report(d.at, diag.New(want.clause(), "", "this is a %s, where a %s is expected", d.kind, want))
				continue
			}
			docs = append(docs, d)
		}
	}
	return docs
}

// readMembers decodes file (JSON or YAML; one document, a JSON array, or a YAML stream)
// into its members, reporting a file that cannot be read or decoded.
func (l *loader) readMembers(file string) (members []any, array bool) {
	data, err := os.ReadFile(file)
	if err != nil {
		l.errorf(file, "%v", unwrapPathError(err))
		return nil, false
	}
	return l.decodeMembers(file, data)
}

// readStdin is readMembers for standard input, named "-".
func (l *loader) readStdin() (members []any, array bool) {
	data, err := io.ReadAll(stdin)
	if err != nil {
		l.errorf("-", "%v", err)
		return nil, false
	}
	return l.decodeMembers("-", data)
}

// decodeMembers decodes the members of data, read from file, reporting data that
// cannot be decoded; array reports that data is one array of them (JSON, or a YAML
// flow sequence), not a stream of documents.
func (l *loader) decodeMembers(file string, data []byte) (members []any, array bool) {
	members, err := engine.DecodeDocuments(data)
	if err != nil {
		l.errorf(file, "%v", err)
		return nil, false
	}
	trimmed := bytes.TrimLeft(bytes.TrimPrefix(data, []byte("\xef\xbb\xbf")), " \t\r\n")
	return members, bytes.HasPrefix(trimmed, []byte("["))
}

// memberOrigin locates member i of file.
func memberOrigin(file string, i int) origin {
	return origin{file: file, path: fmt.Sprintf("[%d]", i)}
}

// classify classifies one member of a file read for documents of kind want, reporting a
// member that is no OAR document.
func (l *loader) classify(m any, at origin, want docKind) []document {
	docs, e := classify(m, at, want)
	if e != nil {
		l.report(at, e)
	}
	return docs
}

// readFiles reads every file for documents of kind want, in order.
func (l *loader) readFiles(files []string, want docKind) []document {
	var docs []document
	for _, f := range files {
		docs = append(docs, l.readFile(f, want)...)
	}
	return docs
}

// readCapability reads the file --capability names, which holds one capability document.
func (l *loader) readCapability(file string) *document {
	failed := l.failed
	l.failed = false
	docs := l.readFile(file, capabilityDoc)
	reported := l.failed
	l.failed = l.failed || failed
	switch len(docs) {
	case 0:
		if !reported {
			l.errorf(file, "holds no capability document; --capability names a file holding exactly one")
		}
		return nil
	case 1:
		return &docs[0]
	}
	l.errorf(file, "holds %d capability documents; --capability names a file holding exactly one", len(docs))
	return nil
}

// capability loads one capability document, reporting its diagnostics ([OAR-FACT-24]).
func (l *loader) capability(d document) *engine.Capability {
	c, errs := engine.LoadCapability(d.value)
	l.reportAll([]document{d}, errs, l.report)
	return c
}

// program loads the capability, then the rules as one set against it ([OAR-DOC-31]),
// then the configurations in order ([OAR-CFG-7]), reporting every diagnostic against the
// file and document it concerns. Without a capability there can be no rules, and the
// configurations are checked against the empty rule set. It returns nil when anything
// failed to load.
func (l *loader) program(capDoc *document, rules, configs []document) *engine.Program {
	var c *engine.Capability
	switch {
	case capDoc != nil:
		if c = l.capability(*capDoc); c == nil {
			l.skipped(len(rules), len(configs), "the capability does not load")
			return nil
		}
	case len(rules) > 0:
		l.errorf(rules[0].at.file, "rules load against a capability document: name one with --capability FILE")
		return nil
	}
	rs, errs := engine.LoadRules(c, values(rules))
	l.reportAll(rules, errs, l.report)
	if rs == nil {
		l.skipped(0, len(configs), "the rules do not load")
		return nil
	}
	l.reportAll(rules, rs.Warnings, l.warn)
	p, errs := engine.Configure(rs, values(configs))
	l.reportAll(configs, errs, l.report)
	return p
}

// skipped says which documents a failure upstream left unchecked, so a short report is
// never mistaken for a clean one; a run that left documents unchecked fails.
func (l *loader) skipped(rules, configs int, why string) {
	l.failed = true
	var parts []string
	if rules > 0 {
		parts = append(parts, fmt.Sprintf("%d rule documents", rules))
	}
	if configs > 0 {
		parts = append(parts, fmt.Sprintf("%d configuration documents", configs))
	}
	if len(parts) > 0 {
		fmt.Fprintf(l.w, "oarctl: %s not checked: %s\n", strings.Join(parts, " and "), why)
	}
}

func values(docs []document) []any {
	out := make([]any, len(docs))
	for i, d := range docs {
		out[i] = d.value
	}
	return out
}

// unwrapPathError drops the operation and path an *os.PathError repeats, since every
// message is already prefixed with the file.
func unwrapPathError(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// programFlags name the files eval and bench load: one capability, the rule files, and
// the configurations in the order given.
type programFlags struct {
	capability string
	rules      fileList
	configs    fileList
}

func (pf *programFlags) register(flags *flag.FlagSet) {
	flags.StringVar(&pf.capability, "capability", "", "the capability document `FILE` (required)")
	flags.Var(&pf.rules, "rules", "a `FILE` of rule documents (required; repeatable, all files load as one rule set)")
	flags.Var(&pf.configs, "config", "a configuration document `FILE` (repeatable; applied in order)")
}

// missing names a required flag that was not given, or returns "".
func (pf *programFlags) missing() string {
	switch {
	case pf.capability == "":
		return "--capability FILE is required"
	case len(pf.rules) == 0:
		return "--rules FILE is required"
	}
	return ""
}

// load reads the named files and loads them into a program, reporting every problem;
// it returns nil when anything failed.
func (pf *programFlags) load(l *loader) *engine.Program {
	capDoc := l.readCapability(pf.capability)
	rules := l.readFiles(pf.rules, ruleDoc)
	configs := l.readFiles(pf.configs, configDoc)
	if capDoc == nil {
		l.skipped(len(rules), len(configs), "the capability could not be read")
		return nil
	}
	p := l.program(capDoc, rules, configs)
	if l.failed {
		return nil
	}
	return p
}
