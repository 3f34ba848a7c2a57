package sidecar

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/go-logr/logr"

	"github.com/oar-operator/oar-operator/internal/sidecar/events"
	"github.com/oar-operator/oar-operator/internal/sidecar/sidecartest"
	"github.com/oar-operator/oar-operator/internal/testpoll"
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
	if n, err := spec(t).checkEventStream(out); err != nil || n != 3 {
		t.Errorf("%d events of the stream conform to the OpenAPI document: %v", n, err)
	}
	if got := ts.metric(t, "oar_engine_event_subscribers_dropped_total", nil); got != 1 {
		t.Errorf("dropped subscribers %v, want 1", got)
	}
	if got := ts.metric(t, "oar_engine_event_subscribers", nil); got != 0 {
		t.Errorf("subscribers %v after the drop, want 0", got)
	}
}

// TestStalledSubscriberIsDisconnected: a /v1/events client that connects and never
// reads (its socket buffers full) is disconnected once a write has waited
// StreamWriteTimeout, so it holds no goroutine or connection and cannot hold up a
// graceful shutdown; before the write deadline, shutdown ran into its timeout.
func TestStalledSubscriberIsDisconnected(t *testing.T) {
	// A buffer larger than the records sent: the subscriber is never dropped for falling
	// behind, so only its stalled socket can end its stream.
	sc := New(Options{Log: logr.Discard(), Events: io.Discard, EventBuffer: 1 << 14, ShutdownTimeout: 5 * time.Second, StreamWriteTimeout: 200 * time.Millisecond})
	if _, err := sc.Source().Install(sealed(t, testCapability, testRules)); err != nil {
		t.Fatal(err)
	}
	base, stop := sidecartest.Serve(t, sc)
	addr := strings.TrimPrefix(base, "http://")

	// A client with a small receive buffer that asks for the stream and never reads.
	d := net.Dialer{Control: func(_, _ string, c syscall.RawConn) error {
		return c.Control(func(fd uintptr) { _ = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 1024) })
	}}
	conn, err := d.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := io.WriteString(conn, "GET /v1/events HTTP/1.1\r\nHost: sidecar\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	testpoll.Eventually(t, 10*time.Second, time.Millisecond, "the subscription", func() (bool, string) { return sc.events.Subscribers() == 1, "none yet" })
	// Records carry the session id: long ones (the most MaxSessionIDBytes allows) fill
	// the socket buffers (4 MiB of send buffer here) in a few thousand records.
	long := strings.Repeat("s", MaxSessionIDBytes-8)
	for i := range 8000 {
		resp, err := http.Post("http://"+addr+"/v1/evaluate", "application/json",
			strings.NewReader(occ("tool.pre_invoke", fmt.Sprintf("%s%08d", long, i), `"tool_call": {"name": "shell"}`)))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("evaluation %d: status %d", i, resp.StatusCode)
		}
	}
	// Its stream handler ends once a write has waited StreamWriteTimeout; then shutdown
	// has nothing to wait for.
	testpoll.Eventually(t, 10*time.Second, 10*time.Millisecond, "the stalled stream to end", func() (bool, string) {
		return sc.events.Subscribers() == 0, fmt.Sprintf("%d subscribers, %d dropped", sc.events.Subscribers(), sc.events.Dropped())
	})
	ran := make(chan error, 1)
	go func() { ran <- stop() }()
	select {
	case err := <-ran:
		if err != nil {
			t.Fatalf("shutdown with a stalled subscriber: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return")
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
