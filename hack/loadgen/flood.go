package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/oar-operator/oar-operator/internal/bundle"
)

// injectedMemLimit is the GOMEMLIMIT the injector gives a sidecar at its default
// memory limit of 128 MiB (80% of it), and injectedMaxProcs its GOMAXPROCS at its
// default CPU request of 50m (at least two).
const (
	injectedMemLimit = "102MiB"
	injectedMaxProcs = "2"
)

// measureFlood starts a fresh engine on b with the injected sidecar's GOMEMLIMIT and
// GOMAXPROCS, and sends it o.floodCalls tool calls of o.floodBytes bytes each, o.conns
// at a time, whose arguments are a list of one-member objects: about 50 times their
// size once decoded. It reports the engine's peak resident memory, which
// --max-request-bytes bounds by having the calls wait their turn, and how many waited.
func measureFlood(ctx context.Context, o options, b *bundle.Bundle, work string, out io.Writer) error {
	eng, err := startEngine(ctx, o.engine, work, b, "GOMEMLIMIT="+injectedMemLimit, "GOMAXPROCS="+injectedMaxProcs)
	if err != nil {
		return err
	}
	defer eng.stop()
	body := floodCall(o.floodBytes)
	began := time.Now()
	if err := fanOut(ctx, eng.addr, o.floodCalls, o.conns, func(k *conn, _ int) error {
		_, err := evaluate(k, body)
		return err
	}); err != nil {
		return fmt.Errorf("flood: %w", err)
	}
	took := time.Since(began)
	mem, err := eng.rss()
	if err != nil {
		return err
	}
	// An engine from before --max-request-bytes exports no count of waits.
	waited := "no count of requests waiting (an engine without --max-request-bytes)"
	if n, err := eng.metric("oar_engine_requests_waited_total"); err == nil {
		waited = fmt.Sprintf("%.0f waits for room under --max-request-bytes", n)
	}
	fmt.Fprintf(out, "flood: %d tool calls of %d bytes (arguments a list of one-member objects), %d at a time, GOMEMLIMIT=%s GOMAXPROCS=%s: peak VmHWM %s, %.1f s, %s\n",
		o.floodCalls, len(body), o.conns, injectedMemLimit, injectedMaxProcs, mib(mem.hwm), took.Seconds(), waited)
	return nil
}

// floodCall is a tool call of at most n bytes, and at least n less one item, whose
// arguments hold a list of one-member objects.
func floodCall(n int) []byte {
	const item, end = `,{"a":1}`, `]}}}`
	var b strings.Builder
	b.WriteString(`{"anchor": "tool.pre_invoke", "session_id": "flood", "tool_call": {"name": "read", "arguments": {"path": "/workspace/x", "items": [{"a":1}`)
	for b.Len()+len(item)+len(end) <= n {
		b.WriteString(item)
	}
	b.WriteString(end)
	return []byte(b.String())
}
