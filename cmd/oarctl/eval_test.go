package main

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
)

var sampleProgram = []string{
	"--capability", sampleCapability,
	"--rules", "testdata/validate/ok/rules/read.yaml",
	"--rules", "testdata/validate/ok/rules/write.json",
}

// decision is the part of an engine decision the tests read back.
type decision struct {
	Decision string            `json:"decision"`
	Code     string            `json:"code"`
	Rule     string            `json:"rule"`
	Copy     map[string]string `json:"copy"`
	Applied  []string          `json:"applied"`
}

func evalArgs(extra ...string) []string {
	return append(append([]string{"eval"}, sampleProgram...), extra...)
}

func TestEvalPrintsTheDecision(t *testing.T) {
	tests := []struct {
		name  string
		args  []string
		stdin string
		want  decision
	}{
		{
			name: "a read outside the workspace is blocked",
			args: evalArgs("--occurrence", "testdata/eval/read-passwd.json"),
			want: decision{
				Decision: "block",
				Code:     "READ_OUTSIDE_SCOPE",
				Rule:     "acme.security/READ_OUTSIDE_SCOPE",
				Copy:     map[string]string{"title": "Read outside the workspace", "fix": "Read a file inside the workspace instead."},
				Applied:  []string{"acme.security/READ_OUTSIDE_SCOPE:fired"},
			},
		},
		{
			name:  "a monitored rule only records, read from standard input",
			args:  evalArgs(),
			stdin: "testdata/eval/read-secret.json",
			want: decision{
				Decision: "none",
				Applied:  []string{"acme.security/READ_OUTSIDE_SCOPE:passed", "acme.security/READ_SECRETS_DIR:monitored_fired"},
			},
		},
		{
			name:  "a configuration enforces it, the occurrence given as -",
			args:  evalArgs("--config", "testdata/validate/ok/config.yaml", "-"),
			stdin: "testdata/eval/read-secret.json",
			want: decision{
				Decision: "warn",
				Code:     "READ_SECRETS_DIR",
				Rule:     "acme.security/READ_SECRETS_DIR",
				Applied:  []string{"acme.security/READ_OUTSIDE_SCOPE:passed", "acme.security/READ_SECRETS_DIR:fired"},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.stdin != "" {
				withStdin(t, tt.stdin)
			}
			stdout, stderr, code := oarctl(t, tt.args...)
			if code != exitOK || stderr != "" {
				t.Fatalf("exit code %d, stderr:\n%s", code, stderr)
			}
			if !strings.HasPrefix(stdout, "{\n  \"decision\": ") {
				t.Errorf("the decision is not indented JSON:\n%s", stdout)
			}
			var got decision
			if err := json.Unmarshal([]byte(stdout), &got); err != nil {
				t.Fatalf("stdout is not JSON: %v\n%s", err, stdout)
			}
			if got.Decision != tt.want.Decision || got.Code != tt.want.Code || got.Rule != tt.want.Rule ||
				!slices.Equal(got.Applied, tt.want.Applied) || len(got.Copy) != len(tt.want.Copy) {
				t.Errorf("decision %+v, want %+v", got, tt.want)
			}
			for k, v := range tt.want.Copy {
				if got.Copy[k] != v {
					t.Errorf("copy.%s = %q, want %q", k, got.Copy[k], v)
				}
			}
		})
	}
}

func TestEvalRefuses(t *testing.T) {
	tests := []struct {
		name  string
		args  []string
		stdin string
		code  int
		want  []string
	}{
		{
			name: "a malformed occurrence, every member named",
			args: evalArgs("--occurrence", "testdata/eval/malformed.json"),
			code: exitFail,
			want: []string{
				`testdata/eval/malformed.json: fact: [OAR-CONF-18] unknown occurrence member "fact"`,
				`testdata/eval/malformed.json: recent_activity[1]: [OAR-CONF-40] a recent_activity step must be a tool name; got number 3`,
				`testdata/eval/malformed.json: tool_call.args: [OAR-CONF-40] unknown tool_call member "args"`,
				`testdata/eval/malformed.json: tool_call.name: [OAR-CONF-40] tool_call.name must be a non-empty string; got string ""`,
			},
		},
		{
			name:  "several JSON values on standard input",
			args:  evalArgs(),
			stdin: "testdata/bench/occurrences.jsonl",
			code:  exitFail,
			want:  []string{`stdin: [OAR-CONF-18] an occurrence is one JSON object: unexpected data after the JSON value`},
		},
		{
			name: "a rule that does not load, printed like validate",
			args: []string{"eval", "--capability", sampleCapability, "--rules", "testdata/validate/badrule/read.yaml", "--occurrence", "testdata/eval/read-passwd.json"},
			code: exitFail,
			want: []string{`testdata/validate/badrule/read.yaml: [1].when: [OAR-FACT-3] unknown identifier "pth" at offset 0 (rule acme.security/READ_OUTSIDE_SCOPE)`},
		},
		{
			name: "a capability given as rules",
			args: []string{"eval", "--capability", sampleCapability, "--rules", sampleCapability, "--occurrence", "testdata/eval/read-passwd.json"},
			code: exitFail,
			want: []string{`testdata/capability.yaml: [0]: [OAR-DOC-31] this is a capability document, where a rule document is expected`},
		},
		{
			// Only validate skips the manifests of other API groups.
			name: "a Deployment given as rules",
			args: []string{"eval", "--capability", sampleCapability, "--rules", "testdata/validate/notoar.yaml", "--occurrence", "testdata/eval/read-passwd.json"},
			code: exitFail,
			want: []string{
				`testdata/validate/notoar.yaml: [0]: [OAR-DOC-31] this is a configuration document, where a rule document is expected`,
				`testdata/validate/notoar.yaml: [1]: [OAR-DOC-31] not an OAR document: apps/v1 Deployment is not a resource of rules.oar.dev (Capability, RulePack, OperatorConfig)`,
			},
		},
		{
			name: "no rules",
			args: []string{"eval", "--capability", sampleCapability},
			code: exitUsage,
			want: []string{"oarctl: --rules FILE is required"},
		},
		{
			name: "two occurrences",
			args: evalArgs("a.json", "b.json"),
			code: exitUsage,
			want: []string{`oarctl: unexpected argument "a.json"`},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.stdin != "" {
				withStdin(t, tt.stdin)
			}
			stdout, stderr, code := oarctl(t, tt.args...)
			if code != tt.code {
				t.Errorf("exit code %d, want %d", code, tt.code)
			}
			if stdout != "" {
				t.Errorf("stdout should be empty, got:\n%s", stdout)
			}
			containsInOrder(t, lines(stderr), tt.want)
		})
	}
}

