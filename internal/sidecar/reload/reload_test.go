package reload

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/go-logr/logr"

	"github.com/oar-operator/oar-operator/internal/bundle"
	"github.com/oar-operator/oar-operator/internal/engine"
	"github.com/oar-operator/oar-operator/internal/sidecar/kubeletdir"
)

// newBundle seals a bundle of a tool-profile capability, one pack of the given rules
// and the given configurations.
func newBundle(t *testing.T, rules []any, configs ...map[string]any) *bundle.Bundle {
	t.Helper()
	b := &bundle.Bundle{
		Capability: map[string]any{
			"oar_capability_version": "1.0", "host": "acme.gateway", "profiles": []any{"tool"},
			"anchors": map[string]any{"core": map[string]any{"tool.pre_invoke": "tool.pre_invoke"},
				"unsupported": []any{"tool.handler", "tool.post_invoke", "agent.post_turn", "agent.finalize", "model.input", "model.output", "model.tool_result"}},
		},
		Packs:   []bundle.Pack{{Name: "pack", Generation: 1, Rules: rules}},
		Configs: []bundle.Config{},
	}
	for i, c := range configs {
		b.Configs = append(b.Configs, bundle.Config{Name: "cfg", Generation: int64(i + 1), Document: c})
	}
	if err := b.Seal(); err != nil {
		t.Fatal(err)
	}
	return b
}

func rule(id, effect string) map[string]any {
	return map[string]any{"oar": "1.0", "namespace": "acme.ops", "id": id, "kind": "policy", "anchor": "tool.pre_invoke", "effect": effect}
}

// observer records what a Source reports.
type observer struct {
	reloaded []string
	failed   []error
}

func (o *observer) Reloaded(s *Served)     { o.reloaded = append(o.reloaded, s.Digest()) }
func (o *observer) ReloadFailed(err error) { o.failed = append(o.failed, err) }

func newSource(o *observer) *Source {
	return NewSource(Options{Runtime: func(string) *engine.Runtime { return engine.NewMemoryRuntime() }, Observer: o, Log: logr.Discard()})
}

// TestInstall: a bundle that loads is swapped in whole; one that does not is refused
// with the engine's diagnostics and the stage and owner of each, and the previous
// bundle keeps serving.
func TestInstall(t *testing.T) {
	o := &observer{}
	s := newSource(o)
	good := newBundle(t, []any{rule("A", "block")})
	sv, err := s.Install(good)
	if err != nil || s.Current() != sv || sv.Loaded.Program == nil || sv.Runtime == nil {
		t.Fatalf("Install: %v", err)
	}
	bad := newBundle(t, []any{rule("A", "block")}, map[string]any{"oar_config": "1.0", "disable": []any{"acme.ops/NOPE"}})
	if _, err := s.Install(bad); err == nil {
		t.Fatal("a configuration naming an absent rule was installed")
	}
	st := s.Status()
	if s.Current() != sv || st.Reloads != 1 || st.Failures != 1 || len(o.reloaded) != 1 || len(o.failed) != 1 {
		t.Fatalf("after a refusal: status %+v, observer %+v", st, o)
	}
	f := st.LastFailure
	if len(f.Diagnostics) != 1 || f.Diagnostics[0].Stage != bundle.StageConfigs || f.Diagnostics[0].Owner != "cfg" || f.Diagnostics[0].Clause != "OAR-CFG-4" {
		t.Errorf("last failure %+v", f)
	}
	var le *bundle.LoadError
	if !errors.As(o.failed[0], &le) {
		t.Errorf("the observer got %T, want *bundle.LoadError", o.failed[0])
	}
}

// TestPollOnlyOnChange: an unchanged directory is not read again, a republished
// identical bundle is not reloaded, and a directory state that failed is not retried
// until it changes.
func TestPollOnlyOnChange(t *testing.T) {
	o := &observer{}
	s := newSource(o)
	dir := t.TempDir()
	vol := kubeletdir.New(dir)
	w := &Watcher{Dir: dir, Source: s}
	b := newBundle(t, []any{rule("A", "block")})
	if err := vol.PublishBundle(b); err != nil {
		t.Fatal(err)
	}
	if !w.Poll() || w.Poll() {
		t.Fatal("the first poll must load, the second must not")
	}
	if err := vol.PublishBundle(b); err != nil {
		t.Fatal(err)
	}
	if w.Poll() || len(o.reloaded) != 1 {
		t.Errorf("the same digest was reloaded: %v", o.reloaded)
	}
	if err := vol.PublishBundle(newBundle(t, []any{rule("A", "bogus")})); err != nil {
		t.Fatal(err)
	}
	w.Poll()
	w.Poll()
	if len(o.failed) != 1 {
		t.Errorf("%d failures for one bad directory state, want 1", len(o.failed))
	}
}

// TestPlainGzipSwitchIsNeverRefused: a bundle that grows past the plain limit moves
// from the key bundle.json to bundle.json.gz and back. The kubelet adds the new key's
// symlink before it swaps "..data" and removes the old one after, so a poll at any
// moment sees exactly one key resolve: no swap is ever refused.
func TestPlainGzipSwitchIsNeverRefused(t *testing.T) {
	o := &observer{}
	s := newSource(o)
	dir := t.TempDir()
	vol := kubeletdir.New(dir)
	small := newBundle(t, []any{rule("A", "block")})
	large := newBundle(t, []any{with(rule("A", "block"), "copy", map[string]any{"why": strings.Repeat("Say why in plain words. ", (bundle.PlainLimit/24)+1)})})
	if err := vol.PublishBundle(small); err != nil {
		t.Fatal(err)
	}
	w := &Watcher{Dir: dir, Source: s}
	stop := make(chan struct{})
	polled := make(chan struct{})
	go func() {
		defer close(polled)
		for {
			select {
			case <-stop:
				return
			default:
				w.Poll()
			}
		}
	}()
	for i := range 40 {
		b := small
		if i%2 == 0 {
			b = large
		}
		if err := vol.PublishBundle(b); err != nil {
			t.Fatal(err)
		}
	}
	close(stop)
	<-polled
	w.Poll()
	if len(o.failed) != 0 || s.Current().Digest() != small.Digest {
		t.Errorf("failures %v; serving %s, want the last published %s", o.failed, s.Current().Digest(), small.Digest)
	}
	if enc, _ := bundle.Encode(large); !enc.Compressed {
		t.Fatal("the large bundle is not stored compressed: the test switches nothing")
	}
}

// TestMissingDirectory: a directory that does not exist is one failure, reported
// once, and the source stays unready.
func TestMissingDirectory(t *testing.T) {
	o := &observer{}
	s := newSource(o)
	w := &Watcher{Dir: filepath.Join(t.TempDir(), "absent"), Source: s}
	w.Poll()
	w.Poll()
	if s.Current() != nil || len(o.failed) != 1 || s.Status().LastFailure == nil {
		t.Errorf("current %v, failures %v", s.Current(), o.failed)
	}
}

// with returns r with member set to v.
func with(r map[string]any, member string, v any) map[string]any {
	r[member] = v
	return r
}
