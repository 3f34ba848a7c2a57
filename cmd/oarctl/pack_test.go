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
		{[]string{"pack", t.TempDir(), "--capability", "c", "--name", "p"}, exitFail, "holds no rule documents"},
	} {
		var stdout, stderr bytes.Buffer
		if code := run(tc.args, &stdout, &stderr); code != tc.code || !strings.Contains(stderr.String(), tc.want) {
			t.Errorf("%v: exit %d, stderr %q; want exit %d mentioning %q", tc.args, code, stderr.String(), tc.code, tc.want)
		}
	}
}