// TestEvalUndeclaredAnchor: an occurrence at an anchor the capability does not declare
// selects nothing ([OAR-SEL-7]); eval answers none and warns of the anchor.
func TestEvalUndeclaredAnchor(t *testing.T) {
	withStdinText(t, `{"anchor": "model.tool_result"}`)
	stdout, stderr, code := oarctl(t, evalArgs()...)
	want := `stdin: warning: anchor: [OAR-SEL-7] anchor "model.tool_result" is not declared by the capability (neither the local anchor of a supported core anchor nor a host-native anchor); no rule selects it` + "\n"
	if code != exitOK || stderr != want {
		t.Errorf("exit code %d, stderr %q, want %q", code, stderr, want)
	}
	if !strings.Contains(stdout, `"decision": "none"`) || !strings.Contains(stdout, `"applied": []`) {
		t.Errorf("want decision none with an empty trace, got:\n%s", stdout)
	}
}

// TestEvalUndeclaredAnchorSuggestsTheDeclaredOne: a misspelt anchor's warning names the
// close declared anchor ([OAR-SEL-7]).
func TestEvalUndeclaredAnchorSuggestsTheDeclaredOne(t *testing.T) {
	withStdinText(t, `{"anchor": "tool.pre_invok"}`)
	_, stderr, code := oarctl(t, evalArgs()...)
	want := `stdin: warning: anchor: [OAR-SEL-7] anchor "tool.pre_invok" is not declared by the capability (neither the local anchor of a supported core anchor nor a host-native anchor); no rule selects it; did you mean "tool.pre_invoke"?` + "\n"
	if code != exitOK || stderr != want {
		t.Errorf("exit code %d, stderr %q, want %q", code, stderr, want)
	}
}

// TestEvalOnFireIsBareActionNames: eval reports on_fire in the fixture shape, the
// applied side-effects by action name ([OAR-CONF-21], [OAR-FIRE-1]).
func TestEvalOnFireIsBareActionNames(t *testing.T) {
	withStdinText(t, `{"anchor": "tool.pre_invoke", "facts": {"tool": "read"}}`)
	stdout, stderr, code := oarctl(t, "eval", "--capability", "testdata/bench/capability.yaml", "--rules", "testdata/bench/rules.yaml")
	if code != exitOK {
		t.Fatalf("exit code %d: %s", code, stderr)
	}
	var d struct {
		OnFire []string `json:"on_fire"`
	}
	if err := json.Unmarshal([]byte(stdout), &d); err != nil {
		t.Fatal(err)
	}
	if strings.Join(d.OnFire, ",") != "increment_counter" {
		t.Errorf("on_fire %q, want [increment_counter]", d.OnFire)
	}
}

// TestEvalKeepsLoneSurrogates: a lone surrogate escape in the occurrence is that code
// point and is printed back as its escape, never U+FFFD; bytes that are not UTF-8 are
// refused, naming their offset ([OAR-FACT-23], [OAR-FACT-26]).
func TestEvalKeepsLoneSurrogates(t *testing.T) {
	withStdinText(t, `{"anchor": "tool.pre_invoke", "content": "a\ud800b\ud83d\ude00"}`)
	stdout, stderr, code := oarctl(t, evalArgs()...)
	if code != exitOK || !strings.Contains(stdout, `"content": "a\ud800b😀"`) {
		t.Errorf("exit code %d, stdout:\n%s\nstderr: %s", code, stdout, stderr)
	}
	withStdinText(t, "{\"anchor\": \"tool.pre_invoke\", \"content\": \"a\xffb\"}")
	stdout, stderr, code = oarctl(t, evalArgs()...)
	if code != exitFail || stdout != "" || !strings.Contains(stderr, "byte 0xff at offset 43 is not UTF-8") {
		t.Errorf("exit code %d, stdout %q, stderr %q", code, stdout, stderr)
	}
}
