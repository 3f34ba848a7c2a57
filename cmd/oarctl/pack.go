package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/oar-operator/oar-operator/internal/engine"
)

const packSynopsis = "oarctl pack DIR --capability NAME [--name NAME] [--namespace NAMESPACE] [-o FILE]"

// dnsLabel is what a Kubernetes object name must be (RFC 1123 subdomain, simplified to
// one label so it also fits the ConfigMap name derived from a Capability's).
var dnsLabel = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)

// runPack wraps a publisher's directory of rule files into one RulePack manifest, the
// rules verbatim, in file-name order then document order ([OAR-DOC-28]: the file name
// carries no meaning beyond that order, which carries none either, [OAR-DOC-31]).
func runPack(args []string, stdout, stderr io.Writer) int {
	flags := newFlags("pack", stderr)
	capability := flags.String("capability", "", "the `NAME` of the Capability the pack is written against (required)")
	name := flags.String("name", "", "the RulePack's `NAME` (default: the directory's name)")
	namespace := flags.String("namespace", "", "the RulePack's `NAMESPACE` (default: none, so kubectl's current namespace applies)")
	out := flags.String("o", "", "write the manifest to `FILE` instead of standard output")
	rest, code, ok := parseFlags(flags, packSynopsis, args, stdout, stderr)
	if !ok {
		return code
	}
	if len(rest) != 1 {
		return usageError(stderr, packSynopsis, "one DIR is required")
	}
	if *capability == "" {
		return usageError(stderr, packSynopsis, "--capability is required")
	}
	dir := rest[0]
	if *name == "" {
		*name = strings.ToLower(filepath.Base(filepath.Clean(dir)))
	}
	if !dnsLabel.MatchString(*name) || len(*name) > 63 {
		return usageError(stderr, packSynopsis, "%q is not a valid object name (lowercase letters, digits and '-'); use --name", *name)
	}
	rules, err := readRuleDir(dir)
	if err != nil {
		fmt.Fprintf(stderr, "oarctl pack: %v\n", err)
		return exitFail
	}
	metadata := map[string]any{"name": *name}
	if *namespace != "" {
		metadata["namespace"] = *namespace
	}
	manifest := map[string]any{
		"apiVersion": "rules.oar.dev/v1alpha1",
		"kind":       "RulePack",
		"metadata":   metadata,
		"spec": map[string]any{
			"capabilityRef": map[string]any{"name": *capability},
			"rules":         rules,
		},
	}
	doc, err := yaml.Marshal(manifest)
	if err != nil {
		fmt.Fprintf(stderr, "oarctl pack: %v\n", err)
		return exitFail
	}
	header := fmt.Sprintf("# RulePack %s: %d rules from %s, written by oarctl pack.\n", *name, len(rules), dir)
	if *out == "" {
		_, err = io.WriteString(stdout, header+string(doc))
	} else {
		err = os.WriteFile(*out, []byte(header+string(doc)), 0o644)
	}
	if err != nil {
		fmt.Fprintf(stderr, "oarctl pack: %v\n", err)
		return exitFail
	}
	return exitOK
}

// readRuleDir reads every rule document of the *.json, *.yaml and *.yml files directly
// in dir. A document that is not a rule (no "oar" member) is an error naming it, so a
// stray capability or configuration never ends up inside a pack.
func readRuleDir(dir string) ([]any, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var files []string
	for _, e := range entries {
		switch strings.ToLower(filepath.Ext(e.Name())) {
		case ".json", ".yaml", ".yml":
			if !e.IsDir() && !strings.HasPrefix(e.Name(), ".") {
				files = append(files, filepath.Join(dir, e.Name()))
			}
		}
	}
	sort.Strings(files)
	var rules []any
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		docs, err := engine.DecodeDocuments(data)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", f, err)
		}
		for i, d := range docs {
			obj, ok := d.(map[string]any)
			if _, isRule := obj["oar"]; !ok || !isRule {
				return nil, fmt.Errorf("%s: document %d is not a rule document (it has no \"oar\" member)", f, i)
			}
			rules = append(rules, obj)
		}
	}
	if len(rules) == 0 {
		return nil, fmt.Errorf("%s holds no rule documents (*.json, *.yaml, *.yml)", dir)
	}
	return rules, nil
}
