package sidecar

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
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
	writer := sharedStore(t, url, redisstore.Options{Prefix: prefix, PendingTTL: 10 * time.Second})
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
