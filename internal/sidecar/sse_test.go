package sidecar

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/oar-operator/oar-operator/internal/sidecar/events"
)

// TestEventStream: a publish_event record reaches a /v1/events subscriber as a
// server-sent event carrying the record's JSON, and the event writer as a JSON line.
func TestEventStream(t *testing.T) {
	b := sealed(t, testCapability, testRules)
	ts := serve(t, b, Options{})
	resp, err := ts.srv.Client().Get(ts.srv.URL + "/v1/events")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); resp.StatusCode != http.StatusOK || ct != "text/event-stream" {
		t.Fatalf("status %d, Content-Type %q", resp.StatusCode, ct)
	}
	lines := bufio.NewReader(resp.Body)
	if l, _ := lines.ReadString('\n'); !strings.HasPrefix(l, ": subscribed") {
		t.Fatalf("first line %q", l)
	}
	ts.evaluate(t, occ("tool.pre_invoke", "sse", `"tool_call": {"name": "shell"}`))
	var line string
	for !strings.HasPrefix(line, "data: ") {
		if line, err = lines.ReadString('\n'); err != nil {
			t.Fatal(err)
		}
	}
	var rec events.Record
	if err := json.Unmarshal([]byte(strings.TrimPrefix(line, "data: ")), &rec); err != nil {
		t.Fatal(err)
	}
	if rec.Rule != "acme.ops/COUNT_SHELL" || rec.Bundle != b.Digest || rec.Session != "sse" || rec.Anchor != "tool.pre_invoke" ||
		rec.Effect != "warn" || time.Since(rec.Time) > time.Minute {
		t.Errorf("record %+v", rec)
	}
	if got := strings.TrimSpace(ts.events.String()); got != strings.TrimSpace(strings.TrimPrefix(line, "data: ")) {
		t.Errorf("the JSON line on the event writer %q differs from the streamed record %q", got, line)
	}
}

// TestSlowSubscriberIsDropped: a subscriber that stops reading is dropped once its
// buffer is full; evaluations never wait for it, and it is told before it is closed.
func TestSlowSubscriberIsDropped(t *testing.T) {
	ts := serve(t, sealed(t, testCapability, testRules), Options{EventBuffer: 1})
	w := &gatedWriter{header: http.Header{}, entered: make(chan int, 16), release: make(chan struct{})}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan struct{})
	go func() {
		defer close(done)
		ts.Handler().ServeHTTP(w, httptest.NewRequestWithContext(ctx, http.MethodGet, "/v1/events", nil))
	}()
	<-w.entered // the "subscribed" comment: the subscription exists
	shell := occ("tool.pre_invoke", "slow", `"tool_call": {"name": "shell"}`)
	ts.evaluate(t, shell)
	<-w.entered // the stream is stuck writing the first record
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		ts.evaluate(t, shell) // fills the buffer
		ts.evaluate(t, shell) // overflows it: the subscriber is dropped
	}()
	select {
	case <-finished:
	case <-time.After(10 * time.Second):
		t.Fatal("evaluation waited for a slow subscriber")
	}
	close(w.release)
	<-done
	out := w.String()
	if n := strings.Count(out, "data: {\"time\""); n != 2 || !strings.HasSuffix(out, "event: dropped\ndata: {\"error\":\"this subscriber fell behind and was dropped; reconnect\"}\n\n") {
		t.Errorf("stream (%d records):\n%s", n, out)
	}
	if got := ts.metric(t, "oar_engine_event_subscribers_dropped_total", nil); got != 1 {
		t.Errorf("dropped subscribers %v, want 1", got)
	}
	if got := ts.metric(t, "oar_engine_event_subscribers", nil); got != 0 {
		t.Errorf("subscribers %v after the drop, want 0", got)
	}
}

// gatedWriter is a ResponseWriter whose writes after the first wait for release,
// announcing each write on entered.
type gatedWriter struct {
	header  http.Header
	entered chan int
	release chan struct{}
	mu      sync.Mutex
	writes  int
	buf     bytes.Buffer
}

func (g *gatedWriter) Header() http.Header { return g.header }
func (g *gatedWriter) WriteHeader(int)     {}
func (g *gatedWriter) Flush()              {}

func (g *gatedWriter) Write(p []byte) (int, error) {
	g.mu.Lock()
	g.writes++
	n := g.writes
	g.mu.Unlock()
	g.entered <- n
	if n > 1 {
		<-g.release
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.buf.Write(p)
}

func (g *gatedWriter) String() string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.buf.String()
}
