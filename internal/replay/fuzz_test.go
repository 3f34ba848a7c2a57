package replay

import (
	"bytes"
	"strings"
	"testing"

	"github.com/oar-operator/oar-operator/internal/decisionlog"
)

// FuzzReadAndReplay: whatever the log, what Read takes replays without panicking, under
// the same rules on both sides and under other rules; every entry is replayed once and
// either reproduces the logged decision or is a mismatch, and the same rules on both
// sides change nothing.
func FuzzReadAndReplay(f *testing.F) {
	b := sealedBundle(f, rules)
	same := side(f, b)
	other := side(f, sealedBundle(f, strings.Replace(rules, ">= 3", ">= 1", 1)+annotate))
	f.Add(logThroughSidecar(f, b, generate(12, 2).bodies, decisionlog.ContentFull))
	f.Add(logThroughSidecar(f, b, generate(12, 2).bodies, decisionlog.ContentOmit))
	f.Fuzz(func(t *testing.T, data []byte) {
		log, _ := decisionlog.Read(bytes.NewReader(data))
		for _, after := range []Side{same, other} {
			rep := Run(log.Entries, Options{Before: same, After: after})
			if rep.Occurrences != len(log.Entries) || rep.Reproduced+rep.Mismatched != rep.Occurrences || rep.Sessions > rep.Occurrences {
				t.Fatalf("%d entries: %d occurrences in %d sessions, %d reproduced, %d mismatched",
					len(log.Entries), rep.Occurrences, rep.Sessions, rep.Reproduced, rep.Mismatched)
			}
			if after.Program == same.Program && rep.Changed != 0 {
				t.Fatalf("the same rules on both sides changed %d decisions: %+v", rep.Changed, rep.Changes)
			}
		}
	})
}
