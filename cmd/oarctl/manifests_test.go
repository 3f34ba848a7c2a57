package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/oar-operator/oar-operator/internal/engine"
)

// The manifests of testdata/manifests name the Capability of capability.yaml.
const (
	manifests                = "testdata/manifests/"
	manifestGateway          = manifests + "capability.yaml"
	samples                  = "../../config/samples/"
	sampleCapabilityManifest = samples + "rules_v1alpha1_capability.yaml"
)

// The samples of config/samples: the valid ones are admitted; the broken pack is refused
// in the webhook's words (README.md "In CI and GitOps"), and the Capability is
// warned that the pack does not load against it.
func TestValidateSampleManifests(t *testing.T) {
	valid := []string{sampleCapabilityManifest, samples + "rules_v1alpha1_rulepack.yaml", samples + "rules_v1alpha1_operatorconfig.yaml"}
	stdout, stderr, code := oarctl(t, append([]string{"validate"}, valid...)...)
	if code != exitOK || stderr != "" {
		t.Fatalf("exit %d, stderr:\n%s", code, stderr)
	}
	if want := "ok: 3 manifests admitted (1 Capability, 1 RulePack, 1 OperatorConfig)\n"; stdout != want {
		t.Errorf("stdout %q, want %q", stdout, want)
	}

	stdout, stderr, code = oarctl(t, append([]string{"validate", samples + "rules_v1alpha1_rulepack_broken.yaml"}, valid...)...)
	if code != exitFail || stdout != "" {
		t.Fatalf("exit %d, stdout %q", code, stdout)
	}
	broken := samples + "rules_v1alpha1_rulepack_broken.yaml"
	want := []string{
		broken + `: [0]: admission webhook "vrulepack.rules.oar.dev" would deny the request: RulePack.rules.oar.dev "acme-broken" is invalid`,
		broken + `: [0].spec.rules[0].when: Invalid value: "pth_outside_scope(\"read\")": [OAR-FACT-3] unknown identifier "pth_outside_scope" at offset 0; did you mean "path_outside_scope"? (rule acme.security/READ_OUTSIDE_SCOPE_TYPO)`,
		sampleCapabilityManifest + `: warning: [0]: [OAR-FACT-3] RulePack "acme-broken" spec.rules[0].when: unknown identifier "pth_outside_scope" at offset 0; did you mean "path_outside_scope"? (rule acme.security/READ_OUTSIDE_SCOPE_TYPO); the pack does not load against this capability`,
	}
	if got := lines(stderr); !slices.Equal(got, want) {
		t.Errorf("stderr:\n%s\nwant:\n%s", stderr, strings.Join(want, "\n"))
	}
}

