package sidecar

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/oar-operator/oar-operator/internal/bundle"
	"github.com/oar-operator/oar-operator/internal/sidecar/metrics"
	"github.com/oar-operator/oar-operator/internal/sidecar/session"
)

// TestSessionCountersAndFlow runs one session's occurrences through the API: counters
// advance per session ([OAR-FIRE-5]) and are read from the snapshot before the
// occurrence's own side-effects ([OAR-FIRE-6]); admitted tool calls build the activity
// window a flow reads ([OAR-PROF-9], [OAR-FACT-12]); an explicit window replaces it for
// one occurrence ([OAR-CONF-40]); and all of it survives a reload.
func TestSessionCountersAndFlow(t *testing.T) {
	ts := serve(t, sealed(t, testCapability, testRules), Options{})
	shell := occ("tool.pre_invoke", "s1", `"tool_call": {"name": "shell", "arguments": {"cmd": "ls"}}`)

	for i, want := range []string{"warn", "warn", "block"} {
		a := ts.evaluate(t, shell)
		if a.Decision.Decision != want {
			t.Fatalf("shell call %d: decision %s, want %s (%+v)", i+1, a.Decision.Decision, want, a.Decision)
		}
		if got := a.Counters.Get("acme.ops/COUNT_SHELL").Fire; got != int64(i+1) {
			t.Errorf("shell call %d: COUNT_SHELL fire_count %d, want %d", i+1, got, i+1)
		}
	}
	if a := ts.evaluate(t, occ("tool.pre_invoke", "s2", `"tool_call": {"name": "shell"}`)); a.Decision.Decision != "warn" {
		t.Errorf("another session's first shell call: %s, want warn: counters are per session", a.Decision.Decision)
	}
	if n := strings.Count(ts.events.String(), `"rule":"acme.ops/COUNT_SHELL"`); n != 4 {
		t.Errorf("%d publish_event records on the event writer, want 4:\n%s", n, ts.events.String())
	}

	deploy := occ("tool.pre_invoke", "s3", `"tool_call": {"name": "deploy"}`)
	for _, step := range []struct{ occ, want string }{
		{deploy, "none"},
		{occ("tool.pre_invoke", "s3", `"tool_call": {"name": "web_fetch"}`), "none"},
		{deploy, "nudge"},
		{occ("tool.pre_invoke", "s4", `"tool_call": {"name": "deploy"}`), "none"},
		{occ("tool.pre_invoke", "s5", `"tool_call": {"name": "deploy"}, "recent_activity": ["web_fetch"]`), "nudge"},
		{occ("tool.pre_invoke", "s5", `"tool_call": {"name": "deploy"}`), "none"},
	} {
		if a := ts.evaluate(t, step.occ); a.Decision.Decision != step.want {
			t.Errorf("%s: %s, want %s", step.occ, a.Decision.Decision, step.want)
		}
	}

	// A new bundle: the session keeps its counter, so the next shell call still blocks.
	next := sealed(t, testCapability, testRules)
	next.Packs[0].Generation = 2
	if err := next.Seal(); err != nil {
		t.Fatal(err)
	}
	if _, err := ts.Source().Install(next); err != nil {
		t.Fatal(err)
	}
	a := ts.evaluate(t, shell)
	if a.Bundle != next.Digest || a.Decision.Decision != "block" || a.Counters.Get("acme.ops/COUNT_SHELL").Fire != 4 {
		t.Errorf("after a reload: bundle %s decision %s counters %v; want %s, block, fire_count 4", a.Bundle, a.Decision.Decision, a.Counters, next.Digest)
	}
	if a := ts.evaluate(t, deploy); a.Decision.Decision != "nudge" {
		t.Errorf("after a reload the activity window is gone: %s, want nudge", a.Decision.Decision)
	}
}

