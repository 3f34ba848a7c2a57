package redisstore

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/oar-operator/oar-operator/internal/engine"
	"github.com/oar-operator/oar-operator/internal/sidecar/redistest"
	"github.com/oar-operator/oar-operator/internal/sidecar/session"
)

func TestMain(m *testing.M) { redistest.Main(m) }

// newStore is a store on the shared server with the key prefix of this run of the test.
// A test that sets no Timeout gets seconds, not DefaultTimeout's quarter second: the
// full suite on two cores can hold the server's answers up longer than that, and such a
// test is not about timing.
func newStore(t *testing.T, opt Options) *Store {
	t.Helper()
	if opt.Timeout == 0 {
		opt.Timeout = 5 * time.Second
	}
	opt.URL = redistest.Shared(t).URL
	opt.Prefix = redistest.Prefix(t)
	s, err := New(opt)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func load(t *testing.T, s *Store, session string) *Snapshot {
	t.Helper()
	snap, err := s.Load(context.Background(), session)
	if err != nil {
		t.Fatal(err)
	}
	return snap
}

func commit(t *testing.T, s *Store, snap *Snapshot) bool {
	t.Helper()
	ok, err := s.Commit(context.Background(), snap)
	if err != nil {
		t.Fatal(err)
	}
	return ok
}

var (
	plain  = engine.CounterKey{Rule: "acme.ops/COUNT", Session: "s1"}
	scoped = engine.CounterKey{Rule: "acme.ops/COUNT", Session: "s1", Scope: "repo a\x00b", Scoped: true}
)

// TestCommitThenLoad: counters (scoped and not, [OAR-FIRE-10]) and the window written by
// one commit are what the next load reads.
func TestCommitThenLoad(t *testing.T) {
	s := newStore(t, Options{IdleTTL: time.Hour})
	snap := load(t, s, "s1")
	for _, a := range []engine.Action{engine.ActionIncrementCounter, engine.ActionIncrementCounter, engine.ActionIncrementBreaker} {
		if _, err := snap.Apply(plain, a); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := snap.Apply(scoped, engine.ActionResetCounter); err != nil {
		t.Fatal(err)
	}
	for _, step := range []string{"read", "fetch", "shell"} {
		snap.Append("s1", step, 2)
	}
	if !commit(t, s, snap) {
		t.Fatal("the first commit of a new session conflicted")
	}
	again := load(t, s, "s1")
	if c, _ := again.Get(plain); c != (engine.Counts{Fire: 2, Breaker: 1}) {
		t.Errorf("counter %+v", c)
	}
	if c, _ := again.Get(scoped); c != (engine.Counts{}) || len(again.counters) != 2 {
		t.Errorf("scoped counter %+v, %d counters; a reset counter is still held", c, len(again.counters))
	}
	if w, _ := again.WindowErr("s1"); strings.Join(w, ",") != "fetch,shell" {
		t.Errorf("window %q, want the newest two steps", w)
	}
	if ttl, _ := s.TTL(context.Background(), "s1"); ttl <= 59*time.Minute {
		t.Errorf("TTL %v, want the idle TTL of an hour", ttl)
	}
	if !commit(t, s, again) {
		t.Error("a snapshot with no changes did not commit")
	}
}

// TestRestore: a counter set back by Restore, as the engine does for a rule whose later
// side-effect failed ([OAR-OPS-4]), commits as it was read: a counter the occurrence
// added and set back to zero is not written at all.
func TestRestore(t *testing.T) {
	s := newStore(t, Options{})
	snap := load(t, s, "s1")
	_, _ = snap.Apply(plain, engine.ActionIncrementCounter)
	if !commit(t, s, snap) {
		t.Fatal("the first commit conflicted")
	}
	snap = load(t, s, "s1")
	_, _ = snap.Apply(plain, engine.ActionIncrementCounter)
	_, _ = snap.Apply(scoped, engine.ActionIncrementBreaker)
	if err := snap.Restore(plain, engine.Counts{Fire: 1}); err != nil {
		t.Fatal(err)
	}
	if err := snap.Restore(scoped, engine.Counts{}); err != nil {
		t.Fatal(err)
	}
	if _, fields, window := snap.changes(); len(fields) > 0 || window {
		t.Error("a snapshot whose changes were all set back still reports a change")
	}
	if !commit(t, s, snap) {
		t.Fatal("the commit conflicted")
	}
	again := load(t, s, "s1")
	if c, _ := again.Get(plain); c != (engine.Counts{Fire: 1}) || len(again.counters) != 1 {
		t.Errorf("counter %+v and %d counters; want fire_count 1 and no scoped counter", c, len(again.counters))
	}
	if err := again.Restore(scoped, engine.Counts{Fire: 2}); err == nil {
		t.Error("a counter the snapshot does not hold was restored to a value")
	}
}

// TestRestoreToZeroBoundsLikeMemory: a counter the session held, set back to zero by a
// take-back, is removed as the memory store removes it, so the per-session bound then
// admits the same next counter in both modes.
func TestRestoreToZeroBoundsLikeMemory(t *testing.T) {
	other := engine.CounterKey{Rule: "acme.ops/OTHER", Session: "s1"}
	mem := session.New(session.Options{MaxCounters: 1})
	_, _ = mem.Apply(plain, engine.ActionResetCounter) // an earlier occurrence leaves it at zero
	_, _ = mem.Apply(plain, engine.ActionResetCounter) // this one resets it again...
	_ = mem.Restore(plain, engine.Counts{})            // ...and takes that back
	_, memErr := mem.Apply(other, engine.ActionIncrementCounter)

	s := newStore(t, Options{MaxCounters: 1})
	snap := load(t, s, "s1")
	_, _ = snap.Apply(plain, engine.ActionResetCounter)
	commit(t, s, snap)
	snap = load(t, s, "s1")
	_, _ = snap.Apply(plain, engine.ActionResetCounter)
	if err := snap.Restore(plain, engine.Counts{}); err != nil {
		t.Fatal(err)
	}
	if !commit(t, s, snap) {
		t.Fatal("the commit conflicted")
	}
	next := load(t, s, "s1")
	_, redisErr := next.Apply(other, engine.ActionIncrementCounter)
	if memErr != nil || redisErr != nil {
		t.Errorf("the next counter: memory %v, Redis %v; want both admitted", memErr, redisErr)
	}
	if corr := snap.Correction(); len(corr.counters) != 1 {
		t.Errorf("a correction of the take-back reads %d counters; want the one the session held", len(corr.counters))
	}
}

// TestCommitConflicts: of two snapshots read at one version, the second to commit is
// refused and changes nothing; read again, it sees the first one's change.
func TestCommitConflicts(t *testing.T) {
	s := newStore(t, Options{})
	a, b := load(t, s, "s1"), load(t, s, "s1")
	_, _ = a.Apply(plain, engine.ActionIncrementCounter)
	_, _ = b.Apply(plain, engine.ActionIncrementCounter)
	if !commit(t, s, a) {
		t.Fatal("the first commit conflicted")
	}
	if commit(t, s, b) {
		t.Fatal("a commit over a changed session was accepted")
	}
	b = load(t, s, "s1")
	if c, _ := b.Get(plain); c.Fire != 1 {
		t.Fatalf("after the refused commit: %+v, want only the first increment", c)
	}
	_, _ = b.Apply(plain, engine.ActionIncrementCounter)
	if !commit(t, s, b) {
		t.Fatal("the re-read snapshot conflicted")
	}
	if c, _ := load(t, s, "s1").Get(plain); c.Fire != 2 {
		t.Errorf("counter %+v, want 2", c)
	}
}

// TestVersions: a snapshot reports its versions once committed only: a new session is
// read at the empty version and a change leaves a new one, which the next snapshot
// reads; a refused commit reports nothing; a snapshot that changed nothing leaves the
// version it read, read from Redis or from the cache.
func TestVersions(t *testing.T) {
	for name, cache := range map[string]int{"uncached": 0, "cached": 16} {
		t.Run(name, func(t *testing.T) {
			s := newStore(t, Options{CacheSessions: cache})
			a, b := load(t, s, "s1"), load(t, s, "s1")
			_, _ = a.Apply(plain, engine.ActionIncrementCounter)
			_, _ = b.Apply(plain, engine.ActionIncrementCounter)
			if _, _, ok := a.Versions(); ok {
				t.Fatal("versions reported before the commit")
			}
			if !commit(t, s, a) || commit(t, s, b) {
				t.Fatal("the first commit conflicted or the second did not")
			}
			read, first, ok := a.Versions()
			if !ok || read != "" || first == "" {
				t.Fatalf("the new session's commit: read %q written %q committed %v", read, first, ok)
			}
			if _, _, ok := b.Versions(); ok {
				t.Error("the refused commit reports versions")
			}
			b = load(t, s, "s1")
			_, _ = b.Apply(plain, engine.ActionIncrementCounter)
			if !commit(t, s, b) {
				t.Fatal("the re-read snapshot conflicted")
			}
			read, second, ok := b.Versions()
			if !ok || read != first || second == first || second == "" {
				t.Fatalf("the second change: read %q written %q committed %v; want read %q and a new version", read, second, ok, first)
			}
			unchanged := load(t, s, "s1")
			if !commit(t, s, unchanged) {
				t.Fatal("a snapshot with no changes did not commit")
			}
			if read, written, ok := unchanged.Versions(); !ok || read != second || written != second {
				t.Errorf("a snapshot with no changes: read %q written %q committed %v; want %q both", read, written, ok, second)
			}
		})
	}
}

// TestIdleSessionExpires: a session neither read nor written for the idle TTL is
// forgotten.
func TestIdleSessionExpires(t *testing.T) {
	s := newStore(t, Options{IdleTTL: 150 * time.Millisecond})
	snap := load(t, s, "s1")
	_, _ = snap.Apply(plain, engine.ActionIncrementCounter)
	commit(t, s, snap)
	if c, _ := load(t, s, "s1").Get(plain); c.Fire != 1 {
		t.Fatalf("counter %+v before the TTL", c)
	}
	time.Sleep(400 * time.Millisecond)
	if c, _ := load(t, s, "s1").Get(plain); c.Fire != 0 {
		t.Errorf("counter %+v after the session was idle for longer than its TTL", c)
	}
}

// TestReadRefreshesTTL: an occurrence that only reads a session refreshes its TTL, read
// by a round trip or from the cache (checked by the validate script), as a session in
// memory stays while it is read.
func TestReadRefreshesTTL(t *testing.T) {
	for name, cache := range map[string]int{"uncached": 0, "cached": 10} {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			s := newStore(t, Options{IdleTTL: time.Hour, CacheSessions: cache})
			snap := load(t, s, "s1")
			_, _ = snap.Apply(plain, engine.ActionIncrementCounter)
			commit(t, s, snap)
			if err := s.client.PExpire(ctx, s.key("s1"), time.Minute).Err(); err != nil {
				t.Fatal(err)
			}
			read := load(t, s, "s1")
			if _, err := read.Get(plain); err != nil {
				t.Fatal(err)
			}
			if !commit(t, s, read) {
				t.Fatal("an occurrence that changed nothing conflicted")
			}
			if ttl, err := s.TTL(ctx, "s1"); err != nil || ttl < 59*time.Minute {
				t.Errorf("TTL %v (%v) after a read; want it refreshed to the idle TTL, an hour", ttl, err)
			}
		})
	}
}

