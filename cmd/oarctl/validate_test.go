package main

import (
	"slices"
	"strings"
	"testing"
)

const sampleCapability = "testdata/capability.yaml"

func TestValidateAccepts(t *testing.T) {
	tests := []struct {
		name    string
		args    []string
		summary string
	}{
		{
			// The walk finds the capability, both rule files and the configuration; it
			// skips README.md and the hidden .drafts directory, whose rule would not load.
			name:    "a directory walk",
			args:    []string{"testdata/validate/ok"},
			summary: "ok: 3 rules, 1 configurations against capability acme.gateway",
		},
		{
			name:    "flags after the paths",
			args:    []string{"testdata/validate/ok/rules", "--capability", sampleCapability, "--config", "testdata/validate/ok/config.yaml"},
			summary: "ok: 3 rules, 1 configurations against capability acme.gateway",
		},
		{
			name:    "a file named twice loads once",
			args:    []string{"testdata/validate/ok", "testdata/validate/ok/rules/read.yaml"},
			summary: "ok: 3 rules, 1 configurations against capability acme.gateway",
		},
		{
			name:    "--capability beside another capability",
			args:    []string{"--capability", sampleCapability, "testdata/validate/ok/rules", "testdata/bench/capability.yaml"},
			summary: "ok: 3 rules, 0 configurations against capability acme.gateway; other capabilities: bench.gateway",
		},
		{
			name:    "a capability alone",
			args:    []string{sampleCapability},
			summary: "ok: 0 rules, 0 configurations against capability acme.gateway",
		},
		{
			// The walk leaves out README.md, kustomization.yaml (which carries no
			// apiVersion) and charts/agent/Chart.yaml (which carries no kind); the Helm-rendered file's ServiceAccount, Service and Deployment
			// and the List's ConfigMap are skipped, the List's OperatorConfig judged.
			name:    "a GitOps directory",
			args:    []string{"testdata/validate/gitops"},
			summary: "ok: 3 manifests admitted (1 Capability, 1 RulePack, 1 OperatorConfig); 4 other manifests skipped",
		},
		{
			// A Deployment beside a configuration is skipped, and counted.
			name:    "a manifest of another API group",
			args:    []string{"testdata/validate/notoar.yaml"},
			summary: "ok: 0 rules, 1 configurations; 1 other manifest skipped",
		},
		{
			name:    "capabilities without rules load one by one",
			args:    []string{sampleCapability, "testdata/bench/capability.yaml"},
			summary: "ok: 0 rules, 0 configurations; 2 capabilities: acme.gateway, bench.gateway",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			stdout, stderr, code := oarctl(t, append([]string{"validate"}, tt.args...)...)
			if code != exitOK || stderr != "" {
				t.Fatalf("exit code %d, stderr:\n%s", code, stderr)
			}
			if got := strings.TrimSuffix(stdout, "\n"); got != tt.summary {
				t.Errorf("stdout %q, want %q", got, tt.summary)
			}
		})
	}
}