// TestParallelCallsOfOneSessionTakeEffectInTurn: an agent's parallel tool calls reach
// the sidecar at once, yet the limit holds exactly — two shell calls pass and the rest
// are blocked — as if they had come one after the other ([OAR-CONF-31]); before the
// evaluations of one session were serialised, a third call got through now and then.
func TestParallelCallsOfOneSessionTakeEffectInTurn(t *testing.T) {
	h := serve(t, sealed(t, testCapability, testRules), Options{Events: io.Discard}).Handler()
	const rounds, parallel = 100, 8
	for round := range rounds {
		body := occ("tool.pre_invoke", fmt.Sprintf("burst-%d", round), `"tool_call": {"name": "shell"}`)
		var wg sync.WaitGroup
		var passed atomic.Int32
		for range parallel {
			wg.Go(func() {
				rec := httptest.NewRecorder()
				h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/v1/evaluate", strings.NewReader(body)))
				if rec.Code != http.StatusOK {
					t.Errorf("status %d: %s", rec.Code, rec.Body)
				} else if !strings.Contains(rec.Body.String(), `"decision":"block"`) {
					passed.Add(1)
				}
			})
		}
		wg.Wait()
		if n := passed.Load(); n != 2 {
			t.Fatalf("round %d: %d of %d parallel shell calls of one session passed; the limit lets exactly 2 through", round, n, parallel)
		}
	}
}

// TestAnswerShape checks the members of section 10.2: every list present (never null)
// and the bundle digest in the body and the header.
func TestAnswerShape(t *testing.T) {
	b := sealed(t, testCapability, testRules)
	ts := serve(t, b, Options{})
	r := ts.do(t, http.MethodPost, "/v1/evaluate", occ("tool.post_invoke", "s", ""))
	if r.status != http.StatusOK {
		t.Fatalf("status %d: %s", r.status, r.body)
	}
	want := `{"decision":"none","advisories":[],"transforms":[],"applied":[],"on_fire":[],"events":[],"skipped_transforms":[],"bundle":"` + b.Digest + `"}` + "\n"
	if string(r.body) != want {
		t.Errorf("body\n %s\nwant\n %s", r.body, want)
	}
	if r.header.Get(DigestHeader) != b.Digest {
		t.Errorf("%s: %q", DigestHeader, r.header.Get(DigestHeader))
	}
	a := ts.evaluate(t, occ("tool.pre_invoke", "s", `"tool_call": {"name": "shell"}`))
	if a.Rule != "acme.ops/COUNT_SHELL" || a.Code != "COUNT_SHELL" || len(a.Events) != 1 ||
		strings.Join(a.OnFire, ",") != "increment_counter,publish_event" {
		t.Errorf("got %+v", a.Decision)
	}
}

// TestWrongFactTypeIsOnError is [OAR-FACT-26]: a fact of the wrong type is a
// fact-provider failure the rule's on_error handles (fail_closed by default), never a
// malformed request and never a 500.
func TestWrongFactTypeIsOnError(t *testing.T) {
	ts := serve(t, sealed(t, testCapability, testRules), Options{})
	a := ts.evaluate(t, occ("content.output", "s", `"content": "hi", "facts": {"acme.gateway.tenant_tier": 5}`))
	if a.Decision.Decision != "block" || a.Rule != "acme.tenant/FREE_TIER" || len(a.Failures) != 1 || a.Failures[0].Clause != "OAR-FACT-26" {
		t.Errorf("got %+v", a.Decision)
	}
	if a := ts.evaluate(t, occ("content.output", "s", `"content": "hi", "facts": {"acme.gateway.tenant_tier": "free"}`)); a.Decision.Decision != "warn" {
		t.Errorf("the right type: %s, want warn", a.Decision.Decision)
	}
}

// TestEventWriteRefusedIsOnError is [OAR-FIRE-9]: an event stream that refuses the
// write makes the rule one that cannot be evaluated.
func TestEventWriteRefusedIsOnError(t *testing.T) {
	ts := serve(t, sealed(t, testCapability, testRules), Options{Events: failingWriter{}})
	a := ts.evaluate(t, occ("tool.pre_invoke", "s", `"tool_call": {"name": "shell"}`))
	if a.Decision.Decision != "block" || a.Rule != "acme.ops/COUNT_SHELL" || len(a.Failures) != 1 || a.Failures[0].Clause != "OAR-FIRE-9" {
		t.Errorf("got %+v", a.Decision)
	}
}

type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, errors.New("disk full") }