// TestSessionSize reports what one session costs in Redis: a counter, a scoped counter
// and a window of eight steps (the figure the README gives).
func TestSessionSize(t *testing.T) {
	s := newStore(t, Options{IdleTTL: time.Hour})
	session := strings.Repeat("x", 36) // a UUID
	snap := load(t, s, session)
	_, _ = snap.Apply(engine.CounterKey{Rule: "acme.ops/COUNT_SHELL", Session: session}, engine.ActionIncrementCounter)
	_, _ = snap.Apply(engine.CounterKey{Rule: "acme.ops/PER_REPO", Session: session, Scope: "github.com/acme/api", Scoped: true}, engine.ActionIncrementCounter)
	for _, step := range []string{"read", "web_fetch", "shell", "read", "write", "shell", "deploy", "read"} {
		snap.Append(session, step, 8)
	}
	commit(t, s, snap)
	n, err := s.MemoryUsage(context.Background(), session)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("a session with two counters and eight steps takes %d bytes in Redis", n)
	if n == 0 || n > 640 {
		t.Errorf("MEMORY USAGE %d bytes; the README says about 500", n)
	}
}

func TestCounterLimit(t *testing.T) {
	s := newStore(t, Options{MaxCounters: 1})
	snap := load(t, s, "s1")
	if _, err := snap.Apply(plain, engine.ActionIncrementCounter); err != nil {
		t.Fatal(err)
	}
	if _, err := snap.Apply(scoped, engine.ActionIncrementCounter); !errors.Is(err, ErrCounterLimit) {
		t.Errorf("a second counter: %v, want ErrCounterLimit", err)
	}
}