// TestValidateRefuses checks that every error class is printed as one line naming the
// file, the document in it, the field, the clause and, when known, the rule.
func TestValidateRefuses(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want []string // lines stderr must hold, in order
	}{
		{
			// The bad rule is member 2 of the rule set but document [1] of its file.
			name: "a rule naming an unknown identifier",
			args: []string{"--capability", sampleCapability, "testdata/validate/badrule"},
			want: []string{`testdata/validate/badrule/read.yaml: [1].when: [OAR-FACT-3] unknown identifier "pth" at offset 0 (rule acme.security/READ_OUTSIDE_SCOPE)`},
		},
		{
			name: "an invalid capability",
			args: []string{"testdata/validate/badcap.yaml"},
			want: []string{
				`testdata/validate/badcap.yaml: [0].activity_window: [OAR-PROF-3] activity_window must be zero or more`,
				`testdata/validate/badcap.yaml: [0].anchors: [OAR-PROF-2] core anchor model.output is declared neither in anchors.core nor in anchors.unsupported; every core anchor must appear exactly once`,
				`testdata/validate/badcap.yaml: [0].profiles[1]: [OAR-FACT-24] "toolz" is not a standard profile`,
			},
		},
		{
			name: "rules against an invalid capability are not checked",
			args: []string{"--capability", "testdata/validate/badcap.yaml", "testdata/validate/ok/rules"},
			want: []string{
				`testdata/validate/badcap.yaml: [0].activity_window: [OAR-PROF-3]`,
				`oarctl: 3 rule documents not checked: the capability does not load`,
			},
		},
		{
			name: "a configuration naming a rule that is not loaded",
			args: []string{"testdata/validate/ok/capability.yaml", "testdata/validate/ok/rules", "testdata/validate/badconfig.yaml"},
			want: []string{`testdata/validate/badconfig.yaml: [0].disable[0]: [OAR-CFG-4] configuration names rule "acme.security/READ_EVERYTHING", which is not loaded (rule acme.security/READ_EVERYTHING)`},
		},
		{
			name: "a configuration alone names rules that are not loaded",
			args: []string{"testdata/validate/ok/config.yaml"},
			want: []string{`testdata/validate/ok/config.yaml: [0].enforcement.acme.security/READ_SECRETS_DIR: [OAR-CFG-4] configuration names rule "acme.security/READ_SECRETS_DIR", which is not loaded`},
		},
		{
			name: "an unquoted oar: 1.0 in YAML",
			args: []string{"--capability", sampleCapability, "testdata/validate/unquoted.yaml"},
			// The loader stops before reading the id; the rule is named all the same, as the
			// webhook names it.
			want: []string{`testdata/validate/unquoted.yaml: [0].oar: [OAR-DOC-3] oar must be a string of the form <major>.<minor> — an unquoted number in YAML is read as a number, quote the version, for example oar: "1.0" (rule UNQUOTED_VERSION)`},
		},
		{
			name: "--capability naming a file with no capability document",
			args: []string{"--capability", "testdata/validate/emptypack.yaml", "testdata/validate/badrule"},
			want: []string{
				`testdata/validate/emptypack.yaml: holds no capability document; --capability names a file holding exactly one`,
				`oarctl: 3 rule documents not checked: the capability named by --capability could not be read`,
			},
		},
		{
			name: "a JSON empty array holds no document",
			args: []string{"testdata/validate/emptyarray.json"},
			want: []string{`testdata/validate/emptyarray.json: no document found: the JSON array is empty; a document is a JSON object [OAR-DOC-1]`},
		},
		{
			name: "a member given twice",
			args: []string{"--capability", sampleCapability, "testdata/validate/dupkey.yaml"},
			want: []string{`testdata/validate/dupkey.yaml: YAML: yaml: unmarshal errors: line 3 of the file: key "id" already set in map: a document with a member given twice has no single JSON reading [OAR-DOC-1]`},
		},
		{
			// Each is refused with what it most likely meant, not skipped.
			name: "manifests and documents that look like OAR ones",
			args: []string{"testdata/validate/mistyped.yaml"},
			want: []string{
				`testdata/validate/mistyped.yaml: [0].apiVersion: API group "rule.oar.dev" is not rules.oar.dev but close to it; a manifest of another group is skipped, so this RulePack would go unchecked; did you mean "rules.oar.dev/v1alpha1"?`,
				`testdata/validate/mistyped.yaml: [1].apiVersion: rules.oar.dev serves v1alpha1 alone, not v1; did you mean "rules.oar.dev/v1alpha1"?`,
				`testdata/validate/mistyped.yaml: [2].apiVersion: Capability is a kind of rules.oar.dev, and example.com/v1 is another API group; a manifest of another group is skipped, so this one, which carries OAR content, would go unchecked; did you mean "rules.oar.dev/v1alpha1"?`,
				`testdata/validate/mistyped.yaml: [3].kind: apps/v1 Rulepak is close to RulePack, a kind of rules.oar.dev/v1alpha1; a manifest of another API group is skipped, so this one, which carries OAR content, would go unchecked; did you mean "rules.oar.dev/v1alpha1 RulePack"?`,
				`testdata/validate/mistyped.yaml: [4].kind: "Rulepack" is not a kind of rules.oar.dev (Capability, RulePack, OperatorConfig); did you mean "RulePack"?`,
				`testdata/validate/mistyped.yaml: [5].oar_conifg: not an OAR document: it carries none of oar (a rule), oar_capability_version (a capability) or oar_config (a configuration), nor the apiVersion and kind of a manifest; its members are disable, oar_conifg; did you mean "oar_config"?`,
				`testdata/validate/mistyped.yaml: [6].kind: not an OAR document, nor a manifest: a manifest carries apiVersion and kind, and this one (apiVersion v1) carries no kind`,
				`testdata/validate/mistyped.yaml: [7].items[0]: the items of a list are manifests, each with apiVersion and kind; got string "just a string"`,
				`testdata/validate/mistyped.yaml: [7].items[1].apiVersion: rules.oar.dev serves v1alpha1 alone, not v1beta1; did you mean "rules.oar.dev/v1alpha1"?`,
				`testdata/validate/mistyped.yaml: [8]: not an OAR document: it carries none of oar (a rule), oar_capability_version (a capability) or oar_config (a configuration), nor the apiVersion and kind of a manifest; its members are replicaCount`,
				`testdata/validate/mistyped.yaml: [9].apiVersion: "rules.oar.dev" names no version: an apiVersion is GROUP/VERSION, and one without a "/" is a version of the core group; did you mean "rules.oar.dev/v1alpha1"?`,
				`testdata/validate/mistyped.yaml: [10].apiVersion: OperatorConfig is a kind of rules.oar.dev, and example.com/v1 is another API group; a manifest of another group is skipped, so this one, which carries OAR content, would go unchecked; did you mean "rules.oar.dev/v1alpha1"?`,
			},
		},
		{
			name: "only manifests of other API groups",
			args: []string{"testdata/validate/onlyothers.yaml"},
			want: []string{`oarctl: nothing to validate: no OAR document and no rules.oar.dev manifest among the PATHs (1 other manifest skipped)`},
		},
		{
			// Only a directory walk leaves kustomization.yaml out.
			name: "a kustomization.yaml named by its path",
			args: []string{"testdata/validate/gitops/kustomization.yaml"},
			want: []string{`testdata/validate/gitops/kustomization.yaml: [0]: not an OAR document: it carries none of oar (a rule), oar_capability_version (a capability) or oar_config (a configuration), nor the apiVersion and kind of a manifest; its members are resources`},
		},
		{
			name: "a YAML syntax error",
			args: []string{"testdata/validate/syntax.yaml"},
			want: []string{`testdata/validate/syntax.yaml: YAML document 2: yaml: line 4 of the file: did not find expected ',' or ']' [OAR-DOC-1]`},
		},
		{
			name: "a document kubectl's split would drop",
			args: []string{"testdata/validate/dropped.yaml"},
			want: []string{`testdata/validate/dropped.yaml: unexpected document after the document end marker "..." at offset 31, which ends a document for the YAML parser but splits nothing for kubectl: a stream is split at lines holding only "---" and one document is read between two of them, so this one would be dropped; put a line holding only "---" before it [OAR-DOC-31]`},
		},
		{
			name: "a line kubectl refuses as a document separator",
			args: []string{"testdata/validate/separator.yaml"},
			want: []string{`testdata/validate/separator.yaml: line 3 of the file, "--- {oar_config: \"1.0\"}", begins with "---" and then more than white space or a comment, which kubectl refuses ("invalid Yaml document separator"): it takes every line beginning with "---" for a document separator, wherever the line is; put a document on the line after a "---" alone, and quote text that would begin a line with "---" [OAR-DOC-31]`},
		},
		{
			name: "bytes after the JSON document",
			args: []string{"--capability", sampleCapability, "testdata/validate/trailing.json"},
			want: []string{`testdata/validate/trailing.json: unexpected data at offset 93, after the document that ends before it: a file holds one JSON document or one YAML stream, and this would be lost in its JSON reading [OAR-DOC-1]`},
		},
		{
			name: "rules without a capability",
			args: []string{"testdata/validate/ok/rules"},
			want: []string{`testdata/validate/ok/rules/read.yaml: rules load against a capability document: name one with --capability FILE`},
		},
		{
			name: "rules with two capabilities to choose from",
			args: []string{sampleCapability, "testdata/bench/capability.yaml", "testdata/validate/ok/rules"},
			want: []string{`oarctl: 2 capability documents found (testdata/capability.yaml [0], testdata/bench/capability.yaml [0]); name the one the rules load against with --capability FILE`},
		},
		{
			name: "--capability naming a configuration",
			args: []string{"--capability", "testdata/validate/ok/config.yaml", "testdata/validate/ok/rules"},
			want: []string{
				`testdata/validate/ok/config.yaml: [0]: this is a configuration document, where a capability document is expected`,
				`oarctl: 3 rule documents not checked: the capability named by --capability could not be read`,
			},
		},
		{
			name: "a path that does not exist",
			args: []string{"testdata/validate/missing"},
			want: []string{`testdata/validate/missing: no such file or directory`},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			stdout, stderr, code := oarctl(t, append([]string{"validate"}, tt.args...)...)
			if code != exitFail {
				t.Errorf("exit code %d, want %d", code, exitFail)
			}
			if stdout != "" {
				t.Errorf("stdout should be empty on failure, got %q", stdout)
			}
			containsInOrder(t, lines(stderr), tt.want)
		})
	}
}