// TestSessionIDLimit: a session_id is held for as long as its session lives, so its
// length is bounded; a longer one is refused naming the field and the clause that
// defines it ([OAR-CONF-18]) in the diagnostics, as every malformed member is.
func TestSessionIDLimit(t *testing.T) {
	b := sealed(t, testCapability, testRules)
	ts := serve(t, b, Options{})
	at := strings.Repeat("s", MaxSessionIDBytes)
	if a := ts.evaluate(t, occ("tool.pre_invoke", at, `"tool_call": {"name": "shell"}`)); a.Decision.Decision != "warn" {
		t.Errorf("a session_id of %d bytes: %s, want warn", len(at), a.Decision.Decision)
	}
	p := ts.problem(t, http.StatusBadRequest, http.MethodPost, "/v1/evaluate", occ("tool.pre_invoke", at+"s", ""))
	if want := fmt.Sprintf("session_id: [OAR-CONF-18] %d bytes", MaxSessionIDBytes+1); !strings.HasPrefix(p.Error, want) || p.Bundle != b.Digest {
		t.Errorf("got %+v, want an error starting %q", p, want)
	}
	if len(p.Diagnostics) != 1 || p.Diagnostics[0].Field != "session_id" || p.Diagnostics[0].Clause != "OAR-CONF-18" {
		t.Errorf("diagnostics %+v, want one naming session_id and OAR-CONF-18", p.Diagnostics)
	}
}

// TestMalformedRequests checks that every refusal of a malformed occurrence is JSON
// naming the clause and the field (none for the body as a whole), and that a body
// over the size limit and a wrong method or path are refused in JSON too.
func TestMalformedRequests(t *testing.T) {
	b := sealed(t, testCapability, testRules)
	ts := serve(t, b, Options{MaxBodyBytes: 512})
	tests := []struct {
		name, body    string
		field, clause string
		contains      string
	}{
		{"not JSON", `{"anchor": `, "", "OAR-CONF-18", "an occurrence is one JSON object"},
		{"not an object", `["tool.pre_invoke"]`, "", "OAR-CONF-18", "must be a JSON object"},
		{"no anchor", `{"session_id": "s"}`, "anchor", "OAR-CONF-29", `missing required member "anchor"`},
		{"unknown member", occ("tool.pre_invoke", "s", `"fact": {}`), "fact", "OAR-CONF-18", `unknown occurrence member "fact"`},
		{"detector facts", occ("tool.pre_invoke", "s", `"detector_facts": {"score": 1}`), "detector_facts", "OAR-CONF-25", "registers"},
		{"tool name", occ("tool.pre_invoke", "s", `"tool_call": {"name": 1}`), "tool_call.name", "OAR-CONF-40", "non-empty string"},
		{"window step", occ("tool.pre_invoke", "s", `"recent_activity": [1]`), "recent_activity[0]", "OAR-CONF-40", "tool name"},
		{"duplicate member", `{"anchor": "tool.pre_invoke", "anchor": "x"}`, "anchor", "OAR-DOC-1", "OAR-DOC-1"},
		// [OAR-FACT-26]: refused, never replaced by U+FFFD.
		{"bytes that are not UTF-8", occ("tool.pre_invoke", "s", "\"content\": \"a\xed\xa0\x80\""), "", "OAR-FACT-23", "byte 0xed at offset 62 is not UTF-8"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := ts.problem(t, http.StatusBadRequest, http.MethodPost, "/v1/evaluate", tt.body)
			if !strings.Contains(p.Error, tt.contains) || p.Bundle != b.Digest {
				t.Errorf("got %+v, want an error containing %q", p, tt.contains)
			}
			if len(p.Diagnostics) == 0 || p.Diagnostics[0].Field != tt.field || p.Diagnostics[0].Clause != tt.clause {
				t.Errorf("diagnostics %+v, want field %q clause %q", p.Diagnostics, tt.field, tt.clause)
			}
		})
	}
	if got := ts.metric(t, "oar_engine_requests_rejected_total", map[string]string{"reason": "malformed"}); got != 9 {
		t.Errorf("malformed rejections %v, want 9", got)
	}

	// One problem per step: the answer counts all 150 and lists the first 100.
	many := occ("tool.pre_invoke", "s", `"recent_activity": [`+strings.Repeat("1,", 149)+`1]`)
	if p := ts.problem(t, http.StatusBadRequest, http.MethodPost, "/v1/evaluate", many); len(p.Diagnostics) != maxProblemDiagnostics ||
		!strings.HasSuffix(p.Error, "(and 149 more; the first 100 are listed)") || p.Diagnostics[99].Field != "recent_activity[99]" {
		t.Errorf("150 problems: %d listed, error %q", len(p.Diagnostics), p.Error)
	}

	big := occ("tool.pre_invoke", "s", `"content": "`+strings.Repeat("x", 600)+`"`)
	if p := ts.problem(t, http.StatusRequestEntityTooLarge, http.MethodPost, "/v1/evaluate", big); !strings.Contains(p.Error, "512 bytes") {
		t.Errorf("too large: %+v", p)
	}
	r := ts.do(t, http.MethodGet, "/v1/evaluate", "")
	if r.status != http.StatusMethodNotAllowed || r.header.Get("Allow") != http.MethodPost {
		t.Errorf("GET /v1/evaluate: %d Allow %q", r.status, r.header.Get("Allow"))
	}
	if p := ts.problem(t, http.StatusNotFound, http.MethodGet, "/v2/evaluate", ""); !strings.Contains(p.Error, "POST /v1/evaluate") {
		t.Errorf("unknown path: %+v", p)
	}
}

