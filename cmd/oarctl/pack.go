package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/oar-operator/oar-operator/internal/engine"
)

const packSynopsis = "oarctl pack DIR --capability NAME [--name NAME] [--namespace NAMESPACE] [-o FILE]"

// dnsLabel is what a Kubernetes object name must be (RFC 1123 subdomain, simplified to
// one label so it also fits the ConfigMap name derived from a Capability's).
var dnsLabel = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)

// runPack wraps a publisher's directory of rule files into one RulePack manifest, the
// rules verbatim, in path order then document order ([OAR-DOC-28]: the file name
// carries no meaning beyond that order, which carries none either, [OAR-DOC-31]). It
// reads the files oarctl validate reads for the directory, subdirectories included, and
// writes a rule only when reading the manifest back gives that rule unchanged.
func runPack(args []string, stdout, stderr io.Writer) int {
	flags := newFlags("pack", stderr)
	capability := flags.String("capability", "", "the `NAME` of the Capability the pack is written against (required)")
	name := flags.String("name", "", "the RulePack's `NAME` (default: the directory's name)")
	namespace := flags.String("namespace", "", "the RulePack's `NAMESPACE` (default: none, so kubectl's current namespace applies)")
	out := flags.String("o", "", "write the manifest to `FILE` instead of standard output; as JSON when FILE ends in .json, else as YAML")
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
	for _, f := range []struct{ flag, value string }{{"--name", *name}, {"--capability", *capability}, {"--namespace", *namespace}} {
		if f.value != "" && (!dnsLabel.MatchString(f.value) || len(f.value) > 63) {
			return usageError(stderr, packSynopsis, "%s %q is not a valid object name (at most 63 lowercase letters, digits and '-')", f.flag, f.value)
		}
	}
	asJSON := strings.EqualFold(filepath.Ext(*out), ".json")
	rules, err := readRuleDir(dir, asJSON)
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
	var doc []byte
	if asJSON {
		doc, err = json.MarshalIndent(manifest, "", "  ")
		doc = append(doc, '\n')
	} else {
		doc, err = yaml.Marshal(manifest)
		doc = append([]byte(fmt.Sprintf("# RulePack %s: %d rules from %s, written by oarctl pack.\n", *name, len(rules), dir)), doc...)
	}
	if err != nil {
		fmt.Fprintf(stderr, "oarctl pack: %v\n", err)
		return exitFail
	}
	if *out == "" {
		_, err = stdout.Write(doc)
	} else {
		err = os.WriteFile(*out, doc, 0o644)
	}
	if err != nil {
		fmt.Fprintf(stderr, "oarctl pack: %v\n", err)
		return exitFail
	}
	return exitOK
}

// readRuleDir reads every rule document of the files oarctl validate reads under dir
// (inputFiles). A document that is not a rule (no "oar" member) is an error naming it,
// so a stray capability or configuration never ends up inside a pack; so is a rule the
// manifest's format would not carry unchanged (survives).
func readRuleDir(dir string, asJSON bool) ([]any, error) {
	if info, err := os.Stat(dir); err != nil {
		return nil, unwrapPathError(err)
	} else if !info.IsDir() {
		return nil, fmt.Errorf("%s is not a directory", dir)
	}
	files, err := inputFiles(dir)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", dir, err)
	}
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
			if err := survives(obj, asJSON); err != nil {
				return nil, fmt.Errorf("%s: document %d (rule %v): %w", f, i, obj["id"], err)
			}
			rules = append(rules, obj)
		}
	}
	if len(rules) == 0 {
		return nil, fmt.Errorf("%s holds no rule documents (*.json, *.yaml, *.yml)", dir)
	}
	return rules, nil
}

// survives reports why rule would not read back unchanged from the manifest pack
// writes, as YAML or as JSON; nil when it would. YAML reads some characters otherwise
// than JSON wrote them (U+0085 as a line break) and cannot hold others (control
// characters, a lone surrogate), and a rule changed on its way into a pack would decide
// otherwise than the files it came from.
func survives(rule map[string]any, asJSON bool) error {
	var enc []byte
	var err error
	if asJSON {
		enc, err = json.Marshal(rule)
	} else {
		enc, err = yaml.Marshal(rule)
	}
	if err == nil {
		var back []any
		if back, err = engine.DecodeDocuments(enc); err == nil && (len(back) != 1 || !reflect.DeepEqual(back[0], rule)) {
			err = errors.New("it would not read back unchanged")
		}
	}
	if err == nil {
		return nil
	}
	if asJSON {
		return fmt.Errorf("the manifest cannot carry it unchanged (%v): a lone surrogate has no JSON encoding here", err)
	}
	return fmt.Errorf("YAML cannot carry it unchanged (%v): write the manifest as JSON, -o FILE.json", err)
}