// TestValidateNamesLinesOfTheFile ([OAR-DOC-1]): a YAML syntax error in a stream, as
// helm template or kustomize build writes one to standard input, names the line of the
// stream, not of the document after its "---", whatever the line breaks, and in a List
// as in any other document.
func TestValidateNamesLinesOfTheFile(t *testing.T) {
	const rendered = "---\n# Source: agent/templates/service.yaml\napiVersion: v1\nkind: Service\nmetadata: {name: agent}\n" +
		"---\n# Source: agent/templates/capability.yaml\napiVersion: rules.oar.dev/v1alpha1\nkind: Capability\nmetadata: {name: acme}\nspec: {}\n" +
		"---\n# Source: agent/templates/rulepack.yaml\napiVersion: rules.oar.dev/v1alpha1\nkind: RulePack\nmetadata:\n  name: acme-tools\n" +
		"spec:\n  capabilityRef: {name: acme}\n  rules:\n  - oar: \"1.0\"\n    id: X\n     kind: policy\n"
	for _, tt := range []struct{ name, stdin, want string }{
		{
			name:  "helm template output",
			stdin: rendered,
			want:  `-: YAML document 3: yaml: line 23 of the file: mapping values are not allowed in this context [OAR-DOC-1]`,
		},
		{
			name:  "CRLF line endings",
			stdin: strings.ReplaceAll(rendered, "\n", "\r\n"),
			want:  `-: YAML document 3: yaml: line 23 of the file: mapping values are not allowed in this context [OAR-DOC-1]`,
		},
		{
			name:  "an item of a List",
			stdin: "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n---\n\n# kubectl get -o yaml\napiVersion: v1\nkind: List\nitems:\n- apiVersion: rules.oar.dev/v1alpha1\n  kind: Capability\n  metadata: {name: acme\n  spec: {}\n",
			want:  `-: YAML document 2: yaml: line 12 of the file: did not find expected ',' or '}' [OAR-DOC-1]`,
		},
	} {
		t.Run(tt.name, func(t *testing.T) {
			withStdinText(t, tt.stdin)
			stdout, stderr, code := oarctl(t, "validate", "-")
			if code != exitFail || stdout != "" {
				t.Errorf("exit code %d, stdout %q; want %d and nothing", code, stdout, exitFail)
			}
			if got := lines(stderr); !slices.Equal(got, []string{tt.want}) {
				t.Errorf("stderr %q, want %q", got, tt.want)
			}
		})
	}
}

