package sidecar

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/go-logr/logr"

	"github.com/oar-operator/oar-operator/internal/bundle"
	"github.com/oar-operator/oar-operator/internal/occurrence"
	"github.com/oar-operator/oar-operator/internal/sidecar/reload"
)

// TestAnswersFromReusedBuffersMatchFreshDecisions: the handler builds each decision in
// a recycled buffer. Two sidecars, one serving the bench bundle and one the stateful
// test rules, answer their occurrences in turn, three rounds, so a buffer goes from one
// kind of decision to the other; every answer is byte for byte the one a decision of
// its own gives, evaluated against a third and fourth sidecar's runtimes that see the
// same occurrences.
func TestAnswersFromReusedBuffersMatchFreshDecisions(t *testing.T) {
	bench, benchOccs := benchBundle(t)
	stateful := sealed(t, testCapability, testRules)
	statefulOccs := [][]byte{
		[]byte(occ("tool.pre_invoke", "s1", `"tool_call": {"name": "shell", "arguments": {"cmd": "ls"}}`)),
		[]byte(occ("tool.pre_invoke", "s2", `"tool_call": {"name": "shell", "arguments": {"cmd": "ls"}}`)),
		[]byte(occ("tool.pre_invoke", "s1", `"tool_call": {"name": "web_fetch"}`)),
		[]byte(occ("tool.pre_invoke", "s1", `"tool_call": {"name": "deploy"}`)),
		[]byte(occ("content.output", "s2", `"facts": {"acme.gateway.tenant_tier": "free"}, "content": "hello"`)),
		[]byte(occ("content.output", "s2", `"facts": {"acme.gateway.tenant_tier": 7}`)),
	}
	type side struct {
		h    http.Handler
		sv   *reload.Served
		occs [][]byte
	}
	var sides []side
	for _, b := range []struct {
		bd   *bundle.Bundle
		occs [][]byte
	}{{bench, benchOccs}, {stateful, statefulOccs}} {
		sv, err := New(Options{Log: logr.Discard()}).Source().Install(b.bd)
		if err != nil {
			t.Fatal(err)
		}
		sides = append(sides, side{serve(t, b.bd, Options{}).Handler(), sv, b.occs})
	}
	for round := range 3 {
		for i := range max(len(benchOccs), len(statefulOccs)) {
			for _, sd := range sides {
				body := sd.occs[i%len(sd.occs)]
				rec := httptest.NewRecorder()
				sd.h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/v1/evaluate", bytes.NewReader(body)))
				o, errs := occurrence.Decode(body, occurrence.HostMembers)
				if errs != nil {
					t.Fatal(errs)
				}
				a := Answer{Decision: sd.sv.Loaded.Program.Evaluate(sd.sv.Runtime, o), Bundle: sd.sv.Digest()}
				if !sd.sv.Loaded.Capability.DeclaresAnchor(o.Anchor) {
					a.Warnings = []Warning{undeclaredAnchor(o.Anchor)}
				}
				if want := appendAnswer(nil, a); rec.Code != http.StatusOK || !bytes.Equal(rec.Body.Bytes(), want) {
					t.Fatalf("round %d, %s: status %d\n%s\nwant\n%s", round, body, rec.Code, rec.Body, want)
				}
			}
		}
	}
}
