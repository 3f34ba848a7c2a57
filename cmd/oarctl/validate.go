package main

import (
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/oar-operator/oar-operator/internal/admission"
)

const validateSynopsis = "oarctl validate [--strict] [--capability FILE] [--config FILE]... [--namespace NAME] PATH..."

// validateAbout is what `oarctl validate -h` says before the flags.
const validateAbout = `Plain OAR documents (rules, a capability, configurations) load with the engine's
loader: the rules as one rule set against one capability document (--capability, or
the one among the PATHs), then the configurations in order.

A PATH is a file, a directory, or - for standard input (helm template ... | oarctl
validate -, kustomize build ... | oarctl validate -). A directory walk reads every
*.json, *.yaml and *.yml file but hidden ones, kustomization.yaml and Chart.yaml; it
suits a directory of plain manifests, not a chart's templates or kustomize patches,
which become manifests only when rendered or built. A Kubernetes manifest of another
API group (a Deployment, a Service, a Kustomization) is skipped and counted in the
summary, and the items of a List are read one by one. Nothing that looks like an OAR document is skipped: an
apiVersion of rules.oar.dev at another version, with no version, or of a group close
to it, a kind of rules.oar.dev or close to one under another group that carries OAR
content (oar_capability_version, rules holding oar, config holding oar_config, in spec
or at the top level), and a document that is neither a manifest nor an OAR document are
errors, with what was most likely meant. Such a kind without OAR content is another
project's resource (GKE's monitoring.googleapis.com/v1 OperatorConfig): skipped and
counted, with a note. There is no flag to skip less or more: what is skipped could
never be an OAR resource, and a run that finds nothing to validate fails.

RulePack, Capability and OperatorConfig manifests get the admission webhook's verdict,
in the webhook's words, as kubectl prints it. The manifests are the intended state of
a cluster, as a Git repository keeps it: each is judged as if it were created into a
cluster holding all the others, looked up as the webhook looks them up (a RulePack
or OperatorConfig reads the Capability its capabilityRef names in its own namespace,
and the packs and configurations naming that Capability). A manifest the API server
would refuse before admission (an unknown or mistyped member, a missing required one)
is reported and left out of the set.

Offline there is no status: what the webhook reads of the published state, the bundle
of each Capability, is the bundle the controller would publish of the other objects,
all created at once by one sync (generation 1, no earlier bundle; packs taken by
name, configurations by order then name). So a Capability is judged as a create:
refused for an invalid document, and warned about packs that do not load against it,
which are refused themselves. Refusing an update that would shrink what is already
published takes the live cluster: kubectl apply --dry-run=server. Where the webhook
lists 20 problems and counts the rest, every one is listed.

The webhook admits what it only warns about, and the controller decides: most
warnings say that the controller will not serve what was written (a pack left out or
held back, a configuration that does not apply), the rest are advice. With --strict,
a warning of the first sort fails the run (see the flag for the list).

Exit status 1 when a document does not load, or a manifest would be refused, or
a member is neither skipped nor read, or there is nothing to validate, or with
--strict when a warning says what was written will not be served as written.`

// runValidate checks plain OAR documents with the engine's loader and gives every
// manifest the admission webhook's verdict. It prints one line per diagnostic, refusal
// cause and warning, and exits 1 on any error or refusal, or prints a one-line summary
// and exits 0.
func runValidate(args []string, stdout, stderr io.Writer) int {
	flags := newFlags("validate", stderr)
	capFile := flags.String("capability", "", "the capability document `FILE` plain rule documents load against (default: the one capability document among the PATHs)")
	var configFiles fileList
	flags.Var(&configFiles, "config", "a configuration document `FILE`, applied before those found among the PATHs (repeatable; applied in order)")
	namespace := flags.String("namespace", "default", "the namespace of manifests that name none, as `NAME` (kubectl apply's current namespace)")
	strict := flags.Bool("strict", false, strictUsage())
	paths, code, ok := parseFlags(flags, validateSynopsis, args, stdout, stderr)
	if !ok {
		return code
	}
	if len(paths) == 0 {
		return usageError(stderr, validateSynopsis, "validate needs at least one PATH (a file, a directory, or - for standard input)")
	}

	l := &loader{w: stderr, strict: *strict}
	seen := fileSet{}
	var explicit *document
	if *capFile != "" && seen.first(*capFile) {
		explicit = l.readCapability(*capFile)
	}
	var in inputs
	for _, f := range configFiles {
		if seen.first(f) {
			in.add(l.readFile(f, configDoc))
		}
	}
	for _, p := range paths {
		if p == "-" {
			if seen.first(p) {
				members, array := l.readStdin()
				l.readSet(p, members, array, *namespace, &in)
			}
			continue
		}
		files, err := inputFiles(p)
		if err != nil {
			l.errorf(p, "%v", err)
			continue
		}
		for _, f := range files {
			if seen.first(f) {
				members, array := l.readMembers(f)
				l.readSet(f, members, array, *namespace, &in)
			}
		}
	}
	var summaries []string
	if *capFile != "" || len(in.caps)+len(in.rules)+len(in.configs) > 0 {
		summaries = append(summaries, l.documents(explicit, *capFile != "", in))
	}
	if len(in.manifests) > 0 {
		summaries = append(summaries, l.judge(l.unique(in.manifests)))
	}
	if len(summaries) == 0 && !l.failed {
		// Only manifests of other groups: a PATH that misses the OAR files must not pass.
		msg := fmt.Sprintf("nothing to validate: no OAR document and no %s manifest among the PATHs", strings.TrimSuffix(manifestGroup, "/"))
		if in.others > 0 {
			msg += fmt.Sprintf(" (%s skipped)", plural(in.others, "other manifest"))
		}
		l.fail("%s", msg)
	}
	if in.others > 0 {
		summaries = append(summaries, plural(in.others, "other manifest")+" skipped")
	}
	if l.unserved > 0 {
		l.fail("--strict: what was written will not be served as written (%s marked \"not served\")", plural(l.unserved, "warning"))
	}
	if l.failed {
		return exitFail
	}
	fmt.Fprintln(stdout, "ok: "+strings.Join(summaries, "; "))
	return exitOK
}