func TestUnavailableSnapshotFailsEverything(t *testing.T) {
	cause := errors.New("down")
	u := Unavailable("s1", cause)
	if _, err := u.Get(plain); !errors.Is(err, cause) {
		t.Errorf("Get: %v", err)
	}
	if _, err := u.Apply(plain, engine.ActionIncrementCounter); !errors.Is(err, cause) {
		t.Errorf("Apply: %v", err)
	}
	if _, err := u.WindowErr("s1"); !errors.Is(err, cause) {
		t.Errorf("WindowErr: %v", err)
	}
	u.Append("s1", "read", 4)
	if _, fields, window := u.changes(); len(fields) > 0 || window {
		t.Error("an unavailable snapshot has changes to commit")
	}
}

// TestNewRefusesBadOptions: New refuses what the sidecar's flags refuse, the pending
// time included: a negative timeout, and a PendingTTL that is no whole number of
// milliseconds, at least one, below Timeout (CheckPendingTTL), even the default one
// with a shorter Timeout; zero is the default, and a PendingTTL just below Timeout
// is a store.
func TestNewRefusesBadOptions(t *testing.T) {
	dir := t.TempDir()
	notPEM := filepath.Join(dir, "ca.pem")
	if err := os.WriteFile(notPEM, []byte("not a certificate"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		opt  Options
		want string
	}{
		{Options{URL: "redis://user:secret@127.0.0.1:6379"}, "carries a password"},
		{Options{URL: "http://127.0.0.1"}, "must be redis or rediss"},
		{Options{URL: "redis://127.0.0.1", PasswordFile: filepath.Join(dir, "missing")}, "session store password"},
		{Options{URL: "redis://127.0.0.1", CAFile: notPEM}, "for rediss:// URLs"},
		{Options{URL: "rediss://127.0.0.1", CAFile: notPEM}, "no PEM certificate"},
		{Options{URL: "redis://127.0.0.1", Timeout: -time.Second}, "session store Timeout -1s is negative"},
		{Options{URL: "redis://127.0.0.1", PendingTTL: -5 * time.Millisecond}, "session store PendingTTL -5ms is not a whole number of milliseconds, at least 1ms"},
		{Options{URL: "redis://127.0.0.1", PendingTTL: 2500 * time.Microsecond}, "session store PendingTTL 2.5ms is not a whole number of milliseconds"},
		{Options{URL: "redis://127.0.0.1", PendingTTL: 500 * time.Microsecond}, "session store PendingTTL 500µs is not a whole number of milliseconds, at least 1ms"},
		{Options{URL: "redis://127.0.0.1", PendingTTL: DefaultTimeout}, "session store PendingTTL 250ms is not below Timeout, 250ms"},
		{Options{URL: "redis://127.0.0.1", PendingTTL: time.Second, Timeout: 20 * time.Millisecond}, "session store PendingTTL 1s is not below Timeout, 20ms"},
		{Options{URL: "redis://127.0.0.1", Timeout: 4 * time.Millisecond}, "session store PendingTTL (the default) 5ms is not below Timeout, 4ms"},
	} {
		_, err := New(tt.opt)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%+v: %v, want %q", tt.opt, err, tt.want)
		}
		if err != nil && strings.Contains(err.Error(), "secret") {
			t.Errorf("the error shows the password: %v", err)
		}
	}
	for _, opt := range []Options{
		{URL: "redis://127.0.0.1"},
		{URL: "redis://127.0.0.1", Timeout: time.Second, PendingTTL: 999 * time.Millisecond},
		{URL: "redis://127.0.0.1", Timeout: 2 * time.Millisecond, PendingTTL: time.Millisecond},
	} {
		s, err := New(opt)
		if err != nil {
			t.Errorf("%+v: %v", opt, err)
			continue
		}
		_ = s.Close()
	}
}

