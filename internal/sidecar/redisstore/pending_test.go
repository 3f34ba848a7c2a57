package redisstore

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/oar-operator/oar-operator/internal/engine"
)

// pendingCommit commits an increment of plain to session s1 from a snapshot marked
// MayNeedCorrection, and returns it.
func pendingCommit(t *testing.T, s *Store) *Snapshot {
	t.Helper()
	snap := load(t, s, "s1")
	_, _ = snap.Apply(plain, engine.ActionIncrementCounter)
	snap.MayNeedCorrection()
	if !commit(t, s, snap) {
		t.Fatal("the pending commit conflicted")
	}
	return snap
}

// marker is the session's pending marker as Redis holds it ("" when none).
func marker(t *testing.T, s *Store) string {
	t.Helper()
	p, err := s.client.HGet(context.Background(), s.key("s1"), "p").Result()
	if err != nil && !errors.Is(err, redis.Nil) {
		t.Fatal(err)
	}
	return p
}

// loadAsync loads session s1 from s in a goroutine and delivers the snapshot, or an
// unavailable one holding the error.
func loadAsync(s *Store) <-chan *Snapshot {
	got := make(chan *Snapshot, 1)
	go func() {
		snap, err := s.Load(context.Background(), "s1")
		if err != nil {
			snap = Unavailable("s1", err)
		}
		got <- snap
	}()
	return got
}

// TestLoadWaitsForTheCorrection: a commit that may need a correction holds the
// session pending; another replica's load waits, rather than read changes that may be
// taken back, until the correction's commit clears the marker, and then reads the
// corrected session. A replica whose cached state is stale does not take the pending
// state from its commit's refusal either: its next load waits too.
func TestLoadWaitsForTheCorrection(t *testing.T) {
	opt := Options{PendingTTL: 10 * time.Second, Timeout: 20 * time.Second}
	writer := newStore(t, opt)
	opt.CacheSessions = 10
	reader := newStore(t, opt)
	stale := load(t, reader, "s1") // cached by the reader before the writer's commit
	snap := pendingCommit(t, writer)
	_, _ = stale.Apply(plain, engine.ActionIncrementBreaker)
	if commit(t, reader, stale) {
		t.Fatal("a commit from a stale cached state was applied")
	}
	got := loadAsync(reader)
	select {
	case s := <-got:
		t.Fatalf("a load returned while the session was pending a correction: %+v (%v)", s.counters, s.err)
	case <-time.After(100 * time.Millisecond):
	}
	corr := snap.Correction()
	if !commit(t, writer, corr) {
		t.Fatal("the correction conflicted")
	}
	s := <-got
	if c, err := s.Get(plain); err != nil || c != (engine.Counts{}) {
		t.Errorf("the waiting load read %+v (%v); want the corrected session, without the increment", c, err)
	}
	if _, written, _ := corr.Versions(); s.version != written {
		t.Errorf("the waiting load read version %q; want the correction's %q", s.version, written)
	}
	if p := marker(t, writer); p != "" {
		t.Errorf("the correction left the marker %q", p)
	}
}

// TestOwnMarkerHoldsNoLoad: a store's own pending marker never holds its own loads
// (its caller evaluates one session at a time, so the commit is final or corrected by
// then), and a commit that cannot need a correction clears the marker.
func TestOwnMarkerHoldsNoLoad(t *testing.T) {
	s := newStore(t, Options{PendingTTL: 10 * time.Second, Timeout: 20 * time.Second})
	pendingCommit(t, s)
	start := time.Now()
	again := load(t, s, "s1")
	if c, _ := again.Get(plain); c.Fire != 1 || time.Since(start) > time.Second {
		t.Errorf("the writer's own load read %+v in %v", c, time.Since(start))
	}
	if marker(t, s) == "" {
		t.Fatal("the pending commit left no marker")
	}
	_, _ = again.Apply(plain, engine.ActionIncrementCounter)
	if !commit(t, s, again) || marker(t, s) != "" {
		t.Errorf("a commit that cannot need a correction left the marker %q", marker(t, s))
	}
}

