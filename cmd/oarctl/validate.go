package main

import (
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

const validateSynopsis = "oarctl validate [--capability FILE] [--config FILE]... PATH..."

// runValidate loads every document under the PATHs the way the admission webhook does:
// each rule against the capability as one rule set, then the configurations in order.
// It prints one line per diagnostic and exits 1 on any error, or prints a one-line
// summary and exits 0.
func runValidate(args []string, stdout, stderr io.Writer) int {
	flags := newFlags("validate", stderr)
	capFile := flags.String("capability", "", "the capability document `FILE` the rules load against (default: the one capability document among the PATHs)")
	var configFiles fileList
	flags.Var(&configFiles, "config", "a configuration document `FILE`, applied before those found among the PATHs (repeatable; applied in order)")
	paths, code, ok := parseFlags(flags, validateSynopsis, args, stdout, stderr)
	if !ok {
		return code
	}
	if len(paths) == 0 {
		return usageError(stderr, validateSynopsis, "validate needs at least one PATH (a file or a directory)")
	}

	l := &loader{w: stderr}
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
		files, err := inputFiles(p)
		if err != nil {
			l.errorf(p, "%v", err)
			continue
		}
		for _, f := range files {
			if seen.first(f) {
				in.add(l.readFile(f, anyKind))
			}
		}
	}
	caps, rules, configs := in.caps, in.rules, in.configs

	// The capability the rules load against, and the others, which are checked alone.
	capDoc, others := explicit, caps
	switch {
	case *capFile != "" && explicit == nil:
		l.skipped(len(rules), len(configs), "the capability named by --capability could not be read")
		rules, configs = nil, nil
	case *capFile == "" && len(caps) == 1:
		capDoc, others = &caps[0], nil
	case *capFile == "" && len(caps) > 1 && len(rules) > 0:
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
	if l.failed {
		return exitFail
	}
	summary := fmt.Sprintf("ok: %d rules, %d configurations", len(p.RuleSet().Rules), len(configs))
	switch {
	case capDoc != nil && len(hosts) > 0:
		summary += fmt.Sprintf(" against capability %s; other capabilities: %s", p.Capability().Host, strings.Join(hosts, ", "))
	case capDoc != nil:
		summary += " against capability " + p.Capability().Host
	case len(hosts) > 0:
		summary += fmt.Sprintf("; %d capabilities: %s", len(hosts), strings.Join(hosts, ", "))
	}
	fmt.Fprintln(stdout, summary)
	return exitOK
}

// inputs are the documents validate found, by kind, in the order given.
type inputs struct {
	caps, rules, configs []document
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
// and *.yml file under a directory in lexical order, skipping hidden files and directories.
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
		if !d.IsDir() && isDocumentFile(p) {
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

// locations names where documents came from: "a.yaml [0], b.yaml [0]".
func locations(docs []document) string {
	parts := make([]string, len(docs))
	for i, d := range docs {
		parts[i] = d.at.file + " " + d.at.path
	}
	return strings.Join(parts, ", ")
}