// TestPasswordFromFile: a server requiring a password is reached with the one in the
// file, and refuses a client without it.
func TestPasswordFromFile(t *testing.T) {
	s := newStore(t, Options{})
	ctx := context.Background()
	if err := s.client.ConfigSet(ctx, "requirepass", "s3cret").Err(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		withPassword, _ := New(Options{URL: redistest.Shared(t).URL, PasswordFile: writeSecret(t, "s3cret\n")})
		_ = withPassword.client.ConfigSet(ctx, "requirepass", "").Err()
		_ = withPassword.Close()
	})
	without, _ := New(Options{URL: redistest.Shared(t).URL})
	defer without.Close()
	if err := without.Ping(ctx); err == nil {
		t.Fatal("a client without the password was let in")
	}
	with, err := New(Options{URL: redistest.Shared(t).URL, PasswordFile: writeSecret(t, "s3cret\n")})
	if err != nil {
		t.Fatal(err)
	}
	defer with.Close()
	if err := with.Ping(ctx); err != nil {
		t.Errorf("with the password from the file: %v", err)
	}
}

func writeSecret(t *testing.T, text string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "password")
	if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestWindowKeepsLoneSurrogates: a step holding a lone surrogate code point
// ([OAR-FACT-23]) is the same step once committed and loaded again, as are steps that
// JSON escapes.
func TestWindowKeepsLoneSurrogates(t *testing.T) {
	s := newStore(t, Options{CacheSessions: -1})
	steps := []string{"odd\xed\xa0\x80", "\xed\xbf\xbf", "quote\"back\\slash\nline", "é😀\u2028"}
	snap := load(t, s, "s1")
	for _, step := range steps {
		snap.Append("s1", step, len(steps))
	}
	if !commit(t, s, snap) {
		t.Fatal("the first commit of a new session conflicted")
	}
	w, err := load(t, s, "s1").WindowErr("s1")
	if err != nil || !slices.Equal(w, steps) {
		t.Errorf("window %q (%v), want %q", w, err, steps)
	}
}

