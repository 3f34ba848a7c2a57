package sidecar

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/go-logr/logr"

	"github.com/oar-operator/oar-operator/internal/bundle"
	"github.com/oar-operator/oar-operator/internal/engine"
)

// testCapability is a gateway host: tool and content profiles, a host anchor, a
// host-tier fact, and a window of four steps.
const testCapability = `
oar_capability_version: "1.0"
host: acme.gateway
anchors:
  core: {tool.pre_invoke: tool.pre_invoke, tool.post_invoke: tool.post_invoke, model.output: content.output}
  unsupported: [tool.handler, agent.post_turn, agent.finalize, model.input, model.tool_result]
  host: [gateway.pre_render]
profiles: [tool, content]
activity_window: 4
supports_transform: true
host_facts:
- {name: acme.gateway.tenant_tier, type: string}
`

// testRules count shell calls (publishing an event each time) and block the third,
// nudge a deploy that follows a fetch ([OAR-FACT-12]), warn free-tier output, and
// redact a span of content.
const testRules = `
oar: "1.0"
namespace: acme.ops
id: COUNT_SHELL
kind: policy
anchor: tool.pre_invoke
selector: {tool: [shell]}
requires: {profiles: [tool]}
on_fire: [increment_counter, publish_event]
effect: warn
---
oar: "1.0"
namespace: acme.ops
id: SHELL_LIMIT
kind: invariant
anchor: tool.pre_invoke
selector: {tool: [shell]}
requires: {profiles: [tool]}
when: fire_count_of("acme.ops/COUNT_SHELL") >= 2
effect: block
copy: {what: "Too many shell calls in this session."}
---
oar: "1.0"
namespace: acme.security
id: DEPLOY_AFTER_FETCH
kind: policy
anchor: tool.pre_invoke
selector: {tool: [deploy]}
requires: {profiles: [tool]}
flow: [web_fetch]
effect: nudge
---
oar: "1.0"
namespace: acme.tenant
id: FREE_TIER
kind: policy
anchor: model.output
requires: {facts: [acme.gateway.tenant_tier]}
when: acme.gateway.tenant_tier == "free"
effect: warn
`

// docs decodes a YAML stream of OAR documents.
func docs(t testing.TB, yaml string) []any {
	t.Helper()
	d, err := engine.DecodeDocuments([]byte(yaml))
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// sealed returns a sealed bundle of one capability and one pack.
func sealed(t testing.TB, capability, rules string) *bundle.Bundle {
	t.Helper()
	b := &bundle.Bundle{
		Capability: docs(t, capability)[0].(map[string]any),
		Packs:      []bundle.Pack{{Name: "acme-baseline", Generation: 1, Rules: docs(t, rules)}},
		Configs:    []bundle.Config{},
	}
	if err := b.Seal(); err != nil {
		t.Fatal(err)
	}
	return b
}

// syncBuffer is a bytes.Buffer safe for concurrent writers and readers.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// testSidecar is a sidecar behind an httptest server.
type testSidecar struct {
	*Sidecar
	srv    *httptest.Server
	events *syncBuffer
}

// serve starts a sidecar, installing b when it is not nil.
func serve(t testing.TB, b *bundle.Bundle, opt Options) *testSidecar {
	t.Helper()
	ev := &syncBuffer{}
	if opt.Events == nil {
		opt.Events = ev
	}
	if opt.Log.GetSink() == nil {
		opt.Log = logr.Discard()
	}
	sc := New(opt)
	if b != nil {
		if _, err := sc.Source().Install(b); err != nil {
			t.Fatal(err)
		}
	}
	srv := httptest.NewServer(sc.Handler())
	t.Cleanup(srv.Close)
	return &testSidecar{Sidecar: sc, srv: srv, events: ev}
}

// response is a decoded reply.
type response struct {
	status int
	header http.Header
	body   []byte
}

func (r response) decode(t testing.TB, v any) {
	t.Helper()
	if err := json.Unmarshal(r.body, v); err != nil {
		t.Fatalf("status %d, body %s: %v", r.status, r.body, err)
	}
}

func (ts *testSidecar) do(t testing.TB, method, path, body string) response {
	t.Helper()
	req, err := http.NewRequest(method, ts.srv.URL+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := ts.srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return response{status: resp.StatusCode, header: resp.Header, body: data}
}

// evaluate posts an occurrence and decodes a 200 answer.
func (ts *testSidecar) evaluate(t testing.TB, occ string) Answer {
	t.Helper()
	r := ts.do(t, http.MethodPost, "/v1/evaluate", occ)
	if r.status != http.StatusOK {
		t.Fatalf("POST /v1/evaluate %s: status %d: %s", occ, r.status, r.body)
	}
	a := Answer{Decision: &engine.Decision{}}
	r.decode(t, &a)
	if got := r.header.Get(DigestHeader); got != a.Bundle {
		t.Fatalf("header %s %q differs from the body's bundle %q", DigestHeader, got, a.Bundle)
	}
	return a
}

// problem posts an occurrence and decodes an error answer with the wanted status.
func (ts *testSidecar) problem(t testing.TB, status int, method, path, body string) Problem {
	t.Helper()
	r := ts.do(t, method, path, body)
	if r.status != status {
		t.Fatalf("%s %s %s: status %d, want %d: %s", method, path, body, r.status, status, r.body)
	}
	if ct := r.header.Get("Content-Type"); ct != "application/json" {
		t.Fatalf("Content-Type %q, want application/json", ct)
	}
	var p Problem
	r.decode(t, &p)
	return p
}

// metric reads one sample of the sidecar's registry: the sum of every series of name
// whose labels include want.
func (ts *testSidecar) metric(t testing.TB, name string, want map[string]string) float64 {
	t.Helper()
	families, err := ts.Metrics().Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	var sum float64
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
	series:
		for _, m := range f.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			for k, v := range want {
				if labels[k] != v {
					continue series
				}
			}
			switch {
			case m.GetCounter() != nil:
				sum += m.GetCounter().GetValue()
			case m.GetGauge() != nil:
				sum += m.GetGauge().GetValue()
			case m.GetHistogram() != nil:
				sum += float64(m.GetHistogram().GetSampleCount())
			}
		}
	}
	return sum
}

func occ(anchor, session, extra string) string {
	s := fmt.Sprintf(`{"anchor": %q, "session_id": %q`, anchor, session)
	if extra != "" {
		s += ", " + extra
	}
	return s + "}"
}

// httpGet serves one GET through h in memory and returns the status.
func httpGet(t testing.TB, h http.Handler, path string) int {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
	return rec.Code
}
