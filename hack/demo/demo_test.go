package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"
)

// TestTour runs what `make run` runs, start to finish, and checks that a newcomer sees
// each step: the broken pack refused with its clause, every resource Ready, and the
// three decisions.
func TestTour(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	var out bytes.Buffer
	if err := run(ctx, &out, false); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	for _, want := range []string{
		"capability.rules.oar.dev/acme-gateway created",
		"rulepack.rules.oar.dev/acme-baseline created",
		`Error from server (Invalid)`,
		`spec.rules[0].when`,
		`[OAR-FACT-3] unknown identifier "pth_outside_scope"`,
		"rulepack        acme-baseline  True",
		"decision: none",
		"decision: block (rule acme.security/READ_OUTSIDE_SCOPE)",
		`content: "Write to [REDACTED] or [REDACTED]."`,
		"export KUBECONFIG=",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("the tour does not show %q:\n%s", want, out.String())
		}
	}
}
