package main

import (
	"io"
	"os"
	"path/filepath"
	"testing"
)

// FuzzValidate feeds arbitrary file contents to `oarctl validate`, the loader a CI
// pipeline runs on whatever a repository holds: plain OAR documents go through the
// engine's loader, manifests through the API server's strict decoding, the admission
// validators and the bundle the controller would assemble. Whatever the input, it never
// panics and answers with exit status 0 or 1, never a usage error. The seeds are the
// repository's own documents and manifests, good and bad.
func FuzzValidate(f *testing.F) {
	for _, seed := range [][2]string{
		{"testdata/validate/ok/capability.yaml", "testdata/validate/ok/rules/read.yaml"},
		{"testdata/validate/ok/capability.yaml", "testdata/validate/ok/config.yaml"},
		{"testdata/validate/badrule/a.yaml", "testdata/validate/dupkey.yaml"},
		{"testdata/validate/unquoted.yaml", "testdata/validate/warning.yaml"},
		{"testdata/manifests/gitops.yaml", "testdata/manifests/overrides.yaml"},
		{"testdata/manifests/many.yaml", "testdata/manifests/schema.yaml"},
		{"testdata/manifests/capability.yaml", "testdata/manifests/configs.yaml"},
		{"../../config/samples/rules_v1alpha1_capability.yaml", "../../config/samples/rules_v1alpha1_rulepack_broken.yaml"},
	} {
		f.Add(readSeed(f, seed[0]), readSeed(f, seed[1]))
	}
	f.Fuzz(func(t *testing.T, first, second []byte) {
		dir := t.TempDir()
		for name, data := range map[string][]byte{"a.yaml": first, "b.yaml": second} {
			if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
				t.Fatal(err)
			}
		}
		if code := run([]string{"validate", dir}, io.Discard, io.Discard); code != exitOK && code != exitFail {
			t.Fatalf("exit status %d, want 0 or 1", code)
		}
	})
}

func readSeed(f *testing.F, name string) []byte {
	f.Helper()
	data, err := os.ReadFile(name)
	if err != nil {
		f.Fatal(err)
	}
	return data
}