// TestNotReady: before the first bundle only /healthz and /v1/bundle answer 200.
func TestNotReady(t *testing.T) {
	ts := serve(t, nil, Options{})
	ts.Source().Refuse(errors.New("bundle: neither bundle.json nor bundle.json.gz is present"))
	if r := ts.do(t, http.MethodGet, "/healthz", ""); r.status != http.StatusOK {
		t.Errorf("/healthz: %d", r.status)
	}
	r := ts.do(t, http.MethodGet, "/readyz", "")
	if r.status != http.StatusServiceUnavailable || !strings.Contains(string(r.body), "neither bundle.json") {
		t.Errorf("/readyz: %d %s", r.status, r.body)
	}
	ts.problem(t, http.StatusServiceUnavailable, http.MethodPost, "/v1/evaluate", occ("tool.pre_invoke", "s", ""))
	ts.problem(t, http.StatusServiceUnavailable, http.MethodGet, "/v1/capability", "")
	var info BundleInfo
	r = ts.do(t, http.MethodGet, "/v1/bundle", "")
	r.decode(t, &info)
	if r.status != http.StatusOK || info.Ready || info.Status.Failures != 1 || info.Status.LastFailure == nil {
		t.Errorf("/v1/bundle: %d %+v", r.status, info)
	}
	if got := ts.metric(t, "oar_engine_requests_rejected_total", map[string]string{"reason": "not_ready"}); got != 1 {
		t.Errorf("not_ready rejections %v, want 1", got)
	}
}

// TestBundleAndCapability reads what is served.
func TestBundleAndCapability(t *testing.T) {
	b := sealed(t, testCapability, testRules)
	b.Packs = append(b.Packs, bundle.Pack{Name: "empty", Generation: 3, Rules: []any{}})
	b.Configs = []bundle.Config{{Name: "quiet", Generation: 2, Order: 10, Document: docs(t, `{oar_config: "1.0", enforcement: {acme.tenant/FREE_TIER: monitor}}`)[0].(map[string]any)}}
	if err := b.Seal(); err != nil {
		t.Fatal(err)
	}
	ts := serve(t, b, Options{BundleDir: "/etc/oar/bundle"})

	var info BundleInfo
	r := ts.do(t, http.MethodGet, "/v1/bundle", "")
	r.decode(t, &info)
	want := []string{"acme.ops/COUNT_SHELL", "acme.ops/SHELL_LIMIT", "acme.security/DEPLOY_AFTER_FETCH", "acme.tenant/FREE_TIER"}
	if !info.Ready || info.Digest != b.Digest || info.Host != "acme.gateway" || info.RuleCount != 4 || info.Directory != "/etc/oar/bundle" ||
		len(info.Packs) != 2 || strings.Join(info.Packs[0].Rules, " ") != strings.Join(want, " ") ||
		info.Packs[1].Name != "empty" || info.Packs[1].Generation != 3 || len(info.Packs[1].Rules) != 0 ||
		len(info.Configs) != 1 || info.Configs[0] != (ConfigInfo{Name: "quiet", Generation: 2, Order: 10}) ||
		info.Status.Reloads != 1 || info.Status.LastReload.IsZero() || r.header.Get(DigestHeader) != b.Digest {
		t.Errorf("/v1/bundle: %s", r.body)
	}

	var capDoc map[string]any
	r = ts.do(t, http.MethodGet, "/v1/capability", "")
	r.decode(t, &capDoc)
	if capDoc["host"] != "acme.gateway" || capDoc["oar_capability_version"] != "1.0" || r.header.Get(DigestHeader) != b.Digest {
		t.Errorf("/v1/capability: %s", r.body)
	}
	// The configuration applies: FREE_TIER runs in monitor mode.
	if a := ts.evaluate(t, occ("content.output", "s", `"facts": {"acme.gateway.tenant_tier": "free"}`)); a.Decision.Decision != "none" ||
		strings.Join(a.Applied, ",") != "acme.tenant/FREE_TIER:monitored_fired" {
		t.Errorf("monitored rule: %+v", a.Decision)
	}
}