func TestValidateWarnsWithoutFailing(t *testing.T) {
	stdout, stderr, code := oarctl(t, "validate", "--capability", sampleCapability, "testdata/validate/warning.yaml")
	if code != exitOK {
		t.Fatalf("exit code %d, stderr:\n%s", code, stderr)
	}
	want := `testdata/validate/warning.yaml: warning: [0].selector.tool: [OAR-SEL-6] selector clause "tool" is empty and matches nothing: rule NEVER_SELECTED is never selected (rule NEVER_SELECTED)`
	if got := lines(stderr); !slices.Equal(got, []string{want}) {
		t.Errorf("stderr %q, want %q", got, want)
	}
	if stdout != "ok: 1 rules, 0 configurations against capability acme.gateway\n" {
		t.Errorf("stdout %q", stdout)
	}
}

// TestValidateSkipsLookalikesOfOtherProjects: a kind of rules.oar.dev, or one close to
// it, under a distant API group and without OAR content is another project's resource
// (GKE Managed Prometheus' OperatorConfig): skipped, counted and named in a note. An
// object whose items are not an array is no list.
func TestValidateSkipsLookalikesOfOtherProjects(t *testing.T) {
	const file = "testdata/validate/lookalikes.yaml"
	stdout, stderr, code := oarctl(t, "validate", file)
	if code != exitOK {
		t.Fatalf("exit code %d, stderr:\n%s", code, stderr)
	}
	want := []string{
		file + ": [1]: note: monitoring.googleapis.com/v1 OperatorConfig is skipped as a resource of another API group: it carries no OAR content",
		file + ": [2]: note: example.com/v1 RulePacks is skipped as a resource of another API group: it carries no OAR content",
	}
	if got := lines(stderr); !slices.Equal(got, want) {
		t.Errorf("stderr %q, want %q", got, want)
	}
	if stdout != "ok: 0 rules, 1 configurations; 3 other manifests skipped\n" {
		t.Errorf("stdout %q", stdout)
	}
}

