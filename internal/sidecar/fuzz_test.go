package sidecar

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/oar-operator/oar-operator/internal/engine"
	"github.com/oar-operator/oar-operator/internal/sidecar/session"
)

// clauseID is the form of a clause identifier a diagnostic carries.
var clauseID = regexp.MustCompile(`^OAR-[A-Z]+-[0-9]+$`)

// decisions are the values an answer's decision may take (section 10.2).
var decisions = []string{"none", "warn", "nudge", "transform", "block"}

// FuzzEvaluate posts arbitrary bodies to POST /v1/evaluate. An input is a sequence of
// request bodies, one per line, sent in order to two sidecars — one serving the stateful
// test rules (counters, flow, host facts), one the 100-rule bench bundle — so a session's
// counters and activity window evolve within an input. The sessions' clock moves past
// their idle TTL between inputs, so every input starts from no sessions and behaves the
// same each time it runs, as a fuzzer needs, while the bundles stay loaded. Whatever the
// body, the answer is a decision (200) or a refusal naming the problem (400 with
// diagnostics, each naming a clause, or 413 past the size limit) — never a 500, whether
// from an engine error or a recovered panic, and never a body that is not the
// documented JSON.
func FuzzEvaluate(f *testing.F) {
	bench, occs := benchBundle(f)
	f.Add(bytes.Join(occs[:min(len(occs), 10)], []byte("\n")))
	for _, o := range occs {
		f.Add(o)
	}
	for _, seed := range []string{
		occ("tool.pre_invoke", "s1", `"tool_call": {"name": "shell", "arguments": {"cmd": "ls"}}`) + "\n" +
			occ("tool.pre_invoke", "s1", `"tool_call": {"name": "shell", "arguments": {"cmd": "ls"}}`) + "\n" +
			occ("tool.pre_invoke", "s1", `"tool_call": {"name": "shell", "arguments": {"cmd": "rm"}}`),
		occ("tool.pre_invoke", "s1", `"tool_call": {"name": "web_fetch"}`) + "\n" +
			occ("tool.pre_invoke", "s1", `"tool_call": {"name": "deploy"}`),
		occ("tool.pre_invoke", "s1", `"tool_call": {"name": "deploy"}, "recent_activity": ["web_fetch"]`),
		occ("content.output", "s2", `"facts": {"acme.gateway.tenant_tier": "free"}, "content": "hello"`),
		occ("content.output", "s2", `"facts": {"acme.gateway.tenant_tier": 7}`),
		occ("gateway.pre_render", "", ""),
		`{"anchor": "tool.pre_invoke", "session_id": "s", "facts": {"tool": ["not", "a", "string"]}}`,
		`{"anchor": "agent.finalize"}`, `{}`, `[]`, `null`, `{"anchor": 1}`, `{"anchor": "tool.pre_invoke", "x": 1}`, ``,
		occ("tool.pre_invoke", strings.Repeat("s", MaxSessionIDBytes+1), ""),
	} {
		f.Add([]byte(seed))
	}
	var clock atomic.Int64
	sessions := session.Options{MaxSessions: 64, IdleTTL: time.Minute, Now: func() time.Time { return time.Unix(clock.Load(), 0) }}
	handlers := []http.Handler{
		serve(f, sealed(f, testCapability, testRules), Options{Events: io.Discard, Sessions: sessions}).Handler(),
		serve(f, bench, Options{Events: io.Discard, Sessions: sessions}).Handler(),
	}
	f.Fuzz(func(t *testing.T, input []byte) {
		clock.Add(int64(time.Hour / time.Second))
		for _, h := range handlers {
			for body := range bytes.SplitSeq(input, []byte("\n")) {
				checkAnswer(t, h, body)
			}
		}
	})
}

// checkAnswer posts body and checks the answer is a decision or a named refusal.
func checkAnswer(t *testing.T, h http.Handler, body []byte) {
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/v1/evaluate", bytes.NewReader(body)))
	switch rec.Code {
	case http.StatusOK:
		a := Answer{Decision: &engine.Decision{}}
		if err := json.Unmarshal(rec.Body.Bytes(), &a); err != nil {
			t.Fatalf("200 with a body that is not an answer: %v\n%s", err, rec.Body)
		}
		if !slices.Contains(decisions, a.Decision.Decision) || a.Bundle == "" {
			t.Fatalf("decision %q, bundle %q in %s", a.Decision.Decision, a.Bundle, rec.Body)
		}
	case http.StatusBadRequest, http.StatusRequestEntityTooLarge:
		var p Problem
		if err := json.Unmarshal(rec.Body.Bytes(), &p); err != nil || p.Error == "" {
			t.Fatalf("%d with a body that is not a problem (%v): %s", rec.Code, err, rec.Body)
		}
		if rec.Code == http.StatusBadRequest && len(p.Diagnostics) == 0 {
			t.Fatalf("a malformed occurrence refused without diagnostics: %s", rec.Body)
		}
		for _, d := range p.Diagnostics {
			if !clauseID.MatchString(d.Clause) {
				t.Fatalf("a diagnostic without a clause for %q: %s", body, rec.Body)
			}
		}
	default:
		t.Fatalf("status %d for %q: %s", rec.Code, body, rec.Body)
	}
}
