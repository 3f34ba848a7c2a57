// Package reload keeps the bundle the engine sidecar serves and replaces it when the
// mounted ConfigMap changes.
//
// A Source holds the current bundle behind an atomic pointer. A new bundle is loaded
// completely with internal/bundle before it is swapped in, so a request that takes the
// pointer once is answered wholly by one bundle, never a mix; a bundle that fails to
// load is refused and the previous one keeps serving, with the failure kept in Status,
// reported to the Observer (metrics) and logged. A Watcher polls the mounted directory
// for the kubelet's atomic "..data" swap and hands each new bundle to the Source.
package reload

import (
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"

	"github.com/oar-operator/oar-operator/internal/bundle"
	"github.com/oar-operator/oar-operator/internal/engine"
	"github.com/oar-operator/oar-operator/internal/engine/diag"
)

// Served is one loaded bundle and the runtime it evaluates in. It is immutable.
type Served struct {
	Bundle *bundle.Bundle
	Loaded *bundle.Loaded
	// Runtime carries the session stores every bundle shares and this bundle's event
	// sink, so a published event names the bundle whose rule fired.
	Runtime  *engine.Runtime
	LoadedAt time.Time
}

// Digest is the served bundle's digest.
func (s *Served) Digest() string { return s.Bundle.Digest }

// Observer is told of every reload and every refused bundle (the sidecar's metrics).
type Observer interface {
	Reloaded(s *Served)
	ReloadFailed(err error)
}

// Status is the reload history /v1/bundle reports.
type Status struct {
	// LastReload is when the current bundle was swapped in (zero before the first).
	LastReload time.Time `json:"last_reload,omitzero"`
	// Reloads counts bundles swapped in, the first included.
	Reloads uint64 `json:"reloads"`
	// Failures counts bundles refused.
	Failures uint64 `json:"failures"`
	// LastFailure is the most recent refusal, kept after later successes, which mark
	// it superseded.
	LastFailure *Failure `json:"last_failure,omitempty"`
}

// Refused reports whether the mounted bundle is a refused one: the last failure has not
// been superseded by a bundle mounted and served since. A directory state is tried once
// (Watcher), so this, not the failure count, says a refusal still stands.
func (st Status) Refused() bool { return st.LastFailure != nil && st.LastFailure.SupersededBy == "" }

// Failure is one refused bundle.
type Failure struct {
	Time  time.Time `json:"time"`
	Error string    `json:"error"`
	// Diagnostics are the engine's, when the bundle decoded but did not load.
	Diagnostics []Diagnostic `json:"diagnostics,omitempty"`
	// SupersededBy is the digest of the bundle mounted and served since the failure (a
	// newer bundle, or a rollback to the one that kept serving): the failure no longer
	// describes what is mounted. Empty while it still does.
	SupersededBy string `json:"superseded_by,omitempty"`
}

// Diagnostic is one engine diagnostic of a refused bundle, with the stage of
// bundle.Load that reported it and the pack or configuration it belongs to.
type Diagnostic struct {
	Stage string `json:"stage"`
	Owner string `json:"owner,omitempty"`
	*diag.Error
}

// Options configure a Source.
type Options struct {
	// Runtime returns the runtime a bundle with the given digest evaluates in.
	Runtime func(digest string) *engine.Runtime
	// Observer, when set, is told of reloads and failures.
	Observer Observer
	Log      logr.Logger
	// Now is the clock (default time.Now).
	Now func() time.Time
}

// Source holds the served bundle. It is safe for concurrent use.
type Source struct {
	opt Options
	cur atomic.Pointer[Served]

	mu     sync.Mutex
	status Status
}

// NewSource returns a Source serving nothing yet.
func NewSource(opt Options) *Source {
	if opt.Now == nil {
		opt.Now = time.Now
	}
	return &Source{opt: opt}
}

// Current returns the served bundle, or nil before the first has loaded. A request
// calls it once and uses the result throughout.
func (s *Source) Current() *Served { return s.cur.Load() }

// Status returns a copy of the reload history.
func (s *Source) Status() Status {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.status
}

// Snapshot returns the served bundle and the reload history as of one moment: the
// bundle is swapped in and the history updated under one lock, so a reader never pairs
// one bundle with another's history.
func (s *Source) Snapshot() (*Served, Status) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cur.Load(), s.status
}

// Remounted records that the mounted bundle is the served one again (a rollback after
// a refused bundle): the last failure no longer describes what is mounted.
func (s *Source) Remounted() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if cur := s.cur.Load(); cur != nil {
		s.supersede(cur.Digest())
	}
}

// supersede marks the last failure superseded by digest; s.mu is held. The Failure is
// replaced, not changed, since Status copies share it.
func (s *Source) supersede(digest string) {
	if f := s.status.LastFailure; f != nil && f.SupersededBy == "" {
		cp := *f
		cp.SupersededBy = digest
		s.status.LastFailure = &cp
	}
}

// Install loads b completely and, when it loads, swaps it in; otherwise the current
// bundle keeps serving and the failure is recorded. The error is a *bundle.LoadError
// when the engine refused the bundle.
func (s *Source) Install(b *bundle.Bundle) (*Served, error) {
	start := s.opt.Now()
	l, err := bundle.Load(b)
	if err != nil {
		s.Refuse(err)
		return nil, err
	}
	sv := &Served{Bundle: b, Loaded: l, Runtime: s.opt.Runtime(b.Digest), LoadedAt: s.opt.Now()}
	s.mu.Lock()
	prev := s.cur.Swap(sv)
	s.status.LastReload = sv.LoadedAt
	s.status.Reloads++
	s.supersede(b.Digest)
	s.mu.Unlock()
	if s.opt.Observer != nil {
		s.opt.Observer.Reloaded(sv)
	}
	kv := []any{"digest", b.Digest, "packs", len(b.Packs), "configs", len(b.Configs),
		"rules", len(l.RuleSet.Rules), "took", sv.LoadedAt.Sub(start).String()}
	if prev != nil {
		kv = append(kv, "previous", prev.Digest())
	}
	s.opt.Log.Info("bundle loaded", kv...)
	return sv, nil
}

// Refuse records a bundle that could not be read or loaded; the current bundle keeps
// serving.
func (s *Source) Refuse(err error) {
	f := &Failure{Time: s.opt.Now(), Error: err.Error()}
	var le *bundle.LoadError
	if errors.As(err, &le) {
		for i, e := range le.Errors {
			f.Diagnostics = append(f.Diagnostics, Diagnostic{Stage: le.Stage, Owner: le.Owners[i], Error: e})
		}
	}
	s.mu.Lock()
	s.status.Failures++
	s.status.LastFailure = f
	s.mu.Unlock()
	if s.opt.Observer != nil {
		s.opt.Observer.ReloadFailed(err)
	}
	serving := "none"
	if cur := s.Current(); cur != nil {
		serving = cur.Digest()
	}
	s.opt.Log.Error(err, "bundle refused; the previous bundle keeps serving", "serving", serving)
}