// TestValidateReadsStandardInput: the PATH - is standard input, as rendered manifests
// are piped in (helm template … | oarctl validate -), and diagnostics name it "-".
func TestValidateReadsStandardInput(t *testing.T) {
	tests := []struct {
		name, stdin  string
		code         int
		stdout, line string
	}{
		{
			name:   "a configuration beside a Deployment",
			stdin:  "testdata/validate/notoar.yaml",
			stdout: "ok: 0 rules, 1 configurations; 1 other manifest skipped\n",
		},
		{
			name:  "a manifest that looks like an OAR one",
			stdin: "testdata/validate/mistyped.yaml",
			code:  exitFail,
			line:  `-: [0].apiVersion: API group "rule.oar.dev" is not rules.oar.dev but close to it; a manifest of another group is skipped, so this RulePack would go unchecked; did you mean "rules.oar.dev/v1alpha1"?`,
		},
		{
			// Nothing was skipped, so the failure counts nothing.
			name:  "an empty list",
			stdin: "testdata/validate/emptylist.yaml",
			code:  exitFail,
			line:  "oarctl: nothing to validate: no OAR document and no rules.oar.dev manifest among the PATHs",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			withStdin(t, tt.stdin)
			stdout, stderr, code := oarctl(t, "validate", "-")
			if code != tt.code || stdout != tt.stdout {
				t.Fatalf("exit code %d, stdout %q, stderr:\n%s", code, stdout, stderr)
			}
			if got := lines(stderr); tt.line != "" && (len(got) == 0 || got[0] != tt.line) {
				t.Errorf("stderr %q, want first line %q", got, tt.line)
			}
		})
	}
}

func TestValidateEmptyDirectory(t *testing.T) {
	dir := t.TempDir()
	_, stderr, code := oarctl(t, "validate", dir)
	if code != exitFail || stderr != dir+": no *.json, *.yaml or *.yml file under this directory\n" {
		t.Errorf("exit code %d, stderr %q", code, stderr)
	}
}