// TestValidateManifestSets gives each set of manifests the webhook's verdict: refusals
// and warnings in the webhook's words, one line per cause and per warning, after the
// file and the document.
func TestValidateManifestSets(t *testing.T) {
	tests := []struct {
		name string
		args []string
		code int
		want []string // lines stderr holds, in order; a trailing "…" makes a prefix
		not  []string // substrings stderr must not hold
	}{
		{
			// The Capability, the pack and the configuration are judged each with the
			// others; only the rule with the unquoted version is wrong.
			name: "one multi-document file",
			args: []string{manifests + "gitops.yaml"},
			code: exitFail,
			want: []string{
				manifests + `gitops.yaml: warning: [0]: [OAR-DOC-3] RulePack "acme-tools" spec.rules[1].oar: oar must be a string…`,
				manifests + `gitops.yaml: [1]: admission webhook "vrulepack.rules.oar.dev" would deny the request: RulePack.rules.oar.dev "acme-tools" is invalid`,
				manifests + `gitops.yaml: [1].spec.rules[1].oar: Invalid value: [OAR-DOC-3] oar must be a string of the form <major>.<minor> — an unquoted number in YAML is read as a number, quote the version, for example oar: "1.0" (rule acme.security/TYPO)`,
				manifests + `gitops.yaml: warning: [2]: [OAR-CFG-4] spec.config.enforcement.acme.security/NO_SHELL: rule acme.security/NO_SHELL is in RulePack "acme-tools", which is not published yet; the controller applies this configuration once it is`,
			},
			not: []string{"[1].spec.rules[0]", "[0].spec", "[2].spec"},
		},
		{
			name: "a rule two packs define is a warning, not an error [OAR-DOC-9]",
			args: []string{manifestGateway, manifests + "duplicate-ids.yaml"},
			code: exitOK,
			want: []string{
				manifests + `duplicate-ids.yaml: warning: [0]: [OAR-DOC-9] spec.rules[0].id: rule acme.security/NO_SHELL is also defined by RulePack "security-copy"; a rule set holds one rule per qualified identifier, so the controller publishes only one of the two packs`,
				manifests + `duplicate-ids.yaml: warning: [1]: [OAR-DOC-9] spec.rules[0].id: rule acme.security/NO_SHELL is also defined by RulePack "security"; …`,
			},
		},
		{
			// Overriding a published rule says nothing; a mandatory one, or one of a pack
			// that is not published, is warned about; the pack that does not load is refused.
			name: "overrides of rules of other packs [OAR-EVAL-13] [OAR-EVAL-17]",
			args: []string{manifestGateway, manifests + "overrides.yaml"},
			code: exitFail,
			want: []string{
				manifestGateway + `: warning: [0]: [OAR-FACT-3] RulePack "drafts" spec.rules[0].when: unknown identifier "tol" at offset 0; did you mean "tool"? (rule acme.drafts/LOUD); the pack does not load against this capability`,
				manifests + `overrides.yaml: [1]: admission webhook "vrulepack.rules.oar.dev" would deny the request: RulePack.rules.oar.dev "drafts" is invalid`,
				manifests + `overrides.yaml: [1].spec.rules[0].when: Invalid value: "tol == \"curl\"": [OAR-FACT-3] unknown identifier "tol" at offset 0; did you mean "tool"? (rule acme.drafts/LOUD)`,
				manifests + `overrides.yaml: warning: [2]: [OAR-EVAL-13] spec.rules[2].overrides[0]: rule acme.team/QUIET references acme.drafts/LOUD, which only RulePack "drafts" defines, and it is not published; the controller publishes this pack once it is`,
				manifests + `overrides.yaml: warning: [2]: [OAR-EVAL-17] spec.rules[1].overrides[0]: overrides names acme.base/NO_ROOT, a mandatory rule, which cannot be suppressed (with RulePack "base"); the controller does not publish the two packs together`,
			},
			not: []string{"[0]: admission", "spec.rules[0].overrides"},
		},
		{
			name: "a missing Capability is a warning",
			args: []string{manifests + "no-capability.yaml"},
			code: exitOK,
			want: []string{
				manifests + `no-capability.yaml: warning: [0]: spec.capabilityRef.name: Capability "nowhere" does not exist: only the version gate, the member set, each member's type and grammar, and duplicate identifiers within the pack were checked; the rest is checked once the Capability loads, and the controller reports it in status`,
			},
		},
		{
			// A pack is looked up in its own namespace: gateway is in default.
			name: "a Capability of another namespace is missing",
			args: []string{manifestGateway, manifests + "namespaces.yaml"},
			code: exitOK,
			want: []string{manifests + `namespaces.yaml: warning: [0]: spec.capabilityRef.name: Capability "gateway" does not exist: …`},
		},
		{
			name: "a Capability that drops a profile a pack requires [OAR-FACT-19]",
			args: []string{manifests + "shrunk-capability.yaml"},
			code: exitFail,
			want: []string{
				manifests + `shrunk-capability.yaml: warning: [0]: [OAR-FACT-19] RulePack "files" spec.rules[0].requires.profiles[1]: rule acme.security/READ_OUTSIDE_SCOPE requires profile "filesystem", which the capability does not provide (rule acme.security/READ_OUTSIDE_SCOPE) and 1 more problem; the pack does not load against this capability`,
				manifests + `shrunk-capability.yaml: [1]: admission webhook "vrulepack.rules.oar.dev" would deny the request: RulePack.rules.oar.dev "files" is invalid`,
				manifests + `shrunk-capability.yaml: [1].spec.rules[0].requires.profiles[1]: Invalid value: "filesystem": [OAR-FACT-19] rule acme.security/READ_OUTSIDE_SCOPE requires profile "filesystem", which the capability does not provide (rule acme.security/READ_OUTSIDE_SCOPE)`,
				manifests + `shrunk-capability.yaml: [1].spec.rules[0].when: Invalid value: "path_outside_scope(\"read\")": [OAR-FACT-3] unknown identifier "path_outside_scope" at offset 0 (rule acme.security/READ_OUTSIDE_SCOPE)`,
			},
		},
		{
			name: "configurations against the published rule set [OAR-CFG-4] [OAR-CFG-5]",
			args: []string{manifestGateway, manifests + "configs.yaml"},
			code: exitFail,
			want: []string{
				manifests + `configs.yaml: [1]: admission webhook "voperatorconfig.rules.oar.dev" would deny the request: OperatorConfig.rules.oar.dev "unknown-rule" is invalid`,
				manifests + `configs.yaml: [1].spec.config.disable[0]: Invalid value: "acme.base/NO_CURL": [OAR-CFG-4] configuration names rule "acme.base/NO_CURL", which is not loaded (rule acme.base/NO_CURL)`,
				manifests + `configs.yaml: [2]: admission webhook "voperatorconfig.rules.oar.dev" would deny the request: OperatorConfig.rules.oar.dev "mandatory" is invalid`,
				manifests + `configs.yaml: [2].spec.config.disable[0]: Invalid value: "acme.base/NO_ROOT": [OAR-CFG-5] configuration disables acme.base/NO_ROOT, a mandatory rule ([OAR-OPS-7]) (rule acme.base/NO_ROOT)`,
			},
			not: []string{"yaml: [0]", "yaml: [3]", "warning"},
		},
		{
			name: "an object given twice",
			args: []string{manifestGateway, manifests + "twice.yaml"},
			code: exitFail,
			want: []string{manifests + `twice.yaml: [1]: RulePack "twice" in namespace "default" is given again (first at testdata/manifests/twice.yaml [0]); a set names each object once`},
		},
		{
			name: "objects the API server refuses before admission",
			args: []string{manifestGateway, manifests + "schema.yaml"},
			code: exitFail,
			want: []string{
				manifests + `schema.yaml: [0]: the API server would refuse it before admission: strict decoding error: unknown field "spec.profile"`,
				manifests + `schema.yaml: [1]: the API server would refuse it before admission: RulePack.rules.oar.dev "unbound" is invalid`,
				manifests + `schema.yaml: [1].spec.capabilityRef: Required value`,
				manifests + `schema.yaml: [2]: the API server would refuse it before admission: OperatorConfig.rules.oar.dev "" is invalid`,
				manifests + `schema.yaml: [2].metadata.name: Required value: name or generateName is required; oarctl validate needs the name`,
				manifests + `schema.yaml: [3]: the API server would refuse it before admission: Capability.rules.oar.dev "Bad_Name" is invalid`,
				manifests + `schema.yaml: [3].metadata.name: Invalid value: "Bad_Name": a lowercase RFC 1123 subdomain…`,
				manifests + `schema.yaml: [4].metadata.labels: Invalid value: "bad key!": name part must consist of…`,
				manifests + `schema.yaml: [5].spec.capabilityRef.name: Required value`,
				manifests + `schema.yaml: [6].spec.config: Required value`,
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			stdout, stderr, code := oarctl(t, append([]string{"validate"}, tt.args...)...)
			if code != tt.code {
				t.Errorf("exit %d, want %d; stdout %q", code, tt.code, stdout)
			}
			if (code == exitOK) != (stdout != "") {
				t.Errorf("stdout %q with exit %d", stdout, code)
			}
			containsInOrder(t, lines(stderr), prefixes(tt.want))
			for _, s := range tt.not {
				if strings.Contains(stderr, s) {
					t.Errorf("stderr holds %q:\n%s", s, stderr)
				}
			}
		})
	}
}

