package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"sync"
	"time"
)

// conn is one keep-alive HTTP/1.1 connection to the engine, used by one goroutine at a
// time: the request is written and the response read on that goroutine, so the
// generator adds no goroutine hand-offs of its own (as net/http's client does) to the
// latency it measures.
type conn struct {
	addr string
	c    net.Conn
	br   *bufio.Reader
	req  []byte
}

func newConn(addr string) *conn { return &conn{addr: addr} }

// post sends one POST and returns the status and body; a broken connection is redialed
// on the next call.
func (k *conn) post(path string, body []byte) (int, []byte, error) {
	if k.c == nil {
		c, err := net.Dial("tcp", k.addr)
		if err != nil {
			return 0, nil, err
		}
		k.c, k.br = c, bufio.NewReader(c)
	}
	k.req = fmt.Appendf(k.req[:0], "POST %s HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n", path, k.addr, len(body))
	k.req = append(k.req, body...)
	status, data, err := k.roundTrip()
	if err != nil {
		k.c.Close()
		k.c = nil
	}
	return status, data, err
}

func (k *conn) roundTrip() (int, []byte, error) {
	if _, err := k.c.Write(k.req); err != nil {
		return 0, nil, err
	}
	resp, err := http.ReadResponse(k.br, nil)
	if err != nil {
		return 0, nil, err
	}
	data, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err == nil && resp.Close {
		err = errors.New("the engine closed the connection")
	}
	return resp.StatusCode, data, err
}

func (k *conn) close() {
	if k.c != nil {
		k.c.Close()
	}
}

// stats summarize one rate.
type stats struct {
	requests, errors    int
	achieved            float64
	p50, p99, p999, max time.Duration
	firstError          string
}

// job is one request and when it was due to leave.
type job struct {
	due  time.Time
	body []byte
}

// load sends rate requests a second for d, open loop: request i is due at start +
// i/rate whatever happened to the others. conns workers take the requests in order and
// each waits for its request's due time; a worker still busy past a due time sends
// late, and that request's latency counts from its due time, so time spent waiting for
// a free connection is charged to the engine, not hidden ("coordinated omission").
func load(ctx context.Context, addr string, bodies [][]byte, rate int, d time.Duration, conns int) (stats, error) {
	n := int(float64(rate) * d.Seconds())
	interval := time.Second / time.Duration(rate)
	start := time.Now().Add(10 * time.Millisecond)
	jobs := make(chan job, n)
	for i := range n {
		jobs <- job{due: start.Add(time.Duration(i) * interval), body: bodies[i%len(bodies)]}
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
					from = time.Now() // on time: timer slack is the generator's, not the engine's
				}
				status, data, err := k.post("/v1/evaluate", j.body)
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

// evaluate posts one occurrence and returns its decision.
func evaluate(k *conn, body []byte) (string, error) {
	status, data, err := k.post("/v1/evaluate", body)
	if err != nil {
		return "", err
	}
	if status != http.StatusOK {
		return "", fmt.Errorf("status %d: %s", status, data)
	}
	var a struct{ Decision string }
	if err := json.Unmarshal(data, &a); err != nil || a.Decision == "" {
		return "", fmt.Errorf("not a decision: %s", data)
	}
	return a.Decision, nil
}

// admitted returns the recorded occurrences the bundle does not block. An admitted
// tool call appends a step to its session's activity window ([OAR-PROF-9]), so each
// one keeps its session in the engine's table.
func admitted(addr string, d *benchDocs) ([]map[string]any, error) {
	k := newConn(addr)
	defer k.close()
	var out []map[string]any
	for _, o := range d.occurrences {
		body, err := d.request(o, sessionName(0))
		if err != nil {
			return nil, err
		}
		decision, err := evaluate(k, body)
		if err != nil {
			return nil, err
		}
		if decision != "block" {
			out = append(out, o)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("the bundle blocks every recorded occurrence; no session would be kept")
	}
	return out, nil
}

// driveSessions sends every admitted occurrence in each of n distinct sessions, so the
// engine holds n sessions, each with a full activity window and its counters.
func driveSessions(ctx context.Context, addr string, d *benchDocs, n, conns int) error {
	occs, err := admitted(addr, d)
	if err != nil {
		return err
	}
	ids := make(chan int)
	errs := make(chan error, conns)
	var wg sync.WaitGroup
	for range conns {
		wg.Go(func() {
			k := newConn(addr)
			defer k.close()
			for i := range ids {
				for _, o := range occs {
					body, err := d.request(o, sessionName(i))
					if err == nil {
						_, err = evaluate(k, body)
					}
					if err != nil {
						errs <- err
						return
					}
				}
			}
		})
	}
feed:
	for i := range n {
		select {
		case ids <- i:
		case err = <-errs:
			break feed
		case <-ctx.Done():
			err = ctx.Err()
			break feed
		}
	}
	close(ids)
	wg.Wait()
	if err == nil && len(errs) > 0 {
		err = <-errs
	}
	return err
}

// sessionName is the i-th session of the memory measurement.
func sessionName(i int) string { return fmt.Sprintf("memory-%d", i) }
