package sidecar

import (
	"context"
	"errors"
	"math/rand/v2"
	"net/http"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/oar-operator/oar-operator/internal/heapuse"
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

// TestAFloodOfLargeRequestsStaysWithinTheBudget: 16 clients sending 512 KiB tool calls
// whose arguments are a list of one-member objects, which decode to about 50 times
// their body, keep the heap within what the budget lets them take (each is charged more
// than the 16 MiB default, so they are evaluated one at a time) where, evaluated all at
// once, they took several hundred MB. The collector runs at 10% growth meanwhile, so the
// heap's peak is about what is live.
func TestAFloodOfLargeRequestsStaysWithinTheBudget(t *testing.T) {
	if testing.Short() {
		t.Skip("decodes 48 requests of 512 KiB")
	}
	heapuse.SkipUnderRace(t)
	ts := serve(t, sealed(t, testCapability, testRules), Options{})
	var b strings.Builder
	b.WriteString(`{"anchor": "tool.pre_invoke", "session_id": "s1", "tool_call": {"name": "shell", "arguments": {"cmd": "ls", "x": [`)
	for i := 0; b.Len() < 512<<10; i++ {
		if i > 0 {
			b.WriteString(",")
		}
		b.WriteString(`{"a":1}`)
	}
	b.WriteString(`]}}}`)
	body := b.String()
	if charged := occurrence.HeapBytes([]byte(body)); charged <= DefaultMaxRequestBytes {
		t.Fatalf("a body charged %d, within the budget: it would not be evaluated alone", charged)
	}

	defer debug.SetGCPercent(debug.SetGCPercent(10))
	runtime.GC()
	sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	heap := func() uint64 { metrics.Read(sample); return sample[0].Value.Uint64() }
	before := heap()
	var peak atomic.Uint64
	stop, sampled := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(sampled)
		for {
			select {
			case <-stop:
				return
			case <-time.After(time.Millisecond):
				if h := heap(); h > peak.Load() {
					peak.Store(h)
				}
			}
		}
	}()
	var wg sync.WaitGroup
	requests := make(chan struct{})
	for range 16 {
		wg.Go(func() {
			for range requests {
				if code, err := ts.post(context.Background(), body); err != nil || code != http.StatusOK {
					t.Errorf("status %d: %v", code, err)
				}
			}
		})
	}
	for range 48 {
		requests <- struct{}{}
	}
	close(requests)
	wg.Wait()
	close(stop)
	<-sampled
	grew := int64(peak.Load()) - int64(before)
	t.Logf("the heap's peak grew %.1f MB", float64(grew)/1e6)
	if grew > 100e6 {
		t.Errorf("the heap grew %d bytes while 16 clients sent 512 KiB tool calls: the requests were not evaluated one at a time", grew)
	}
}
