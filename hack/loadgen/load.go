package main

import (
	"context"
	"fmt"
	"net/http"
	"runtime/debug"
	"slices"
	"sync"
	"time"
)

// stats summarize one rate.
type stats struct {
	requests, errors    int
	achieved            float64
	p50, p99, p999, max time.Duration
	firstError          string
}

// job is one request and when it was due to leave.
type job struct {
	due time.Time
	req []byte
}

// load sends rate requests a second for d, open loop: request i is due at start +
// i/rate whatever happened to the others. conns workers take the requests in order and
// each waits for its request's due time; a worker still busy past a due time sends
// late, and that request's latency counts from its due time, so time spent waiting for
// a free connection is charged to the engine, not hidden ("coordinated omission"). A
// worker woken late by its own timer counts from when it woke: the generator's timer
// slack (about a millisecond when the process is idle, Go's netpoller sleeps in whole
// milliseconds) is not the engine's. The clock is the monotonic one, read right before
// the request is written and right after the last byte of the answer is read. reqs
// are rendered requests (render); the collector is off while the rate runs, since a
// round trip allocates nothing and a collection would only add the generator's pauses.
func load(ctx context.Context, addr string, reqs [][]byte, rate int, d time.Duration, conns int) (stats, error) {
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	n := int(float64(rate) * d.Seconds())
	interval := time.Second / time.Duration(rate)
	start := time.Now().Add(10 * time.Millisecond)
	jobs := make(chan job, n)
	for i := range n {
		jobs <- job{due: start.Add(time.Duration(i) * interval), req: reqs[i%len(reqs)]}
	}
	close(jobs)
	latencies := make([][]time.Duration, conns)
	var mu sync.Mutex
	st := stats{requests: n}
	var wg sync.WaitGroup
	for w := range conns {
		latencies[w] = make([]time.Duration, 0, n/conns+1)
		wg.Go(func() {
			k := newConn(addr)
			defer k.close()
			for j := range jobs {
				if ctx.Err() != nil {
					return
				}
				from := j.due
				if wait := time.Until(j.due); wait > 0 {
					time.Sleep(wait)
					from = time.Now()
				}
				status, data, err := k.do(j.req)
				latencies[w] = append(latencies[w], time.Since(from))
				if err == nil && status != http.StatusOK {
					err = fmt.Errorf("status %d: %s", status, data)
				}
				if err != nil {
					mu.Lock()
					if st.errors++; st.firstError == "" {
						st.firstError = err.Error()
					}
					mu.Unlock()
				}
			}
		})
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return st, err
	}
	all := slices.Concat(latencies...)
	slices.Sort(all)
	st.achieved = float64(len(all)) / time.Since(start).Seconds()
	st.p50, st.p99, st.p999 = percentile(all, 0.50), percentile(all, 0.99), percentile(all, 0.999)
	st.max = all[len(all)-1]
	return st, nil
}

func percentile(sorted []time.Duration, q float64) time.Duration {
	return sorted[min(len(sorted)-1, int(q*float64(len(sorted))))]
}
