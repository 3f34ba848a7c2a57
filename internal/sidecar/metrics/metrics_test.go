package metrics

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/oar-operator/oar-operator/internal/bundle"
	"github.com/oar-operator/oar-operator/internal/engine"
	"github.com/oar-operator/oar-operator/internal/sidecar/reload"
)

func served(t *testing.T, host string) *reload.Served {
	t.Helper()
	b := &bundle.Bundle{
		Capability: map[string]any{"oar_capability_version": "1.0", "host": host, "anchors": map[string]any{"core": map[string]any{},
			"unsupported": []any{"tool.pre_invoke", "tool.handler", "tool.post_invoke", "agent.post_turn", "agent.finalize", "model.input", "model.output", "model.tool_result"}}},
		Packs: []bundle.Pack{}, Configs: []bundle.Config{},
	}
	if err := b.Seal(); err != nil {
		t.Fatal(err)
	}
	l, err := bundle.Load(b)
	if err != nil {
		t.Fatal(err)
	}
	return &reload.Served{Bundle: b, Loaded: l, Runtime: engine.NewMemoryRuntime(), LoadedAt: time.Unix(1_700_000_000, 0)}
}

// TestBundleSeries: the info metric names only the served digest, and every reload
// and refusal is counted.
func TestBundleSeries(t *testing.T) {
	m := New(Sources{})
	first, second := served(t, "a.host"), served(t, "b.host")
	m.Reloaded(first)
	m.ReloadFailed(errors.New("bad"))
	m.Reloaded(second)
	want := `
# HELP oar_engine_bundle_info The served bundle: 1 for its digest and capability host.
# TYPE oar_engine_bundle_info gauge
oar_engine_bundle_info{digest="` + second.Digest() + `",host="b.host"} 1
# HELP oar_engine_bundle_last_reload_timestamp_seconds When the served bundle was swapped in, in seconds since the epoch.
# TYPE oar_engine_bundle_last_reload_timestamp_seconds gauge
oar_engine_bundle_last_reload_timestamp_seconds 1.7e+09
# HELP oar_engine_bundle_reload_failures_total Bundles refused because they could not be read or loaded; the previous bundle kept serving.
# TYPE oar_engine_bundle_reload_failures_total counter
oar_engine_bundle_reload_failures_total 1
# HELP oar_engine_bundle_reloads_total Bundles loaded and swapped in, the first included.
# TYPE oar_engine_bundle_reloads_total counter
oar_engine_bundle_reloads_total 2
`
	expose(t, m, want)
}

// TestSources: gauges and counters owned elsewhere are read at scrape time.
func TestSources(t *testing.T) {
	sessions, refused := 3, false
	m := New(Sources{
		Sessions:       func() int { return sessions },
		SessionBytes:   func() int { return 512 * sessions },
		RequestBytes:   func() int64 { return 4096 },
		RequestsWaited: func() uint64 { return 9 },
		Evictions:      func() (uint64, uint64) { return 5, 7 },
		Subscribers:    func() int { return 1 },
		Dropped:        func() uint64 { return 2 },
		BundleRefused:  func() bool { return refused },
	})
	sessions, refused = 4, true
	m.Rejected(RejectMalformed)
	want := `
# TYPE oar_engine_bundle_refused gauge
oar_engine_bundle_refused 1
# HELP oar_engine_event_subscribers Current GET /v1/events subscribers.
# TYPE oar_engine_event_subscribers gauge
oar_engine_event_subscribers 1
# HELP oar_engine_event_subscribers_dropped_total GET /v1/events subscribers dropped for falling behind.
# TYPE oar_engine_event_subscribers_dropped_total counter
oar_engine_event_subscribers_dropped_total 2
# HELP oar_engine_request_bytes Bytes of heap the POST /v1/evaluate requests being evaluated are charged against --max-request-bytes (what their bodies decode to, at most about 50 times their length).
# TYPE oar_engine_request_bytes gauge
oar_engine_request_bytes 4096
# HELP oar_engine_requests_rejected_total POST /v1/evaluate requests refused before evaluation, by reason.
# TYPE oar_engine_requests_rejected_total counter
oar_engine_requests_rejected_total{reason="malformed"} 1
# HELP oar_engine_requests_waited_total POST /v1/evaluate requests that waited for room under --max-request-bytes before being read or evaluated; steadily rising, raise it with the memory limit.
# TYPE oar_engine_requests_waited_total counter
oar_engine_requests_waited_total 9
# HELP oar_engine_session_bytes Bytes of heap the sessions held in memory, or this replica's cache of sessions shared in Redis, are charged against --max-session-bytes, their ids, counter scope values and activity steps included; the heap they take stays within twice it.
# TYPE oar_engine_session_bytes gauge
oar_engine_session_bytes 2048
# HELP oar_engine_session_evictions_total Sessions forgotten, by reason: lru (a bound needed room: --max-sessions, --max-counters or --max-session-bytes) or ttl (idle too long).
# TYPE oar_engine_session_evictions_total counter
oar_engine_session_evictions_total{reason="lru"} 5
oar_engine_session_evictions_total{reason="ttl"} 7
# HELP oar_engine_sessions Sessions whose counters and activity window are held in memory, or whose state this replica caches of sessions shared in Redis.
# TYPE oar_engine_sessions gauge
oar_engine_sessions 4
`
	expose(t, m, want)
}

// TestEvaluationsByLabels: evaluations are counted per anchor and decision, from
// concurrent requests, through the cached children.
func TestEvaluationsByLabels(t *testing.T) {
	m := New(Sources{})
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for i := range 100 {
				m.Evaluated("tool.pre_invoke", []string{"none", "warn"}[i%2], time.Microsecond)
				m.Evaluated("model.output", "block", time.Microsecond)
			}
		})
	}
	wg.Wait()
	expose(t, m, `
oar_engine_evaluations_total{anchor="model.output",decision="block"} 400
oar_engine_evaluations_total{anchor="tool.pre_invoke",decision="none"} 200
oar_engine_evaluations_total{anchor="tool.pre_invoke",decision="warn"} 200
oar_engine_evaluation_duration_seconds_count 800
`)
}

// expose checks that every line of want appears in the text exposition.
func expose(t *testing.T, m *Metrics, want string) {
	t.Helper()
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	got := "\n" + rec.Body.String()
	for _, line := range strings.Split(strings.TrimSpace(want), "\n") {
		if !strings.Contains(got, "\n"+line+"\n") {
			t.Errorf("the exposition lacks %q", line)
		}
	}
	if strings.Count(got, "oar_engine_bundle_info{") > 1 {
		t.Errorf("more than one bundle_info series:\n%s", got)
	}
}

// TestAnchorLabelsAreUTF8: a label value must be UTF-8, and an anchor may hold a
// surrogate in its generalized form or arrive cut; neither panics.
func TestAnchorLabelsAreUTF8(t *testing.T) {
	m := New(Sources{})
	surrogate := "gw.\xed\xa0\x80"
	m.Evaluated(surrogate, "none", time.Microsecond)
	m.UndeclaredAnchor(surrogate)
	m.UndeclaredAnchor(strings.Repeat("é", 40))
	if _, err := m.Registry().Gather(); err != nil {
		t.Fatal(err)
	}
}
