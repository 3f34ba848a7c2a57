package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
)

// evaluate posts one occurrence and returns its decision.
func evaluate(k *conn, body []byte) (string, error) {
	status, data, err := k.do(render(k.addr, "/v1/evaluate", body))
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
		body, err := d.request(o, sessionName(0, 0))
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

// driveSessions sends every admitted occurrence in each of n distinct sessions, named
// with idBytes bytes at least, so the engine holds n sessions (as its bounds allow),
// each with a full activity window and its counters.
func driveSessions(ctx context.Context, addr string, d *benchDocs, n, idBytes, conns int) error {
	occs, err := admitted(addr, d)
	if err != nil {
		return err
	}
	return fanOut(ctx, addr, n, conns, func(k *conn, i int) error {
		for _, o := range occs {
			body, err := d.request(o, sessionName(i, idBytes))
			if err == nil {
				_, err = evaluate(k, body)
			}
			if err != nil {
				return err
			}
		}
		return nil
	})
}

// fanOut runs work for i from 0 to n over conns connections to addr at once, and
// returns the first error, or ctx's when it ends first.
func fanOut(ctx context.Context, addr string, n, conns int, work func(k *conn, i int) error) error {
	items := make(chan int)
	errs := make(chan error, conns)
	var wg sync.WaitGroup
	for range conns {
		wg.Go(func() {
			k := newConn(addr)
			defer k.close()
			for i := range items {
				if err := work(k, i); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	var err error
feed:
	for i := range n {
		select {
		case items <- i:
		case err = <-errs:
			break feed
		case <-ctx.Done():
			err = ctx.Err()
			break feed
		}
	}
	close(items)
	wg.Wait()
	if err == nil && len(errs) > 0 {
		err = <-errs
	}
	return err
}

// sessionName is the i-th session of the memory measurement, its number padded with
// zeros to make the name idBytes long when that is longer.
func sessionName(i, idBytes int) string {
	return fmt.Sprintf("memory-%0*d", max(idBytes-len("memory-"), 1), i)
}
