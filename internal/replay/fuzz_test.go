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
	f.Add(logThroughSidecar(f, b, generate(6, 2).bodies, decisionlog.ContentFull))
	f.Add(logThroughSidecar(f, b, generate(6, 2).bodies, decisionlog.ContentOmit))
	f.Fuzz(func(t *testing.T, data []byte) {
		log, _ := decisionlog.Read(bytes.NewReader(data))
		// A placeholder of a long content logged without its text costs time in
		// proportion (a second for some 25 million code points) and exercises nothing
		// a short one does not; the fuzzer would spend its time there.
		placeholders := 0
		for _, e := range log.Entries {
			if !e.Record.Reproducible() {
				placeholders += e.Record.Content.Length
			}
		}
		if placeholders > 1<<16 {
			t.Skip("placeholders too long to replay quickly")
		}
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