// TestMetrics reads the exposition.
// TestUndeclaredAnchorIsAnsweredWithAWarning: an occurrence at an anchor the served
// capability does not declare selects nothing ([OAR-SEL-7]) and is answered, with a
// warning naming the anchor and a metric counting it by anchor, bounded.
func TestUndeclaredAnchorIsAnsweredWithAWarning(t *testing.T) {
	b := sealed(t, testCapability, testRules)
	ts := serve(t, b, Options{})
	// tool.handler is unsupported; model.output is the core spelling of content.output
	// ([OAR-CONF-29]); tool.pre_invok is a misspelling.
	for _, anchor := range []string{"tool.handler", "model.output", "tool.pre_invok", "tool.pre_invok"} {
		a := ts.evaluate(t, occ(anchor, "u", `"tool_call": {"name": "shell"}`))
		if a.Decision.Decision != "none" || len(a.Applied) != 0 {
			t.Errorf("%s: want decision none with an empty trace, got %+v", anchor, a.Decision)
		}
		if len(a.Warnings) != 1 || a.Warnings[0].Clause != "OAR-SEL-7" || a.Warnings[0].Field != "anchor" || a.Warnings[0].Value != anchor {
			t.Errorf("%s: want one OAR-SEL-7 warning naming the anchor, got %+v", anchor, a.Warnings)
		}
	}
	if a := ts.evaluate(t, occ("content.output", "u", "")); len(a.Warnings) != 0 {
		t.Errorf("a declared anchor carries warnings %+v", a.Warnings)
	}
	for anchor, want := range map[string]float64{"tool.handler": 1, "model.output": 1, "tool.pre_invok": 2} {
		if got := ts.metric(t, "oar_engine_undeclared_anchor_occurrences_total", map[string]string{"anchor": anchor}); got != want {
			t.Errorf("undeclared %s: %v, want %v", anchor, got, want)
		}
	}
	if got := ts.metric(t, "oar_engine_evaluations_total", map[string]string{"anchor": metrics.UndeclaredAnchorLabel}); got != 4 {
		t.Errorf("evaluations at undeclared anchors %v, want 4 under one label", got)
	}
	for i := range metrics.MaxUndeclaredAnchors {
		ts.evaluate(t, occ(fmt.Sprintf("x.%d", i), "u", ""))
	}
	if got := ts.metric(t, "oar_engine_undeclared_anchor_occurrences_total", map[string]string{"anchor": metrics.OtherUndeclaredAnchor}); got != 3 {
		t.Errorf("undeclared anchors past the bound %v, want 3 counted as %s", got, metrics.OtherUndeclaredAnchor)
	}
	if got := ts.metric(t, "oar_engine_undeclared_anchor_occurrences_total", nil); got != 4+metrics.MaxUndeclaredAnchors {
		t.Errorf("undeclared occurrences %v, want %d", got, 4+metrics.MaxUndeclaredAnchors)
	}
}

