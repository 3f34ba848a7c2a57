package sidecar

import (
	"context"
	"sync/atomic"

	"golang.org/x/sync/semaphore"
)

// requestBudget bounds the heap the POST /v1/evaluate requests being served take
// together. A decoded occurrence can take 50 times its body (a tool call whose
// arguments are a list of tiny objects or numbers: occurrence.HeapBytes), so a few
// concurrent 1 MiB requests could otherwise take more than the sidecar's memory limit,
// and a sidecar killed for its memory forgets every session's counters at once. A
// request waits for room instead, in the order requests arrived.
//
// It is two budgets taken in order, so that no request holds room while it waits for
// room another waiting request holds: a request takes room for its body (reading, a
// quarter of the whole) before reading it, then room for what HeapBytes says the body
// becomes (evaluating, the whole) before decoding it, and only then gives back its
// reading room. A request holding evaluating room waits for no more room: at most for
// its session's lock, held by a request of the same session that holds room and is
// being evaluated, so every waiter is eventually served. A request whose share would
// pass a budget takes all of it, and is served alone.
type requestBudget struct {
	reading, evaluating       *semaphore.Weighted
	readingMax, evaluatingMax int64
	// held is the evaluating room taken, and waited counts the requests that found
	// no room for their body or their evaluation and waited for it.
	held   atomic.Int64
	waited atomic.Uint64
}

// newRequestBudget returns a budget of total bytes, a quarter of them for bodies.
func newRequestBudget(total int64) *requestBudget {
	readingMax := max(total/4, 1)
	return &requestBudget{
		reading: semaphore.NewWeighted(readingMax), evaluating: semaphore.NewWeighted(total),
		readingMax: readingMax, evaluatingMax: total,
	}
}

// acquire takes n of sem's room, at most limit, waiting while there is none, and
// returns what it took; it fails only when ctx ends first (the client went away).
func (b *requestBudget) acquire(ctx context.Context, sem *semaphore.Weighted, n, limit int64) (int64, error) {
	n = min(max(n, 1), limit)
	if sem.TryAcquire(n) {
		return n, nil
	}
	b.waited.Add(1)
	if err := sem.Acquire(ctx, n); err != nil {
		return 0, err
	}
	return n, nil
}

// read takes room for a body of n bytes.
func (b *requestBudget) read(ctx context.Context, n int64) (int64, error) {
	return b.acquire(ctx, b.reading, n, b.readingMax)
}

// doneReading gives back room read took.
func (b *requestBudget) doneReading(n int64) {
	b.reading.Release(n)
}

// evaluate takes room for n bytes of decoding and evaluation.
func (b *requestBudget) evaluate(ctx context.Context, n int64) (int64, error) {
	n, err := b.acquire(ctx, b.evaluating, n, b.evaluatingMax)
	if err == nil {
		b.held.Add(n)
	}
	return n, err
}

// doneEvaluating gives back room evaluate took.
func (b *requestBudget) doneEvaluating(n int64) {
	b.held.Add(-n)
	b.evaluating.Release(n)
}
