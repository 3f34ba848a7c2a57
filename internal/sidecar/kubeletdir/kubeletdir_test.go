package kubeletdir

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/oar-operator/oar-operator/internal/bundle"
)

// TestLayout: the keys are symlinks through ..data into a timestamped directory; an
// update replaces the directory, drops the links of vanished keys, and the bundle
// reader sees the new version.
func TestLayout(t *testing.T) {
	dir := t.TempDir()
	d := New(dir)
	if err := d.Publish(map[string]string{bundle.KeyPlain: "one"}, nil); err != nil {
		t.Fatal(err)
	}
	first, err := os.Readlink(filepath.Join(dir, "..data"))
	if err != nil || !strings.HasPrefix(first, "..") || strings.Contains(first, "/") {
		t.Fatalf("..data -> %q, %v", first, err)
	}
	if l, _ := os.Readlink(filepath.Join(dir, bundle.KeyPlain)); l != filepath.Join("..data", bundle.KeyPlain) {
		t.Errorf("%s -> %q", bundle.KeyPlain, l)
	}
	if p, _ := os.ReadFile(filepath.Join(dir, bundle.KeyPlain)); string(p) != "one" {
		t.Errorf("read %q", p)
	}

	if err := d.Publish(nil, map[string][]byte{bundle.KeyGzip: []byte("two")}); err != nil {
		t.Fatal(err)
	}
	second, _ := os.Readlink(filepath.Join(dir, "..data"))
	entries, _ := os.ReadDir(dir)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if second == first || strings.Join(names, " ") != strings.Join([]string{second, "..data", bundle.KeyGzip}, " ") {
		t.Errorf("after the update ..data -> %q (was %q), entries %v", second, first, names)
	}
}

// TestBundleReadsBack: what PublishBundle writes, bundle.ReadDir reads.
func TestBundleReadsBack(t *testing.T) {
	dir := t.TempDir()
	b := &bundle.Bundle{Capability: map[string]any{"host": "x"}, Packs: []bundle.Pack{}, Configs: []bundle.Config{}}
	if err := b.Seal(); err != nil {
		t.Fatal(err)
	}
	if err := New(dir).PublishBundle(b); err != nil {
		t.Fatal(err)
	}
	got, err := bundle.ReadDir(dir)
	if err != nil || got.Digest != b.Digest {
		t.Errorf("ReadDir: %v, digest %v", err, got)
	}
}
