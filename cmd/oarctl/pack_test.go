package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	rulesv1alpha1 "github.com/oar-operator/oar-operator/api/v1alpha1"
	"github.com/oar-operator/oar-operator/internal/engine"
)

func TestPackWrapsRulesVerbatim(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if code := run([]string{"pack", "testdata/pack/acme-security", "--capability", "acme-gateway", "--namespace", "agents"}, &stdout, &stderr); code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	var rp rulesv1alpha1.RulePack
	if err := yaml.UnmarshalStrict(stdout.Bytes(), &rp); err != nil {
		t.Fatalf("the manifest is not a RulePack: %v\n%s", err, stdout.String())
	}
	if rp.Kind != "RulePack" || rp.APIVersion != "rules.oar.dev/v1alpha1" || rp.Name != "acme-security" ||
		rp.Namespace != "agents" || rp.Spec.CapabilityRef.Name != "acme-gateway" || len(rp.Spec.Rules) != 2 {
		t.Fatalf("manifest: %+v", rp)
	}
	var want []any
	for _, f := range []string{"10-read.yaml", "20-shell.json"} {
		data, err := os.ReadFile(filepath.Join("testdata/pack/acme-security", f))
		if err != nil {
			t.Fatal(err)
		}
		docs, err := engine.DecodeDocuments(data)
		if err != nil {
			t.Fatal(err)
		}
		want = append(want, docs...)
	}
	for i, raw := range rp.Spec.Rules {
		got, err := engine.DecodeJSON(raw.Raw)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, want[i]) {
			a, _ := json.Marshal(got)
			b, _ := json.Marshal(want[i])
			t.Errorf("rule %d changed:\n got %s\nwant %s", i, a, b)
		}
	}
	if !strings.Contains(stdout.String(), `oar: "1.0"`) {
		t.Errorf("the version must stay a quoted string in YAML:\n%s", stdout.String())
	}
}

func TestPackRefusals(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "cap.yaml"), []byte("oar_capability_version: \"1.0\"\nhost: h\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"pack", "testdata/pack/acme-security"}, exitUsage, "--capability is required"},
		{[]string{"pack", "testdata/pack/acme-security", "--capability", "c", "--name", "Bad_Name"}, exitUsage, "not a valid object name"},
		{[]string{"pack", dir, "--capability", "c", "--name", "p"}, exitFail, "is not a rule document"},
		{[]string{"pack", t.TempDir(), "--capability", "c", "--name", "p"}, exitFail, "no *.json, *.yaml or *.yml file under this directory"},
		{[]string{"pack", "testdata/pack/acme-security/10-read.yaml", "--capability", "c", "--name", "p"}, exitFail, "is not a directory"},
		{[]string{"pack", "testdata/pack/acme-security", "--capability", "Bad Cap"}, exitUsage, `--capability "Bad Cap" is not a valid object name`},
		{[]string{"pack", "testdata/pack/acme-security", "--capability", "c", "--namespace", "Bad_NS"}, exitUsage, `--namespace "Bad_NS" is not a valid object name`},
	} {
		var stdout, stderr bytes.Buffer
		if code := run(tc.args, &stdout, &stderr); code != tc.code || !strings.Contains(stderr.String(), tc.want) {
			t.Errorf("%v: exit %d, stderr %q; want exit %d mentioning %q", tc.args, code, stderr.String(), tc.code, tc.want)
		}
	}
}

// TestPackReadsWhatValidateReads: a pack holds the rules of every file oarctl validate
// reads under the directory, subdirectories included, so the pack and the directory get
// one verdict.
func TestPackReadsWhatValidateReads(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("a.yaml", "oar: \"1.0\"\nid: A\nkind: policy\nanchor: tool.pre_invoke\neffect: warn\n")
	write("sub/b.yaml", "oar: \"1.0\"\nid: B\nkind: policy\nanchor: tool.pre_invoke\neffect: warn\n")
	write(".hidden/c.yaml", "oar: \"1.0\"\nid: C\nkind: policy\nanchor: tool.pre_invoke\neffect: warn\n")
	var stdout, stderr bytes.Buffer
	if code := run([]string{"pack", dir, "--capability", "c", "--name", "p"}, &stdout, &stderr); code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	var rp rulesv1alpha1.RulePack
	if err := yaml.UnmarshalStrict(stdout.Bytes(), &rp); err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, raw := range rp.Spec.Rules {
		var r struct{ ID string }
		if err := json.Unmarshal(raw.Raw, &r); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, r.ID)
	}
	if strings.Join(ids, " ") != "A B" {
		t.Errorf("packed rules %v; want A B (sub/ read, .hidden/ skipped, as validate does)", ids)
	}
}

// TestPackCarriesEveryRuleUnchanged: a rule whose text YAML would read back otherwise
// (U+0085, which YAML reads as a line break) or cannot hold (a DEL) is refused in a YAML
// manifest, naming the file and the rule, and written unchanged in a JSON one; a lone
// surrogate, which neither can carry here, is refused in both.
func TestPackCarriesEveryRuleUnchanged(t *testing.T) {
	for _, tc := range []struct {
		name, selector string
		yamlOK, jsonOK bool
	}{
		{"nel", `ev\u0085il`, false, true},
		{"del", `ev\u007fil`, false, true},
		{"surrogate", `ev\ud800il`, false, false},
		{"plain", `evil`, true, true},
	} {
		dir := t.TempDir()
		rule := `{"oar":"1.0","id":"R","kind":"policy","anchor":"tool.pre_invoke","effect":"block","requires":{"profiles":["tool"]},"selector":{"tool":["` + tc.selector + `"]}}`
		if err := os.WriteFile(filepath.Join(dir, "r.json"), []byte(rule), 0o644); err != nil {
			t.Fatal(err)
		}
		want, err := engine.DecodeDocuments([]byte(rule))
		if err != nil {
			t.Fatal(err)
		}
		for _, out := range []string{"p.yaml", "p.json"} {
			ok := map[string]bool{"p.yaml": tc.yamlOK, "p.json": tc.jsonOK}[out]
			path := filepath.Join(t.TempDir(), out)
			var stdout, stderr bytes.Buffer
			code := run([]string{"pack", dir, "--capability", "c", "--name", "p", "-o", path}, &stdout, &stderr)
			if !ok {
				if code != exitFail || !strings.Contains(stderr.String(), "r.json: document 0 (rule R)") || !strings.Contains(stderr.String(), "unchanged") {
					t.Errorf("%s as %s: exit %d, stderr %q; want a refusal naming r.json and rule R", tc.name, out, code, stderr.String())
				}
				continue
			}
			if code != exitOK {
				t.Fatalf("%s as %s: exit %d: %s", tc.name, out, code, stderr.String())
			}
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			docs, err := engine.DecodeDocuments(data)
			if err != nil {
				t.Fatal(err)
			}
			rules := docs[0].(map[string]any)["spec"].(map[string]any)["rules"].([]any)
			if !reflect.DeepEqual(rules, want) {
				t.Errorf("%s as %s: the manifest holds %v; want %v", tc.name, out, rules, want)
			}
		}
	}
}