// TestCorrectionReplacesTheCommit: a Correction is evaluated against the session as the
// corrected snapshot read it, and its Commit leaves the session as if only it had been
// committed: counters the corrected commit changed are set back, counters it added and
// the correction does not hold are removed, and the window is the correction's. It is
// refused when another writer changed the session after the corrected commit.
func TestCorrectionReplacesTheCommit(t *testing.T) {
	s := newStore(t, Options{PendingTTL: time.Minute, Timeout: 2 * time.Minute}) // the correction is never too late
	first := load(t, s, "s1")
	_, _ = first.Apply(plain, engine.ActionIncrementCounter)
	first.Append("s1", "read", 4)
	if !commit(t, s, first) {
		t.Fatal("the first commit conflicted")
	}
	snap := load(t, s, "s1")
	_, _ = snap.Apply(plain, engine.ActionIncrementCounter)
	_, _ = snap.Apply(scoped, engine.ActionIncrementBreaker)
	snap.Append("s1", "shell", 4)
	snap.MayNeedCorrection()
	if !commit(t, s, snap) {
		t.Fatal("the commit to correct conflicted")
	}
	corr := snap.Correction()
	if c, _ := corr.Get(plain); c != (engine.Counts{Fire: 1}) {
		t.Errorf("the correction reads %+v, want the counter as read (fire_count 1)", c)
	}
	if w, _ := corr.WindowErr("s1"); strings.Join(w, ",") != "read" {
		t.Errorf("the correction reads the window %q, want it as read", w)
	}
	_, _ = corr.Apply(plain, engine.ActionIncrementBreaker)
	if !commit(t, s, corr) {
		t.Fatal("the correction conflicted")
	}
	read, written, _ := corr.Versions()
	if r, w, _ := snap.Versions(); read != r || written == w {
		t.Errorf("the correction's versions %s -> %s; want the corrected read %s and a new one", read, written, r)
	}
	again := load(t, s, "s1")
	if c, _ := again.Get(plain); c != (engine.Counts{Fire: 1, Breaker: 1}) || len(again.counters) != 1 {
		t.Errorf("counter %+v and %d counters; want the correction's only", c, len(again.counters))
	}
	if w, _ := again.WindowErr("s1"); strings.Join(w, ",") != "read" {
		t.Errorf("window %q, want the correction's", w)
	}

	stale := again.Correction()
	other := load(t, s, "s1")
	_, _ = other.Apply(plain, engine.ActionIncrementCounter)
	if !commit(t, s, other) {
		t.Fatal("the other writer's commit conflicted")
	}
	_, _ = stale.Apply(plain, engine.ActionResetCounter)
	if commit(t, s, stale) {
		t.Error("a correction committed over another writer's change")
	}
}
