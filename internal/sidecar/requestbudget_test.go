package sidecar

import (
	"context"
	"errors"
	"math/rand/v2"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/oar-operator/oar-operator/internal/occurrence"
	"github.com/oar-operator/oar-operator/internal/testpoll"
)

// TestRequestsWaitForRoom: a request finds no room under --max-request-bytes, first
// for its body and then for what the body decodes to, waits for it (counted in
// oar_engine_requests_waited_total) and is answered once there is room; a request whose
// client goes away while it waits gives back whatever it took, and the gauge of the
// room taken returns to zero.
func TestRequestsWaitForRoom(t *testing.T) {
	ts := serve(t, sealed(t, testCapability, testRules), Options{MaxRequestBytes: 1 << 20})
	body := occ("tool.pre_invoke", "s1", `"tool_call": {"name": "shell", "arguments": {"cmd": "ls"}}`)
	b := ts.requests
	waited := func() float64 { return ts.metric(t, "oar_engine_requests_waited_total", nil) }
	post := func(ctx context.Context) (int, error) { return ts.post(ctx, body) }
	for _, phase := range []struct {
		name        string
		take, leave func()
	}{
		{"reading", func() { mustTake(t, b.read, b.readingMax) }, func() { b.doneReading(b.readingMax) }},
		{"evaluating", func() { mustTake(t, b.evaluate, b.evaluatingMax) }, func() { b.doneEvaluating(b.evaluatingMax) }},
	} {
		t.Run(phase.name, func(t *testing.T) {
			// All the room taken: a request waits until it is given back.
			phase.take()
			before := waited()
			answered := make(chan int, 1)
			go func() {
				code, err := post(context.Background())
				if err != nil {
					t.Error(err)
				}
				answered <- code
			}()
			testpoll.Until(t, 10*time.Second, time.Millisecond, "the request waiting", func() bool { return waited() == before+1 })
			select {
			case code := <-answered:
				t.Fatalf("answered %d while there was no room", code)
			case <-time.After(50 * time.Millisecond):
			}
			phase.leave()
			if code := <-answered; code != http.StatusOK {
				t.Fatalf("status %d once there was room", code)
			}

			// Its client gone while it waits, a request takes nothing.
			phase.take()
			ctx, cancel := context.WithCancel(context.Background())
			gone := make(chan error, 1)
			go func() {
				_, err := post(ctx)
				gone <- err
			}()
			testpoll.Until(t, 10*time.Second, time.Millisecond, "the request waiting", func() bool { return waited() == before+2 })
			cancel()
			if err := <-gone; !errors.Is(err, context.Canceled) {
				t.Fatalf("the client went away: %v", err)
			}
			phase.leave()
			testpoll.Until(t, 10*time.Second, time.Millisecond, "all the room given back", func() bool {
				if !b.reading.TryAcquire(b.readingMax) {
					return false
				}
				defer b.reading.Release(b.readingMax)
				if !b.evaluating.TryAcquire(b.evaluatingMax) {
					return false
				}
				b.evaluating.Release(b.evaluatingMax)
				return true
			})
			if got := ts.metric(t, "oar_engine_request_bytes", nil); got != 0 {
				t.Errorf("oar_engine_request_bytes %v with no request being evaluated", got)
			}
		})
	}
}

// post sends an occurrence from a goroutine other than the test's, and returns the
// answer's status.
func (ts *testSidecar) post(ctx context.Context, body string) (int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, ts.srv.URL+"/v1/evaluate", strings.NewReader(body))
	if err != nil {
		return 0, err
	}
	resp, err := ts.srv.Client().Do(req)
	if err != nil {
		return 0, err
	}
	resp.Body.Close()
	return resp.StatusCode, nil
}

// mustTake takes n bytes of room with take, failing t if it cannot.
func mustTake(t *testing.T, take func(context.Context, int64) (int64, error), n int64) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if got, err := take(ctx, n); err != nil || got != n {
		t.Fatalf("took %d of %d: %v", got, n, err)
	}
}

// TestRequestBudgetServesEveryone: requests of every size, some over either budget,
// taking room as evaluate does (for the body, then for what it becomes, then giving
// back the body's), are all served, and the room held never passes either budget.
func TestRequestBudgetServesEveryone(t *testing.T) {
	b := newRequestBudget(1000)
	var reading, evaluating atomic.Int64
	var wg sync.WaitGroup
	for i := range 64 {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(i), 1))
			for range 50 {
				body := rng.Int64N(400)
				r, err := b.read(context.Background(), body)
				if err != nil {
					t.Error(err)
					return
				}
				if n := reading.Add(r); n > b.readingMax {
					t.Errorf("%d bytes of bodies held, over %d", n, b.readingMax)
				}
				e, err := b.evaluate(context.Background(), body*rng.Int64N(8))
				if err != nil {
					t.Error(err)
					return
				}
				if n := evaluating.Add(e); n > b.evaluatingMax {
					t.Errorf("%d bytes of evaluations held, over %d", n, b.evaluatingMax)
				}
				reading.Add(-r)
				b.doneReading(r)
				evaluating.Add(-e)
				b.doneEvaluating(e)
			}
		})
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("requests still waiting after 30 s: the budgets deadlocked")
	}
	if b.held.Load() != 0 {
		t.Errorf("%d bytes held after every request", b.held.Load())
	}
}

// TestRequestsChargedWhatTheirBodiesBecome: the evaluating room a request takes is
// occurrence.HeapBytes of its body, while it is evaluated.
func TestRequestsChargedWhatTheirBodiesBecome(t *testing.T) {
	ts := serve(t, sealed(t, testCapability, testRules), Options{})
	body := occ("tool.pre_invoke", "s1", `"tool_call": {"name": "shell", "arguments": {"cmd": "ls", "more": [1, 2, {"a": "b"}]}}`)
	sl := ts.sessionLocks.lock("s1") // holds the request once it has taken its room
	answered := make(chan int, 1)
	go func() {
		code, err := ts.post(context.Background(), body)
		if err != nil {
			t.Error(err)
		}
		answered <- code
	}()
	want := occurrence.HeapBytes([]byte(body))
	testpoll.Until(t, 10*time.Second, time.Millisecond, "the request charged", func() bool { return ts.requests.held.Load() == want })
	if got := ts.metric(t, "oar_engine_request_bytes", nil); got != float64(want) {
		t.Errorf("oar_engine_request_bytes %v while the request is evaluated, want %d", got, want)
	}
	ts.sessionLocks.unlock(sl)
	if code := <-answered; code != http.StatusOK {
		t.Fatalf("status %d", code)
	}
	if got := ts.requests.held.Load(); got != 0 {
		t.Errorf("%d bytes held once the request was answered", got)
	}
}