func TestMetrics(t *testing.T) {
	b := sealed(t, testCapability, testRules)
	ts := serve(t, b, Options{})
	for range 2 {
		ts.evaluate(t, occ("tool.pre_invoke", "m", `"tool_call": {"name": "shell"}`))
	}
	ts.evaluate(t, occ("tool.post_invoke", "m", ""))
	r := ts.do(t, http.MethodGet, "/metrics", "")
	body := string(r.body)
	for _, want := range []string{
		`oar_engine_evaluations_total{anchor="tool.pre_invoke",decision="warn"} 2`,
		`oar_engine_evaluations_total{anchor="tool.post_invoke",decision="none"} 1`,
		`oar_engine_evaluation_duration_seconds_count 3`,
		`oar_engine_bundle_info{digest="` + b.Digest + `",host="acme.gateway"} 1`,
		`oar_engine_bundle_reloads_total 1`,
		`oar_engine_bundle_reload_failures_total 0`,
		`oar_engine_bundle_refused 0`,
		`oar_engine_bundle_rules 4`,
		`oar_engine_sessions 1`,
		`oar_engine_session_bytes`,
		`oar_engine_session_evictions_total{reason="lru"} 0`,
		`oar_engine_event_subscribers 0`,
		`process_resident_memory_bytes`,
		`go_goroutines`,
	} {
		if !strings.Contains(body, want+"\n") && !strings.Contains(body, want+" ") {
			t.Errorf("/metrics lacks %q", want)
		}
	}
	probes := httpGet(t, ts.ProbeHandler(), "/v1/bundle")
	if probes != http.StatusNotFound {
		t.Errorf("the probe listener serves /v1/bundle: %d", probes)
	}
	for _, p := range []string{"/healthz", "/readyz", "/metrics"} {
		if got := httpGet(t, ts.ProbeHandler(), p); got != http.StatusOK {
			t.Errorf("probe listener %s: %d", p, got)
		}
	}
}

// TestSessionBounds: the session table is bounded through the API too. The least
// recently used session is forgotten when the table is full, an idle one after the TTL,
// and a forgotten session starts again from zero.
func TestSessionBounds(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	clock := func() time.Time { return now }
	ts := serve(t, sealed(t, testCapability, testRules), Options{Sessions: session.Options{MaxSessions: 2, IdleTTL: time.Hour, Now: clock}})
	shell := func(s string) int64 {
		a := ts.evaluate(t, occ("tool.pre_invoke", s, `"tool_call": {"name": "shell"}`))
		return a.Counters.Get("acme.ops/COUNT_SHELL").Fire
	}
	shell("s1")
	shell("s1")
	shell("s2")
	shell("s3") // the table is full: s1, the least recently used, goes
	if got := shell("s1"); got != 1 {
		t.Errorf("s1 after its eviction counts %d, want a fresh 1", got)
	}
	if got := ts.metric(t, "oar_engine_session_evictions_total", map[string]string{"reason": "lru"}); got != 2 {
		t.Errorf("lru evictions %v, want 2 (s1, then s2)", got)
	}
	now = now.Add(2 * time.Hour)
	if got := shell("s3"); got != 1 {
		t.Errorf("s3 after two idle hours counts %d, want a fresh 1", got)
	}
	if ts.metric(t, "oar_engine_session_evictions_total", map[string]string{"reason": "ttl"}) != 2 || ts.metric(t, "oar_engine_sessions", nil) != 1 {
		t.Errorf("after the TTL: ttl evictions %v, sessions %v; want 2 and 1",
			ts.metric(t, "oar_engine_session_evictions_total", map[string]string{"reason": "ttl"}), ts.metric(t, "oar_engine_sessions", nil))
	}
}

// TestEvaluateRoutedAsByTheMux: the handler's way straight to /v1/evaluate answers
// every request as the mux alone does, whatever the method, and a path the mux
// cleans, redirects or does not match takes the mux's way.
func TestEvaluateRoutedAsByTheMux(t *testing.T) {
	ts := serve(t, sealed(t, testCapability, testRules), Options{})
	mux, _ := ts.routes()
	h := ts.Handler()
	body := occ("tool.pre_invoke", "s1", `"tool_call": {"name": "read"}`)
	for _, target := range []string{"/v1/evaluate", "/v1/evaluate?x=1", "/v1/evaluate/", "/v1//evaluate", "/v1/./evaluate",
		"/v1/%65valuate", "/v1%2Fevaluate", "/v1/evaluate%2F", "/V1/evaluate", "/v1/evaluat", "http://localhost/v1/evaluate"} {
		for _, method := range []string{http.MethodPost, http.MethodGet, http.MethodPut, http.MethodOptions} {
			serveBoth := func(h http.Handler) *httptest.ResponseRecorder {
				rec := httptest.NewRecorder()
				h.ServeHTTP(rec, httptest.NewRequest(method, target, strings.NewReader(body)))
				return rec
			}
			got, want := serveBoth(h), serveBoth(mux)
			if got.Code != want.Code || !reflect.DeepEqual(got.Header(), want.Header()) || got.Body.String() != want.Body.String() {
				t.Errorf("%s %s: %d %v %s\nthe mux: %d %v %s", method, target, got.Code, got.Header(), got.Body, want.Code, want.Header(), want.Body)
			}
		}
	}
}