// prefixes turns each line ending in "…" into the prefix before it; containsInOrder
// matches prefixes, so a whole line must be matched whole.
func prefixes(want []string) []string {
	out := make([]string, len(want))
	for i, w := range want {
		out[i] = strings.TrimSuffix(w, "…")
	}
	return out
}

// TestValidateNamespaceFlag: manifests that name no namespace are in --namespace.
func TestValidateNamespaceFlag(t *testing.T) {
	stdout, stderr, code := oarctl(t, "validate", "--namespace", "team-a", manifestGateway, manifests+"namespaces.yaml")
	if code != exitOK || stderr != "" || stdout != "ok: 2 manifests admitted (1 Capability, 1 RulePack)\n" {
		t.Errorf("exit %d, stdout %q, stderr:\n%s", code, stdout, stderr)
	}
}

// TestValidateRefusesAnArrayOfManifests: kubectl reads a file as one object or as YAML
// documents, and refuses a JSON array of manifests, so validate does, naming the way
// kubectl reads them; an array of plain OAR documents stays one ([OAR-DOC-31]).
func TestValidateRefusesAnArrayOfManifests(t *testing.T) {
	data, err := os.ReadFile(manifestGateway)
	if err != nil {
		t.Fatal(err)
	}
	capability, err := engine.DecodeDocuments(data)
	if err != nil {
		t.Fatal(err)
	}
	array, err := json.Marshal(capability)
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "capabilities.json")
	if err := os.WriteFile(file, array, 0o644); err != nil {
		t.Fatal(err)
	}
	_, stderr, code := oarctl(t, "validate", file)
	if code != exitFail || !strings.Contains(stderr, file+": [0]: kubectl reads a file as one object or as YAML documents, and this one is an array") {
		t.Errorf("exit %d, stderr:\n%s", code, stderr)
	}
	rules := filepath.Join(t.TempDir(), "rules.json")
	if err := os.WriteFile(rules, []byte(`[{"oar":"1.0","id":"A","kind":"policy","anchor":"tool.pre_invoke","effect":"warn"}]`), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, stderr, code := oarctl(t, "validate", "--capability", "testdata/capability.yaml", rules); code != exitOK {
		t.Errorf("an array of rules: exit %d, stderr:\n%s", code, stderr)
	}
}

// TestValidateListsEveryCause: where the webhook lists maxCauses causes and counts the
// rest, pointing at `oarctl validate`, every cause is listed.
func TestValidateListsEveryCause(t *testing.T) {
	_, stderr, code := oarctl(t, "validate", manifestGateway, manifests+"many.yaml")
	if code != exitFail {
		t.Fatalf("exit %d", code)
	}
	var got []string
	for _, l := range lines(stderr) {
		if strings.HasPrefix(l, manifests+"many.yaml: ") {
			got = append(got, l)
		}
	}
	if len(got) != 24 || strings.Contains(stderr, "Too many") {
		t.Fatalf("want a header and 23 causes, got:\n%s", stderr)
	}
	for i, l := range got[1:] {
		if want := fmt.Sprintf("%s: [0].spec.rules[%d].when: Invalid value: ", manifests+"many.yaml", i); !strings.HasPrefix(l, want) {
			t.Errorf("line %d: %q, want prefix %q", i+1, l, want)
		}
	}
}