// TestAbandonedMarkerExpires: a pending commit that is never corrected (every event
// published, or its writer gone) holds the session for PendingTTL at most: a load waits
// until the marker expires and then reads the session as committed, and later loads
// do not wait for the expired marker. The reader's observer counts the one load that
// waited.
func TestAbandonedMarkerExpires(t *testing.T) {
	const ttl = 300 * time.Millisecond
	opt := Options{PendingTTL: ttl, Timeout: 10 * time.Second}
	writer := newStore(t, opt)
	seen := &roundTrips{ops: map[string]int{}}
	opt.Observer = seen
	reader := newStore(t, opt)
	// Taken before the commit: the script stamps the expiry before its reply travels
	// back, floored to whole milliseconds. The upper bound is generous for a loaded
	// machine.
	sent := time.Now()
	pendingCommit(t, writer)
	snap := <-loadAsync(reader)
	if waited := time.Since(sent); waited < ttl-time.Millisecond || waited > 10*ttl {
		t.Errorf("the load returned %v after the pending commit was sent; want about the marker's %v", waited, ttl)
	}
	if c, err := snap.Get(plain); err != nil || c.Fire != 1 {
		t.Errorf("after the marker expired, the load read %+v (%v); want the committed increment", c, err)
	}
	start := time.Now()
	load(t, reader, "s1")
	if took := time.Since(start); took > ttl/2 {
		t.Errorf("a load after the marker expired took %v", took)
	}
	if seen.waits != 1 {
		t.Errorf("the reader observed %d loads waiting for a marker; want 1", seen.waits)
	}
}

// TestCorrectionAfterTheMarkerExpiredIsRefused: once the marker expired, other
// replicas may have read the committed changes, so a correction coming later is
// refused (ErrCorrectionTooLate), its observer is told, and they stand.
func TestCorrectionAfterTheMarkerExpiredIsRefused(t *testing.T) {
	const ttl = 50 * time.Millisecond
	seen := &roundTrips{ops: map[string]int{}}
	s := newStore(t, Options{PendingTTL: ttl, Observer: seen})
	snap := pendingCommit(t, s)
	time.Sleep(2 * ttl)
	ok, err := s.Commit(context.Background(), snap.Correction())
	if ok || !errors.Is(err, ErrCorrectionTooLate) {
		t.Errorf("a correction after the marker expired: %v, %v; want refused as too late", ok, err)
	}
	if seen.late != 1 || seen.waits != 0 {
		t.Errorf("the store observed %d corrections too late and %d waits; want 1 and 0", seen.late, seen.waits)
	}
	if c, _ := load(t, s, "s1").Get(plain); c.Fire != 1 {
		t.Errorf("the session holds %+v; want the committed increment, which stands", c)
	}
}

// TestSessionKeptPendingIsContention: a session another replica's marker holds for
// longer than Timeout is an error matching ErrPending, returned once Timeout passed.
func TestSessionKeptPendingIsContention(t *testing.T) {
	const timeout = 300 * time.Millisecond
	writer := newStore(t, Options{PendingTTL: time.Minute, Timeout: 2 * time.Minute})
	reader := newStore(t, Options{Timeout: timeout})
	pendingCommit(t, writer)
	start := time.Now()
	_, err := reader.Load(context.Background(), "s1")
	if !errors.Is(err, ErrPending) {
		t.Errorf("the load of a session kept pending: %v; want ErrPending", err)
	}
	if took := time.Since(start); took < timeout {
		t.Errorf("the load gave up after %v; want Timeout, %v, at least", took, timeout)
	}
}

// TestTimeoutJustAboveAMarkerWaitsItOut: a Timeout barely longer than PendingTTL does
// not make a wait for one live marker contention: the load waits out the marker, and
// the reads after it, and reads the session as committed.
func TestTimeoutJustAboveAMarkerWaitsItOut(t *testing.T) {
	opt := Options{PendingTTL: 300 * time.Millisecond, Timeout: 301 * time.Millisecond}
	writer, reader := newStore(t, opt), newStore(t, opt)
	pendingCommit(t, writer)
	snap, err := reader.Load(context.Background(), "s1")
	if err != nil {
		t.Fatalf("the load of a session held by one marker: %v; want it read once the marker expired", err)
	}
	if c, err := snap.Get(plain); err != nil || c.Fire != 1 {
		t.Errorf("the load read %+v (%v); want the committed increment", c, err)
	}
}