// strictUsage is the help of --strict: the kinds of warning it fails on and those it
// does not, from the one list admission keeps.
func strictUsage() string {
	var unserved, advice strings.Builder
	for _, k := range admission.WarningKinds() {
		line := fmt.Sprintf("\n  %s: %s", k, k.Summary())
		if k.Unserved() {
			unserved.WriteString(line)
		} else {
			advice.WriteString(line)
		}
	}
	return "fail (exit 1) on a warning that means the controller will not serve what was written as written,\n" +
		"printed as \"warning (not served: KIND)\"; give the Capability's manifest with the others. The kinds:" +
		unserved.String() + "\nAdvice never fails:" + advice.String()
}

// documents loads the plain documents: the rules against the capability explicit names
// (named says --capability was given) or the one among them, then the configurations.
// It reports what fails and returns the summary of what loaded.
func (l *loader) documents(explicit *document, named bool, in inputs) string {
	caps, rules, configs := in.caps, in.rules, in.configs
	// The capability the rules load against, and the others, which are checked alone.
	capDoc, others := explicit, caps
	switch {
	case named && explicit == nil:
		l.skipped(len(rules), len(configs), "the capability named by --capability could not be read")
		rules, configs = nil, nil
	case !named && len(caps) == 1:
		capDoc, others = &caps[0], nil
	case !named && len(caps) > 1 && len(rules) > 0:
		l.fail("%d capability documents found (%s); name the one the rules load against with --capability FILE", len(caps), locations(caps))
		rules, configs = nil, nil
	}
	var hosts []string
	for _, d := range others {
		if c := l.capability(d); c != nil {
			hosts = append(hosts, c.Host)
		}
	}
	p := l.program(capDoc, rules, configs)
	if p == nil {
		return ""
	}
	summary := fmt.Sprintf("%d rules, %d configurations", len(p.RuleSet().Rules), len(configs))
	switch {
	case capDoc != nil && len(hosts) > 0:
		summary += fmt.Sprintf(" against capability %s; other capabilities: %s", p.Capability().Host, strings.Join(hosts, ", "))
	case capDoc != nil:
		summary += " against capability " + p.Capability().Host
	case len(hosts) > 0:
		summary += fmt.Sprintf("; %d capabilities: %s", len(hosts), strings.Join(hosts, ", "))
	}
	return summary
}

// inputs are the plain documents validate found, by kind, and the manifests, in the
// order given; others counts the manifests of other API groups it skipped.
type inputs struct {
	caps, rules, configs []document
	manifests            []manifest
	others               int
}

func (in *inputs) add(docs []document) {
	for _, d := range docs {
		switch d.kind {
		case ruleDoc:
			in.rules = append(in.rules, d)
		case capabilityDoc:
			in.caps = append(in.caps, d)
		case configDoc:
			in.configs = append(in.configs, d)
		}
	}
}

// fileSet remembers the files already read, so a file named twice (directly and
// through its directory) is loaded once rather than reported as duplicate rules.
type fileSet map[string]bool

func (s fileSet) first(file string) bool {
	key := filepath.Clean(file)
	if s[key] {
		return false
	}
	s[key] = true
	return true
}

// inputFiles lists the files a PATH stands for: the file itself, or every *.json, *.yaml
// and *.yml file under a directory in lexical order, skipping hidden files and directories,
// kustomize's kustomization.yaml and Helm's Chart.yaml, which say how to build manifests
// and are none themselves (they carry no apiVersion and kind of a manifest).
func inputFiles(path string) ([]string, error) {
	info, err := os.Stat(path)
	if err != nil {
		return nil, unwrapPathError(err)
	}
	if !info.IsDir() {
		return []string{path}, nil
	}
	var files []string
	err = filepath.WalkDir(path, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p != path && strings.HasPrefix(d.Name(), ".") {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if !d.IsDir() && isDocumentFile(p) && !isBuildFile(p) {
			files = append(files, p)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("no *.json, *.yaml or *.yml file under this directory")
	}
	return files, nil
}

func isDocumentFile(name string) bool {
	switch strings.ToLower(filepath.Ext(name)) {
	case ".json", ".yaml", ".yml":
		return true
	}
	return false
}

func isBuildFile(name string) bool {
	switch filepath.Base(name) {
	case "kustomization.yaml", "kustomization.yml", "Chart.yaml":
		return true
	}
	return false
}

// locations names where documents came from: "a.yaml [0], b.yaml [0]".
func locations(docs []document) string {
	parts := make([]string, len(docs))
	for i, d := range docs {
		parts[i] = d.at.file + " " + d.at.path
	}
	return strings.Join(parts, ", ")
}
