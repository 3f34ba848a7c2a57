package main

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/oar-operator/oar-operator/internal/admission"
)

const strictData = "testdata/strict/"

// unservedCase is a set of manifests of which the warning at file and doc, starting
// with text, is of kind: one that says the controller will not serve what was written.
type unservedCase struct {
	name string
	args []string
	// refused says the set is refused without --strict too: the kind comes only with a
	// refusal offline.
	refused         bool
	file, doc, text string
	kind            admission.WarningKind
}

func unservedCases(t *testing.T) []unservedCase {
	return []unservedCase{
		{name: "a pack whose Capability is missing", args: []string{manifests + "no-capability.yaml"},
			file: manifests + "no-capability.yaml", doc: "[0]", text: `spec.capabilityRef.name: Capability "nowhere" does not exist`,
			kind: admission.CapabilityUnavailable},
		{name: "a configuration whose Capability is missing", args: []string{strictData + "config-no-capability.yaml"},
			file: strictData + "config-no-capability.yaml", doc: "[0]", text: `spec.capabilityRef.name: Capability "nowhere" does not exist`,
			kind: admission.CapabilityUnavailable},
		{name: "a rule two packs define [OAR-DOC-9]", args: []string{manifestGateway, manifests + "duplicate-ids.yaml"},
			file: manifests + "duplicate-ids.yaml", doc: "[1]", text: `[OAR-DOC-9] spec.rules[0].id: rule acme.security/NO_SHELL is also defined by RulePack "security"`,
			kind: admission.DuplicateRule},
		{name: "an override of a rule of an unpublished pack [OAR-EVAL-13]", args: []string{manifestGateway, strictData + "unpublished-reference.yaml"},
			file: strictData + "unpublished-reference.yaml", doc: "[2]", text: `[OAR-EVAL-13] spec.rules[0].overrides[0]: rule acme.team/QUIET references acme.sec/LOUD`,
			kind: admission.UnpublishedReference},
		{name: "an override of another pack's mandatory rule [OAR-EVAL-17]", args: []string{manifestGateway, strictData + "pack-conflict.yaml"},
			file: strictData + "pack-conflict.yaml", doc: "[1]", text: `[OAR-EVAL-17] spec.rules[0].overrides[0]: overrides names acme.base/NO_ROOT`,
			kind: admission.PackConflict},
		{name: "a pack that makes a published configuration ambiguous [OAR-CFG-8]", args: []string{manifestGateway, strictData + "configurations.yaml"},
			file: strictData + "configurations.yaml", doc: "[2]", text: `[OAR-CFG-8] OperatorConfig "bare" spec.config.enforcement.X: bare identifier "X" is ambiguous`,
			kind: admission.ConfigurationConflict},
		{name: "a configuration an unpublished pack makes ambiguous [OAR-CFG-8]", args: []string{manifestGateway, strictData + "configurations.yaml"},
			file: strictData + "configurations.yaml", doc: "[3]", text: `[OAR-CFG-8] spec.config.enforcement.X: bare identifier "X" is ambiguous`,
			kind: admission.ConfigurationBreaks},
		{name: "a configuration naming a rule of an unpublished pack [OAR-CFG-4]", args: []string{manifestGateway, strictData + "rule-not-published.yaml"},
			file: strictData + "rule-not-published.yaml", doc: "[2]", text: `[OAR-CFG-4] spec.config.enforcement.acme.sec/OTHER: rule acme.sec/OTHER is in RulePack "b-held"`,
			kind: admission.RuleNotPublished},
		{name: "two packs too large for one bundle", args: []string{manifestGateway, bulkyPacks(t)},
			doc: "[1]", text: "spec.rules: with the 1 pack and 0 configurations published for its Capability, the bundle would be",
			kind: admission.BundleTooLarge},
		{name: "a Capability a pack does not load against", args: []string{manifests + "shrunk-capability.yaml"}, refused: true,
			file: manifests + "shrunk-capability.yaml", doc: "[0]", text: `[OAR-FACT-19] RulePack "files" spec.rules[0].requires.profiles[1]:`,
			kind: admission.PackDoesNotLoad},
	}
}

// TestValidateStrictFailsWhatIsNotServed: every kind of warning that says the controller
// will not serve what was written fails `validate --strict`, which marks it with its
// kind and says why it fails; without --strict the same warning is printed as before and
// the set passes.
func TestValidateStrictFailsWhatIsNotServed(t *testing.T) {
	cases := unservedCases(t)
	for _, tt := range cases {
		t.Run(tt.name, func(t *testing.T) {
			file := tt.file
			if file == "" {
				file = tt.args[len(tt.args)-1]
			}
			stdout, stderr, code := oarctl(t, append([]string{"validate"}, tt.args...)...)
			want := exitOK
			if tt.refused {
				want = exitFail
			}
			if code != want {
				t.Errorf("without --strict: exit %d, want %d; stderr:\n%s", code, want, stderr)
			}
			containsInOrder(t, lines(stderr), []string{fmt.Sprintf("%s: warning: %s: %s", file, tt.doc, tt.text)})
			if strings.Contains(stderr, "not served") || strings.Contains(stdout, "not served") {
				t.Errorf("without --strict, a warning is marked:\n%s", stderr)
			}

			stdout, stderr, code = oarctl(t, append([]string{"validate", "--strict"}, tt.args...)...)
			if code != exitFail || stdout != "" {
				t.Errorf("--strict: exit %d, stdout %q; want exit %d and no summary", code, stdout, exitFail)
			}
			got := lines(stderr)
			containsInOrder(t, got, []string{fmt.Sprintf("%s: warning (not served: %s): %s: %s", file, tt.kind, tt.doc, tt.text)})
			if last := got[len(got)-1]; !strings.HasPrefix(last, "oarctl: --strict: what was written will not be served as written (") {
				t.Errorf("--strict does not say why it fails; last line %q", last)
			}
		})
	}
	// Every kind that is not served has its case.
	for _, k := range admission.WarningKinds() {
		if k.Unserved() && !slices.ContainsFunc(cases, func(c unservedCase) bool { return c.kind == k }) {
			t.Errorf("no case shows that a %s warning fails --strict", k)
		}
	}
}

