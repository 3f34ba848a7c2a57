package sidecar

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/oar-operator/oar-operator/internal/engine"
	"github.com/oar-operator/oar-operator/internal/sidecar/redisstore"
	"github.com/oar-operator/oar-operator/internal/sidecar/redistest"
)

// onPendingWait records a store's metrics and closes waiting at its first load that
// waits for a pending marker.
type onPendingWait struct {
	redisstore.Observer
	waiting chan struct{}
	once    sync.Once
}

func (o *onPendingWait) PendingWait() {
	o.Observer.PendingWait()
	o.once.Do(func() { close(o.waiting) })
}

// TestMarkerWaitHoldsNoOtherSession: a call whose session another replica holds pending
// waits for the marker, and a call of another session whose lock would share its stripe
// is answered meanwhile: the wait holds back its own session only.
func TestMarkerWaitHoldsNoOtherSession(t *testing.T) {
	url, prefix := redistest.Shared(t).URL, redistest.Prefix(t)
	other := "c0"
	for i := 1; stripeOf(other) != stripeOf("a"); i++ {
		other = fmt.Sprint("c", i)
	}
	// Another replica's commit that may need a correction holds session a, long enough
	// for the other call on a busy machine; a call waiting behind the marker would be
	// answered once it expired, after session a's.
	writer := sharedStore(t, url, redisstore.Options{Prefix: prefix, PendingTTL: 10 * time.Second, Timeout: 20 * time.Second})
	snap, err := writer.Load(context.Background(), "a")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := snap.Apply(engine.CounterKey{Rule: "acme.ops/COUNT_SHELL", Session: "a"}, engine.ActionIncrementCounter); err != nil {
		t.Fatal(err)
	}
	snap.MayNeedCorrection()
	if ok, err := writer.Commit(context.Background(), snap); !ok || err != nil {
		t.Fatalf("the pending commit: %v %v", ok, err)
	}
	store := sharedStore(t, url, redisstore.Options{Prefix: prefix, Timeout: time.Minute})
	r := serve(t, sealed(t, testCapability, testRules+sawShell), Options{SharedSessions: store})
	hook := &onPendingWait{Observer: r.Metrics(), waiting: make(chan struct{})}
	store.SetObserver(hook)
	call := func(session string) <-chan *httptest.ResponseRecorder {
		done := make(chan *httptest.ResponseRecorder, 1)
		go func() {
			w := httptest.NewRecorder()
			r.Handler().ServeHTTP(w, httptest.NewRequest(http.MethodPost, "/v1/evaluate", strings.NewReader(occ("content.output", session, ""))))
			done <- w
		}()
		return done
	}
	held := call("a")
	<-hook.waiting
	answered := <-call(other)
	select {
	case <-held:
		t.Fatal("the call of session a was answered while its session was held pending")
	default:
	}
	if answered.Code != http.StatusOK {
		t.Errorf("the call of session %s: %d %s", other, answered.Code, answered.Body)
	}
	// The correction releases session a, whose call then reads the corrected session.
	if ok, err := writer.Commit(context.Background(), snap.Correction()); !ok || err != nil {
		t.Fatalf("the correction: %v %v", ok, err)
	}
	if w := <-held; w.Code != http.StatusOK || !strings.Contains(w.Body.String(), `"decision":"none"`) {
		t.Errorf("the call of session a after the correction: %d %s", w.Code, w.Body)
	}
}

// heldLocks counts the sessions the table holds a lock for.
func heldLocks(l *sessionLocks) int {
	n := 0
	for i := range l {
		l[i].mu.Lock()
		n += len(l[i].held)
		l[i].mu.Unlock()
	}
	return n
}

// TestSessionLockExcludes: many goroutines taking the locks of few sessions never hold
// one session's twice at once, and the table holds no lock once they are done.
func TestSessionLockExcludes(t *testing.T) {
	var (
		l      sessionLocks
		inside [4]atomic.Int32
		over   atomic.Bool
		wg     sync.WaitGroup
	)
	for g := range 16 {
		wg.Go(func() {
			for i := range 2000 {
				n := (g + i) % len(inside)
				sl := l.lock(fmt.Sprint("s", n))
				if inside[n].Add(1) > 1 {
					over.Store(true)
				}
				runtime.Gosched()
				inside[n].Add(-1)
				l.unlock(sl)
			}
		})
	}
	wg.Wait()
	if over.Load() {
		t.Error("two goroutines held one session's lock at once")
	}
	if n := heldLocks(&l); n != 0 {
		t.Errorf("%d session locks are held after every goroutine released its own", n)
	}
}

// TestSessionLockAllocatesNothing: once a stripe has a lock to reuse, taking and
// releasing a session's lock allocates nothing.
func TestSessionLockAllocatesNothing(t *testing.T) {
	var l sessionLocks
	sessions := []string{"a", "b", "c"}
	for _, s := range sessions {
		l.unlock(l.lock(s))
	}
	if n := testing.AllocsPerRun(1000, func() {
		for _, s := range sessions {
			l.unlock(l.lock(s))
		}
	}); n != 0 {
		t.Errorf("taking and releasing a session's lock allocates %v times", n)
	}
}

// TestSessionLockBurstIsReleased: a burst of sessions evaluated at once in one stripe
// leaves it no more than maxFreeLocks unused locks, nor a table sized for the burst,
// once they are released; taking and releasing locks then allocates nothing again.
func TestSessionLockBurstIsReleased(t *testing.T) {
	var l sessionLocks
	const burst = 20 * maxFreeLocks
	var sessions []string
	for i := 0; len(sessions) < burst; i++ {
		if s := fmt.Sprint("s", i); stripeOf(s) == stripeOf("s0") {
			sessions = append(sessions, s)
		}
	}
	held := make([]*sessionLock, len(sessions))
	for i, s := range sessions {
		held[i] = l.lock(s)
	}
	for _, sl := range held {
		l.unlock(sl)
	}
	st := &l[stripeOf("s0")]
	if len(st.free) > maxFreeLocks || cap(st.free) > maxFreeLocks || st.held != nil {
		t.Errorf("after a burst of %d sessions the stripe keeps %d unused locks (room for %d), and its table: %v; want at most %d, and not",
			burst, len(st.free), cap(st.free), st.held != nil, maxFreeLocks)
	}
	if n := testing.AllocsPerRun(1000, func() {
		for _, s := range sessions[:3] {
			l.unlock(l.lock(s))
		}
	}); n != 0 {
		t.Errorf("after the burst, taking and releasing a session's lock allocates %v times", n)
	}
}

func BenchmarkSessionLock(b *testing.B) {
	var l sessionLocks
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			l.unlock(l.lock("s"))
		}
	})
}

// TestSessionLockReleasedOnPanic: an evaluation that panics inside its session's lock
// is answered with a 500 and leaves the lock released: the table holds no lock after
// it, and the next call of the session is answered likewise.
func TestSessionLockReleasedOnPanic(t *testing.T) {
	r := serve(t, sealed(t, testCapability, testRules), Options{Events: panickingWriter{}})
	body := occ("tool.pre_invoke", "s", `"tool_call": {"name": "shell"}`)
	for i := range 2 {
		w := httptest.NewRecorder()
		r.Handler().ServeHTTP(w, httptest.NewRequest(http.MethodPost, "/v1/evaluate", strings.NewReader(body)))
		if w.Code != http.StatusInternalServerError {
			t.Fatalf("call %d, whose evaluation panics: %d %s", i, w.Code, w.Body)
		}
		if n := heldLocks(&r.sessionLocks); n != 0 {
			t.Fatalf("%d session locks are held after call %d", n, i)
		}
	}
}
