package reload

import (
	"testing"
	"time"

	"github.com/oar-operator/oar-operator/internal/bundle"
	"github.com/oar-operator/oar-operator/internal/sidecar/kubeletdir"
)

// TestSnapshotPairsBundleAndHistory: a new bundle becomes current only together with
// the reload history that counts it, so /v1/bundle never pairs one bundle's digest with
// another's counts. While the history's lock is held, an Install must not have swapped
// its bundle in yet.
func TestSnapshotPairsBundleAndHistory(t *testing.T) {
	s := newSource(&observer{})
	first, err := s.Install(newBundle(t, []any{rule("A", "block")}))
	if err != nil {
		t.Fatal(err)
	}
	next := newBundle(t, []any{rule("A", "warn")})
	s.mu.Lock()
	done := make(chan struct{})
	go func() {
		defer close(done)
		if _, err := s.Install(next); err != nil {
			t.Error(err)
		}
	}()
	deadline := time.Now().Add(200 * time.Millisecond)
	for time.Now().Before(deadline) && s.Current() == first {
		time.Sleep(time.Millisecond)
	}
	swapped := s.Current() != first
	s.mu.Unlock()
	<-done
	if swapped {
		t.Error("the bundle was swapped in before the reload history counted it")
	}
	sv, st := s.Snapshot()
	if sv.Digest() != next.Digest || st.Reloads != 2 || !st.LastReload.Equal(sv.LoadedAt) {
		t.Errorf("snapshot %s with history %+v", sv.Digest(), st)
	}
}

// TestLastFailureIsSuperseded: a refused bundle stays reported after a good one serves
// again, marked superseded by it — by a newer bundle, or by a rollback to the bundle
// that kept serving.
func TestLastFailureIsSuperseded(t *testing.T) {
	s := newSource(&observer{})
	dir := t.TempDir()
	vol := kubeletdir.New(dir)
	w := &Watcher{Dir: dir, Source: s}
	good := newBundle(t, []any{rule("A", "block")})
	bad := newBundle(t, []any{rule("A", "bogus")})
	next := newBundle(t, []any{rule("A", "warn")})
	for _, step := range []struct {
		name       string
		publish    *bundle.Bundle
		superseded bool
	}{{"good", good, false}, {"bad", bad, false}, {"a rollback to good", good, true}, {"bad again", bad, false}, {"next", next, true}} {
		if err := vol.PublishBundle(step.publish); err != nil {
			t.Fatal(err)
		}
		w.Poll()
		f := s.Status().LastFailure
		switch {
		case step.publish == good && !step.superseded:
		case step.publish == bad && (f == nil || f.SupersededBy != ""):
			t.Errorf("after %s: last failure %+v, want one not superseded", step.name, f)
		case step.superseded && (f == nil || f.SupersededBy != s.Current().Digest()):
			t.Errorf("after %s: last failure %+v, want it superseded by %s", step.name, f, s.Current().Digest())
		}
	}
}
