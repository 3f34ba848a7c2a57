package main

import (
	"bytes"
	"strings"
	"testing"
)

// TestValidateManifests reads RulePack, Capability and OperatorConfig manifests as kept
// in a Git repository and names each problem by its path inside the resource, as the
// admission webhook does.
func TestValidateManifests(t *testing.T) {
	var stdout, stderr bytes.Buffer
	code := run([]string{"validate", "testdata/manifests/gitops.yaml"}, &stdout, &stderr)
	if code != exitFail {
		t.Fatalf("exit %d, want %d; stderr:\n%s", code, exitFail, stderr.String())
	}
	out := stderr.String()
	for _, want := range []string{
		`testdata/manifests/gitops.yaml: [1].spec.rules[1].oar: [OAR-DOC-3] oar must be a string`,
		`quote the version`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("missing %q in:\n%s", want, out)
		}
	}
	if strings.Contains(out, "[1].spec.rules[0]") || strings.Contains(out, "[0].spec") || strings.Contains(out, "[2].spec") {
		t.Errorf("only the rule with the unquoted version is wrong:\n%s", out)
	}
}

func TestValidateSampleManifests(t *testing.T) {
	var stdout, stderr bytes.Buffer
	samples := []string{"../../config/samples/rules_v1alpha1_capability.yaml", "../../config/samples/rules_v1alpha1_rulepack.yaml", "../../config/samples/rules_v1alpha1_operatorconfig.yaml"}
	if code := run(append([]string{"validate"}, samples...), &stdout, &stderr); code != exitOK {
		t.Fatalf("exit %d:\n%s", code, stderr.String())
	}
	if !strings.Contains(stdout.String(), "ok: 3 rules, 1 configurations against capability acme.gateway") {
		t.Errorf("stdout: %s", stdout.String())
	}
	stdout.Reset()
	stderr.Reset()
	code := run([]string{"validate", samples[0], "../../config/samples/rules_v1alpha1_rulepack_broken.yaml"}, &stdout, &stderr)
	want := `rules_v1alpha1_rulepack_broken.yaml: [0].spec.rules[0].when: [OAR-FACT-3] unknown identifier "pth_outside_scope" at offset 0 (rule acme.security/READ_OUTSIDE_SCOPE_TYPO)`
	if code != exitFail || !strings.Contains(stderr.String(), want) {
		t.Errorf("exit %d, stderr:\n%s\nwant %s", code, stderr.String(), want)
	}
}