// TestValidateStrictPassesAdvice: the loader's advice ([OAR-SEL-6]) is about a rule the
// controller serves as written; --strict prints it as a warning, unmarked, and passes —
// for a plain rule document and for a RulePack alike.
func TestValidateStrictPassesAdvice(t *testing.T) {
	for _, tt := range []struct {
		name, want string
		args       []string
	}{
		{"a plain rule document", `testdata/validate/warning.yaml: warning: [0].selector.tool: [OAR-SEL-6] selector clause "tool" is empty`,
			[]string{"--capability", sampleCapability, "testdata/validate/warning.yaml"}},
		{"a RulePack", strictData + `advice.yaml: warning: [0]: [OAR-SEL-6] spec.rules[0].selector.tool: selector clause "tool" is empty`,
			[]string{manifestGateway, strictData + "advice.yaml"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			plainOut, plainErr, _ := oarctl(t, append([]string{"validate"}, tt.args...)...)
			stdout, stderr, code := oarctl(t, append([]string{"validate", "--strict"}, tt.args...)...)
			if code != exitOK || !strings.HasPrefix(stdout, "ok: ") {
				t.Fatalf("exit %d, stdout %q, stderr:\n%s", code, stdout, stderr)
			}
			if got := lines(stderr); len(got) != 1 || !strings.HasPrefix(got[0], tt.want) {
				t.Errorf("stderr %q, want one line starting %q", got, tt.want)
			}
			if stdout != plainOut || stderr != plainErr {
				t.Errorf("--strict changed the output of advice:\n%s%s\nwithout it:\n%s%s", stdout, stderr, plainOut, plainErr)
			}
		})
	}
}

// TestValidateStrictIsDocumented: the help of --strict describes every kind of warning,
// and README's oarctl section lists each kind --strict fails on.
func TestValidateStrictIsDocumented(t *testing.T) {
	help, _, code := oarctl(t, "validate", "-h")
	if code != exitOK {
		t.Fatalf("validate -h: exit %d", code)
	}
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range admission.WarningKinds() {
		if !strings.Contains(help, fmt.Sprintf("%s: %s", k, k.Summary())) {
			t.Errorf("validate -h does not describe %s", k)
		}
		if k.Unserved() && !strings.Contains(string(readme), "| `"+k.String()+"` |") {
			t.Errorf("README.md does not list %s", k)
		}
	}
}

// bulkyPacks writes two RulePacks for the Capability gateway that each fit in a bundle
// alone but not together, and returns the file: their rules carry copy texts of random
// letters, gzip hardly compressing the first pack's.
func bulkyPacks(t *testing.T) string {
	t.Helper()
	var docs []string
	for _, pack := range []any{
		bulkyPack("big", 120, 1, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"),
		bulkyPack("more", 180, 2, "acgt"),
	} {
		data, err := json.Marshal(pack)
		if err != nil {
			t.Fatal(err)
		}
		docs = append(docs, string(data))
	}
	// JSON documents in a YAML stream, as kubectl reads several manifests of one file.
	file := filepath.Join(t.TempDir(), "bulky.yaml")
	if err := os.WriteFile(file, []byte(strings.Join(docs, "\n---\n")), 0o644); err != nil {
		t.Fatal(err)
	}
	return file
}

// bulkyPack is a RulePack named name of n rules whose copy text is 8 KiB of random
// letters each.
func bulkyPack(name string, n int, seed uint64, letters string) map[string]any {
	rng := rand.New(rand.NewPCG(seed, seed))
	rules := make([]any, n)
	for i := range rules {
		text := make([]byte, 8<<10)
		for j := range text {
			text[j] = letters[rng.IntN(len(letters))]
		}
		rules[i] = map[string]any{
			"oar": "1.0", "namespace": "acme." + name, "id": fmt.Sprintf("BULK_%d", i), "kind": "policy",
			"anchor": "tool.pre_invoke", "requires": map[string]any{"profiles": []any{"tool"}},
			"when": `tool == "shell"`, "effect": "block", "copy": map[string]any{"what": string(text)},
		}
	}
	return map[string]any{
		"apiVersion": "rules.oar.dev/v1alpha1", "kind": "RulePack",
		"metadata": map[string]any{"name": name},
		"spec":     map[string]any{"capabilityRef": map[string]any{"name": "gateway"}, "rules": rules},
	}
}
