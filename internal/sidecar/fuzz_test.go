package sidecar

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"

	"github.com/oar-operator/oar-operator/internal/engine"
	"github.com/oar-operator/oar-operator/internal/sidecar/session"
)

// decisions are the values an answer's decision may take (section 10.2).
var decisions = []string{"none", "warn", "nudge", "transform", "block"}

// FuzzEvaluate posts arbitrary bodies to POST /v1/evaluate of two sidecars, one serving
// the stateful test rules (counters, flow, host facts), one the 100-rule bench bundle,
// each keeping its sessions across inputs as a running sidecar does (its events are
// discarded, or millions of inputs would hold them all). Whatever the body,
// the answer is a decision (200) or a refusal naming the problem (400, or 413 past the
// size limit) — never a 500, whether from an engine error or a recovered panic, and
// never a body that is not the documented JSON.
func FuzzEvaluate(f *testing.F) {
	bench, occs := benchBundle(f)
	for _, o := range occs {
		f.Add(o)
	}
	for _, seed := range []string{
		occ("tool.pre_invoke", "s1", `"tool_call": {"name": "shell", "arguments": {"cmd": "ls"}}`),
		occ("tool.pre_invoke", "s1", `"tool_call": {"name": "deploy"}, "recent_activity": ["web_fetch"]`),
		occ("content.output", "s2", `"facts": {"acme.tenant_tier": "free"}, "content": "hello"`),
		occ("content.output", "s2", `"facts": {"acme.tenant_tier": 7}`),
		occ("gateway.pre_render", "", ""),
		`{"anchor": "tool.pre_invoke", "session_id": "s", "facts": {"tool": ["not", "a", "string"]}}`,
		`{"anchor": "agent.finalize"}`, `{}`, `[]`, `null`, `{"anchor": 1}`, `{"anchor": "tool.pre_invoke", "x": 1}`, ``,
	} {
		f.Add([]byte(seed))
	}
	handlers := []http.Handler{
		serve(f, sealed(f, testCapability, testRules), Options{Events: io.Discard, Sessions: session.Options{MaxSessions: 64}}).Handler(),
		serve(f, bench, Options{Events: io.Discard, Sessions: session.Options{MaxSessions: 64}}).Handler(),
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		for _, h := range handlers {
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
			default:
				t.Fatalf("status %d for %q: %s", rec.Code, body, rec.Body)
			}
		}
	})
}
