package standalone

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"

	"github.com/oar-operator/oar-operator/internal/engine"
	"github.com/oar-operator/oar-operator/internal/sidecar/reload"
)

const capability = `
oar_capability_version: "1.0"
host: acme.laptop
anchors:
  core: {tool.pre_invoke: tool.pre_invoke}
  unsupported: [tool.handler, tool.post_invoke, agent.post_turn, agent.finalize, model.input, model.output, model.tool_result]
profiles: [tool]
`

func rule(id, effect string) string {
	return `{"oar": "1.0", "namespace": "acme.ops", "id": "` + id + `", "kind": "policy", "anchor": "tool.pre_invoke", "effect": "` + effect + `"}`
}

func write(t *testing.T, path, text string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	// A later write within the file system's timestamp granularity must still be seen.
	now := time.Now().Add(time.Duration(len(text)) * time.Millisecond)
	if err := os.Chtimes(path, now, now); err != nil {
		t.Fatal(err)
	}
}

func decide(t *testing.T, src *reload.Source) string {
	t.Helper()
	sv := src.Current()
	if sv == nil {
		t.Fatal("nothing is served")
	}
	d := sv.Loaded.Program.Evaluate(sv.Runtime, &engine.Occurrence{Anchor: "tool.pre_invoke", SessionID: "s"})
	return d.Decision
}

// TestWatcherServesAndReloadsPlainDocuments: a capability file, a rules directory and a
// configuration file are served; an edit reloads; a broken edit is refused and the
// previous documents keep serving; fixing it reloads again.
func TestWatcherServesAndReloadsPlainDocuments(t *testing.T) {
	dir := t.TempDir()
	rulesDir := filepath.Join(dir, "rules")
	if err := os.Mkdir(rulesDir, 0o755); err != nil {
		t.Fatal(err)
	}
	capPath, cfgPath := filepath.Join(dir, "capability.yaml"), filepath.Join(dir, "config.yaml")
	write(t, capPath, capability)
	write(t, filepath.Join(rulesDir, "a.json"), rule("WARN_ALL", "warn"))
	write(t, filepath.Join(rulesDir, "ignored.txt"), "not a rule")
	write(t, cfgPath, `{"oar_config": "1.0", "enforcement": {"acme.ops/WARN_ALL": "monitor"}}`)
	src := reload.NewSource(reload.Options{Runtime: func(string) *engine.Runtime { return engine.NewMemoryRuntime() }, Log: logr.Discard()})
	w := &Watcher{Files: Files{Capability: capPath, Rules: []string{rulesDir}, Configs: []string{cfgPath}}, Source: src}

	if !w.Poll() {
		t.Fatalf("the documents were not installed: %+v", src.Status().LastFailure)
	}
	if got := decide(t, src); got != "none" {
		t.Errorf("decision %q; the configuration makes the only rule monitor, so none", got)
	}
	if w.Poll() {
		t.Error("an unchanged set of files reloaded")
	}
	write(t, cfgPath, `{"oar_config": "1.0"}`)
	if !w.Poll() || decide(t, src) != "warn" {
		t.Fatalf("the edited configuration was not served: %+v", src.Status().LastFailure)
	}
	served := src.Current().Digest()

	write(t, filepath.Join(rulesDir, "b.yaml"), `{"oar": "1.0", "namespace": "acme.ops", "id": "BROKEN", "kind": "policy", "anchor": "tool.pre_invoke", "when": "pth == 1", "effect": "block"}`)
	if w.Poll() {
		t.Fatal("a rule that does not load was installed")
	}
	f := src.Status().LastFailure
	if f == nil || !strings.Contains(f.Error, "OAR-FACT-3") || src.Current().Digest() != served {
		t.Errorf("refusal %+v; the previous documents (%s) must keep serving", f, served)
	}
	write(t, filepath.Join(rulesDir, "b.yaml"), rule("BLOCK_ALL", "block"))
	if !w.Poll() || decide(t, src) != "block" {
		t.Fatalf("the fixed rule was not served: %+v", src.Status().LastFailure)
	}
	if packs := src.Current().Bundle.Packs; len(packs) != 2 || packs[0].Name != filepath.Join(rulesDir, "a.json") {
		t.Errorf("packs %+v; want one per rule file, in name order", packs)
	}
}

func TestReadRefusesWhatIsNotThere(t *testing.T) {
	dir := t.TempDir()
	capPath := filepath.Join(dir, "capability.yaml")
	write(t, capPath, capability)
	if _, err := (Files{Capability: capPath, Rules: []string{filepath.Join(dir, "missing")}}).Read(); err == nil || !strings.Contains(err.Error(), "missing") {
		t.Errorf("a missing rules path: %v", err)
	}
	write(t, filepath.Join(dir, "two.yaml"), capability+"\n---\n"+capability)
	if _, err := (Files{Capability: filepath.Join(dir, "two.yaml"), Rules: []string{capPath}}).Read(); err == nil || !strings.Contains(err.Error(), "exactly one capability") {
		t.Errorf("two capability documents: %v", err)
	}
}

// TestRevertedEditSupersedesItsFailure: a broken edit that is reverted to the served
// documents (the files change, their documents do not) leaves the failure reported as
// superseded by the served digest, as a bundle directory rolled back does.
func TestRevertedEditSupersedesItsFailure(t *testing.T) {
	dir := t.TempDir()
	capPath, rulePath := filepath.Join(dir, "capability.yaml"), filepath.Join(dir, "r.json")
	write(t, capPath, capability)
	write(t, rulePath, rule("A", "warn"))
	src := reload.NewSource(reload.Options{Runtime: func(string) *engine.Runtime { return engine.NewMemoryRuntime() }, Log: logr.Discard()})
	w := &Watcher{Files: Files{Capability: capPath, Rules: []string{rulePath}}, Source: src}
	if !w.Poll() {
		t.Fatalf("not installed: %+v", src.Status().LastFailure)
	}
	write(t, rulePath, rule("A", "bogus"))
	if w.Poll() {
		t.Fatal("a rule with an unknown effect was installed")
	}
	if f := src.Status().LastFailure; f == nil || f.SupersededBy != "" {
		t.Fatalf("after the broken edit: last failure %+v, want a current one", f)
	}
	write(t, rulePath, rule("A", "warn")+"\n")
	if w.Poll() {
		t.Error("the reverted documents were installed again")
	}
	if f, served := src.Status().LastFailure, src.Current().Digest(); f == nil || f.SupersededBy != served {
		t.Errorf("after reverting to the served documents: last failure %+v, want it superseded by %s", f, served)
	}
}
